"""The "numpy" kernel table: the CPU kernels' exact results, computed without numba.

A new process has no numba yet (importing it and loading the cached kernels costs
0.5-1 s), so a concrete function's first calls run on these kernels while numba loads
in the background (`runtime.execution.numpy_tier`). They must give the numba kernels'
results bit for bit, or a value would depend on how early in a process it was computed:
each one here does the same IEEE operations in the same order as its numba twin, and
`tests/runtime/test_numpy_tier.py` checks every op and dtype of this table against the
numba kernel on edge values (zeros of both signs, infinities, NaN, extremes).

What is in the table, per op, is the input dtypes for which that holds:

* elementwise ops that are single IEEE operations (add, multiply, divide, compare, sqrt,
  ...) or selects of them (relu, sign, maximum), for real and integer dtypes; complex
  numbers are left out (numpy's SIMD complex products need not round as numba's do);
* tanh for float16/float32: jitflow's float32 tanh is a rational function of float32
  multiplies and adds (`cpu_kernels.tanh_float32`), which numpy evaluates the same way;
* sum, prod, mean, max, min, all, any: the numba loops accumulate sequentially (floats in
  float64), which `np.add.accumulate` / `np.multiply.accumulate` reproduce; integer sums
  and products wrap modulo 2**64 in any order; max/min keep the first extreme (or first
  NaN) as `np.argmax`/`np.argmin` do;
* the shape and data-movement ops whose CPU kernels are numpy already (`PLAIN_OPS`).

Not here, so a graph using them waits for numba on its first call: libm functions (exp,
log, sin, cos, sigmoid, float64 tanh, pow) - numpy has its own vectorised versions that
round differently from the libm calls numba makes; softmax/log-softmax (exp); matmul
(numba calls scipy's BLAS, numpy its own: different builds, different rounding);
argmax/argmin (numba skips a NaN that is not first; numpy returns it); random ops
(xoroshiro streams in numba); integer floordiv/mod (the numba loops define MIN // -1 and
the divide-by-zero check); and everything else with a numba kernel.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.registry import KERNEL_LOADERS, KERNELS, Kernel, kernel_table

_F32 = np.float32
_INTS = frozenset({"int8", "int16", "int32", "int64", "uint8"})
_FLOATS = frozenset({"float16", "float32", "float64"})
_REAL = _INTS | _FLOATS
_BOOL = frozenset({"bool"})


class NumpyKernel:
    """A numpy kernel that matches the CPU kernel for inputs of `dtypes` (all inputs of one dtype)."""

    __slots__ = ("run", "dtypes", "__name__")

    def __init__(self, run: Callable[..., Any], dtypes: FrozenSet[str], name: str) -> None:
        self.run = run
        self.dtypes = dtypes
        self.__name__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.run(*args, **kwargs)

    def accepts(self, in_dtypes: Sequence[_dt.DType]) -> bool:
        names = {d.name for d in in_dtypes}
        return len(names) <= 1 and names <= self.dtypes


def accepts(kernel: Kernel, in_dtypes: Sequence[_dt.DType]) -> bool:
    """Whether `kernel` (an entry of this table) gives the CPU kernel's results for these inputs."""
    check = getattr(kernel, "accepts", None)
    return True if check is None else bool(check(in_dtypes))


# -- elementwise -------------------------------------------------------------------------------
# numba's ufuncs warn as numpy's do (numpy checks the floating-point flags after the loop:
# "overflow encountered", "invalid value"), and so do these.
#
# sqrt_ reads `math.sqrt(a) if a >= 0 else nan`, but LLVM folds the select into the bare
# square-root instruction (whose NaN for a negative is the same NaN), so numba returns
# exactly np.sqrt: x86's default NaN (sign bit set) for negatives, the input NaN's payload
# for NaNs. The bit-for-bit test holds it to that.
def _elementwise(fn: Callable[..., Any], to_bool: bool = False) -> Callable[..., Any]:
    """`fn` as `UfuncKernel` runs it: float16 computes in float32 (numba has no float16
    arithmetic on the CPU) and rounds back; 0-d inputs give a numpy scalar, as a ufunc does."""
    def run(*arrays: Any) -> Any:
        if arrays and getattr(arrays[0], "dtype", None) == np.float16:
            out = fn(*[np.asarray(a).astype(np.float32) for a in arrays])
            return out if to_bool else np.asarray(out).astype(np.float16)
        out = fn(*arrays)
        if isinstance(out, np.ndarray) and out.ndim == 0 and all(np.ndim(a) == 0 for a in arrays):
            return out[()]
        return out
    return run


