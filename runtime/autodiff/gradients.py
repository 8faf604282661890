"""Gradient functions, one per differentiable op, written with jitflow ops.

Complex inputs follow TF's convention: the gradient passed back is the conjugate of the
derivative times the incoming gradient (`_c`, a no-op for reals), so for a real loss L of
z = x + iy the gradient is dL/dx + i·dL/dy.

Each takes the op's `Record` (inputs, outputs, attrs) and the gradient of its output
(a list for multi-output ops) and returns one gradient per input (None: no gradient).
Because they use ordinary ops, the same code runs eagerly or builds graph nodes.
"""
from __future__ import annotations

from typing import Any, List, Optional

from jitflow.runtime.autodiff.tape import Record, gradient, not_differentiable
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.complex_ops import conj_if_complex as _c
from jitflow.runtime.ops.infer import normalize_axes
from jitflow.runtime.core.tensor import Tensor

not_differentiable("Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual", "LogicalAnd",
                   "LogicalOr", "LogicalNot", "ArgMax", "ArgMin", "Shape", "Size", "ZerosLike", "OnesLike",
                   "Range", "RandomStandardNormal", "RandomUniform", "Sign", "IsFinite", "FloorDiv",
                   "StopGradient", "PrintV2", "EagerPyFunc", "Const", "Placeholder", "All", "Any")


def _dims(t: Any):
    return t._dims


def unbroadcast(grad: Tensor, like: Any) -> Tensor:
    """Sum `grad` over the dimensions that broadcasting added or stretched in `like`."""
    gd, xd = _dims(grad), _dims(like)
    if gd is None or xd is None or gd == xd:
        return grad
    lead = len(gd) - len(xd)
    axes = list(range(lead))
    for i, d in enumerate(xd):
        if d == 1 and gd[lead + i] != 1:
            axes.append(lead + i)
    if axes:
        grad = M.reduce_sum(grad, axis=axes, keepdims=True)
        if lead:
            grad = A.reshape(grad, [d if d is not None else -1 for d in xd])
    return grad


def _binary(rec: Record, gx: Optional[Tensor], gy: Optional[Tensor]) -> List[Optional[Tensor]]:
    x, y = rec.inputs
    return [None if gx is None else unbroadcast(gx, x), None if gy is None else unbroadcast(gy, y)]


@gradient("AddV2")
def _add(rec, g):
    return _binary(rec, g, g)


@gradient("Sub")
def _sub(rec, g):
    return _binary(rec, g, M.negative(g))


@gradient("Mul")
def _mul(rec, g):
    x, y = rec.inputs
    return _binary(rec, M.multiply(g, _c(y)), M.multiply(g, _c(x)))


@gradient("RealDiv")
def _div(rec, g):
    x, y = _c(rec.inputs[0]), _c(rec.inputs[1])
    return _binary(rec, M.divide(g, y), M.negative(M.divide(M.multiply(g, x), M.square(y))))


@gradient("FloorMod")
def _floormod(rec, g):
    x, y = rec.inputs
    return _binary(rec, g, M.negative(M.multiply(g, M.floordiv(x, y))))


@gradient("Pow")
def _pow(rec, g):
    x, y = rec.inputs
    z = rec.output()
    gx = M.multiply(g, M.multiply(y, M.pow(x, M.subtract(y, 1))))
    safe_log = A.where(M.greater(x, 0), M.log(A.where(M.greater(x, 0), x, A.ones_like(x))), A.zeros_like(x))
    gy = M.multiply(g, M.multiply(z, safe_log)) if y.dtype.is_floating else None
    return _binary(rec, gx, gy)


def _select_grad(rec, g, pick_x):
    x, y = rec.inputs
    mask = pick_x(x, y)
    zeros = A.zeros_like(g)
    return _binary(rec, A.where(mask, g, zeros), A.where(mask, zeros, g))


@gradient("Maximum")
def _maximum(rec, g):
    return _select_grad(rec, g, M.greater_equal)


