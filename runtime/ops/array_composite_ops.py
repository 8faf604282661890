"""TF array functions written in terms of primitive ops (gradients come for free):
`slice`, `strided_slice`, `repeat`, `roll`, `meshgrid`, `sequence_mask`, `ensure_shape`.
"""
from __future__ import annotations

import builtins
from typing import Any, List

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import TensorShape
from jitflow.runtime.core.tensor import EagerTensor
from jitflow.runtime.ops import array_extra_ops as AX
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.indexing_ops import gather
from jitflow.runtime.ops.infer import check_kind


def _ints(value: Any, what: str) -> List[int]:
    ints = A._static_ints(value, what)
    if ints is None:
        raise ValueError(f"{what}: expected a list of ints known at trace time; got {value!r}")
    return [int(i) for i in ints]


def slice(input_, begin, size, name=None):  # noqa: A001 - TF's name
    """The `size`-element block of `input_` starting at `begin`; size -1 takes the rest (`tf.slice`).

    >>> jf.slice([[1, 2, 3], [4, 5, 6]], [0, 1], [2, 2]).numpy()
    array([[2, 3],
           [5, 6]], dtype=int32)
    >>> jf.slice([1, 2, 3, 4], [1], [-1]).numpy()
    array([2, 3, 4], dtype=int32)
    """
    x = convert_to_tensor(input_)
    b, s = _ints(begin, "begin"), _ints(size, "size")
    if len(b) != len(s) or (x.ndim is not None and len(b) != x.ndim):
        raise InvalidArgumentError(f"begin and size must have one entry per dimension of input (rank {x.ndim}); "
                                   f"got begin={b}, size={s}")
    with name_scope(name or "Slice"):
        dims = x.shape.as_list() if x.ndim is not None else [None] * len(b)
        for k, (start, n) in enumerate(zip(b, s)):
            if start < 0 or n < -1 or (dims[k] is not None and n != -1 and start + n > dims[k]):
                raise InvalidArgumentError(f"Expected begin[{k}] in [0, {dims[k]}] and size[{k}] in [-1, "
                                           f"{dims[k]} - begin]; got begin={start}, size={n}")
        return x[tuple(builtins.slice(start, None if n == -1 else start + n)
                       for start, n in zip(b, s))]


def strided_slice(input_, begin, end, strides=None, name=None):
    """input_[begin:end:strides] per dimension (`tf.strided_slice`, without the bit masks).

    >>> jf.strided_slice([[1, 2, 3], [4, 5, 6]], [0, 0], [2, 3], [1, 2]).numpy()
    array([[1, 3],
           [4, 6]], dtype=int32)
    """
    x = convert_to_tensor(input_)
    b, e = _ints(begin, "begin"), _ints(end, "end")
    st = _ints(strides, "strides") if strides is not None else [1] * len(b)
    if not len(b) == len(e) == len(st):
        raise InvalidArgumentError(f"begin, end and strides must have the same length; got {b}, {e}, {st}")
    with name_scope(name or "StridedSlice"):
        return x[tuple(builtins.slice(i, j, k) for i, j, k in zip(b, e, st))]


def repeat(input, repeats, axis=None, name=None):  # noqa: A002
    """Each element repeated `repeats` times along `axis` (flattened first when None) (`tf.repeat`).

    >>> jf.repeat([[1, 2], [3, 4]], repeats=2, axis=0).numpy()
    array([[1, 2],
           [1, 2],
           [3, 4],
           [3, 4]], dtype=int32)
    >>> jf.repeat([1, 2, 3], repeats=[3, 0, 1]).numpy()
    array([1, 1, 1, 3], dtype=int32)
    """
    x = convert_to_tensor(input)
    with name_scope(name or "Repeat"):
        if axis is None:
            x = A.reshape(x, [-1])
            axis = 0
        if x.ndim is None:
            raise ValueError("input: repeat needs a tensor of known rank")
        axis = int(axis) % max(x.ndim, 1)
        counts = _ints(repeats if not isinstance(repeats, int) else [repeats], "repeats")
        n = x.shape.as_list()[axis]
        if len(counts) == 1 and (n is None or n != 1 or isinstance(repeats, int)):
            # One count for every element: insert an axis, tile it, merge it into `axis`.
            dims = A.shape(x)
            tiled = AX.tile(A.expand_dims(x, axis + 1), [1] * (axis + 1) + [counts[0]] + [1] * (x.ndim - axis - 1))
            merged = A.concat([dims[:axis], M.multiply(dims[axis:axis + 1], counts[0]), dims[axis + 1:]], 0)
            return A.reshape(tiled, merged)
        if n is None or len(counts) != n or any(c < 0 for c in counts):
            raise InvalidArgumentError(f"repeats: expected a non-negative count per element of axis {axis} "
                                       f"(size {n}); got {counts}")
        index = [i for i, c in enumerate(counts) for _ in range(c)]
        return gather(x, convert_to_tensor(index, dtype=_dt.int32), axis=axis)


