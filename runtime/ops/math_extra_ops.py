"""More of `tf.math`: the unary functions tutorials reach for, cumsum, top_k/sort, norms.

Unary functions follow `math_ops`' table: one row per op (TF op name, public name, dtype
kinds, numba scalar function, numpy reference), compiled lazily per dtype by
`UfuncKernel`. `Cumsum` and `TopKV2` are real ops (TF's names and attrs) with numba
kernels over a 2-D (outer, inner) view; `sort`, `argsort`, `reduce_euclidean_norm` and
`squared_difference` are composed of ops, as in TF, so their gradients come for free.
"""
from __future__ import annotations

import math

import numpy as np
from jitflow.runtime.core.lazyjit import njit

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core import numba_cache
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import check_kind, elementwise, normalize_axis
from jitflow.runtime.ops.registry import apply, register

def _CACHE() -> bool:
    """Whether numba can cache these kernels, asked when one first compiles (see `core/numba_cache`)."""
    return numba_cache.usable(__file__)

# -- scalar functions (numba compiles them per dtype) ------------------------------------
def log1p_(a): return math.log1p(a) if a >= -1 else math.nan
def expm1_(a): return math.expm1(a)
def erf_(a): return math.erf(a)
def erfc_(a): return math.erfc(a)
def rsqrt_(a): return 1.0 / math.sqrt(a) if a > 0 else (math.copysign(math.inf, a) if a == 0 else math.nan)
def reciprocal_(a): return 1 / a
def floor_(a): return np.floor(a)  # math.floor would return an int (NaN, inf break)
def ceil_(a): return np.ceil(a)
def tan_(a): return math.tan(a)
def atan_(a): return math.atan(a)
def asin_(a): return math.asin(a) if -1 <= a <= 1 else math.nan
def acos_(a): return math.acos(a) if -1 <= a <= 1 else math.nan
def sinh_(a): return math.sinh(a)
def cosh_(a): return math.cosh(a)
def softsign_(a): return a / (1 + abs(a))


@njit(cache=_CACHE)
def _round_half_even(a):
    """TF's Round: to the nearest integer, ties to even (banker's rounding)."""
    if a != a or math.isinf(a):
        return a
    f = math.floor(a)
    d = a - f
    if d > 0.5 or (d == 0.5 and f % 2 != 0):
        f += 1
    return math.copysign(f, a)  # -0.5 rounds to -0.0, as TF


def round_(a): return _round_half_even(a)


def _float_ref(fn):
    def run(x):
        with np.errstate(all="ignore"):
            return np.asarray(fn(x)).astype(x.dtype, copy=False)
    return run


def _rsqrt_ref(x):
    with np.errstate(all="ignore"):
        return (1 / np.sqrt(x)).astype(x.dtype)


