"""Every op's CUDA kernel against its CPU kernel, op by op, on small arrays.

Driven by the registry and by the example table of tests/runtime/test_ops.py (`CASES`:
broadcasting, 0-d and empty arrays, negative axes, keepdims, transposes, batch
broadcasting, NaN/inf): each example runs through `KERNELS["cpu"][op]` and through
`KERNELS["cuda"][op]` on device copies of the inputs, and the results must agree in
dtype, shape and value (floats to a tolerance: the device sums in another order; ints
and bools exactly). Where the CPU kernel raises, the CUDA kernel must raise the same
error type. Strings never go to a GPU: those examples are checked for CPU placement.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
import test_ops as cpu_cases  # noqa: E402 - the CPU tests' example table

import jitflow as jf  # noqa: E402
from jitflow.runtime.ops.registry import KERNELS, OPS  # noqa: E402
from jitflow.runtime.execution import placement
from jitflow.runtime.execution import device_memory as D  # noqa: E402
from jitflow.runtime.ops.registry import bind_kernel, kernel_attrs  # noqa: E402

from device_compare import assert_same, host  # noqa: E402

TABLE = placement.cuda_table()
# Ops that stay on the host by design (placement runs them on the CPU).
HOST_OPS = {"Placeholder", "Const", "PrintV2", "EagerPyFunc", "Add", "CopyToDevice", "CopyFromDevice"}
# The input pipeline's ops (jf.data iterators, file reads, parsing, image codecs and
# preprocessing, strings) run on the host, as tf.data's do: they feed the device, they do not
# run on it.
HOST_OPS |= {"AnonymousIteratorV3", "IteratorGetNext", "IteratorHasNext", "ReadFile", "SerializeTensor",
             "ParseTensor", "ParseExampleV2", "ParseSequenceExampleV2", "DecodeCSV", "DecodeRaw", "DecodeImage",
             "DecodeJpeg", "DecodePng", "EncodeJpeg", "EncodePng", "AdjustImage", "ConvertImageDtype",
             "GrayscaleToRGB", "RGBToGrayscale", "ImageCrop", "ImageFlip", "ImageRot90", "PerImageStandardization",
             "RandomOffsets", "ResizeBilinear", "ResizeNearestNeighbor", "ScaleAndTranslate", "SliceBySize",
             "AsString", "StaticRegexReplace", "StringCase", "StringFormat", "StringJoin", "StringLength",
             "StringSplitV2", "StringStrip", "StringToNumber"}
# The cross-replica collectives reduce on the host (MPI's buffers, or the replica threads'
# rendezvous): placement copies a GPU replica's values there and back.
HOST_OPS |= {"JfCollectiveAllGather", "JfCollectiveAllReduce", "JfCollectiveAllReduceStart",
             "JfCollectiveAllReduceWait"}
# int16 and int64 run the same kernels as int8 and int32 (test_cuda_ptx.py compiles them all);
# leaving them out keeps this module within the simulator's time budget.
NUMERIC = [(op, dt) for op, dt in cpu_cases.OP_DTYPES if not dt.is_string and dt not in (jf.int16, jf.int64)]


def _on_device(args):
    return [D.to_device(a) for a in args]


def test_every_data_op_has_a_cuda_kernel():
    missing = sorted(op for op in OPS if op not in HOST_OPS and op not in placement.DEVICE_AGNOSTIC
                     and not placement.has_gpu_kernel(op) and not op.startswith("Write"))
    assert not missing, f"ops without a CUDA kernel (add one to ops/cuda_kernels.py): {missing}"
    for op in cpu_cases.CASES:
        if op != "Add":  # string concatenation is a host op
            assert TABLE[op] is not KERNELS["cpu"][op], op
    # the CUDA table extends the CPU table: host ops keep their CPU kernel
    assert set(KERNELS["cpu"]) <= set(TABLE)
    assert TABLE["PrintV2"] is KERNELS["cpu"]["PrintV2"]


@pytest.mark.parametrize("op,dtype", NUMERIC, ids=[f"{op}-{dt.name}" for op, dt in NUMERIC])
def test_cuda_kernel_matches_cpu(op, dtype):
    examples = cpu_cases.CASES[op].examples(dtype)
    assert examples
    for n, (args, attrs) in enumerate(examples):
        kattrs = kernel_attrs(attrs)
        try:
            want = KERNELS["cpu"][op](*args, **kattrs)
        except Exception as e:  # the CUDA kernel must refuse the same input the same way
            with pytest.raises(type(e)):
                host(TABLE[op](*_on_device(args), **kattrs))
            continue
        got = host(TABLE[op](*_on_device(args), **kattrs))
        assert_same(f"{op} {attrs}", want, got)
        if n == 0:  # the kernel a graph node binds (what jf.function runs) agrees too
            bound = bind_kernel(OPS[op], "cuda", attrs, [jf.as_dtype(np.asarray(a).dtype)
                                                         if np.asarray(a).dtype != object else jf.string
                                                         for a in args])
            assert_same(f"{op} {attrs}", want, host(bound(*_on_device(args))))


def test_results_stay_on_the_device():
    x = D.to_device(np.arange(6, dtype=np.float32).reshape(2, 3))
    for op, args, attrs in [("Tanh", [x], {}), ("Sum", [x], {"axis": (1,), "keepdims": False}),
                            ("MatMul", [x, D.to_device(np.ones((3, 2), np.float32))],
                             {"transpose_a": False, "transpose_b": False}),
                            ("Transpose", [x], {"perm": (1, 0)})]:
        assert D.is_device_array(TABLE[op](*args, **attrs)), op


def test_string_ops_run_on_the_cpu():
    a = jf.constant(["x", "yz"])
    assert (a + "!").device.endswith("CPU:0")
    assert jf.equal(a, "x").device.endswith("CPU:0")
    assert (a + "!").numpy().tolist() == [b"x!", b"yz!"]
    # a numeric op beside them still goes to the GPU
    assert (jf.constant([1.0]) + 1.0).device.endswith("GPU:0")


def test_reductions_use_the_tree_path_and_many_blocks():
    """Long rows go through the shared-memory tree (several chunks per row, then a second pass)."""
    from jitflow.runtime.backends import cuda_primitives as P
    cols = P.RED * 8 * 3 + 5  # more than one chunk per row
    x = np.arange(2 * cols, dtype=np.float64).reshape(2, cols) / 7.0
    got = D.to_host(TABLE["Sum"](D.to_device(x), axis=(1,), keepdims=False))
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-12)
    xi = (np.arange(cols) % 11 - 5).astype(np.int32)
    xi[cols // 2] = 100
    assert int(D.to_host(TABLE["Max"](D.to_device(xi), axis=None, keepdims=False))) == 100
    assert int(D.to_host(TABLE["ArgMax"](D.to_device(xi), axis=0, output_type=jf.int64))) == cols // 2


def test_random_kernels_draw_in_range_and_continue_their_stream():
    jf.random.set_seed(7)
    a = jf.random.uniform([64], 2.0, 3.0, seed=1)
    b = jf.random.uniform([64], 2.0, 3.0, seed=1)
    assert a.device.endswith("GPU:0")
    va, vb = a.numpy(), b.numpy()
    assert ((va >= 2.0) & (va < 3.0)).all() and not np.array_equal(va, vb)  # the stream continues
    jf.random.set_seed(7)
    np.testing.assert_array_equal(jf.random.uniform([64], 2.0, 3.0, seed=1).numpy(), va)  # reproducible
    n = jf.random.normal([400], mean=5.0, stddev=0.5, dtype=jf.float64).numpy()
    assert abs(n.mean() - 5.0) < 0.2 and 0.35 < n.std() < 0.65
    k = jf.random.uniform([200], -3, 4, dtype=jf.int32).numpy()
    assert k.dtype == np.int32 and k.min() >= -3 and k.max() < 4 and len(set(k.tolist())) > 3
    h = jf.random.normal([8], dtype=jf.float16)
    assert h.dtype == jf.float16 and np.isfinite(h.numpy()).all()
    with pytest.raises(jf.errors.InvalidArgumentError, match="minval < maxval"):
        jf.random.uniform([2], 3, 3, dtype=jf.int32)
