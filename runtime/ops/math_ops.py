"""Elementwise math, comparisons, reductions and matmul.

Elementwise ops are declared in two tables (binary, unary); each row registers one op
with its TF name, default node name, dtype kinds, numba scalar function and numpy
reference. Derived ops (`reduce_std`, `reduce_logsumexp`, `divide` on integers) are
written in terms of primitives, so they get gradients and graph nodes for free.
"""
from __future__ import annotations

from typing import Any, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import format_dims
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops import complex_ops
from jitflow.runtime.ops.constant_op import TensorConvertible, binary_operands, convert_to_tensor  # noqa: F401 - re-exported
from jitflow.runtime.ops.infer import (broadcast_dims, check_kind, elementwise, normalize_axes,
                                       normalize_axis, reduced_dims, reduction, same_dtype)
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.ops.array_ops import cast
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.ops.array_ops import reshape, stop_gradient
from jitflow.runtime.ops.array_ops import where, zeros_like
from jitflow.runtime.ops.array_ops import _known_value, squeeze


def _bind_ufunc(kernel, attrs, in_dtypes):
    return kernel.bind(attrs, in_dtypes)


def _object_safe(kernel: K.UfuncKernel, numpy_fn):
    """Strings (object arrays) cannot go through numba: compare them with numpy."""
    def run(*arrays):
        if arrays[0].dtype == object:
            return numpy_fn(*arrays)
        return kernel(*arrays)
    run.__name__ = kernel.__name__
    return run


# (tf_op, public name, default node name, kinds, output dtype, numba scalar fn, numpy reference)
_BINARY: List[Tuple[Any, ...]] = [
    ("AddV2", "add", "add", "fic", None, K.add_, np.add),
    ("Sub", "subtract", "sub", "fic", None, K.sub_, np.subtract),
    ("Mul", "multiply", "mul", "fic", None, K.mul_, np.multiply),
    ("RealDiv", "divide", "truediv", "fc", None, K.div_, np.divide),
    ("FloorDiv", "floordiv", "floordiv", "fi", None, K.floordiv_, np.floor_divide),
    ("FloorMod", "mod", "mod", "fi", None, K.mod_, np.mod),
    ("Pow", "pow", "pow", "fi", None, K.pow_, np.power),
    ("Maximum", "maximum", "Maximum", "fi", None, K.max_nan_, np.maximum),
    ("Minimum", "minimum", "Minimum", "fi", None, K.min_nan_, np.minimum),
    ("Equal", "equal", "Equal", "fibsc", _dt.bool_, K.eq_, np.equal),
    ("NotEqual", "not_equal", "NotEqual", "fibsc", _dt.bool_, K.ne_, np.not_equal),
    ("Less", "less", "Less", "fi", _dt.bool_, K.lt_, np.less),
    ("LessEqual", "less_equal", "LessEqual", "fi", _dt.bool_, K.le_, np.less_equal),
    ("Greater", "greater", "Greater", "fi", _dt.bool_, K.gt_, np.greater),
    ("GreaterEqual", "greater_equal", "GreaterEqual", "fi", _dt.bool_, K.ge_, np.greater_equal),
    ("LogicalAnd", "logical_and", "LogicalAnd", "b", None, K.and_, np.logical_and),
    ("LogicalOr", "logical_or", "LogicalOr", "b", None, K.or_, np.logical_or),
]

_UNARY: List[Tuple[Any, ...]] = [
    ("LogicalNot", "logical_not", "LogicalNot", "b", K.not_, np.logical_not),
    ("Neg", "negative", "Neg", "fic", K.neg_, np.negative),
    ("Abs", "abs", "Abs", "fi", K.abs_, np.abs),
    ("Sign", "sign", "Sign", "fi", K.sign_, np.sign),
    ("Exp", "exp", "Exp", "fc", K.exp_, np.exp),
    ("Log", "log", "Log", "fc", K.log_, np.log),
    ("Sqrt", "sqrt", "Sqrt", "fc", K.sqrt_, np.sqrt),
    ("Square", "square", "Square", "fic", K.square_, np.square),
    ("Tanh", "tanh", "Tanh", "fc", K.tanh_, np.tanh),
    ("Sigmoid", "sigmoid", "Sigmoid", "f", K.sigmoid_, lambda x: 1 / (1 + np.exp(-x))),
    ("Sin", "sin", "Sin", "fc", K.sin_, np.sin),
    ("Cos", "cos", "Cos", "fc", K.cos_, np.cos),
    ("Relu", "nn.relu", "Relu", "fi", K.relu_, lambda x: np.maximum(x, x.dtype.type(0))),
]