def _erf_ref(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


def _erfc_ref(x):
    return np.vectorize(math.erfc, otypes=[x.dtype])(x) if x.size else x.copy()


# (tf_op, public name, kinds, scalar fn, numpy reference)
UNARY = [
    ("Log1p", "math.log1p", "f", log1p_, _float_ref(np.log1p)),
    ("Expm1", "math.expm1", "f", expm1_, _float_ref(np.expm1)),
    ("Erf", "math.erf", "f", erf_, _erf_ref),
    ("Erfc", "math.erfc", "f", erfc_, _erfc_ref),
    ("Rsqrt", "math.rsqrt", "f", rsqrt_, _rsqrt_ref),
    ("Reciprocal", "math.reciprocal", "f", reciprocal_, _float_ref(np.reciprocal)),
    ("Floor", "math.floor", "f", floor_, np.floor),
    ("Ceil", "math.ceil", "f", ceil_, np.ceil),
    ("Round", "math.round", "f", round_, np.round),
    ("Tan", "math.tan", "f", tan_, _float_ref(np.tan)),
    ("Atan", "math.atan", "f", atan_, _float_ref(np.arctan)),
    ("Asin", "math.asin", "f", asin_, _float_ref(np.arcsin)),
    ("Acos", "math.acos", "f", acos_, _float_ref(np.arccos)),
    ("Sinh", "math.sinh", "f", sinh_, _float_ref(np.sinh)),
    ("Cosh", "math.cosh", "f", cosh_, _float_ref(np.cosh)),
    ("Softsign", "nn.softsign", "f", softsign_, lambda x: x / (1 + np.abs(x))),
]
SCALAR_FUNCTIONS = {row[0]: row[3] for row in UNARY}


def _bind_ufunc(kernel, attrs, in_dtypes):
    return kernel.bind(attrs, in_dtypes)


for _op, _pub, _kinds, _fn, _ref in UNARY:
    register(_op, elementwise(_kinds), cpu=K.UfuncKernel(_fn, "same", _op), reference=_ref,
             public_name=_pub, default_name=_op, bind=_bind_ufunc)


def _unary(op, x, name):
    return apply(op, [convert_to_tensor(x)], name=name)[0]


def log1p(x, name=None):
    """log(1 + x), accurate for small x.

    >>> log1p([0.0, 1.0]).numpy()
    array([0.       , 0.6931472], dtype=float32)
    """
    return _unary("Log1p", x, name)


def expm1(x, name=None):
    """exp(x) - 1, accurate for small x.

    >>> expm1([0.0]).numpy()
    array([0.], dtype=float32)
    """
    return _unary("Expm1", x, name)


def erf(x, name=None):
    """The Gauss error function.

    >>> erf([0.0]).numpy()
    array([0.], dtype=float32)
    """
    return _unary("Erf", x, name)


def erfc(x, name=None):
    """The complementary error function 1 - erf(x), accurate where erf(x) is near 1 (`tf.math.erfc`).

    >>> erfc([0.0, 5.0]).numpy()
    array([1.0000000e+00, 1.5374597e-12], dtype=float32)
    """
    return _unary("Erfc", x, name)


def rsqrt(x, name=None):
    """1 / sqrt(x).

    >>> rsqrt([4.0]).numpy()
    array([0.5], dtype=float32)
    """
    return _unary("Rsqrt", x, name)


def reciprocal(x, name=None):
    """1 / x.

    >>> reciprocal([4.0]).numpy()
    array([0.25], dtype=float32)
    """
    return _unary("Reciprocal", x, name)


def floor(x, name=None):
    """The largest integer not greater than x (a float tensor).

    >>> floor([1.5, -1.5]).numpy()
    array([ 1., -2.], dtype=float32)
    """
    return _unary("Floor", x, name)


def ceil(x, name=None):
    """The smallest integer not less than x (a float tensor).

    >>> ceil([1.5, -1.5]).numpy()
    array([ 2., -1.], dtype=float32)
    """
    return _unary("Ceil", x, name)


def round(x, name=None):  # noqa: A001 - TF's name
    """Round to the nearest integer, half to even (as TF; Python's `round` too).

    >>> round([0.5, 1.5, 2.5, -0.5]).numpy()
    array([ 0.,  2.,  2., -0.], dtype=float32)
    """
    x = convert_to_tensor(x)
    if x.dtype.is_integer:
        return A.identity(x, name=name)
    return _unary("Round", x, name)


def tan(x, name=None):
    """tan(x) elementwise.

    >>> tan([0.0]).numpy()
    array([0.], dtype=float32)
    """
    return _unary("Tan", x, name)


def atan(x, name=None):
    """arctan(x) elementwise.

    >>> atan([0.0]).numpy()
    array([0.], dtype=float32)
    """
    return _unary("Atan", x, name)


def asin(x, name=None):
    """arcsin(x) elementwise (NaN outside [-1, 1]).

    >>> asin([0.0]).numpy()
    array([0.], dtype=float32)
    """
    return _unary("Asin", x, name)


def acos(x, name=None):
    """arccos(x) elementwise (NaN outside [-1, 1]).

    >>> acos([1.0]).numpy()
    array([0.], dtype=float32)
    """
    return _unary("Acos", x, name)


def sinh(x, name=None):
    """sinh(x) elementwise.

    >>> sinh([0.0]).numpy()
    array([0.], dtype=float32)
    """
    return _unary("Sinh", x, name)


def cosh(x, name=None):
    """cosh(x) elementwise.

    >>> cosh([0.0]).numpy()
    array([1.], dtype=float32)
    """
    return _unary("Cosh", x, name)


def softsign(features, name=None):
    """x / (1 + |x|).

    >>> softsign([1.0]).numpy()
    array([0.5], dtype=float32)
    """
    return _unary("Softsign", features, name)


def squared_difference(x, y, name=None):
    """(x - y)² elementwise, with broadcasting.

    >>> squared_difference([1.0, 2.0], 3.0).numpy()
    array([4., 1.], dtype=float32)
    """
    with name_scope(name or "SquaredDifference"):
        return M.square(M.subtract(x, y))


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x²)) over `axis`; integer tensors give an integer result (truncated, as TF).

    >>> reduce_euclidean_norm([3.0, 4.0]).numpy()
    np.float32(5.0)
    """
    x = convert_to_tensor(input_tensor)
    check_kind(x.dtype, "fi", "input_tensor")
    with name_scope(name or "EuclideanNorm"):
        if x.dtype.is_integer:
            wide = M.reduce_sum(M.square(A.cast(x, _dt.float64)), axis, keepdims)
            return A.cast(M.sqrt(wide), x.dtype)
        return M.sqrt(M.reduce_sum(M.square(x), axis, keepdims))


# -- cumsum --------------------------------------------------------------------------------
@njit(cache=_CACHE)
def cumsum_2d(x, out, exclusive, reverse, zero):
    n = x.shape[1]
    for i in range(x.shape[0]):
        acc = zero
        for k in range(n):
            j = n - 1 - k if reverse else k
            if exclusive:
                out[i, j] = acc
                acc += x[i, j]
            else:
                acc += x[i, j]
                out[i, j] = acc


@njit(cache=_CACHE)
def cumprod_2d(x, out, exclusive, reverse, one):
    n = x.shape[1]
    for i in range(x.shape[0]):
        acc = one
        for k in range(n):
            j = n - 1 - k if reverse else k
            if exclusive:
                out[i, j] = acc
                acc *= x[i, j]
            else:
                acc *= x[i, j]
                out[i, j] = acc


def _along_last(x: np.ndarray, axis: int):
    moved = np.moveaxis(x, axis, -1)
    outer = int(np.prod(moved.shape[:-1], dtype=np.int64))  # not -1: ambiguous when the axis is empty
    return np.ascontiguousarray(moved).reshape(outer, x.shape[axis]), moved.shape


def _scan_kernel(scan_2d, identity: int):
    """A cumulative-scan kernel (cumsum, cumprod) along any axis: the axis is moved last and
    each row scanned by `scan_2d` (float16 in float32, as TF accumulates)."""
    def kernel(x, axis, exclusive, reverse):
        x = np.asarray(x)
        axis = normalize_axis(axis, x.ndim)
        x2, moved_shape = _along_last(x, axis)
        work = x2.astype(np.float32) if x.dtype == np.float16 else x2
        out = np.empty_like(work)
        if out.size:
            scan_2d(work, out, exclusive, reverse, work.dtype.type(identity))
        return np.moveaxis(out.astype(x.dtype, copy=False).reshape(moved_shape), -1, axis)
    return kernel


def _scan_ref(np_scan, identity: int):
    """numpy's reference for a scan kernel: `np_scan` (np.cumsum, np.cumprod), shifted by one
    with `identity` in front when exclusive, over the flipped axis when reversed."""
    def reference(x, axis, exclusive, reverse):
        x = np.asarray(x)
        if reverse:
            x = np.flip(x, axis)
        out = np_scan(x, axis=axis, dtype=x.dtype)
        if exclusive:
            shifted = np.full_like(out, identity)
            src = [slice(None)] * x.ndim
            dst = [slice(None)] * x.ndim
            src[axis], dst[axis] = slice(0, -1), slice(1, None)
            shifted[tuple(dst)] = out[tuple(src)]
            out = shifted
        return np.flip(out, axis) if reverse else out
    return reference


def _cumsum_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "fi")
    if dims is not None:
        if not dims:
            raise InvalidArgumentError("cumsum needs a tensor of rank >= 1; got a scalar")
        normalize_axis(attrs["axis"], len(dims))
    return [specs[0]]


register("Cumsum", _cumsum_infer, cpu=_scan_kernel(cumsum_2d, 0), reference=_scan_ref(np.cumsum, 0),
         public_name="math.cumsum")
register("Cumprod", _cumsum_infer, cpu=_scan_kernel(cumprod_2d, 1), reference=_scan_ref(np.cumprod, 1),
         public_name="math.cumprod")


def cumprod(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative product along `axis`; `exclusive` starts from 1, `reverse` from the end (`tf.math.cumprod`).

    >>> cumprod([1.0, 2.0, 3.0]).numpy()
    array([1., 2., 6.], dtype=float32)
    >>> cumprod([2, 3, 4], exclusive=True, reverse=True).numpy()
    array([12,  4,  1], dtype=int32)
    """
    return apply("Cumprod", [convert_to_tensor(x)],
                 {"axis": int(axis), "exclusive": bool(exclusive), "reverse": bool(reverse)}, name=name)[0]


