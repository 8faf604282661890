"""numba-compiled CPU kernels.

Everything compiles lazily, on first use for each dtype, and caches to disk
(`cache=True` where numba can write, see `core/numba_cache`), so importing jitflow compiles
nothing and a second process loads machine code instead of recompiling. numba itself is
imported on the first kernel call (`runtime.core.lazyjit`), not when jitflow is imported.

- Elementwise ops are numba `vectorize` ufuncs (numpy broadcasting for free). Loops are
  added per exact signature (`int32(int32, int32)`), because numba's own typing would
  widen int32 arithmetic to int64.
- Reductions, softmax and arg-reductions work on a 2-D (outer, inner) view: the caller
  moves reduced axes last, so one kernel serves every rank and axis combination.
- matmul goes through numba's BLAS binding (`np.dot`, which needs scipy) for floats.
- Random numbers come from per-op xoroshiro128+ streams, seeded deterministically.
"""
from __future__ import annotations

import cmath
import math
import threading
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np
from jitflow.runtime.core import lazyjit
from jitflow.runtime.core.lazyjit import njit

from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core import numba_cache

def _CACHE() -> bool:
    """Whether numba can cache this module's kernels (False, with one warning, where it cannot
    write); asked when a kernel first compiles, so importing jitflow never imports numba."""
    return numba_cache.usable(__file__)

_lock = threading.Lock()


# A kernel's output dtype from its first input's: "same", "bool" (comparisons), "real" (the
# real part of a complex number), "complex" (a complex number of two reals).
_OUT_DTYPE = {
    "same": lambda d: d.name,
    "bool": lambda d: "bool_",
    "real": lambda d: {"c": {8: "float32", 16: "float64"}}.get(d.kind, {}).get(d.itemsize, d.name),
    "complex": lambda d: {4: "complex64", 8: "complex128"}[d.itemsize],
}


class UfuncKernel:
    """An elementwise kernel: lazily compiled numba ufuncs, one per input dtype signature.

    `out` is "same" (output dtype = input dtype) or "bool" (comparisons). Each signature
    gets a ufunc of its own with exactly one loop: numpy runs the *first* loop of a ufunc
    that the inputs can be cast to safely, so in one multi-loop ufunc int8 inputs would run
    (and return) the float32 loop whenever that loop was added first.
    """

    def __init__(self, scalar_fn: Callable[..., Any], out: str = "same", name: str = "",
                 complex_fn: Optional[Callable[..., Any]] = None) -> None:
        self._scalar_fn = scalar_fn
        self._complex_fn = complex_fn  # for complex inputs, where `scalar_fn` uses `math`
        self._loops: Dict[Tuple[str, ...], object] = {}
        self._out = out
        self.__name__ = name or scalar_fn.__name__

    def ufunc_for(self, dtypes: Tuple[np.dtype, ...]):
        """A numpy ufunc whose only loop takes exactly these input dtypes (compiled once)."""
        key = tuple(d.char for d in dtypes)
        found = self._loops.get(key)
        if found is not None:
            return found
        with _lock:
            found = self._loops.get(key)
            if found is None:
                out = _OUT_DTYPE[self._out](dtypes[0])
                sig = f"{out}({', '.join(d.name for d in dtypes)})"
                fn = self._complex_fn if (self._complex_fn is not None and dtypes[0].kind == "c") else self._scalar_fn
                compiled = lazyjit.numba().vectorize([sig], cache=_CACHE())(fn)
                # The plain numpy ufunc inside numba's DUFunc wrapper costs ~0.4 µs a call,
                # the wrapper ~1 µs: keep the ufunc.
                found = self._loops[key] = getattr(compiled, "ufunc", compiled)
        return found

    def __call__(self, *arrays):
        key = tuple(a.dtype.char for a in arrays)
        ufunc = self._loops.get(key)
        if ufunc is None:
            if "e" in key:  # numba has no float16 arithmetic on CPU: compute in float32
                return self._via_float32(*arrays)
            ufunc = self.ufunc_for(tuple(a.dtype for a in arrays))
        return ufunc(*arrays)

    def _via_float32(self, *arrays):
        wide = [a.astype(np.float32) for a in arrays]
        out = self(*wide)
        return out if self._out == "bool" else out.astype(np.float16)

    def bind(self, attrs, in_dtypes):
        if any(d.as_numpy_dtype.char == "e" for d in in_dtypes):
            return self._via_float32
        return self.ufunc_for(tuple(d.as_numpy_dtype for d in in_dtypes))


