"""Gradient functions, one per differentiable op, written with jitflow ops.

Each takes the op's `Record` (inputs, outputs, attrs) and the gradient of its output
(a list for multi-output ops) and returns one gradient per input (None: no gradient).
Because they use ordinary ops, the same code runs eagerly or builds graph nodes.
"""
from __future__ import annotations

from typing import Any, List, Optional

from .autodiff import Record, gradient, not_differentiable
from .ops import array_ops as A
from .ops import math_ops as M
from .ops.infer import normalize_axes
from .tensor import Tensor

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
    return _binary(rec, M.multiply(g, y), M.multiply(g, x))


@gradient("RealDiv")
def _div(rec, g):
    x, y = rec.inputs
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
    return [M.multiply(g, rec.output())]


@gradient("Log")
def _log(rec, g):
    return [M.divide(g, rec.inputs[0])]


@gradient("Sqrt")
def _sqrt(rec, g):
    return [M.divide(M.multiply(g, 0.5), rec.output())]


@gradient("Square")
def _square(rec, g):
    return [M.multiply(g, M.multiply(rec.inputs[0], 2))]


@gradient("Tanh")
def _tanh(rec, g):
    y = rec.output()
    return [M.multiply(g, M.subtract(1, M.square(y)))]


@gradient("Sigmoid")
def _sigmoid(rec, g):
    y = rec.output()
    return [M.multiply(g, M.multiply(y, M.subtract(1, y)))]


@gradient("Sin")
def _sin(rec, g):
    return [M.multiply(g, M.cos(rec.inputs[0]))]


@gradient("Cos")
def _cos(rec, g):
    return [M.negative(M.multiply(g, M.sin(rec.inputs[0])))]


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
    if not src.dtype.is_floating:
        return [None]
    return [A.cast(g, src.dtype)]


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
    x = rec.inputs[0]
    y = _expand_reduced(rec.output(), rec)
    return [M.divide(M.multiply(_expand_reduced(g, rec), y), x)]


@gradient("MatMul")
def _matmul(rec, g):
    a, b = rec.inputs
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



@gradient("If")
def _if(rec, grads):
    """A cond's gradient is a cond of its branches' gradients.

    Each gradient branch replays its forward branch (so the tape sees every op) and
    differentiates it with respect to the values the branch captured; inputs the other
    branch captured get zeros, so both branches return the same structure.
    """
    from .autodiff import GradientTape
    from .control_flow import cond
    from .function import inline_graph
    from .ops.constant_op import TensorConvertible
    then_b, else_b, n_then = rec.attrs["then_branch"], rec.attrs["else_branch"], rec.attrs["n_then"]
    captured = rec.inputs[1:]
    outs = rec.outputs
    seeds = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    seeds = [A.zeros_like(o) if g is None else g for g, o in zip(seeds, outs)]
    slots = [i for i, c in enumerate(captured)
             if isinstance(c, TensorConvertible) and c.dtype.is_floating
             or isinstance(c, Tensor) and c.dtype.is_floating]

    def zeros_for(c):
        return A.zeros_like(c.read_value() if isinstance(c, TensorConvertible) else c)

    def branch_grads(branch, lo, hi):
        def run():
            mine = captured[lo:hi]
            with GradientTape(persistent=True) as tape:
                tape.watch([c for c in mine if isinstance(c, (Tensor, TensorConvertible)) and c.dtype.is_floating])
                results = inline_graph(branch.graph, [ph for _, ph in branch.captures], mine, branch.outputs)
            float_results = [(r, s) for r, s in zip(results, seeds) if r.dtype.is_floating]
            targets = [r for r, _ in float_results]
            wanted = [captured[i] for i in slots if lo <= i < hi]
            found = tape.gradient(targets, wanted, output_gradients=[s for _, s in float_results]) if targets else []
            by_index = dict(zip([i for i in slots if lo <= i < hi], found))
            return [by_index.get(i) if by_index.get(i) is not None else zeros_for(captured[i]) for i in slots]
        return run

    if not slots:
        return [None] * len(rec.inputs)
    results = cond(rec.inputs[0], branch_grads(then_b, 0, n_then), branch_grads(else_b, n_then, len(captured)))
    results = results if isinstance(results, list) else [results]
    out = [None] * len(rec.inputs)
    for i, g in zip(slots, results):
        out[1 + i] = g
    return out


