"""numba helpers that compiled segments call, built from the interpreter's own kernels.

Compiled and interpreted runs must give identical results, so segments never use
numba's versions of transcendental functions or reductions: they call these
ufuncs (made from the same scalar functions as `cpu_kernels`) and wrap the same 2-D
reduction kernels (same float64 accumulation, same order).
"""
from __future__ import annotations

import numpy as np
from numba import njit, vectorize

from jitflow.runtime.ops import cpu_kernels as K

# numpy runs the first loop the inputs cast to safely, so narrower types come first.
_FLOAT = ["float32(float32)", "float64(float64)"]
_NUMERIC = ["int32(int32)", "int64(int64)"] + _FLOAT

exp = vectorize(_FLOAT, cache=True)(K.exp_)
log = vectorize(_FLOAT, cache=True)(K.log_)
sqrt = vectorize(_FLOAT, cache=True)(K.sqrt_)
tanh = vectorize(_FLOAT, cache=True)(K.tanh_)
sigmoid = vectorize(_FLOAT, cache=True)(K.sigmoid_)
sin = vectorize(_FLOAT, cache=True)(K.sin_)
cos = vectorize(_FLOAT, cache=True)(K.cos_)
relu = vectorize(_NUMERIC, cache=True)(K.relu_)
power = vectorize(["int32(int32, int32)", "int64(int64, int64)", "float32(float32, float32)",
                   "float64(float64, float64)"], cache=True)(K.pow_)


def _full(kernel_2d):
    @njit(cache=True, nogil=True)
    def reduce_all(x):
        out = np.empty(1, x.dtype)
        kernel_2d(np.ascontiguousarray(x).reshape(1, x.size), out)
        return out[0]
    return reduce_all


def _axis(kernel_2d):
    @njit(cache=True, nogil=True)
    def reduce_axis(x, axis):
        x2 = np.ascontiguousarray(x.T) if axis == 0 else np.ascontiguousarray(x)
        out = np.empty(x2.shape[0], x.dtype)
        kernel_2d(x2, out)
        return out
    return reduce_axis


sum_all, sum_axis = _full(K.reduce_sum_2d), _axis(K.reduce_sum_2d)
isum_all, isum_axis = _full(K.reduce_sum_int_2d), _axis(K.reduce_sum_int_2d)
prod_all, iprod_all = _full(K.reduce_prod_2d), _full(K.reduce_prod_int_2d)
max_all, min_all = _full(K.reduce_max_2d), _full(K.reduce_min_2d)


@njit(cache=True, nogil=True)
def softmax(x):
    out = np.empty_like(x)
    K.softmax_2d(x, out)
    return out


@njit(cache=True, nogil=True)
def log_softmax(x):
    out = np.empty_like(x)
    K.log_softmax_2d(x, out)
    return out
