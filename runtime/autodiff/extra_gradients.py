"""Gradients of the ops in `ops/math_extra_ops.py` and `ops/array_extra_ops.py`.

Written with jitflow ops (so they run eagerly or build graph nodes, and are themselves
differentiable), following TF's `math_grad.py` / `array_grad.py`.
"""
from __future__ import annotations

import math

from jitflow.runtime.autodiff.gradients import unbroadcast
from jitflow.runtime.autodiff.tape import gradient, not_differentiable
from jitflow.runtime.ops import array_extra_ops as AX
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import complex_ops as C
from jitflow.runtime.ops import math_extra_ops as E
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.indexing_ops import one_hot

not_differentiable("Floor", "Ceil", "Round", "Invert")


def _c(value, like):
    return convert_to_tensor(value, dtype=like.dtype)


@gradient("Log1p")
def _log1p(rec, g):
    x = rec.inputs[0]
    return [M.divide(g, M.add(_c(1.0, x), x))]


@gradient("Expm1")
def _expm1(rec, g):
    return [M.multiply(g, M.exp(rec.inputs[0]))]


@gradient("Erf")
def _erf(rec, g):
    x = rec.inputs[0]
    two_over_root_pi = _c(2.0 / math.sqrt(math.pi), x)
    return [M.multiply(g, M.multiply(two_over_root_pi, M.exp(M.negative(M.square(x)))))]


@gradient("Erfc")
def _erfc(rec, g):
    x = rec.inputs[0]
    minus_two_over_root_pi = _c(-2.0 / math.sqrt(math.pi), x)
    return [M.multiply(g, M.multiply(minus_two_over_root_pi, M.exp(M.negative(M.square(x)))))]


@gradient("Rsqrt")
def _rsqrt(rec, g):
    y = rec.output()
    return [M.multiply(g, M.multiply(_c(-0.5, y), M.multiply(y, M.square(y))))]


@gradient("Reciprocal")
def _reciprocal(rec, g):
    y = rec.output()
    return [M.negative(M.multiply(g, M.square(y)))]


@gradient("Tan")
def _tan(rec, g):
    return [M.divide(g, M.square(M.cos(rec.inputs[0])))]


@gradient("Atan")
def _atan(rec, g):
    x = rec.inputs[0]
    return [M.divide(g, M.add(_c(1.0, x), M.square(x)))]


@gradient("Asin")
def _asin(rec, g):
    x = rec.inputs[0]
    return [M.multiply(g, E.rsqrt(M.subtract(_c(1.0, x), M.square(x))))]


@gradient("Acos")
def _acos(rec, g):
    x = rec.inputs[0]
    return [M.negative(M.multiply(g, E.rsqrt(M.subtract(_c(1.0, x), M.square(x)))))]


@gradient("Sinh")
def _sinh(rec, g):
    return [M.multiply(g, E.cosh(rec.inputs[0]))]


@gradient("Cosh")
def _cosh(rec, g):
    return [M.multiply(g, E.sinh(rec.inputs[0]))]


@gradient("Softsign")
def _softsign(rec, g):
    x = rec.inputs[0]
    return [M.divide(g, M.square(M.add(_c(1.0, x), M.abs(x))))]


@gradient("Cumsum")
def _cumsum(rec, g):
    a = rec.attrs
    return [E.cumsum(g, axis=a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])]


@gradient("Cumprod")
def _cumprod(rec, g):
    # TF's rule: cumsum(prod · g) in the other direction, divided by x (undefined where x is 0).
    a = rec.attrs
    x = rec.inputs[0]
    total = E.cumsum(M.multiply(rec.output(), g), axis=a["axis"], exclusive=a["exclusive"], reverse=not a["reverse"])
    return [M.divide(total, x)]


@gradient("TopKV2")
def _top_k(rec, grads):
    """Scatter the values' gradient back to where the values came from."""
    g = grads[0]
    x = rec.inputs[0]
    if g is None:
        return [None]
    n = A.shape(x)[-1] if x._dims is None or x._dims[-1] is None else x._dims[-1]
    hot = one_hot(rec.outputs[1], n, dtype=g.dtype)            # [..., k, n]
    return [M.reduce_sum(M.multiply(hot, A.expand_dims(g, -1)), axis=-2)]