class IntDivKernel(UfuncKernel):
    """FloorDiv/FloorMod: integer division by zero raises InvalidArgumentError, as in TF
    (the ufunc alone would return 0). Floats divide by zero to inf/NaN as usual."""

    def __call__(self, *arrays):
        _check_int_divisor(arrays[1])
        return super().__call__(*arrays)

    def bind(self, attrs, in_dtypes):
        run = super().bind(attrs, in_dtypes)
        if not in_dtypes[1].is_integer:
            return run

        def checked(x, y):
            _check_int_divisor(y)
            return run(x, y)
        return checked


def _check_int_divisor(y) -> None:
    y = np.asarray(y)
    if y.dtype.kind in "iu" and (y == 0).any():
        raise InvalidArgumentError("Integer division by zero")


# -- elementwise scalar functions (compiled by vectorize) ------------------------------
def add_(a, b): return a + b
def sub_(a, b): return a - b
def mul_(a, b): return a * b
def div_(a, b): return a / b
def floordiv_(a, b):
    # MIN // -1 overflows; TF (two's complement) gives MIN. `-a < 0` with `a < 0` holds only
    # for the smallest integer (-MIN wraps to MIN), never for floats.
    if b == -1 and a < 0 and -a < 0:
        return a
    return a // b


def mod_(a, b): return a % b
def pow_(a, b): return a ** b
def eq_(a, b): return a == b
def ne_(a, b): return a != b
def lt_(a, b): return a < b
def le_(a, b): return a <= b
def gt_(a, b): return a > b
def ge_(a, b): return a >= b
def and_(a, b): return a and b
def or_(a, b): return a or b
def not_(a): return not a
def neg_(a): return -a
def abs_(a): return abs(a)
def exp_(a): return math.exp(a)
def log_(a): return math.log(a) if a > 0 else (-math.inf if a == 0 else math.nan)
def sqrt_(a): return math.sqrt(a) if a >= 0 else math.nan
def square_(a): return a * a
def tanh_(a): return _tanh(a)
def sigmoid_(a): return 1.0 / (1.0 + math.exp(-a)) if a >= 0 else math.exp(a) / (1.0 + math.exp(a))
def sin_(a): return math.sin(a)
def cos_(a): return math.cos(a)
# Complex versions where the real one uses `math` (numba types cmath for complex numbers).
def cexp_(a): return cmath.exp(a)
def clog_(a): return cmath.log(a)
def csqrt_(a): return cmath.sqrt(a)
def csin_(a): return cmath.sin(a)
def ccos_(a): return cmath.cos(a)
def ctanh_(a): return cmath.tanh(a)
def real_(a): return a.real
def imag_(a): return a.imag
def conj_(a): return a.conjugate()
def angle_(a): return math.atan2(a.imag, a.real)
def complex_abs_(a): return abs(a)
def complex_(re, im): return complex(re, im)
def relu_(a): return a if a > 0 or a != a else 0  # NaN stays NaN; -0.0 and -inf give +0
def sign_(a): return a if a != a else (a > 0) - (a < 0)  # NaN stays NaN, as np.sign / TF
def isfinite_(a): return not (math.isinf(a) or math.isnan(a))  # inf - inf would raise FP flags


# -- tanh: a rational approximation for float32, libm for float64 ------------------------
# libm's tanhf is one opaque call per element (numba has no SVML here), ~1 GB/s; this
# odd rational function p(x²)·x / q(x²) (Eigen's `generic_fast_tanh_float` coefficients)
# is plain arithmetic that LLVM vectorises. Both tiers use it (the interpreter's ufunc and
# the compiled tier's loops compile this same function), so their results stay identical.
# Error bound, float32: max |tanh_(x) - tanh(x)| = 3.9e-7 against float64 tanh (every 7th
# positive float32 checked; the function is odd), 4.2e-7 against np.tanh's float32 results
# (10^7 uniform samples in [-12, 12]); the op tests allow 1e-6 + 2e-6·|tanh x|.
# |x| < 4e-4 returns x (tanh x = x within float32 there; keeps -0.0 and subnormals),
# |x| > 9 returns ±1 exactly (tanh rounds to 1 in float32), NaN stays NaN.
_F32 = np.float32
_TANH_CLAMP, _TANH_TINY, _TANH_SAT, _ONE = _F32(7.99881172180175781), _F32(4e-4), _F32(9.0), _F32(1.0)
_TANH_P = (_F32(-2.76076847742355e-16), _F32(2.00018790482477e-13), _F32(-8.60467152213735e-11),
           _F32(5.12229709037114e-08), _F32(1.48572235717979e-05), _F32(6.37261928875436e-04),
           _F32(4.89352455891786e-03))
