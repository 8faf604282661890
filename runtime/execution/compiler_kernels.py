"""numba helpers that compiled segments call, built from the interpreter's own kernels.

Compiled and interpreted runs must give identical results, so segments never use
numba's versions of transcendental functions or reductions: they call the scalar
functions of `cpu_kernels` (the ones the interpreter's ufuncs are made of) and wrap the
same 2-D reduction kernels (same float64 accumulation, same order).

`SCALAR` holds `njit` versions of every elementwise scalar function, compiled the way
numba's `vectorize` compiles them for the interpreter (`error_model="numpy"`, no
fastmath): a fused loop that calls `_K.tanh_(x)` per element computes exactly what the
interpreter's `tanh_` ufunc computes, and LLVM inlines and vectorises it. They are not
disk-cached themselves: a cached segment carries their machine code.
"""
from __future__ import annotations

import numpy as np
from jitflow.runtime.core import lazyjit
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.core import numba_cache

njit = lazyjit.numba().njit  # this module loads only when a graph compiles: numba is needed now
_CACHE = numba_cache.usable(__file__)  # False (one warning) where numba cannot write a cache

# -- scalar functions for fused loops -----------------------------------------------------
SCALAR_NAMES = ("add_", "sub_", "mul_", "div_", "floordiv_", "mod_", "pow_", "eq_", "ne_", "lt_", "le_",
                "gt_", "ge_", "and_", "or_", "not_", "neg_", "abs_", "exp_", "log_", "sqrt_", "square_",
                "tanh_", "sigmoid_", "sin_", "cos_", "relu_", "sign_", "max_nan_", "min_nan_",
                # complex numbers: the cmath versions and the complex ops' scalar functions
                "cexp_", "clog_", "csqrt_", "csin_", "ccos_", "ctanh_", "real_", "imag_", "conj_", "angle_",
                "complex_abs_", "complex_")
SCALAR = {name: njit(nogil=True, error_model="numpy")(getattr(K, name)) for name in SCALAR_NAMES}
globals().update(SCALAR)


def _full(kernel_2d):
    @njit(cache=_CACHE, nogil=True)
    def reduce_all(x):
        out = np.empty(1, x.dtype)
        kernel_2d(np.ascontiguousarray(x).reshape(1, x.size), out)
        return out[0]
    return reduce_all


def _axis(kernel_2d):
    @njit(cache=_CACHE, nogil=True)
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


@njit(cache=_CACHE, nogil=True)
def softmax(x):
    out = np.empty_like(x)
    K.softmax_2d(x, out)
    return out


@njit(cache=_CACHE, nogil=True)
def log_softmax(x):
    out = np.empty_like(x)
    K.log_softmax_2d(x, out)
    return out