for _op, _pub, _name, _kinds, _out, _fn, _ref in _BINARY:
    _kernel = (K.IntDivKernel if _op in ("FloorDiv", "FloorMod") else K.UfuncKernel)(
        _fn, "bool" if _out is _dt.bool_ else "same", _op)
    if "s" in _kinds:
        register(_op, elementwise(_kinds, _out), cpu=_object_safe(_kernel, _ref), reference=_ref,
                 public_name=_pub, default_name=_name)
    else:
        register(_op, elementwise(_kinds, _out), cpu=_kernel, reference=_ref, public_name=_pub,
                 default_name=_name, bind=_bind_ufunc)

# The scalar functions for complex inputs, where the real one uses `math` (no complex there).
COMPLEX_SCALAR = {"Exp": K.cexp_, "Log": K.clog_, "Sqrt": K.csqrt_, "Sin": K.csin_, "Cos": K.ccos_,
                  "Tanh": K.ctanh_}

for _op, _pub, _name, _kinds, _fn, _ref in _UNARY:
    register(_op, elementwise(_kinds), cpu=K.UfuncKernel(_fn, "same", _op, COMPLEX_SCALAR.get(_op)),
             reference=_ref, public_name=_pub, default_name=_name, bind=_bind_ufunc)

# String concatenation is TF's `Add` (AddV2 has no string kernel).
register("Add", elementwise("s"), cpu=np.add, public_name="add", default_name="add")


# -- public elementwise functions ------------------------------------------------------
def _binary(op: str, x: Any, y: Any, name: Optional[str]) -> Tensor:
    x, y = binary_operands(x, y)
    return apply(op, [x, y], name=name)[0]


def _unary(op: str, x: Any, name: Optional[str]) -> Tensor:
    return apply(op, [convert_to_tensor(x)], name=name)[0]


def add(x, y, name=None):
    """x + y elementwise with broadcasting; strings concatenate.

    >>> jf.add([1, 2], 10).numpy()
    array([11, 12], dtype=int32)
    >>> jf.add('con', 'cat').numpy()
    b'concat'
    """
    x, y = binary_operands(x, y)
    return apply("Add" if x._dtype.is_string else "AddV2", [x, y], name=name)[0]


def subtract(x, y, name=None):
    """x - y elementwise, with broadcasting (`tf.math.subtract`).

    >>> jf.subtract([5, 3], 2).numpy()
    array([3, 1], dtype=int32)
    """
    return _binary("Sub", x, y, name)


def multiply(x, y, name=None):
    """x * y elementwise, with broadcasting (`tf.math.multiply`).

    >>> jf.multiply([1.5, 2.0], 2.0).numpy()
    array([3., 4.], dtype=float32)
    """
    return _binary("Mul", x, y, name)


def floordiv(x, y, name=None):
    """x // y elementwise: division rounded toward -inf (`tf.math.floordiv`).

    >>> jf.floordiv([7, -7], 2).numpy()
    array([ 3, -4], dtype=int32)
    """
    return _binary("FloorDiv", x, y, name)


def mod(x, y, name=None):
    """x % y elementwise, the sign following y as in Python (`tf.math.floormod`).

    >>> jf.mod([7, -7], 3).numpy()
    array([1, 2], dtype=int32)
    """
    return _binary("FloorMod", x, y, name)


def pow(x, y, name=None):  # noqa: A001 - TF's name
    """x ** y elementwise (`tf.math.pow`).

    >>> jf.pow([2.0, 3.0], 2.0).numpy()
    array([4., 9.], dtype=float32)
    """
    return _binary("Pow", x, y, name)


def maximum(x, y, name=None):
    """The larger of x and y elementwise; NaN propagates (`tf.math.maximum`).

    >>> jf.maximum([1.0, 5.0], [3.0, 2.0]).numpy()
    array([3., 5.], dtype=float32)
    """
    return _binary("Maximum", x, y, name)


def minimum(x, y, name=None):
    """The smaller of x and y elementwise; NaN propagates (`tf.math.minimum`).

    >>> jf.minimum([1.0, 5.0], [3.0, 2.0]).numpy()
    array([1., 2.], dtype=float32)
    """
    return _binary("Minimum", x, y, name)


def equal(x, y, name=None):
    """x == y elementwise, as a bool tensor (`tf.math.equal`).

    >>> jf.equal([1, 2], [1, 3]).numpy()
    array([ True, False])
    """
    return _binary("Equal", x, y, name)