def _relu(a: Any) -> Any:
    # relu_: `a if a > 0 or a != a else 0`: -0.0 and negatives give +0, NaN stays itself.
    a = np.asarray(a)
    return np.where((a > 0) | (a != a), a, a.dtype.type(0))


def _sign(a: Any) -> Any:
    # sign_: NaN stays itself, else (a > 0) - (a < 0): -0.0 gives +0.
    a = np.asarray(a)
    s = (a > 0).astype(a.dtype) - (a < 0).astype(a.dtype)
    return np.where(a != a, a, s)


def _maximum(a: Any, b: Any) -> Any:
    # max_nan_: a NaN `a` wins, then a NaN `b`, then `a` if a >= b (so max(-0.0, +0.0) is -0.0).
    a, b = np.asarray(a), np.asarray(b)
    return np.where(a != a, a, np.where(b != b, b, np.where(a >= b, a, b)))


def _minimum(a: Any, b: Any) -> Any:
    a, b = np.asarray(a), np.asarray(b)
    return np.where(a != a, a, np.where(b != b, b, np.where(a <= b, a, b)))


def _abs(a: Any) -> Any:
    # abs_ on floats clears the sign bit (NaN keeps its payload); on integers MIN stays MIN.
    return np.abs(a)


_TANH_C, _TANH_TINY, _TANH_SAT, _ONE = K._TANH_CLAMP, K._TANH_TINY, K._TANH_SAT, K._ONE
_P13, _P11, _P9, _P7, _P5, _P3, _P1 = K._TANH_P
_Q6, _Q4, _Q2, _Q0 = K._TANH_Q


def tanh_float32(a: Any) -> Any:
    """`cpu_kernels.tanh_float32` on a float32 array: the same float32 operations in the same order."""
    a = np.asarray(a, dtype=np.float32)
    x = np.where(a > _TANH_C, _TANH_C, np.where(a < -_TANH_C, -_TANH_C, a))  # NaN passes
    x2 = x * x
    p = ((((((x2 * _P13 + _P11) * x2 + _P9) * x2 + _P7) * x2 + _P5) * x2 + _P3) * x2 + _P1) * x
    q = ((x2 * _Q6 + _Q4) * x2 + _Q2) * x2 + _Q0
    r = p / q
    r = np.where(np.abs(a) < _TANH_TINY, a, r)
    r = np.where(a > _TANH_SAT, _ONE, r)
    return np.where(a < -_TANH_SAT, -_ONE, r).astype(np.float32, copy=False)


# (op, numpy function, input dtypes it matches numba for, boolean output)
_ELEMENTWISE: List[Tuple[str, Callable[..., Any], FrozenSet[str], bool]] = [
    ("AddV2", np.add, _REAL, False), ("Sub", np.subtract, _REAL, False),
    ("Mul", np.multiply, _REAL, False), ("RealDiv", np.divide, _FLOATS, False),
    ("Maximum", _maximum, _REAL, False), ("Minimum", _minimum, _REAL, False),
    ("Equal", np.equal, _REAL | _BOOL, True), ("NotEqual", np.not_equal, _REAL | _BOOL, True),
    ("Less", np.less, _REAL, True), ("LessEqual", np.less_equal, _REAL, True),
    ("Greater", np.greater, _REAL, True), ("GreaterEqual", np.greater_equal, _REAL, True),
    ("LogicalAnd", np.logical_and, _BOOL, False), ("LogicalOr", np.logical_or, _BOOL, False),
    ("LogicalNot", np.logical_not, _BOOL, False), ("Neg", np.negative, _REAL, False),
    ("Abs", _abs, _REAL, False), ("Sign", _sign, _REAL, False), ("Sqrt", np.sqrt, _FLOATS, False),
    ("Square", np.square, _REAL, False), ("Relu", _relu, _REAL, False),
    ("Tanh", tanh_float32, frozenset({"float16", "float32"}), False),
]


# -- reductions over the last axis of a 2-D array (the numba kernels' contract) ----------------
def sum_2d(x: np.ndarray, out: np.ndarray) -> None:
    """`reduce_sum_2d` / `reduce_sum_int_2d`: floats accumulate left to right in float64."""
    if x.dtype.kind == "f":  # numba starts from +0.0: `+ 0.0` turns an all-(-0.0) sum into +0.0 as well
        out[:] = np.add.accumulate(x, axis=1, dtype=np.float64)[:, -1] + 0.0
    else:  # int64 wraps: any order gives the same sum
        out[:] = np.add.reduce(x, axis=1, dtype=np.int64)