@gradient("LinSpace")
def _linspace(rec, g):
    n = rec.attrs["num"]
    start = rec.inputs[0]
    if n <= 1:
        return [M.reduce_sum(g), A.zeros_like(start)]
    w = A.cast(M.divide(A.range(n), n - 1), g.dtype)  # d out[i] / d stop = i / (n - 1)
    g_stop = M.reduce_sum(M.multiply(g, w))
    return [M.subtract(M.reduce_sum(g), g_stop), g_stop]


@gradient("BroadcastTo")
def _broadcast_to(rec, g):
    return [unbroadcast(g, rec.inputs[0])]


@gradient("Tile")
def _tile(rec, g):
    """Fold each tiled copy back: reshape to (m0, d0, m1, d1, ...) and sum the m axes."""
    x = rec.inputs[0]
    dims, multiples = x._dims, rec.attrs["multiples"]
    split_shape = []
    for d, m in zip(dims, multiples):
        split_shape += [m, d]
    folded = A.reshape(g, split_shape)
    return [M.reduce_sum(folded, axis=list(range(0, 2 * len(dims), 2)))]


@gradient("SplitV")
def _split(rec, grads):
    filled = [A.zeros_like(o) if gr is None else gr for gr, o in zip(grads, rec.outputs)]
    return [A.concat(filled, axis=rec.attrs["axis"])]


@gradient("Einsum")
def _einsum(rec, g):
    """d/d input_i = einsum(out, conj(others) -> subs_i); letters only in input_i are broadcast back.

    A letter repeated within input i (a diagonal: "ii->i", "ii->", "iij->j") is handled as
    TF does: the gradient is taken with respect to the diagonal (each letter once) and then
    placed back on the diagonal of a zero tensor (an einsum with identity matrices).
    """
    ins, out = AX.parse_equation(rec.attrs["equation"], len(rec.inputs))
    used = set(rec.attrs["equation"])
    fresh = (c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used)
    grads = []
    for i, (x, subs) in enumerate(zip(rec.inputs, ins)):
        unique = "".join(dict.fromkeys(subs))  # the diagonal's subscripts, first occurrences in order
        others = [(s, t) for j, (s, t) in enumerate(zip(ins, rec.inputs)) if j != i]
        known = set(out).union(*[set(s) for s, _ in others])
        kept = "".join(c for c in unique if c in known)
        eq = ",".join([out] + [s for s, _ in others]) + "->" + kept
        gi = AX.einsum(eq, g, *[_conj(t) for _, t in others])
        if kept != unique:  # letters summed only within input i: their gradient is constant along them
            for k in [k for k, c in enumerate(unique) if c not in known]:
                gi = A.expand_dims(gi, k)
            dims = [x._dims[subs.index(c)] for c in unique] if x._dims is not None else [None]
            if any(d is None for d in dims):  # known at run time only: broadcast against ones
                gi = M.multiply(gi, A.ones_like(AX.einsum(f"{subs}->{unique}", x)))
            else:
                gi = AX.broadcast_to(gi, dims)
        if unique != subs:
            gi = _onto_diagonal(gi, unique, subs, x, fresh)
        grads.append(gi)
    return grads


def _conj(t):
    return C.conj(t) if t.dtype.is_complex else t


def _onto_diagonal(g_diag, unique: str, subs: str, x, fresh) -> object:
    """A zero tensor shaped like `x` (subscripts `subs`) holding `g_diag` (subscripts `unique`) on
    its diagonal: each repeat of a letter gets a fresh letter tied to the first by an identity."""
    seen = set()
    out_subs = ""
    eyes = []
    for pos, c in enumerate(subs):
        if c not in seen:
            seen.add(c)
            out_subs += c
            continue
        new = next(fresh)
        out_subs += new
        n = A.shape(x)[pos]
        idx = A.range(n)
        eye = A.cast(M.equal(A.expand_dims(idx, 1), A.expand_dims(idx, 0)), g_diag.dtype)
        eyes.append((c + new, eye))
    eq = ",".join([unique] + [s for s, _ in eyes]) + "->" + out_subs
    return AX.einsum(eq, g_diag, *[e for _, e in eyes])
