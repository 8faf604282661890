"""The CUDA kernels of the ops added for TF 2 tutorials, against their CPU kernels.

Tiny inputs (the simulator runs one Python thread per GPU thread): broadcasting, every
axis, empty arrays, ties for top_k, NaN/inf for the rounding functions.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf  # noqa: F401 - loads every op
from jitflow.runtime.execution import device_memory as D
from jitflow.runtime.execution import placement
from jitflow.runtime.ops.registry import KERNELS

TABLE = placement.cuda_table()
F = np.array([[-2.5, -1.5, 0.5, 1.49], [2.5, np.nan, np.inf, -0.5]], np.float32)
I = np.arange(6, dtype=np.int32).reshape(2, 3)

CASES = [
    ("Floor", [F], {}), ("Ceil", [F], {}), ("Round", [F], {}), ("Invert", [I], {}),
    ("BroadcastTo", [I[:1]], {"shape": (3, 2, 3)}), ("BroadcastTo", [np.float32(2.0)], {"shape": (2,)}),
    ("Tile", [I], {"multiples": (2, 1)}), ("Tile", [I], {"multiples": (1, 0)}),
    ("SplitV", [I], {"size_splits": (1, 2), "axis": 1}), ("SplitV", [I], {"size_splits": (2,), "axis": 0}),
    ("LinSpace", [np.float32(1.0), np.float32(2.0)], {"num": 5}),
    ("LinSpace", [np.float64(1.0), np.float64(2.0)], {"num": 1}),
    ("Cumsum", [I], {"axis": 1, "exclusive": False, "reverse": False}),
    ("Cumsum", [I], {"axis": 0, "exclusive": True, "reverse": True}),
    ("Cumsum", [np.zeros((2, 0), np.float32)], {"axis": 1, "exclusive": False, "reverse": False}),
    ("TopKV2", [np.array([[3, 1, 3, 2], [0, 5, 5, 5]], np.int32)], {"k": 3, "sorted": True}),
    ("TopKV2", [np.array([1.5, -2.0], np.float32)], {"k": 0, "sorted": True}),
    ("Einsum", [I.astype(np.float32), I.T.astype(np.float32).copy()], {"equation": "ij,jk->ik"}),
    ("Einsum", [I.astype(np.float32)], {"equation": "ij->j"}),
    ("Einsum", [np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), np.ones((4,), np.float32)],
     {"equation": "ij,jk,k->i"}),
    ("Einsum", [I, I], {"equation": "ij,ij->"}),
]


def _host(x):
    if isinstance(x, tuple):
        return tuple(_host(v) for v in x)
    return D.to_host(x) if D.is_device_array(x) else np.asarray(x)


@pytest.mark.parametrize("op, args, attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_cuda_kernel_matches_cpu(op, args, attrs):
    want = KERNELS["cpu"][op](*args, **attrs)
    got = _host(TABLE[op](*[D.to_device(np.asarray(a)) for a in args], **attrs))
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        w = np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (op, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-6, equal_nan=True)


def test_every_new_op_has_a_cuda_kernel():
    for op in ["Floor", "Ceil", "Round", "Invert", "BroadcastTo", "Tile", "SplitV", "LinSpace", "Cumsum",
               "TopKV2", "Einsum", "Log1p", "Expm1", "Erf", "Rsqrt", "Reciprocal", "Tan", "Atan", "Asin",
               "Acos", "Sinh", "Cosh", "Softsign"]:
        assert placement.has_gpu_kernel(op), op


@pytest.mark.parametrize("op", ["FloorDiv", "FloorMod"])
def test_integer_division_by_zero_raises_on_the_gpu(op):
    x = D.to_device(np.array([7, 3], np.int32))
    y = D.to_device(np.array([2, 0], np.int32))
    with pytest.raises(jf.errors.InvalidArgumentError, match="Integer division by zero"):
        TABLE[op](x, y)
    np.testing.assert_array_equal(_host(TABLE[op](x, D.to_device(np.array([2, 2], np.int32)))),
                                  KERNELS["cpu"][op](np.array([7, 3], np.int32), np.array([2, 2], np.int32)))