def cumsum(x, axis=0, exclusive=False, reverse=False, name=None):
    """Cumulative sum along `axis`; `exclusive` starts from 0, `reverse` sums from the end.

    >>> cumsum([1, 2, 3]).numpy()
    array([1, 3, 6], dtype=int32)
    >>> cumsum([1, 2, 3], exclusive=True, reverse=True).numpy()
    array([5, 3, 0], dtype=int32)
    """
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"axis: expected an int; got {axis!r}")
    return apply("Cumsum", [convert_to_tensor(x)],
                 {"axis": int(axis), "exclusive": bool(exclusive), "reverse": bool(reverse)}, name=name)[0]


# -- top_k, sort, argsort ------------------------------------------------------------------
def _topk_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "fi", "input")
    k = attrs["k"]
    if dims is None:
        return [(None, dtype), (None, _dt.int32)]
    if not dims:
        raise InvalidArgumentError("top_k: input must have rank >= 1; got a scalar")
    if dims[-1] is not None and k > dims[-1]:
        raise InvalidArgumentError(f"top_k: k must be <= the last dimension of input; got k={k} "
                                   f"and input shape {list(dims)}")
    out = tuple(dims[:-1]) + (k,)
    return [(out, dtype), (out, _dt.int32)]


def _topk_kernel(x, k, sorted=True):  # noqa: A002 - TF's attr name
    x = np.asarray(x)
    n = x.shape[-1]
    if k > n:
        raise InvalidArgumentError(f"top_k: input must have at least k={k} columns; got {n}")
    # Descending with ties broken by the lower index (TF's order): a stable ascending sort
    # of the reversed row, read backwards.
    order = np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1][..., :k]
    indices = (n - 1 - order).astype(np.int32)
    return np.take_along_axis(x, indices.astype(np.intp), axis=-1), indices


