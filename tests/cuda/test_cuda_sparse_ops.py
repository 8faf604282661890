"""The CUDA kernels of the `jf.sparse` ops (runtime/backends/cuda_sparse_kernels.py) against
their CPU kernels, example by example, on device copies of the inputs.

The examples cover ordered and unordered indices, duplicates, empty inputs, rank 1-3,
broadcast dense operands, adjoints, keepdims and every dtype kind a sparse tensor carries
(float16 and the narrow ints go through the wider atomics). Results must agree in dtype,
shape and value; where the CPU kernel raises (out-of-bounds or unordered indices, shape
mismatches), the CUDA kernel must raise the same error type. The ops run end to end
through `jf.sparse` on the GPU at the bottom.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np
import pytest

import jitflow as jf
import jitflow.runtime.sparse  # noqa: F401 - registers the sparse ops
from jitflow.runtime.execution import device_memory as D
from jitflow.runtime.execution import placement
from jitflow.runtime.ops.registry import KERNELS, OPS, bind_kernel

from device_compare import assert_same, host

TABLE = placement.cuda_table()
OPS_HERE = ["SparseAdd", "SparseConcat", "SparseDenseCwiseOp", "SparseExpandDims", "SparseFillEmptyRows",
            "SparseFromDense", "SparseReduceSum", "SparseReorder", "SparseReshape", "SparseRetain", "SparseSlice",
            "SparseTensorDenseAdd", "SparseTensorDenseMatMul", "SparseToDense"]
DTYPES = [np.float32, np.int32, np.float16, np.int8, np.float64, np.bool_]


def i64(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def vals(n: int, dt: Any, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dt is np.bool_:
        return rng.random(n) < 0.6
    return np.asarray(rng.integers(1, 9, size=n) * (1 if np.dtype(dt).kind == "i" else 0.25), dtype=dt)


IDX = i64([[0, 1], [1, 0], [1, 2], [2, 3]])           # row-major
MIXED = i64([[1, 2], [0, 1], [2, 3], [1, 0], [0, 0]])  # unordered
SHAPE = i64([3, 4])
NONE2 = np.zeros((0, 2), np.int64)


def examples(op: str, dt: Any) -> List[Tuple[tuple, Dict[str, Any]]]:
    v4, v5 = vals(4, dt), vals(5, dt, 1)
    one = np.asarray(vals(1, dt, 2)[0])
    dense = vals(12, dt, 3).reshape(3, 4)
    if op == "SparseToDense":
        return [((IDX, SHAPE, v4, one), {"validate_indices": True}),
                ((MIXED, SHAPE, v5, one), {"validate_indices": False}),
                ((MIXED, SHAPE, v5, one), {"validate_indices": True}),  # out of order: refused
                ((i64([[0, 1], [0, 1]]), SHAPE, v4[:2], one), {"validate_indices": True}),  # repeated
                ((i64([[0, 4]]), SHAPE, v4[:1], one), {"validate_indices": True}),  # out of bounds
                ((NONE2, SHAPE, v4[:0], one), {"validate_indices": True}),
                ((i64([[2], [0]]), i64([3]), v4[:2], one), {"validate_indices": False}),
                ((i64([[1, 1], [0, 2], [1, 1], [1, 1]]), SHAPE, v4, one), {"validate_indices": False})]  # last wins
    if op == "SparseFromDense":
        zeros = np.zeros((2, 3), dt)
        return [((dense * (np.arange(12).reshape(3, 4) % 3 == 0).astype(dt),), {}), ((zeros,), {}),
                ((vals(6, dt, 4).reshape(1, 2, 3),), {}), ((np.asarray(one),), {}), ((vals(5, dt, 5),), {})]
    if op == "SparseReorder":
        return [((MIXED, v5, SHAPE), {}), ((IDX, v4, SHAPE), {}), ((NONE2, v4[:0], SHAPE), {}),
                ((i64([[1, 1, 0], [0, 2, 1], [1, 0, 1]]), v4[:3], i64([2, 3, 2])), {}),
                ((i64([[3, 0]]), v4[:1], SHAPE), {})]
    if op == "SparseReshape":
        return [((IDX, SHAPE, i64([2, -1])), {}), ((MIXED, SHAPE, i64([4, 3, 1])), {}), ((IDX, SHAPE, i64([12])), {}),
                ((IDX, SHAPE, i64([5, -1])), {}), ((IDX, SHAPE, i64([-1, -1])), {}), ((NONE2, SHAPE, i64([6, 2])), {})]
    if op == "SparseSlice":
        return [((IDX, v4, SHAPE, i64([1, 0]), i64([2, 3])), {}), ((MIXED, v5, SHAPE, i64([0, 0]), i64([9, 9])), {}),
                ((IDX, v4, SHAPE, i64([3, 4]), i64([1, 1])), {}), ((IDX, v4, SHAPE, i64([0]), i64([1, 1])), {}),
                ((NONE2, v4[:0], SHAPE, i64([0, 0]), i64([2, 2])), {})]
    if op == "SparseRetain":
        return [((IDX, v4, np.array([True, False, True, True])), {}), ((MIXED, v5, np.zeros(5, bool)), {}),
                ((IDX, v4, np.array([True, False])), {})]
    if op == "SparseExpandDims":
        return [((IDX, SHAPE), {"axis": a}) for a in (0, 1, 2, -1, -3, 3)] + [((NONE2, SHAPE), {"axis": 1})]
    if op == "SparseFillEmptyRows":
        return [((i64([[1, 2], [1, 0], [3, 1]]), v4[:3], i64([5, 4]), one), {}), ((IDX, v4, SHAPE, one), {}),
                ((NONE2, v4[:0], SHAPE, one), {}), ((i64([[2], [0]]), v4[:2], i64([4]), one), {}),
                ((i64([[5, 0]]), v4[:1], SHAPE, one), {})]
    if op == "SparseAdd":
        b_idx = i64([[1, 0], [0, 3], [2, 3], [1, 0]])
        b_vals = -vals(4, dt, 6) if np.dtype(dt).kind in "fi" else vals(4, dt, 6)
        return [((IDX, v4, SHAPE, b_idx, b_vals, SHAPE), {"thresh": 0}),
                ((IDX, v4, SHAPE, b_idx, b_vals, SHAPE), {"thresh": 3}),
                ((IDX, v4, SHAPE, IDX, v4, SHAPE), {"thresh": 0}),
                ((IDX, v4, SHAPE, NONE2, v4[:0], SHAPE), {"thresh": 0}),
                ((IDX, v4, SHAPE, IDX, v4, i64([3, 5])), {"thresh": 0}),
                ((IDX, v4, SHAPE, i64([[3, 0]]), v4[:1], SHAPE), {"thresh": 0})]
    if op == "SparseTensorDenseAdd":
        return [((MIXED, v5, SHAPE, dense), {}), ((IDX, v4, SHAPE, dense[0]), {}), ((IDX, v4, SHAPE, one), {}),
                ((i64([[0, 1], [0, 1]]), v4[:2], SHAPE, dense), {}), ((i64([[0, 9]]), v4[:1], SHAPE, dense), {})]
    if op == "SparseDenseCwiseOp":
        nonzero = np.where(dense == 0, np.ones_like(dense), dense)
        return [((MIXED, v5, SHAPE, nonzero, ), {"mode": m}) for m in ("mul", "div")] + \
            [((IDX, v4, SHAPE, nonzero[:, :1]), {"mode": "mul"}), ((IDX, v4, SHAPE, nonzero[0]), {"mode": "div"}),
             ((IDX, v4, SHAPE, nonzero[None]), {"mode": "mul"}), ((NONE2, v4[:0], SHAPE, nonzero), {"mode": "mul"})]
    if op == "SparseReduceSum":
        idx3 = i64([[0, 1, 0], [1, 2, 1], [1, 0, 1], [0, 1, 0]])
        return [((idx3, v4, i64([2, 3, 2])), {"axis": axis, "keepdims": k})
                for axis in (None, (0,), (1, -1), (2,), ()) for k in (False, True)] + \
            [((MIXED, v5, SHAPE), {"axis": (2,), "keepdims": False}),  # out of range
             ((NONE2, v4[:0], SHAPE), {"axis": (1,), "keepdims": False})]
    if op == "SparseConcat":
        p2 = (i64([[0, 1], [1, 0]]), v4[:2], i64([2, 2]))
        p3 = (i64([[1, 2], [0, 0]]), v4[2:], i64([2, 3]))
        p4 = (i64([[1, 1]]), v4[:1], i64([3, 2]))
        return [((*p2, *p3), {"concat_dim": 1, "expand_nonconcat_dims": False}),
                ((*p2, *p4), {"concat_dim": 0, "expand_nonconcat_dims": False}),
                ((*p3, *p4, *p2), {"concat_dim": -1, "expand_nonconcat_dims": True}),
                ((*p2, *p4), {"concat_dim": 1, "expand_nonconcat_dims": False}),
                ((*p2,), {"concat_dim": 0, "expand_nonconcat_dims": False})]
    if op == "SparseTensorDenseMatMul":
        b = vals(8, dt, 7).reshape(4, 2)
        return [((MIXED, v5, SHAPE, b), {"adjoint_a": False, "adjoint_b": False}),
                ((MIXED, v5, SHAPE, b.T.copy()), {"adjoint_a": False, "adjoint_b": True}),
                ((MIXED, v5, SHAPE, b[:3]), {"adjoint_a": True, "adjoint_b": False}),
                ((IDX, v4, SHAPE, b[:3]), {"adjoint_a": False, "adjoint_b": False}),
                ((NONE2, v4[:0], SHAPE, b), {"adjoint_a": False, "adjoint_b": False})]
    raise KeyError(op)


def test_every_sparse_op_has_its_own_cuda_kernel():
    for op in OPS_HERE:
        assert op in OPS, op
        assert placement.has_gpu_kernel(op), op
        assert TABLE[op] is not KERNELS["cpu"][op], op


CASES = [(op, dt) for op in OPS_HERE for dt in DTYPES
         if not (op == "SparseDenseCwiseOp" and dt is np.bool_)]  # bool / bool has no dtype-preserving meaning


@pytest.mark.parametrize("op,dtype", CASES, ids=[f"{op}-{np.dtype(dt).name}" for op, dt in CASES])
def test_cuda_sparse_kernel_matches_cpu(op, dtype):
    for n, (args, attrs) in enumerate(examples(op, dtype)):
        what = f"{op}[{np.dtype(dtype).name}] example {n} attrs {attrs}"
        try:
            want = KERNELS["cpu"][op](*args, **attrs)
        except Exception as e:  # the CUDA kernel must refuse the same input the same way
            with pytest.raises(type(e)):
                host(TABLE[op](*[D.to_device(a) for a in args], **attrs))
            continue
        got = host(TABLE[op](*[D.to_device(a) for a in args], **attrs))
        assert_same(what, want, got)
        if n == 0:  # the kernel a graph node binds agrees too
            bound = bind_kernel(OPS[op], "cuda", attrs, [jf.as_dtype(np.asarray(a).dtype) for a in args])
            assert_same(what + " (bound)", want, host(bound(*[D.to_device(a) for a in args])))


def test_sparse_api_runs_on_the_gpu():
    st = jf.sparse.SparseTensor([[1, 0], [0, 1]], [5.0, 6.0], [2, 3])
    ordered = jf.sparse.reorder(st)
    assert ordered.indices.device.endswith("GPU:0")
    assert ordered.indices.numpy().tolist() == [[0, 1], [1, 0]]
    dense = jf.sparse.to_dense(ordered)
    assert dense.device.endswith("GPU:0") and dense.numpy().tolist() == [[0.0, 6.0, 0.0], [5.0, 0.0, 0.0]]
    back = jf.sparse.from_dense(dense)
    assert back.values.numpy().tolist() == [6.0, 5.0]
    out = jf.sparse.sparse_dense_matmul(ordered, jf.ones([3, 2]))
    assert out.device.endswith("GPU:0") and out.numpy().tolist() == [[6.0, 6.0], [5.0, 5.0]]

    @jf.function
    def total(x):
        return jf.sparse.reduce_sum(jf.sparse.add(x, x), axis=1)

    assert total(ordered).numpy().tolist() == [12.0, 10.0]