_TANH_Q = (_F32(1.19825839466702e-06), _F32(1.18534705686654e-04), _F32(2.26843463243900e-03),
           _F32(4.89352518554385e-03))
_P13, _P11, _P9, _P7, _P5, _P3, _P1 = _TANH_P
_Q6, _Q4, _Q2, _Q0 = _TANH_Q


def tanh_float32(a):
    """tanh of a float32 by the rational approximation above (selects only, no branches)."""
    x = _TANH_CLAMP if a > _TANH_CLAMP else (-_TANH_CLAMP if a < -_TANH_CLAMP else a)  # NaN passes
    x2 = x * x
    p = ((((((x2 * _P13 + _P11) * x2 + _P9) * x2 + _P7) * x2 + _P5) * x2 + _P3) * x2 + _P1) * x
    q = ((x2 * _Q6 + _Q4) * x2 + _Q2) * x2 + _Q0
    r = p / q
    r = a if abs(a) < _TANH_TINY else r
    r = _ONE if a > _TANH_SAT else r
    return -_ONE if a < -_TANH_SAT else r


_tanh_float32_jit = njit(error_model="numpy")(tanh_float32)


def _tanh(a):
    """Python stand-in; compiled code resolves `_tanh` through the overload below."""
    return tanh_float32(a) if isinstance(a, np.float32) else math.tanh(a)


@lazyjit.on_numba_load
def _register_tanh(nb) -> None:
    tanh_float32_jit = _tanh_float32_jit.dispatcher  # the numba dispatcher: CUDA code calls it too

    @nb.extending.overload(_tanh)
    def _tanh_overload(a):
        if a == nb.types.float32:
            return lambda a: tanh_float32_jit(a)
        return lambda a: math.tanh(a)


def max_nan_(a, b):
    # TF's Maximum propagates NaN.
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