def roll(input, shift, axis, name=None):  # noqa: A002
    """Elements shifted (with wrap-around) by `shift` along `axis` (`tf.roll`).

    >>> jf.roll([0, 1, 2, 3, 4], shift=2, axis=0).numpy()
    array([3, 4, 0, 1, 2], dtype=int32)
    """
    x = convert_to_tensor(input)
    shifts = _ints(shift if not isinstance(shift, int) else [shift], "shift")
    axes = _ints(axis if not isinstance(axis, int) else [axis], "axis")
    if len(shifts) != len(axes):
        raise InvalidArgumentError(f"shift and axis must have the same length; got {shifts} and {axes}")
    with name_scope(name or "Roll"):
        for s, a in zip(shifts, axes):
            n = x.shape.as_list()[a]
            if n is None:
                raise ValueError(f"input: roll needs dimension {a} known at trace time")
            if n == 0:
                continue
            s %= n
            if s:
                head = [builtins.slice(None)] * (a % x.ndim)
                x = A.concat([x[tuple(head + [builtins.slice(n - s, None)])],
                              x[tuple(head + [builtins.slice(None, n - s)])]], a)
        return x


def meshgrid(*args, **kwargs):
    """N-D coordinate grids from 1-D coordinate vectors; `indexing` 'xy' (default) or 'ij' (`tf.meshgrid`).

    >>> [g.numpy().tolist() for g in jf.meshgrid([1, 2, 3], [4, 5])]
    [[[1, 2, 3], [1, 2, 3]], [[4, 4, 4], [5, 5, 5]]]
    """
    indexing = kwargs.pop("indexing", "xy")
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: unexpected keyword arguments {sorted(kwargs)}")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing: expected 'xy' or 'ij'; got {indexing!r}")
    with name_scope(name or "meshgrid"):
        vectors = [A.reshape(convert_to_tensor(a), [-1]) for a in args]
        n = len(vectors)
        shaped = [A.reshape(v, [1] * k + [-1] + [1] * (n - k - 1)) for k, v in enumerate(vectors)]
        if indexing == "xy" and n > 1:
            shaped[0] = A.reshape(vectors[0], [1, -1] + [1] * (n - 2))
            shaped[1] = A.reshape(vectors[1], [-1, 1] + [1] * (n - 2))
        outs = []
        for k, s in enumerate(shaped):
            out = s
            for j, other in enumerate(shaped):
                if j != k:
                    out = M.multiply(out, A.ones_like(A.cast(other, s.dtype)) if s.dtype is not other.dtype
                                     else A.ones_like(other))
            outs.append(out)
        return outs


def sequence_mask(lengths, maxlen=None, dtype=_dt.bool_, name=None):
    """mask[..., j] = j < lengths[...] for j in range(maxlen) (`tf.sequence_mask`).

    >>> jf.sequence_mask([1, 3, 2], 5).numpy().astype(int)
    array([[1, 0, 0, 0, 0],
           [1, 1, 1, 0, 0],
           [1, 1, 0, 0, 0]])
    """
    with name_scope(name or "SequenceMask"):
        lengths_t = convert_to_tensor(lengths)
        check_kind(lengths_t.dtype, "i", "lengths")
        limit = M.reduce_max(lengths_t) if maxlen is None else A.cast(convert_to_tensor(maxlen), lengths_t.dtype)
        row = A.range(A.cast(limit, lengths_t.dtype), dtype=lengths_t.dtype)
        mask = M.less(row, A.expand_dims(lengths_t, -1))
        return mask if _dt.as_dtype(dtype) is _dt.bool_ else A.cast(mask, _dt.as_dtype(dtype))


def ensure_shape(x, shape, name=None):
    """`x` itself, after checking its shape is compatible with `shape` (None: any size) (`tf.ensure_shape`).

    A known mismatch raises ValueError; in a trace the result carries the more specific shape
    only when `x`'s is already that specific.

    >>> jf.ensure_shape(jf.zeros([2, 3]), [None, 3]).shape
    TensorShape([2, 3])
    """
    t = convert_to_tensor(x)
    want = TensorShape(shape)
    if not t.shape.is_compatible_with(want):
        if isinstance(t, EagerTensor):
            raise InvalidArgumentError(f"Shape of tensor x {t.shape} is not compatible with expected shape {want}.")
        raise ValueError(f"Shape must be compatible: x has shape {t.shape}, expected {want}")
    return A.identity(t, name=name)


__all__ = ["slice", "strided_slice", "repeat", "roll", "meshgrid", "sequence_mask", "ensure_shape"]