def not_equal(x, y, name=None):
    """x != y elementwise, as a bool tensor (`tf.math.not_equal`).

    >>> jf.not_equal([1, 2], [1, 3]).numpy()
    array([False,  True])
    """
    return _binary("NotEqual", x, y, name)


def less(x, y, name=None):
    """x < y elementwise, as a bool tensor (`tf.math.less`).

    >>> jf.less([1, 2], 2).numpy()
    array([ True, False])
    """
    return _binary("Less", x, y, name)


def less_equal(x, y, name=None):
    """x <= y elementwise, as a bool tensor (`tf.math.less_equal`).

    >>> jf.less_equal([1, 2], 2).numpy()
    array([ True,  True])
    """
    return _binary("LessEqual", x, y, name)


def greater(x, y, name=None):
    """x > y elementwise, as a bool tensor (`tf.math.greater`).

    >>> jf.greater([1, 3], 2).numpy()
    array([False,  True])
    """
    return _binary("Greater", x, y, name)


def greater_equal(x, y, name=None):
    """x >= y elementwise, as a bool tensor (`tf.math.greater_equal`).

    >>> jf.greater_equal([1, 2], 2).numpy()
    array([False,  True])
    """
    return _binary("GreaterEqual", x, y, name)


def logical_and(x, y, name=None):
    """x and y elementwise on bool tensors (`tf.math.logical_and`).

    >>> jf.logical_and([True, True], [True, False]).numpy()
    array([ True, False])
    """
    return _binary("LogicalAnd", x, y, name)


def logical_or(x, y, name=None):
    """x or y elementwise on bool tensors (`tf.math.logical_or`).

    >>> jf.logical_or([True, False], [False, False]).numpy()
    array([ True, False])
    """
    return _binary("LogicalOr", x, y, name)


def logical_not(x, name=None):
    """not x elementwise on a bool tensor (`tf.math.logical_not`).

    >>> jf.logical_not([True, False]).numpy()
    array([False,  True])
    """
    return _unary("LogicalNot", x, name)


def negative(x, name=None):
    """-x elementwise (`tf.math.negative`).

    >>> jf.negative([1.0, -2.0]).numpy()
    array([-1.,  2.], dtype=float32)
    """
    return _unary("Neg", x, name)


def abs(x, name=None):  # noqa: A001
    """|x| elementwise (`tf.math.abs`).

    >>> jf.abs([-1.5, 2.0]).numpy()
    array([1.5, 2. ], dtype=float32)
    """
    x = convert_to_tensor(x)
    if x._dtype.is_complex:  # |z|, a real tensor: TF's ComplexAbs
        return complex_ops.complex_abs(x, name)
    return apply("Abs", [x], name=name)[0]


def sign(x, name=None):
    """-1, 0 or 1 by the sign of x; NaN stays NaN (`tf.math.sign`).

    >>> jf.sign([-3.0, 0.0, 2.0]).numpy()
    array([-1.,  0.,  1.], dtype=float32)
    """
    return _unary("Sign", x, name)


def exp(x, name=None):
    """e ** x elementwise (`tf.math.exp`).

    >>> jf.exp([0.0, 1.0]).numpy()
    array([1.       , 2.7182817], dtype=float32)
    """
    return _unary("Exp", x, name)


def log(x, name=None):
    """Natural logarithm elementwise; log(0) = -inf, log of a negative = NaN (`tf.math.log`).

    >>> jf.log([1.0, 100.0]).numpy()
    array([0.       , 4.6051702], dtype=float32)
    """
    return _unary("Log", x, name)


def sqrt(x, name=None):
    """Square root elementwise; NaN for negative inputs (`tf.math.sqrt`).

    >>> jf.sqrt([4.0, 9.0]).numpy()
    array([2., 3.], dtype=float32)
    """
    return _unary("Sqrt", x, name)


def square(x, name=None):
    """x * x elementwise (`tf.math.square`).

    >>> jf.square([2, -3]).numpy()
    array([4, 9], dtype=int32)
    """
    return _unary("Square", x, name)


def tanh(x, name=None):
    """Hyperbolic tangent elementwise (`tf.math.tanh`).

    >>> jf.tanh([0.0, 1.0]).numpy()
    array([0.       , 0.7615942], dtype=float32)
    """
    return _unary("Tanh", x, name)


def sigmoid(x, name=None):
    """1 / (1 + e ** -x) elementwise, stable for large |x| (`tf.math.sigmoid`).

    >>> jf.sigmoid([0.0, 2.0]).numpy()
    array([0.5      , 0.8807971], dtype=float32)
    """
    return _unary("Sigmoid", x, name)