def min_nan_(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


# -- reductions over the last axis of a 2-D array --------------------------------------
# Every kernel here must accept an empty last axis (inner == 0): the compiled tier calls
# them directly, so a kernel that starts from x[i, 0] would read past the buffer.
def lowest_of(x):
    """The identity of max over `x`'s dtype: -inf for floats, the smallest integer."""


def highest_of(x):
    """The identity of min over `x`'s dtype: +inf for floats, the largest integer."""


@lazyjit.on_numba_load
def _register_identities(nb) -> None:
    @nb.extending.overload(lowest_of)
    def _lowest_of(x):
        dt = x.dtype
        value = -np.inf if isinstance(dt, nb.types.Float) else np.iinfo(str(dt)).min
        return lambda x: value

    @nb.extending.overload(highest_of)
    def _highest_of(x):
        dt = x.dtype
        value = np.inf if isinstance(dt, nb.types.Float) else np.iinfo(str(dt)).max
        return lambda x: value


@njit(cache=_CACHE)
def reduce_sum_2d(x, out):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[i] = acc


@njit(cache=_CACHE)
def reduce_sum_int_2d(x, out):
    for i in range(x.shape[0]):
        acc = 0
        for j in range(x.shape[1]):
            acc += x[i, j]
        out[i] = acc


@njit(cache=_CACHE)
def reduce_prod_2d(x, out):
    for i in range(x.shape[0]):
        acc = 1.0
        for j in range(x.shape[1]):
            acc *= x[i, j]
        out[i] = acc


@njit(cache=_CACHE)
def reduce_prod_int_2d(x, out):
    for i in range(x.shape[0]):
        acc = 1
        for j in range(x.shape[1]):
            acc *= x[i, j]
        out[i] = acc


@njit(cache=_CACHE)
def reduce_max_2d(x, out):
    if x.shape[1] == 0:
        out[:] = lowest_of(x)
        return
    for i in range(x.shape[0]):
        acc = x[i, 0]
        for j in range(1, x.shape[1]):
            v = x[i, j]
            if v > acc or v != v:
                acc = v
                if v != v:
                    break
        out[i] = acc


@njit(cache=_CACHE)
def reduce_min_2d(x, out):
    if x.shape[1] == 0:
        out[:] = highest_of(x)
        return
    for i in range(x.shape[0]):
        acc = x[i, 0]
        for j in range(1, x.shape[1]):
            v = x[i, j]
            if v < acc or v != v:
                acc = v
                if v != v:
                    break
        out[i] = acc


@njit(cache=_CACHE)
def reduce_all_2d(x, out):
    for i in range(x.shape[0]):
        acc = True
        for j in range(x.shape[1]):
            if not x[i, j]:
                acc = False
                break
        out[i] = acc


@njit(cache=_CACHE)
def reduce_any_2d(x, out):
    for i in range(x.shape[0]):
        acc = False
        for j in range(x.shape[1]):
            if x[i, j]:
                acc = True
                break
        out[i] = acc


@njit(cache=_CACHE)
def argmax_2d(x, out):
    for i in range(x.shape[0]):
        best = 0
        for j in range(1, x.shape[1]):
            if x[i, j] > x[i, best]:
                best = j
        out[i] = best


@njit(cache=_CACHE)
def argmin_2d(x, out):
    for i in range(x.shape[0]):
        best = 0
        for j in range(1, x.shape[1]):
            if x[i, j] < x[i, best]:
                best = j
        out[i] = best


@njit(cache=_CACHE)
def softmax_2d(x, out):
    if x.shape[1] == 0:  # nothing to normalise (and no x[i, 0] to start from)
        return
    for i in range(x.shape[0]):
        m = x[i, 0]
        for j in range(1, x.shape[1]):
            if x[i, j] > m:
                m = x[i, j]
        total = 0.0
        for j in range(x.shape[1]):
            e = math.exp(x[i, j] - m)
            out[i, j] = e
            total += e
        for j in range(x.shape[1]):
            out[i, j] = out[i, j] / total


@njit(cache=_CACHE)
def log_softmax_2d(x, out):
    if x.shape[1] == 0:  # nothing to normalise (and no x[i, 0] to start from)
        return
    for i in range(x.shape[0]):
        m = x[i, 0]
        for j in range(1, x.shape[1]):
            if x[i, j] > m:
                m = x[i, j]
        total = 0.0
        for j in range(x.shape[1]):
            total += math.exp(x[i, j] - m)
        lse = m + math.log(total)
        for j in range(x.shape[1]):
            out[i, j] = x[i, j] - lse


# -- matmul ----------------------------------------------------------------------------
@njit(cache=_CACHE)
def matmul_float_3d(a, b, out):
    for i in range(a.shape[0]):
        out[i] = np.dot(a[i], b[i])


@njit(cache=_CACHE)
def matmul_int_3d(a, b, out):
    for n in range(a.shape[0]):
        for i in range(a.shape[1]):
            for j in range(b.shape[2]):
                acc = 0
                for k in range(a.shape[2]):
                    acc += a[n, i, k] * b[n, k, j]
                out[n, i, j] = acc


@njit(cache=_CACHE)
def matmul_float_2d(a, b):
    return np.dot(a, b)


# -- random: xoroshiro128+ streams -----------------------------------------------------
@njit(cache=_CACHE)
def _splitmix64(x):
    x = (x + np.uint64(0x9E3779B97F4A7C15))
    z = x
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x, z ^ (z >> np.uint64(31))


@njit(cache=_CACHE)
def seed_state(seed, state):
    x = np.uint64(seed)
    x, a = _splitmix64(x)
    x, b = _splitmix64(x)
    state[0] = a
    state[1] = b


@njit(cache=_CACHE)
def _rotl(x, k):
    return (x << np.uint64(k)) | (x >> np.uint64(64 - k))


@njit(cache=_CACHE)
def _next_double(state):
    s0 = state[0]
    s1 = state[1]
    result = s0 + s1
    s1 ^= s0
    state[0] = _rotl(s0, 24) ^ s1 ^ (s1 << np.uint64(16))
    state[1] = _rotl(s1, 37)
    return (result >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@njit(cache=_CACHE)
def fill_uniform(state, out, low, high):
    flat = out.reshape(-1)
    span = high - low
    for i in range(flat.size):
        flat[i] = low + span * _next_double(state)


@njit(cache=_CACHE)
def fill_normal(state, out, mean, stddev):
    flat = out.reshape(-1)
    n = flat.size
    i = 0
    while i < n:
        u1 = _next_double(state)
        u2 = _next_double(state)
        if u1 < 1e-300:
            u1 = 1e-300
        r = math.sqrt(-2.0 * math.log(u1))
        flat[i] = mean + stddev * r * math.cos(2.0 * math.pi * u2)
        if i + 1 < n:
            flat[i + 1] = mean + stddev * r * math.sin(2.0 * math.pi * u2)
        i += 2


@njit(cache=_CACHE)
def fill_uniform_int(state, out, low, high):
    flat = out.reshape(-1)
    span = float(high) - float(low)  # in float: `high - low` can overflow int64
    for i in range(flat.size):
        v = low + np.int64(_next_double(state) * span)
        flat[i] = v if v < high else high - 1  # rounding of u * span may reach `high`