register("TopKV2", _topk_infer, cpu=_topk_kernel, public_name="math.top_k", default_name="TopKV2")


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002 - TF's names
    """The `k` largest entries of the last axis and their indices (ties: lower index first).

    >>> values, indices = top_k([1.0, 3.0, 2.0], k=2)
    >>> values.numpy(), indices.numpy()
    (array([3., 2.], dtype=float32), array([1, 2], dtype=int32))
    """
    if isinstance(k, (int, np.integer)) and k < 0:
        raise InvalidArgumentError(f"k: expected a non-negative int; got {k}")
    values, indices = apply("TopKV2", [convert_to_tensor(input)], {"k": int(k), "sorted": bool(sorted)},
                            name=name)
    return TopKResult(values, indices)


class TopKResult(tuple):
    """(values, indices), also as attributes, as TF's `TopKV2` namedtuple."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])

    def __repr__(self):
        return f"TopKV2(values={self[0]!r}, indices={self[1]!r})"


def _sort_along(values, axis, direction, want_indices):
    x = convert_to_tensor(values)
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"direction: expected 'ASCENDING' or 'DESCENDING'; got {direction!r}")
    rank = x.ndim
    axis = normalize_axis(int(axis), rank)
    perm = None
    if axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = A.transpose(x, perm)
    n = x.shape[-1]
    if direction == "ASCENDING":
        # TF sorts -x descending; for integers it flips the bits (~x) so INT_MIN survives.
        key = M.negative(x) if x.dtype.is_floating else apply("Invert", [x])[0]
        vals, idx = top_k(key, k=n)
        vals = M.negative(vals) if x.dtype.is_floating else apply("Invert", [vals])[0]
    else:
        vals, idx = top_k(x, k=n)
    out = idx if want_indices else vals
    return A.transpose(out, perm) if perm is not None else out


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """`values` sorted along `axis`.

    >>> sort([3, 1, 2]).numpy()
    array([1, 2, 3], dtype=int32)
    >>> sort([3.0, 1.0, 2.0], direction="DESCENDING").numpy()
    array([3., 2., 1.], dtype=float32)
    """
    with name_scope(name or "sort"):
        return _sort_along(values, axis, direction, False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The indices that sort `values` along `axis` (int32; ties keep their order).

    >>> argsort([3.0, 1.0, 2.0]).numpy()
    array([1, 2, 0], dtype=int32)
    """
    with name_scope(name or "argsort"):
        return _sort_along(values, axis, direction, True)


register("Invert", elementwise("i"), cpu=np.invert, public_name="bitwise.invert", default_name="Invert")


__all__ = ["log1p", "expm1", "erf", "rsqrt", "reciprocal", "floor", "ceil", "round", "tan", "atan",
           "asin", "acos", "sinh", "cosh", "softsign", "squared_difference", "reduce_euclidean_norm",
           "cumsum", "top_k", "sort", "argsort"]