@gradient("Minimum")
def _minimum(rec, g):
    return _select_grad(rec, g, M.less_equal)


@gradient("Neg")
def _neg(rec, g):
    return [M.negative(g)]


@gradient("Abs")
def _abs(rec, g):
    return [M.multiply(g, A.cast(M.sign(rec.inputs[0]), g.dtype))]


@gradient("Exp")
def _exp(rec, g):
    return [M.multiply(g, _c(rec.output()))]


@gradient("Log")
def _log(rec, g):
    return [M.divide(g, _c(rec.inputs[0]))]


@gradient("Sqrt")
def _sqrt(rec, g):
    return [M.divide(M.multiply(g, 0.5), _c(rec.output()))]


@gradient("Square")
def _square(rec, g):
    return [M.multiply(g, M.multiply(_c(rec.inputs[0]), 2))]


@gradient("Tanh")
def _tanh(rec, g):
    y = _c(rec.output())
    return [M.multiply(g, M.subtract(1, M.square(y)))]


@gradient("Sigmoid")
def _sigmoid(rec, g):
    y = rec.output()
    return [M.multiply(g, M.multiply(y, M.subtract(1, y)))]


@gradient("Sin")
def _sin(rec, g):
    return [M.multiply(g, _c(M.cos(rec.inputs[0])))]


@gradient("Cos")
def _cos(rec, g):
    return [M.negative(M.multiply(g, _c(M.sin(rec.inputs[0]))))]


@gradient("Relu")
def _relu(rec, g):
    return [A.where(M.greater(rec.output(), 0), g, A.zeros_like(g))]


@gradient("Identity")
def _identity(rec, g):
    return [g]


@gradient("ReadVariableOp")
def _read(rec, g):
    return [g]  # flows to the variable itself


@gradient("Cast")
def _cast(rec, g):
    src = rec.inputs[0]
    if not (src.dtype.is_floating or src.dtype.is_complex):
        return [None]
    return [A.cast(g, src.dtype)]  # real <- complex keeps the real part (TF's rule)


@gradient("Softmax")
def _softmax(rec, g):
    y = rec.output()
    axis = rec.attrs["axis"]
    return [M.multiply(y, M.subtract(g, M.reduce_sum(M.multiply(g, y), axis=axis, keepdims=True)))]


@gradient("LogSoftmax")
def _log_softmax(rec, g):
    y = rec.output()
    axis = rec.attrs["axis"]
    return [M.subtract(g, M.multiply(M.exp(y), M.reduce_sum(g, axis=axis, keepdims=True)))]


def _expand_reduced(g: Tensor, rec: Record) -> Tensor:
    """Reshape a reduction's gradient so it broadcasts back against the input."""
    x = rec.inputs[0]
    dims = _dims(x)
    if rec.attrs["keepdims"] or dims is None:
        return g
    axes = normalize_axes(rec.attrs["axis"], len(dims))
    if axes is None:
        axes = tuple(range(len(dims)))
    shape = [1 if i in axes else (d if d is not None else -1) for i, d in enumerate(dims)]
    if shape.count(-1) > 1:
        return g if not axes else _expand_dims_many(g, axes)
    return A.reshape(g, shape)


def _expand_dims_many(g: Tensor, axes) -> Tensor:
    for a in sorted(axes):
        g = A.expand_dims(g, a)
    return g


def _broadcast_to_input(g: Tensor, x: Tensor) -> Tensor:
    return M.multiply(g, A.ones_like(x))


@gradient("Sum")
def _sum(rec, g):
    return [_broadcast_to_input(_expand_reduced(g, rec), rec.inputs[0])]


@gradient("Mean")
def _mean(rec, g):
    x = rec.inputs[0]
    y = rec.output()
    count = M.divide(A.cast(A.size(x), g.dtype), A.cast(M.maximum(A.size(y), 1), g.dtype))
    return [M.divide(_broadcast_to_input(_expand_reduced(g, rec), x), count)]