def prod_2d(x: np.ndarray, out: np.ndarray) -> None:
    """`reduce_prod_2d` / `reduce_prod_int_2d`: floats multiply left to right in float64."""
    if x.dtype.kind == "f":
        out[:] = np.multiply.accumulate(x, axis=1, dtype=np.float64)[:, -1]
    else:
        out[:] = np.multiply.reduce(x, axis=1, dtype=np.int64)


def _extreme_2d(x: np.ndarray, out: np.ndarray, index: np.ndarray) -> None:
    """Pick `x[i, index[i]]`, where `index` is argmax/argmin: the first extreme or first NaN.

    The numba loop differs in one case: a NaN in column 0 is replaced by the next NaN (its
    `v != v` test fires again), so the NaN it returns, payload included, is the second one."""
    if x.dtype.kind == "f" and x.shape[1] > 1:
        lead_nan = x[:, 0] != x[:, 0]
        if lead_nan.any():
            later = x[:, 1:] != x[:, 1:]
            index = np.where(lead_nan & later.any(axis=1), 1 + np.argmax(later, axis=1), index)
    out[:] = np.take_along_axis(x, index[:, None], axis=1)[:, 0]


def max_2d(x: np.ndarray, out: np.ndarray) -> None:
    """`reduce_max_2d`: the first largest value, or a NaN if there is one (argmax's choice)."""
    _extreme_2d(x, out, np.argmax(x, axis=1))


def min_2d(x: np.ndarray, out: np.ndarray) -> None:
    """`reduce_min_2d`: the first smallest value, or a NaN if there is one (argmin's choice)."""
    _extreme_2d(x, out, np.argmin(x, axis=1))


def all_2d(x: np.ndarray, out: np.ndarray) -> None:
    out[:] = np.all(x, axis=1)


def any_2d(x: np.ndarray, out: np.ndarray) -> None:
    out[:] = np.any(x, axis=1)


_sum = M._reduction_kernel(sum_2d, lambda dt: 0)
_REDUCTIONS = [
    ("Sum", _sum, _REAL), ("Prod", M._reduction_kernel(prod_2d, lambda dt: 1), _REAL),
    ("Max", M._reduction_kernel(max_2d, M._lowest), _REAL),
    ("Min", M._reduction_kernel(min_2d, M._highest), _REAL),
    ("Mean", M._mean_of(_sum), _REAL),
    ("All", M._reduction_kernel(all_2d, lambda dt: True, "bool"), _BOOL),
    ("Any", M._reduction_kernel(any_2d, lambda dt: False, "bool"), _BOOL),
]

# Ops whose CPU kernel is plain numpy already (no numba anywhere under it): the numpy
# table holds the CPU kernel itself. The tier test runs each of them in a fresh process
# and checks that numba stays unimported.
PLAIN_OPS = ("Placeholder", "Const", "Identity", "StopGradient", "Cast", "Reshape", "Transpose",
             "ExpandDims", "Squeeze", "ConcatV2", "Pack", "Unpack", "StridedSlice", "Shape", "Size",
             "Fill", "ZerosLike", "OnesLike", "Range", "SelectV2", "BroadcastTo", "Tile", "SplitV",
             "LinSpace")


def load_table() -> Dict[str, Kernel]:
    """The "numpy" kernel table (the registry's loader for it)."""
    table: Dict[str, Kernel] = {}
    for op in PLAIN_OPS:
        if op in KERNELS["cpu"]:
            table[op] = KERNELS["cpu"][op]
    for op, fn, dtypes, to_bool in _ELEMENTWISE:
        table[op] = NumpyKernel(_elementwise(fn, to_bool), dtypes, op)
    for op, run, dtypes in _REDUCTIONS:
        table[op] = NumpyKernel(run, dtypes, op)
    return table


def kernel(tf_op: str, in_dtypes: Sequence[_dt.DType]) -> Optional[Kernel]:
    """The numpy kernel of `tf_op` for these input dtypes, or None if numba must run it."""
    k = kernel_table("numpy").get(tf_op)
    return k if k is not None and accepts(k, in_dtypes) else None


KERNEL_LOADERS["numpy"] = load_table