def sin(x, name=None):
    """Sine elementwise, in radians (`tf.math.sin`).

    >>> jf.sin([0.0, 1.5707964]).numpy()
    array([0., 1.], dtype=float32)
    """
    return _unary("Sin", x, name)


def cos(x, name=None):
    """Cosine elementwise, in radians (`tf.math.cos`).

    >>> jf.cos([0.0, 3.1415927]).numpy()
    array([ 1., -1.], dtype=float32)
    """
    return _unary("Cos", x, name)


def relu(features, name=None):
    """max(x, 0) elementwise (`tf.nn.relu`).

    >>> jf.nn.relu([-1.0, 2.0]).numpy()
    array([0., 2.], dtype=float32)
    """
    return _unary("Relu", features, name)


_TRUEDIV_TARGET = {"int8": _dt.float32, "int16": _dt.float32, "uint8": _dt.float32,
                   "int32": _dt.float64, "int64": _dt.float64}


def divide(x, y, name=None):
    """True division; integers are first cast to float (int32/int64 → float64), like TF.

    >>> jf.divide([1, 3], 2).numpy()
    array([0.5, 1.5])
    """
    x, y = binary_operands(x, y)
    if x._dtype.is_integer and x._dtype is y._dtype:
        target = _TRUEDIV_TARGET[x._dtype.name]
        x, y = cast(x, target), cast(y, target)
    return apply("RealDiv", [x, y], name=name or "truediv")[0]


truediv = divide


# -- reductions ------------------------------------------------------------------------
def _to_2d(x: np.ndarray, axes):
    """Move `axes` (None: all) last and flatten to a contiguous (outer, inner) array."""
    rank = x.ndim
    if axes is None:
        axes = tuple(range(rank))
    keep = [i for i in range(rank) if i not in axes]
    if keep and list(axes) != list(range(rank - len(axes), rank)):
        x = np.transpose(x, keep + list(axes))
    outer = int(np.prod([x.shape[i] for i in range(len(keep))], dtype=np.int64))
    inner = x.size // outer if outer else int(np.prod(x.shape[len(keep):], dtype=np.int64))
    return np.ascontiguousarray(x).reshape(outer, inner), axes


def _reduction_kernel(kernel_2d, identity=None, out_kind: str = "same", int_kernel=None):
    def run(x, axis, keepdims):
        x = np.asarray(x)
        axes = normalize_axes(axis, x.ndim)
        x2, axes = _to_2d(x, axes)
        out = np.empty(x2.shape[0], np.bool_ if out_kind == "bool" else x.dtype)
        if x2.shape[1] == 0:
            if identity is None:
                raise InvalidArgumentError("cannot reduce over an empty dimension (no identity)")
            out[:] = identity(x.dtype)
        elif x.dtype == np.float16:
            wide = np.empty(x2.shape[0], np.float32)
            kernel_2d(x2.astype(np.float32), wide)
            out[:] = wide
        else:
            k = int_kernel if (int_kernel is not None and x.dtype.kind in "iu") else kernel_2d
            k(x2, out)
        return out.reshape(reduced_dims(x.shape, axes, keepdims))
    return run


def _lowest(dt):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


def _highest(dt):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


_sum = _reduction_kernel(K.reduce_sum_2d, lambda dt: 0, int_kernel=K.reduce_sum_int_2d)
_prod = _reduction_kernel(K.reduce_prod_2d, lambda dt: 1, int_kernel=K.reduce_prod_int_2d)
_max = _reduction_kernel(K.reduce_max_2d, _lowest)
_min = _reduction_kernel(K.reduce_min_2d, _highest)
_all = _reduction_kernel(K.reduce_all_2d, lambda dt: True, "bool")
_any = _reduction_kernel(K.reduce_any_2d, lambda dt: False, "bool")


def _mean_of(sum_kernel):
    """Mean as `sum_kernel`, then a division (the numpy tier reuses it with its own sum)."""
    def mean(x, axis, keepdims):
        return _mean_from(sum_kernel, x, axis, keepdims)
    return mean


def _mean_from(sum_kernel, x, axis, keepdims):
    x = np.asarray(x)
    total = sum_kernel(x, axis, keepdims)
    axes = normalize_axes(axis, x.ndim)
    count = x.size if axes is None else int(np.prod([x.shape[a] for a in axes], dtype=np.int64))
    if x.dtype.kind in "iu":
        return (np.trunc(total / max(count, 1))).astype(x.dtype) if count else total
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / x.dtype.type(count)).astype(x.dtype)


