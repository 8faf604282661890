"""The CUDA kernels of runtime/backends/cuda_math_extra_kernels.py against their CPU kernels.

Complex numbers, cumprod, inverse/determinant, and the ops whose output size depends on
the data (where, unique, segment_sum, bincount) or that index by vectors (gather_nd,
tensor_scatter_nd_add, searchsorted). Tiny inputs (the simulator runs one Python thread
per GPU thread): broadcasting, empty and 0-d arrays, NaN, duplicates, and bad input,
which must raise the CPU kernel's error type.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

from jitflow.runtime.execution import device_memory as D
from jitflow.runtime.execution import placement
from jitflow.runtime.ops.registry import KERNELS

TABLE = placement.cuda_table()
OPS = ["Angle", "Complex", "ComplexAbs", "Conj", "Imag", "Real", "Cumprod", "MatrixDeterminant", "MatrixInverse",
       "SearchSorted", "SegmentSum", "Bincount", "TensorScatterAdd", "GatherNd", "ResourceStridedSliceAssign",
       "Unique", "Where"]
Z64 = np.array([[1 + 2j, -3.5 + 0j], [0 - 1j, 2.25 - 4j]], np.complex64)
Z128 = np.array([3 - 4j, -1 + 1j, 0j], np.complex128)
F = np.array([[4.0, 1.0, 2.0], [1.0, 3.0, 0.5], [2.0, 0.5, 5.0]])
NAN = np.array([2.0, np.nan, 1.0, 2.0, np.nan, -0.0, 0.0], np.float32)
I32, I64 = jf.int32, jf.int64

CASES = [
    *[(op, [z], {}) for op in ("Real", "Imag", "Conj", "Angle", "ComplexAbs") for z in (Z64, Z128)],
    ("Complex", [np.float32([1, 2]), np.float32([[3], [-1]])], {}),
    ("Complex", [np.float64([1.5, -2]), np.float64([0.5, 4])], {}),
    ("Cumprod", [np.arange(1, 7, dtype=np.float32).reshape(2, 3)], {"axis": 0, "exclusive": True, "reverse": False}),
    ("Cumprod", [np.arange(1, 7, dtype=np.int64).reshape(2, 3)], {"axis": -1, "exclusive": False, "reverse": True}),
    ("Cumprod", [Z64], {"axis": 1, "exclusive": False, "reverse": False}),
    ("MatrixInverse", [F], {"adjoint": False}),
    ("MatrixInverse", [np.stack([F, F.T * 2]).astype(np.float32)], {"adjoint": True}),
    ("MatrixInverse", [np.array([[0, 1], [1, 0]], np.complex128) + 1j * np.eye(2)], {"adjoint": True}),
    ("MatrixInverse", [np.array([[1.0, 2.0], [2.0, 4.0]])], {"adjoint": False}),  # singular: raises
    ("MatrixInverse", [np.zeros((0, 2, 2), np.float32)], {"adjoint": False}),
    ("MatrixDeterminant", [F], {}),
    ("MatrixDeterminant", [np.stack([F, np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0.0]])]).astype(np.float32)], {}),
    ("MatrixDeterminant", [np.array([[2 + 1j, 1j], [1, 3 - 1j]], np.complex64)], {}),
    ("MatrixDeterminant", [np.zeros((2, 0, 0))], {}),
    ("SearchSorted", [np.float32([1, 3, 3, 5]), np.float32([3, 0, 6, np.nan])], {"side": "left", "out_type": I32}),
    ("SearchSorted", [np.float32([1, 3, 3, 5]), np.float32([3, 0, 6, np.nan])], {"side": "right", "out_type": I64}),
    ("SearchSorted", [np.int32([[1, 2, 9], [0, 0, 4]]), np.int32([[2, 10], [0, 4]])], {"side": "right",
                                                                                   "out_type": I32}),
    ("SearchSorted", [np.int32([[1, 2], [0, 4]]), np.int32([[2, 10]])], {"side": "left", "out_type": I32}),
    ("SegmentSum", [np.arange(8, dtype=np.float32).reshape(4, 2), np.int32([0, 0, 2, 2])], {}),
    ("SegmentSum", [Z128, np.int64([1, 1, 3])], {}),
    ("SegmentSum", [np.int32([1, 2, 3]), np.int32([1, 0, 2])], {}),  # not sorted: raises
    ("SegmentSum", [np.zeros((0, 3), np.float32), np.int32([])], {}),
    ("Bincount", [np.int32([1, 1, 4, 2])], {"minlength": None, "maxlength": None, "dtype": I32}),
    ("Bincount", [np.int64([[1, 1], [7, 0]])], {"minlength": 9, "maxlength": None, "dtype": I64}),
    ("Bincount", [np.int32([0, 5, 1]), np.float32([0.5, 2, 3])], {"minlength": None, "maxlength": 3,
                                                                   "dtype": I32}),
    ("Bincount", [np.int32([]), np.float64([])], {"minlength": 2, "maxlength": None, "dtype": I32}),
    ("Bincount", [np.int32([1, -1])], {"minlength": None, "maxlength": None, "dtype": I32}),  # raises
    ("TensorScatterAdd", [np.float32([1, 2, 3, 4]), np.int32([[1], [3], [1]]), np.float32([10, 20, 30])], {}),
    ("TensorScatterAdd", [np.ones((2, 3), np.int8), np.int64([[0], [0]]), np.int8([[1, 2, 3], [4, 5, 6]])], {}),
    ("TensorScatterAdd", [np.zeros((2, 2), np.complex64), np.int32([[1, 0], [1, 0]]), np.complex64([1j, 2])], {}),
    ("TensorScatterAdd", [np.float32([1, 2]), np.int32([[2]]), np.float32([1])], {}),  # out of range: raises
    ("GatherNd", [np.arange(12, dtype=np.float32).reshape(3, 4), np.int64([[2, 1], [0, 3]])], {}),
    ("GatherNd", [np.arange(12, dtype=np.int32).reshape(3, 4), np.int64([[[2]], [[0]]])], {}),
    ("GatherNd", [np.arange(4, dtype=np.float64), np.zeros((0, 1), np.int64)], {}),
    ("GatherNd", [np.arange(4, dtype=np.float64), np.int64([[4]])], {}),  # out of range: raises
    ("Unique", [np.int32([1, 1, 2, 4, 4, 4, 7, 8, 8, 2])], {"out_idx": I32}),
    ("Unique", [NAN], {"out_idx": I64}),
    ("Unique", [NAN.astype(np.float16)], {"out_idx": I32}),
    ("Unique", [np.int64([])], {"out_idx": I32}),
    ("Where", [np.array([[True, False, True], [False, False, True]])], {}),
    ("Where", [np.zeros((2, 0), bool)], {}),
    ("Where", [np.array(True)], {}),
    ("Where", [np.arange(-2, 10, dtype=np.int32) % 3 == 0], {}),
    ("Where", [np.float32([[0, 1.5], [np.nan, -0.0]])], {}),
    # float16 goes through float32 on the device, as on the CPU
    ("SearchSorted", [np.float16([0.5, 1, 2]), np.float16([1, 3])], {"side": "left", "out_type": I32}),
    ("SegmentSum", [np.float16([[1, 2], [3, 4.5]]), np.int32([0, 1])], {}),
    ("TensorScatterAdd", [np.float16([1, 2, 3]), np.int32([[0], [0]]), np.float16([0.5, 0.25])], {}),
    ("Cumprod", [np.float16([1.5, 2, -1])], {"axis": 0, "exclusive": False, "reverse": False}),
    ("Bincount", [np.int32([5, 6]), np.float16([1, 2])], {"minlength": 1, "maxlength": 4, "dtype": I32}),
    ("MatrixDeterminant", [np.eye(2, dtype=np.float16)], {}),  # numpy's linalg refuses float16: raises
]


def _host(x):
    if isinstance(x, (tuple, list)):
        return tuple(_host(v) for v in x)
    return D.to_host(x) if D.is_device_array(x) else np.asarray(x)


def _same(op, want, got):
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert isinstance(g, np.ndarray) and g.shape == w.shape and g.dtype == w.dtype, \
            (op, g.shape, w.shape, getattr(g, "dtype", None), w.dtype)
        tol = 1e-3 if w.dtype == np.float16 else 1e-5 if w.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=op)


@pytest.mark.parametrize("op, args, attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_cuda_kernel_matches_cpu(op, args, attrs):
    try:
        want = KERNELS["cpu"][op](*args, **attrs)
    except Exception as e:  # the CUDA kernel refuses the same input the same way
        with pytest.raises(type(e)):
            _host(TABLE[op](*[D.to_device(np.asarray(a)) for a in args], **attrs))
        return
    got = _host(TABLE[op](*[D.to_device(np.asarray(a)) for a in args], **attrs))
    _same(op, want, got)


def test_bad_inputs_are_covered():
    """Each 'raises' example above really raises on the CPU (so the comparison checks an error)."""
    raising = [c for c in CASES if c[1] and _raises(c)]
    assert {c[0] for c in raising} == {"MatrixInverse", "SegmentSum", "Bincount", "TensorScatterAdd", "GatherNd",
                                          "SearchSorted", "MatrixDeterminant"}


def _raises(case) -> bool:
    op, args, attrs = case
    try:
        KERNELS["cpu"][op](*args, **attrs)
    except Exception:
        return True
    return False


def test_every_op_here_has_a_cuda_kernel():
    for op in OPS:
        assert placement.has_gpu_kernel(op), op


def test_sliced_assignment_updates_a_gpu_variable_in_place_of_a_copy():
    v = jf.Variable(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert v.device.endswith("GPU:0")
    want = np.arange(12, dtype=np.float32).reshape(3, 4)
    v[1:, ::2].assign(jf.constant([[-1.0, -2.0]]))  # broadcast over rows
    want[1:, ::2] = [[-1.0, -2.0]]
    v[0].assign(jf.constant([9.0, 8.0, 7.0, 6.0]))
    want[0] = [9.0, 8.0, 7.0, 6.0]
    assert D.is_device_array(v._value)
    np.testing.assert_array_equal(v.numpy(), want)
    with pytest.raises(jf.errors.InvalidArgumentError, match="cannot assign"):
        v[0].assign(jf.ones([3]))
    np.testing.assert_array_equal(v.numpy(), want)  # a refused assignment changes nothing

    @jf.function
    def step(k):
        v[:, k].assign(jf.fill([3], 5.0))
        at = jf.reshape(jf.stack([0, k, 2, 3]), [2, 2])
        return jf.gather_nd(v, at), jf.tensor_scatter_nd_add(v, [[1, 1]], [100.0])

    picked, scattered = step(jf.constant(1))
    want[:, 1] = 5.0
    np.testing.assert_array_equal(v.numpy(), want)
    assert D.is_device_array(v._value) and picked.device.endswith("GPU:0")
    assert picked.numpy().tolist() == [5.0, want[2, 3]]
    want[1, 1] += 100.0
    np.testing.assert_array_equal(scattered.numpy(), want)


def test_public_functions_run_on_the_gpu_eagerly_and_traced():
    """Through jf's API: each op is placed on the GPU and gives the CPU's values, in a
    jf.function too (the kernels a graph binds)."""
    x = np.array([[3, 0, 1], [1, 0, 2]], np.int32)
    z = jf.complex(jf.constant([1.0, -2.0]), jf.constant([0.5, 3.0]))
    assert z.device.endswith("GPU:0") and z.dtype == jf.complex64

    def compute(t):
        y, idx = jf.unique(jf.reshape(t, [-1]))
        m = jf.cast(t[:, :2], jf.float64) + jf.eye(2, dtype=jf.float64)
        return (jf.where(t > 0), y, idx, jf.math.bincount(t), jf.math.cumprod(t, axis=1), jf.linalg.det(m),
                jf.linalg.inv(m), jf.math.abs(z), jf.math.angle(z))

    eager = compute(jf.constant(x))
    traced = jf.function(compute)(jf.constant(x))
    for e, t in zip(eager, traced):
        assert e.device.endswith("GPU:0") and t.device.endswith("GPU:0")
        np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-6)
    assert eager[0].numpy().tolist() == [[0, 0], [0, 2], [1, 0], [1, 2]]
    assert eager[1].numpy().tolist() == [3, 0, 1, 2] and eager[2].numpy().tolist() == [0, 1, 2, 2, 1, 3]
    assert eager[3].numpy().tolist() == [2, 2, 1, 1]
    np.testing.assert_allclose(eager[5].numpy(), np.linalg.det(x[:, :2] + np.eye(2)))


def test_sliced_assignment_of_a_cpu_variable_stays_on_the_cpu():
    """Device-agnostic: with a GPU visible, a CPU variable's slice is assigned on the host,
    eagerly and traced (its bounds computed on the GPU are copied back)."""
    with jf.device("/CPU:0"):
        v = jf.Variable(np.zeros((2, 3), np.int32))
    assert v.device.endswith("CPU:0")

    @jf.function
    def step(k):
        v[k + 1 - 1, 1:].assign(jf.constant([7, 8]))

    step(jf.constant(1))
    v[0, 0].assign(jf.constant(5))
    assert isinstance(v._value, np.ndarray)
    assert v.numpy().tolist() == [[5, 0, 0], [0, 7, 8]]