@gradient("While")
def _while(rec, grads):
    """A loop's gradient: replay the loop recording each iteration's state, then walk the
    iterations backwards, applying the body's vector-Jacobian product at each saved state.

    Both passes are `jf.while_loop`s themselves, so the backward pass stays a graph loop;
    states are kept in TensorArrays (one per loop variable).
    """
    from .autodiff import GradientTape
    from .control_flow import while_loop
    from .function import inline_graph
    from .ops.constant_op import TensorConvertible, convert_to_tensor
    from .tensor_array import TensorArray
    n_vars, n_cond = rec.attrs["n_vars"], rec.attrs["n_cond"]
    cond_sub, body_sub, limit = rec.attrs["cond"], rec.attrs["body"], rec.attrs["maximum_iterations"]
    init = list(rec.inputs[:n_vars])
    cond_caps = list(rec.inputs[n_vars:n_vars + n_cond])
    body_caps = list(rec.inputs[n_vars + n_cond:])
    seeds = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    seeds = [A.zeros_like(o) if g is None else g for g, o in zip(seeds, rec.outputs)]
    var_idx = [k for k, v in enumerate(init) if v.dtype.is_floating]
    cap_idx = [j for j, c in enumerate(body_caps) if isinstance(c, (Tensor, TensorConvertible)) and c.dtype.is_floating]
    if not var_idx:
        return [None] * len(rec.inputs)

    def run_cond(values):
        (go,) = inline_graph(cond_sub.graph, cond_sub.inputs + [ph for _, ph in cond_sub.captures],
                             list(values) + cond_caps, cond_sub.outputs)
        return go

    def run_body(values):
        return inline_graph(body_sub.graph, body_sub.inputs + [ph for _, ph in body_sub.captures],
                            list(values) + body_caps, body_sub.outputs)

    # 1. Forward replay, saving the state each iteration starts from.
    arrays = [TensorArray(v.dtype, size=0, dynamic_size=True, element_shape=v.shape) for v in init]

    def replay_cond(i, *rest):
        go = run_cond(rest[:n_vars])
        return go if limit is None else M.logical_and(go, M.less(i, limit))

    def replay_body(i, *rest):
        values, tas = rest[:n_vars], rest[n_vars:]
        tas = [ta.write(i, v) for ta, v in zip(tas, values)]
        return [i + 1] + list(run_body(values)) + tas

    replayed = while_loop(replay_cond, replay_body, [convert_to_tensor(0)] + init + arrays)
    count, saved = replayed[0], replayed[1 + n_vars:]

    # 2. Backward: from the last iteration to the first.
    def zeros_for(c):
        return A.zeros_like(c.read_value() if isinstance(c, TensorConvertible) else c)

    def back_body(k, *rest):
        g_vars, g_caps = rest[:len(var_idx)], rest[len(var_idx):]
        state = [ta.read(k) for ta in saved]
        watched_caps = [body_caps[j] for j in cap_idx]
        with GradientTape() as tape:
            tape.watch([state[i] for i in var_idx] + watched_caps)
            outs = run_body(state)
        found = tape.gradient([outs[i] for i in var_idx], [state[i] for i in var_idx] + watched_caps,
                              output_gradients=list(g_vars))
        new_vars = [g if g is not None else A.zeros_like(state[i]) for g, i in zip(found[:len(var_idx)], var_idx)]
        new_caps = [acc if g is None else M.add(acc, g) for acc, g in zip(g_caps, found[len(var_idx):])]
        return [k - 1] + new_vars + new_caps

    back = while_loop(lambda k, *rest: M.greater_equal(k, 0), back_body,
                      [count - 1] + [seeds[i] for i in var_idx] + [zeros_for(body_caps[j]) for j in cap_idx])
    out = [None] * len(rec.inputs)
    for slot, g in zip(var_idx, back[1:1 + len(var_idx)]):
        out[slot] = g
    for j, g in zip(cap_idx, back[1 + len(var_idx):]):
        out[n_vars + n_cond + j] = g
    return out