_mean = _mean_of(_sum)


def _np_reduce(fn, identity=None):
    """numpy's reduction with TF's dtype rule: the result keeps the input dtype (numpy
    would sum int8 into int64); `identity(dtype)` is the value over an empty axis."""
    def run(x, axis, keepdims):
        x = np.asarray(x)
        axes = normalize_axes(axis, x.ndim)
        extra = {} if identity is None else {"initial": identity(x.dtype)}
        return np.asarray(fn(x, axis=axes, keepdims=keepdims, **extra)).astype(x.dtype, copy=False)
    return run


def _mean_ref(x, axis, keepdims):
    """TF's mean: integers sum in their own dtype, then divide truncating toward zero."""
    x = np.asarray(x)
    if x.dtype.kind not in "iu":
        with np.errstate(invalid="ignore"):
            return np.asarray(np.mean(x, axis=normalize_axes(axis, x.ndim), keepdims=keepdims))
    total = _np_reduce(np.sum)(x, axis, keepdims)
    count = max(x.size // max(total.size, 1), 1)
    return np.trunc(total / count).astype(x.dtype)


_REDUCTIONS = [
    ("Sum", "reduce_sum", "fic", None, _sum, _np_reduce(np.sum)),
    ("Prod", "reduce_prod", "fic", None, _prod, _np_reduce(np.prod)),
    ("Max", "reduce_max", "fi", None, _max, _np_reduce(np.max, _lowest)),
    ("Min", "reduce_min", "fi", None, _min, _np_reduce(np.min, _highest)),
    ("Mean", "reduce_mean", "fic", None, _mean, _mean_ref),
    ("All", "reduce_all", "b", None, _all, _np_reduce(np.all)),
    ("Any", "reduce_any", "b", None, _any, _np_reduce(np.any)),
]
for _op, _pub, _kinds, _out, _cpu, _ref in _REDUCTIONS:
    register(_op, reduction(_kinds, _out), cpu=_cpu, reference=_ref, public_name=_pub)


def _check_axis_arg(axis: Any) -> Any:
    if axis is None:
        return None
    if isinstance(axis, Tensor):
        known = _known_value(axis)  # an eager tensor, or a constant of the graph being traced
        if known is None:
            raise TypeError(f"axis: expected an int, a list of ints, None or a constant tensor; got the symbolic "
                            f"tensor {getattr(axis, 'name', axis)!r}, whose value is known only when the graph "
                            "runs (the reduced axes must be known when it is built)")
        axis = known.tolist()
    if isinstance(axis, (list, tuple)):
        if not all(isinstance(a, (int, np.integer)) for a in axis):
            raise TypeError(f"axis: expected an int, a list of ints or None; got {axis!r}")
        return tuple(int(a) for a in axis)
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return int(axis)
    raise TypeError(f"axis: expected an int, a list of ints or None; got {axis!r}")


def _reduce(op: str, input_tensor, axis, keepdims, name):
    x = convert_to_tensor(input_tensor)
    axis = _check_axis_arg(axis)
    if x._dims is not None:
        axis = normalize_axes(axis, len(x._dims)) if axis is not None else None
    return apply(op, [x], {"axis": axis, "keepdims": bool(keepdims)}, name=name)[0]


def reduce_sum(input_tensor, axis=None, keepdims=False, name=None):
    """Sum over `axis` (all axes when None), keeping reduced axes with `keepdims` (`tf.reduce_sum`).

    >>> x = jf.constant([[1, 2], [3, 4]])
    >>> jf.reduce_sum(x).numpy()
    np.int32(10)
    >>> jf.reduce_sum(x, axis=0).numpy()
    array([4, 6], dtype=int32)
    """
    return _reduce("Sum", input_tensor, axis, keepdims, name)


def reduce_prod(input_tensor, axis=None, keepdims=False, name=None):
    """Product over `axis` (all axes when None) (`tf.reduce_prod`).

    >>> jf.reduce_prod([[1, 2], [3, 4]], axis=1).numpy()
    array([ 2, 12], dtype=int32)
    """
    return _reduce("Prod", input_tensor, axis, keepdims, name)


def reduce_max(input_tensor, axis=None, keepdims=False, name=None):
    """Maximum over `axis` (all axes when None) (`tf.reduce_max`).

    >>> jf.reduce_max([[1, 5], [3, 4]], axis=0).numpy()
    array([3, 5], dtype=int32)
    """
    return _reduce("Max", input_tensor, axis, keepdims, name)


def reduce_min(input_tensor, axis=None, keepdims=False, name=None):
    """Minimum over `axis` (all axes when None) (`tf.reduce_min`).

    >>> jf.reduce_min([[1, 5], [3, 4]], axis=0).numpy()
    array([1, 4], dtype=int32)
    """
    return _reduce("Min", input_tensor, axis, keepdims, name)


def reduce_mean(input_tensor, axis=None, keepdims=False, name=None):
    """Mean over `axis` (all axes when None); integer inputs give integer means, as in TF (`tf.reduce_mean`).

    >>> jf.reduce_mean([[1.0, 2.0], [3.0, 4.0]], axis=1).numpy()
    array([1.5, 3.5], dtype=float32)
    """
    return _reduce("Mean", input_tensor, axis, keepdims, name)


def reduce_all(input_tensor, axis=None, keepdims=False, name=None):
    """Logical and over `axis` (all axes when None) (`tf.reduce_all`).

    >>> jf.reduce_all([[True, False], [True, True]], axis=1).numpy()
    array([False,  True])
    """
    return _reduce("All", input_tensor, axis, keepdims, name)


def reduce_any(input_tensor, axis=None, keepdims=False, name=None):
    """Logical or over `axis` (all axes when None) (`tf.reduce_any`).

    >>> jf.reduce_any([[True, False], [False, False]], axis=1).numpy()
    array([ True, False])
    """
    return _reduce("Any", input_tensor, axis, keepdims, name)


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """Population variance, mean((x - mean(x))²), composed from primitives like TF.

    >>> jf.math.reduce_variance([1.0, 2.0, 3.0, 4.0]).numpy()
    np.float32(1.25)
    """
    x = convert_to_tensor(input_tensor)
    check_kind(x._dtype, "fc", "input_tensor")
    with name_scope(name or "reduce_variance"):
        mean = reduce_mean(x, axis, keepdims=True)
        deviation = subtract(x, mean)
        if x._dtype.is_complex:  # |x - mean|², a real result (as TF's)
            deviation = abs(deviation)
        return reduce_mean(square(deviation), axis, keepdims)


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """Population standard deviation over `axis` (`tf.math.reduce_std`).

    >>> jf.math.reduce_std([1.0, 2.0, 3.0, 4.0]).numpy()
    np.float32(1.118034)
    """
    with name_scope(name or "reduce_std"):
        return sqrt(reduce_variance(input_tensor, axis, keepdims))


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    """log(sum(exp(x))) computed stably: max + log(sum(exp(x - max))).

    >>> jf.reduce_logsumexp([0.0, 0.0]).numpy()
    np.float32(0.6931472)
    """
    x = convert_to_tensor(input_tensor)
    check_kind(x._dtype, "f", "input_tensor")
    with name_scope(name or "reduce_logsumexp"):
        raw_max = reduce_max(x, axis, keepdims=True)
        # An all--inf row would give inf - inf = nan; shift by 0 there instead.
        finite = apply("IsFinite", [raw_max])[0]
        my_max = stop_gradient(where(finite, raw_max, zeros_like(raw_max)))
        result = log(reduce_sum(exp(subtract(x, my_max)), axis, keepdims=True))
        result = add(result, my_max)
        if not keepdims:
            dims = x._dims
            if dims is not None:
                kept = reduced_dims(dims, _check_axis_arg(axis), False)
                result = reshape(result, [d if d is not None else -1 for d in kept])
            else:
                result = squeeze(result, _check_axis_arg(axis))
        return result


register("IsFinite", elementwise("f", _dt.bool_), cpu=K.UfuncKernel(K.isfinite_, "bool", "IsFinite"),
         reference=np.isfinite, public_name="is_finite", bind=_bind_ufunc)


def is_finite(x, name=None):
    """True where x is neither infinite nor NaN (`tf.math.is_finite`).

    >>> jf.math.is_finite([1.0, np.inf, np.nan]).numpy()
    array([ True, False, False])
    """
    return _unary("IsFinite", x, name)


# -- arg reductions --------------------------------------------------------------------
def _arg_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "fi")
    out = attrs["output_type"]
    if dims is None:
        return [(None, out)]
    if not dims:
        raise InvalidArgumentError("argmax/argmin need a tensor of rank >= 1; got a scalar")
    axis = normalize_axis(attrs["axis"], len(dims))
    return [(tuple(d for i, d in enumerate(dims) if i != axis), out)]