def _extremum(rec, g):
    x = rec.inputs[0]
    y = _expand_reduced(rec.output(), rec)
    mask = A.cast(M.equal(x, y), g.dtype)
    counts = _expand_reduced(M.reduce_sum(mask, axis=rec.attrs["axis"], keepdims=rec.attrs["keepdims"]), rec)
    return [M.divide(M.multiply(mask, _expand_reduced(g, rec)), counts)]


gradient("Max")(_extremum)
gradient("Min")(_extremum)


@gradient("Prod")
def _prod(rec, g):
    x = _c(rec.inputs[0])
    y = _c(_expand_reduced(rec.output(), rec))
    return [M.divide(M.multiply(_expand_reduced(g, rec), y), x)]


@gradient("MatMul")
def _matmul(rec, g):
    a, b = _c(rec.inputs[0]), _c(rec.inputs[1])  # complex: adjoints, as TF's
    ta, tb = rec.attrs["transpose_a"], rec.attrs["transpose_b"]
    if not ta and not tb:
        return [M.matmul(g, b, transpose_b=True), M.matmul(a, g, transpose_a=True)]
    if not ta and tb:
        return [M.matmul(g, b), M.matmul(g, a, transpose_a=True)]
    if ta and not tb:
        return [M.matmul(b, g, transpose_b=True), M.matmul(a, g)]
    return [M.matmul(b, g, transpose_a=True, transpose_b=True), M.matmul(g, a, transpose_a=True, transpose_b=True)]


@gradient("BatchMatMulV2")
def _batch_matmul(rec, g):
    ga, gb = _matmul(rec, g)
    a, b = rec.inputs
    return [unbroadcast(ga, a), unbroadcast(gb, b)]


@gradient("Reshape")
def _reshape(rec, g):
    x = rec.inputs[0]
    dims = _dims(x)
    if dims is not None and all(d is not None for d in dims):
        return [A.reshape(g, list(dims))] + [None] * (len(rec.inputs) - 1)
    return [A.reshape(g, A.shape(x))] + [None] * (len(rec.inputs) - 1)


@gradient("Squeeze")
def _squeeze(rec, g):
    return _reshape(rec, g)


@gradient("ExpandDims")
def _expand_dims(rec, g):
    return _reshape(rec, g)


@gradient("Transpose")
def _transpose(rec, g):
    perm = rec.attrs["perm"]
    if perm is None:
        return [A.transpose(g)]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [A.transpose(g, inverse)]


@gradient("ConcatV2")
def _concat(rec, g):
    axis = rec.attrs["axis"]
    out = []
    offset = 0
    rank = len(_dims(g))
    axis = axis % rank
    for x in rec.inputs:
        size = _dims(x)[axis]
        index = [slice(None)] * axis + [slice(offset, offset + size)]
        out.append(g[tuple(index)])
        offset += size
    return out


@gradient("Pack")
def _pack(rec, g):
    return A.unstack(g, num=len(rec.inputs), axis=rec.attrs["axis"])


@gradient("Unpack")
def _unpack(rec, grads):
    x = rec.inputs[0]
    filled = [A.zeros_like(o) if gr is None else gr for gr, o in zip(grads, rec.outputs)]
    return [A.stack(filled, axis=rec.attrs["axis"])] if x is not None else [None]


@gradient("StridedSlice")
def _slice(rec, g):
    """Scatter the gradient back into zeros of the input's shape (a py_function-free pad)."""
    x = rec.inputs[0]
    index = rec.attrs["index"]
    dynamic = rec.inputs[1:]
    return [A.apply_slice_grad(x, g, index, dynamic)] + [None] * len(dynamic)


@gradient("SelectV2")
def _select(rec, g):
    c, x, y = rec.inputs
    zeros = A.zeros_like(g)
    return [None, unbroadcast(A.where(c, g, zeros), x), unbroadcast(A.where(c, zeros, g), y)]


@gradient("Fill")
def _fill(rec, g):
    return [M.reduce_sum(g)]
