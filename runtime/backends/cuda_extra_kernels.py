"""CUDA kernels of the ops added for TF 2 tutorials (ops/math_extra_ops.py, array_extra_ops.py).

Data movement (BroadcastTo, Tile, SplitV) is `copy_view` with strides (0 broadcasts; a
tile is the input walked once per copy); Cumsum and TopKV2 run one thread per row over
the axis moved last; Einsum runs one thread per output element and loops over the summed
letters, two operands at a time. Float16 inputs compute in float32 like the CPU kernels.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Sequence

import numpy as np
from numba import cuda

from jitflow.runtime.backends import cuda_kernels as CK
from jitflow.runtime.backends import cuda_primitives as P
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import array_extra_ops as AX
from jitflow.runtime.ops.infer import normalize_axis


# -- device kernels -------------------------------------------------------------------------
@cuda.jit
def linspace_fill(out, start, stop, n):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        if n == 1:
            out[i] = start[0]  # TF: one value is start
        elif i == n - 1:
            out[i] = stop[0]
        else:
            out[i] = start[0] + i * ((stop[0] - start[0]) / (n - 1))


@cuda.jit
def cumsum_rows(out, x, inner, exclusive, reverse, zero):
    rows = x.size // inner
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        acc = zero
        for k in range(inner):
            j = r * inner + (inner - 1 - k if reverse else k)
            if exclusive:
                out[j] = acc
                acc += x[j]
            else:
                acc += x[j]
                out[j] = acc


@cuda.jit
def top_k_rows(values, indices, x, inner, k):
    """Per row, the k largest (ties: lower index first): the i-th pick is the largest
    element that comes after pick i-1 in the order (value descending, index ascending)."""
    rows = x.size // inner
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        base = r * inner
        prev = -1
        for i in range(k):
            best = -1
            for c in range(inner):
                v = x[base + c]
                if prev >= 0:
                    pv = x[base + prev]
                    if not (v < pv or (v == pv and c > prev)):
                        continue
                if best < 0 or v > x[base + best]:
                    best = c
            values[r * k + i] = x[base + best]
            indices[r * k + i] = best
            prev = best


@cuda.jit
def einsum2(out, a, a_out_st, a_sum_st, b, b_out_st, b_sum_st, out_shape, sum_shape, n_sum, zero):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        a_off = P.offset(i, out_shape, a_out_st)
        b_off = P.offset(i, out_shape, b_out_st)
        acc = zero
        for s in range(n_sum):
            acc += a[a_off + P.offset(s, sum_shape, a_sum_st)] * b[b_off + P.offset(s, sum_shape, b_sum_st)]
        out[i] = acc


# -- scalar functions for the elementwise table -----------------------------------------------
def floor_dev(a):
    if a != a or math.isinf(a):
        return a
    t = a - math.fmod(a, 1.0)
    return t - 1 if t > a else t


_floor = P.device_fn(floor_dev)  # callable from the other device functions


def ceil_dev(a):
    return -_floor(-a)


def round_dev(a):
    if a != a or math.isinf(a):
        return a
    f = _floor(a)
    d = a - f
    if d > 0.5 or (d == 0.5 and math.fmod(f, 2.0) != 0):
        f += 1
    return math.copysign(f, a)


def invert_dev(a):
    return ~a


# -- host wrappers ----------------------------------------------------------------------------
def _broadcast_to(x: Any, shape: Sequence[int]) -> Any:
    shape = tuple(int(d) for d in shape)
    out = CK.empty(shape, x.dtype)
    CK.copy_view(out, 0, CK.c_strides(shape), x, 0, CK.broadcast_strides(x.shape, shape), shape)
    return out


def _tile(x: Any, multiples: Sequence[int]) -> Any:
    shape = tuple(d * m for d, m in zip(x.shape, multiples))
    out = CK.empty(shape, x.dtype)
    o_st, x_st = CK.c_strides(shape), CK.c_strides(x.shape)
    view, dst, src = [], [], []
    for i, (d, m) in enumerate(zip(x.shape, multiples)):
        view += [m, d]
        dst += [d * o_st[i], o_st[i]]
        src += [0, x_st[i]]
    CK.copy_view(out, 0, dst, x, 0, src, view)
    return out


def _split(x: Any, size_splits: Sequence[int], axis: int) -> Any:
    axis = normalize_axis(axis, x.ndim)
    x_st = CK.c_strides(x.shape)
    parts, start = [], 0
    for size in size_splits:
        shape = tuple(x.shape[:axis]) + (size,) + tuple(x.shape[axis + 1:])
        out = CK.empty(shape, x.dtype)
        CK.copy_view(out, 0, CK.c_strides(shape), x, start * x_st[axis], x_st, shape)
        parts.append(out)
        start += size
    return parts[0] if len(parts) == 1 else tuple(parts)


def _linspace(start: Any, stop: Any, num: int) -> Any:
    out = CK.empty((num,), start.dtype)
    if num:
        CK.launch(linspace_fill, num, out, CK.flat(start), CK.flat(stop), num)
    return out


def _along_last(x: Any, axis: int):
    axis = normalize_axis(axis, x.ndim)
    perm = [i for i in range(x.ndim) if i != axis] + [axis]
    moved = CK.transpose(x, perm) if axis != x.ndim - 1 else x
    inverse = [perm.index(i) for i in range(x.ndim)]
    return moved, axis, inverse


def _cumsum(x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    moved, axis, inverse = _along_last(x, axis)
    out = CK.empty(moved.shape, moved.dtype)
    inner = moved.shape[-1] if moved.ndim else 1
    if out.size:
        CK.launch(cumsum_rows, out.size // inner, CK.flat(out), CK.flat(moved), inner, exclusive, reverse,
                  out.dtype.type(0))
    return CK.transpose(out, inverse) if axis != x.ndim - 1 else out


def _top_k(x: Any, k: int, sorted: bool = True) -> Any:  # noqa: A002 - TF's attr name
    n = x.shape[-1]
    if k > n:
        raise InvalidArgumentError(f"top_k: input must have at least k={k} columns; got {n}")
    shape = tuple(x.shape[:-1]) + (k,)
    values = CK.empty(shape, x.dtype)
    indices = CK.empty(shape, np.int32)
    rows = int(np.prod(x.shape[:-1], dtype=np.int64))
    if values.size:
        CK.launch(top_k_rows, rows, CK.flat(values), CK.flat(indices), CK.flat(x), n, k)
    return values, indices


def _einsum_pair(a: Any, sa: str, b: Any, sb: str, out_subs: str) -> Any:
    sizes: Dict[str, int] = {}
    for subs, arr in ((sa, a), (sb, b)):
        for c, d in zip(subs, arr.shape):
            sizes[c] = int(d)
    summed = [c for c in dict.fromkeys(sa + sb) if c not in out_subs]

    def strides(subs: str, arr: Any, letters: List[str]):
        st = CK.c_strides(arr.shape)
        return tuple(sum(st[i] for i, c in enumerate(subs) if c == letter) for letter in letters) or (0,)

    out_shape = tuple(sizes[c] for c in out_subs)
    out = CK.empty(out_shape, a.dtype)
    if out.size == 0:
        return out
    sum_shape = tuple(sizes[c] for c in summed) or (1,)
    n_sum = int(np.prod([sizes[c] for c in summed], dtype=np.int64)) if summed else 1
    o_letters = list(out_subs)
    CK.launch(einsum2, out.size, CK.flat(out), CK.flat(a), strides(sa, a, o_letters), strides(sa, a, summed),
              CK.flat(b), strides(sb, b, o_letters), strides(sb, b, summed), out_shape or (1,), sum_shape, n_sum,
              out.dtype.type(0))
    return out


def _einsum(*xs: Any, equation: str) -> Any:
    ins, out_subs = AX.parse_equation(equation, len(xs))
    if len(xs) == 1:  # one operand: pair it with a scalar one
        one = CK.fill(CK.empty((1,), xs[0].dtype), 1)
        return _einsum_pair(xs[0], ins[0], one, "", out_subs)
    current, subs = xs[0], ins[0]
    for k in range(1, len(xs)):
        later = set(out_subs).union(*[set(s) for s in ins[k + 1:]])
        keep = "".join(c for c in dict.fromkeys(subs + ins[k]) if c in later) if k < len(xs) - 1 else out_subs
        current, subs = _einsum_pair(current, subs, xs[k], ins[k], keep), keep
    return current


def _int_division_checked(kernel: Any) -> Any:
    """FloorDiv/FloorMod: integer division by zero raises InvalidArgumentError, as on the CPU
    (and in TF). The divisor is checked on the host: one copy, for integer divisors only."""
    def run(x: Any, y: Any) -> Any:
        if np.dtype(y.dtype).kind in "iu" and y.size and (CK.host(y) == 0).any():
            raise InvalidArgumentError("Integer division by zero")
        return kernel(x, y)
    run.__name__ = getattr(kernel, "__name__", "kernel")
    return run


def _custom_gradient(*values: Any, n_outputs: int, **_: Any) -> Any:
    """Forward of `jf.custom_gradient`: its first outputs, on the device where they are."""
    return values[0] if n_outputs == 1 else tuple(values[:n_outputs])


OVERRIDES: Dict[str, Any] = {
    "FloorDiv": _int_division_checked(CK.OVERRIDES["FloorDiv"]),
    "FloorMod": _int_division_checked(CK.OVERRIDES["FloorMod"]),
    "CustomGradient": _custom_gradient,
    "Floor": CK.Elementwise(floor_dev, "same", "Floor"),
    "Ceil": CK.Elementwise(ceil_dev, "same", "Ceil"),
    "Round": CK.Elementwise(round_dev, "same", "Round"),
    "Invert": CK.Elementwise(invert_dev, "same", "Invert"),
    "BroadcastTo": _broadcast_to,
    "Tile": _tile,
    "SplitV": _split,
    "LinSpace": CK._on_host_f16(_linspace),
    "Cumsum": CK._on_host_f16(_cumsum),
    "TopKV2": _top_k,
    "Einsum": CK._on_host_f16(_einsum),
}