def _arg_kernel(kernel_2d):
    def run(x, axis, output_type):
        x = np.asarray(x)
        axis = normalize_axis(axis, x.ndim)
        x2, _ = _to_2d(x, (axis,))
        out = np.empty(x2.shape[0], output_type.as_numpy_dtype)
        if x2.shape[1] == 0:
            raise InvalidArgumentError("argmax/argmin over an empty dimension")
        kernel_2d(x2 if x.dtype != np.float16 else x2.astype(np.float32), out)
        return out.reshape(reduced_dims(x.shape, (axis,), False))
    return run


register("ArgMax", _arg_infer, cpu=_arg_kernel(K.argmax_2d), public_name="argmax",
         reference=lambda x, axis, output_type: np.argmax(x, axis).astype(output_type.as_numpy_dtype))
register("ArgMin", _arg_infer, cpu=_arg_kernel(K.argmin_2d), public_name="argmin",
         reference=lambda x, axis, output_type: np.argmin(x, axis).astype(output_type.as_numpy_dtype))


def argmax(input, axis=None, output_type=_dt.int64, name=None):  # noqa: A002 - TF's names
    """Index of the largest value along `axis` (`tf.math.argmax`; int64 by default).

    >>> jf.argmax([[1, 9, 3], [7, 2, 5]], axis=1).numpy()
    array([1, 0])
    """
    return apply("ArgMax", [convert_to_tensor(input)],
                 {"axis": 0 if axis is None else int(axis), "output_type": _dt.as_dtype(output_type)}, name=name)[0]


def argmin(input, axis=None, output_type=_dt.int64, name=None):  # noqa: A002
    """Index of the smallest value along `axis` (`tf.math.argmin`; int64 by default).

    >>> jf.argmin([[1, 9, 3], [7, 2, 5]], axis=1).numpy()
    array([0, 1])
    """
    return apply("ArgMin", [convert_to_tensor(input)],
                 {"axis": 0 if axis is None else int(axis), "output_type": _dt.as_dtype(output_type)}, name=name)[0]


# -- softmax ---------------------------------------------------------------------------
def _softmax_kernel(kernel_2d):
    def run(logits, axis):
        x = np.asarray(logits)
        axis = normalize_axis(axis, x.ndim)
        x2, _ = _to_2d(x, (axis,))
        outer_dims = reduced_dims(x.shape, (axis,), False)
        wide = x2.astype(np.float32) if x.dtype == np.float16 else x2
        out = np.empty_like(wide)
        if out.size:
            kernel_2d(wide, out)
        out = out.astype(x.dtype, copy=False).reshape(outer_dims + (x.shape[axis],))
        if axis != x.ndim - 1:
            out = np.moveaxis(out, -1, axis)
        return out
    return run


def _softmax_ref(logits, axis):
    e = np.exp(logits - np.max(logits, axis=axis, keepdims=True, initial=-np.inf))
    return e / np.sum(e, axis=axis, keepdims=True)


def _log_softmax_ref(logits, axis):
    # x - max - log(sum(exp(x - max))): log(softmax) would give -inf where softmax underflows.
    shifted = logits - np.max(logits, axis=axis, keepdims=True, initial=-np.inf)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _softmax_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "f", "logits")
    if dims is not None:
        if not dims:
            raise InvalidArgumentError("logits must have rank >= 1; got a scalar")
        normalize_axis(attrs["axis"], len(dims))
    return [(dims, dtype)]


register("Softmax", _softmax_infer, cpu=_softmax_kernel(K.softmax_2d), reference=_softmax_ref,
         public_name="nn.softmax")
register("LogSoftmax", _softmax_infer, cpu=_softmax_kernel(K.log_softmax_2d),
         reference=_log_softmax_ref, public_name="nn.log_softmax")


def softmax(logits, axis=-1, name=None):
    """exp(x) / sum(exp(x)) along `axis` (`tf.nn.softmax`).

    >>> jf.nn.softmax([1.0, 2.0, 3.0]).numpy()
    array([0.09003057, 0.24472848, 0.66524094], dtype=float32)
    """
    return apply("Softmax", [convert_to_tensor(logits)], {"axis": int(axis)}, name=name)[0]


def log_softmax(logits, axis=-1, name=None):
    """log(softmax(x)) along `axis`, computed stably (`tf.nn.log_softmax`).

    >>> jf.nn.log_softmax([1.0, 2.0]).numpy()
    array([-1.3132617, -0.3132617], dtype=float32)
    """
    return apply("LogSoftmax", [convert_to_tensor(logits)], {"axis": int(axis)}, name=name)[0]


# -- matmul ----------------------------------------------------------------------------
def _matmul_infer(specs, attrs):
    (da, ta), (db, tb) = specs
    check_kind(ta, "fic", "a")
    same_dtype(ta, tb, ("a", "b"))
    if da is None or db is None:
        return [(None, ta)]
    if len(da) < 2 or len(db) < 2:
        raise InvalidArgumentError(f"matmul needs tensors of rank >= 2; got shapes {format_dims(da)} "
                                   f"and {format_dims(db)} (use jf.expand_dims or jf.reshape)")
    m, k1 = (da[-1], da[-2]) if attrs["transpose_a"] else (da[-2], da[-1])
    k2, n = (db[-1], db[-2]) if attrs["transpose_b"] else (db[-2], db[-1])
    if k1 is not None and k2 is not None and k1 != k2:
        raise InvalidArgumentError(f"matmul: inner dimensions differ: a has shape {format_dims(da)} and "
                                   f"b has shape {format_dims(db)} ({k1} != {k2})")
    batch = broadcast_dims(da[:-2], db[:-2])
    return [(batch + (m, n), ta)]


def _blas_operand(x: np.ndarray) -> np.ndarray:
    """`x` as BLAS takes it without a copy: C- or F-ordered (a transposed matrix is an
    F-ordered view and goes as a flag); anything else is copied to C order."""
    flags = x.flags
    return x if flags.c_contiguous or flags.f_contiguous else np.ascontiguousarray(x)


def _matmul_kernel(a, b, transpose_a, transpose_b):
    a = np.asarray(a)
    b = np.asarray(b)
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    half = a.dtype == np.float16
    if half:
        a, b = a.astype(np.float32), b.astype(np.float32)
    if a.ndim == 2 and b.ndim == 2:
        if a.dtype.kind in "fc":
            out = K.matmul_float_2d(_blas_operand(a), _blas_operand(b))
        else:
            out = np.empty((a.shape[0], b.shape[1]), a.dtype)
            K.matmul_int_3d(a[None], b[None], out[None])
    else:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        n = int(np.prod(batch, dtype=np.int64))  # not -1: reshape cannot infer it when k == 0
        a3 = np.ascontiguousarray(np.broadcast_to(a, batch + a.shape[-2:])).reshape((n,) + a.shape[-2:])
        b3 = np.ascontiguousarray(np.broadcast_to(b, batch + b.shape[-2:])).reshape((n,) + b.shape[-2:])
        out = np.empty((a3.shape[0], a3.shape[1], b3.shape[2]), a.dtype)
        if out.size:
            (K.matmul_float_3d if a.dtype.kind in "fc" else K.matmul_int_3d)(a3, b3, out)
        out = out.reshape(batch + out.shape[1:])
    return out.astype(np.float16) if half else out


def _matmul_ref(a, b, transpose_a, transpose_b):
    if transpose_a:
        a = np.swapaxes(a, -1, -2)
    if transpose_b:
        b = np.swapaxes(b, -1, -2)
    return np.matmul(a, b)


register("MatMul", _matmul_infer, cpu=_matmul_kernel, reference=_matmul_ref, public_name="matmul")
register("BatchMatMulV2", _matmul_infer, cpu=_matmul_kernel, reference=_matmul_ref, public_name="matmul")


def matmul(a, b, transpose_a=False, transpose_b=False, adjoint_a=False, adjoint_b=False,
           a_is_sparse=False, b_is_sparse=False, output_type=None, name=None):
    """Matrix product of the last two dimensions (batched over the rest, broadcasting).

    `adjoint_a`/`adjoint_b` take the conjugate transpose (for reals, the transpose).

    >>> jf.matmul([[1.0, 2.0]], [[3.0], [4.0]]).numpy()
    array([[11.]], dtype=float32)
    >>> jf.matmul([[1j]], [[2j]], adjoint_a=True).numpy()
    array([[2.+0.j]])
    """
    a, b = binary_operands(a, b)
    if (transpose_a and adjoint_a) or (transpose_b and adjoint_b):
        raise ValueError("transpose_a/adjoint_a, transpose_b/adjoint_b: only one of each pair may be True")
    if output_type is not None and _dt.as_dtype(output_type) is not a._dtype:
        raise TypeError(f"output_type: jitflow's matmul returns the inputs' dtype {a._dtype.name}; "
                        f"got output_type={_dt.as_dtype(output_type).name}")
    if adjoint_a:
        a, transpose_a = complex_ops.conj(a), True
    if adjoint_b:
        b, transpose_b = complex_ops.conj(b), True
    op = "MatMul" if (a.ndim == 2 and b.ndim == 2) else "BatchMatMulV2"
    return apply(op, [a, b], {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)},
                 name=name)[0]
