"""Shape and data-movement ops: reshape, transpose, concat, slicing, cast, fill, range...

These kernels are numpy: reshapes, transposes and slices are zero-copy views of
immutable tensors, which a numba kernel could only make slower by copying.
"""
from __future__ import annotations

import builtins
from typing import Any, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import format_dims, merge
from jitflow.runtime.core.tensor import EagerTensor, SymbolicTensor, Tensor
from jitflow.runtime.ops.constant_op import _new, binary_operands, constant, convert_to_tensor, graph_constant  # noqa: F401 - re-export
from jitflow.runtime.ops.infer import (broadcast_dims, check_kind, normalize_axis, same_as_input,
                                       same_dtype)
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.ops import complex_ops


def _static_ints(value: Any, what: str) -> Optional[List[int]]:
    """A Python list of ints from a list/tuple/array/eager tensor; None if symbolic."""
    if isinstance(value, SymbolicTensor):
        return None
    if isinstance(value, EagerTensor):
        value = value._host().tolist()
    elif isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (int, np.integer)):
        return [int(value)]
    try:
        out = []
        for v in value:
            if isinstance(v, SymbolicTensor):
                return None
            out.append(int(v))
        return out
    except TypeError:
        raise TypeError(f"{what}: expected a list of ints or an int tensor; got {value!r}") from None


# -- identity, cast, stop_gradient -----------------------------------------------------
register("Identity", same_as_input, cpu=lambda x: x, public_name="identity")
register("StopGradient", same_as_input, cpu=lambda x: x, public_name="stop_gradient")


def identity(input, name=None):  # noqa: A002 - TF's name
    """A tensor with the same value as `input` (`tf.identity`); in a graph, a new node.

    >>> jf.identity([1, 2]).numpy()
    array([1, 2], dtype=int32)
    """
    return apply("Identity", [convert_to_tensor(input)], name=name)[0]


def stop_gradient(input, name=None):  # noqa: A002
    """`input`, through which no gradient flows (`tf.stop_gradient`).

    >>> x = jf.Variable(2.0)
    >>> with jf.GradientTape() as tape:
    ...     y = x * jf.stop_gradient(x)
    >>> tape.gradient(y, x).numpy()
    np.float32(2.0)
    """
    return apply("StopGradient", [convert_to_tensor(input)], name=name)[0]


def _cast_infer(specs, attrs):
    dims, src = specs[0]
    dst = attrs["DstT"]
    if src.is_string != dst.is_string:
        raise TypeError(f"cannot cast between {src.name} and {dst.name}; use jf.strings ops for strings")
    return [(dims, dst)]


def _cast_kernel(x, DstT, SrcT=None):  # noqa: N803 - TF attr names
    return np.asarray(x).astype(DstT.as_numpy_dtype)


register("Cast", _cast_infer, cpu=_cast_kernel, public_name="cast")


def cast(x, dtype, name=None):
    """Convert `x` to `dtype` (floats truncate toward zero when cast to ints, like TF).

    >>> jf.cast([1.7, -1.7], jf.int32).numpy()
    array([ 1, -1], dtype=int32)
    """
    x = convert_to_tensor(x)
    dtype = _dt.as_dtype(dtype)
    if x._dtype is dtype:
        return x
    return apply("Cast", [x], {"DstT": dtype, "SrcT": x._dtype}, name=name)[0]


# -- reshape, transpose, expand_dims, squeeze ------------------------------------------
def _reshape_infer(specs, attrs):
    dims, dtype = specs[0]
    target = attrs["shape"]
    if target is None:  # dynamic shape input
        n = specs[1][0]
        return [(None if n is None or n[0] is None else (None,) * n[0], dtype)]
    unknown = [i for i, d in enumerate(target) if d == -1]
    if len(unknown) > 1:
        raise InvalidArgumentError(f"shape {list(target)} has more than one -1")
    known = 1
    for d in target:
        if d != -1:
            known *= d
    total = None
    if dims is not None and all(d is not None for d in dims):
        total = 1
        for d in dims:
            total *= d
    out = list(target)
    if unknown:
        if total is not None:
            if known == 0 or total % known:
                raise InvalidArgumentError(f"cannot reshape a tensor of shape {format_dims(dims)} "
                                           f"({total} elements) to {list(target)}")
            out[unknown[0]] = total // known
        else:
            out[unknown[0]] = None
    elif total is not None and total != known:
        raise InvalidArgumentError(f"cannot reshape a tensor of shape {format_dims(dims)} ({total} "
                                   f"elements) to shape {list(target)} ({known} elements)")
    return [(tuple(out), dtype)]


def _reshape_kernel(x, shape_tensor=None, shape=None):
    return np.reshape(x, shape if shape is not None else tuple(int(d) for d in shape_tensor))


register("Reshape", _reshape_infer, cpu=_reshape_kernel, public_name="reshape")


def reshape(tensor, shape, name=None):
    """`tensor` with a new shape of the same size; one dimension may be -1 (`tf.reshape`).

    >>> jf.reshape(jf.range(6), [2, -1]).numpy()
    array([[0, 1, 2],
           [3, 4, 5]], dtype=int32)
    """
    x = convert_to_tensor(tensor)
    static = _static_ints(shape, "shape")
    if static is not None:
        return apply("Reshape", [x], {"shape": tuple(static)}, name=name)[0]
    return apply("Reshape", [x, cast(convert_to_tensor(shape), _dt.int32)], {"shape": None}, name=name)[0]


def _transpose_infer(specs, attrs):
    dims, dtype = specs[0]
    perm = attrs["perm"]
    if dims is None:
        return [(None if perm is None else (None,) * len(perm), dtype)]
    if perm is None:
        return [(tuple(reversed(dims)), dtype)]
    if sorted(perm) != list(builtins.range(len(dims))):
        raise InvalidArgumentError(f"perm {list(perm)} is not a permutation of the {len(dims)} "
                                   f"axes of a tensor with shape {format_dims(dims)}")
    return [(tuple(dims[p] for p in perm), dtype)]


register("Transpose", _transpose_infer, cpu=lambda x, perm: np.transpose(x, perm), public_name="transpose")


def transpose(a, perm=None, conjugate=False, name=None):
    """Permute the axes of `a` (reversed by default) (`tf.transpose`); `conjugate` also conjugates.

    >>> jf.transpose([[1, 2, 3]]).numpy()
    array([[1],
           [2],
           [3]], dtype=int32)
    >>> jf.transpose([[1j, 2]], conjugate=True).numpy()
    array([[0.-1.j],
           [2.-0.j]])
    """
    x = convert_to_tensor(a)
    perm = _static_ints(perm, "perm") if perm is not None else None
    out = apply("Transpose", [x], {"perm": tuple(perm) if perm is not None else None}, name=name)[0]
    return complex_ops.conj(out) if conjugate else out


def _expand_dims_infer(specs, attrs):
    dims, dtype = specs[0]
    if dims is None:
        return [(None, dtype)]
    axis = normalize_axis(attrs["axis"], len(dims) + 1)
    return [(dims[:axis] + (1,) + dims[axis:], dtype)]


register("ExpandDims", _expand_dims_infer, public_name="expand_dims",
         cpu=lambda x, axis: np.expand_dims(x, axis))


def expand_dims(input, axis, name=None):  # noqa: A002
    """Insert an axis of length 1 at `axis` (`tf.expand_dims`).

    >>> jf.expand_dims([1, 2], axis=0).shape
    TensorShape([1, 2])
    """
    return apply("ExpandDims", [convert_to_tensor(input)], {"axis": int(axis)}, name=name)[0]


def _squeeze_infer(specs, attrs):
    dims, dtype = specs[0]
    axes = attrs["squeeze_dims"]
    if dims is None:
        return [(None, dtype)]
    if axes is None:
        if any(d is None for d in dims):
            raise InvalidArgumentError(f"squeeze without axis needs a fully known shape; got {format_dims(dims)}")
        return [(tuple(d for d in dims if d != 1), dtype)]
    axes = {normalize_axis(a, len(dims)) for a in axes}
    for a in axes:
        if dims[a] not in (1, None):
            raise InvalidArgumentError(f"cannot squeeze axis {a} of size {dims[a]} (shape {format_dims(dims)})")
    return [(tuple(d for i, d in enumerate(dims) if i not in axes), dtype)]


def _squeeze_kernel(x, squeeze_dims):
    return np.squeeze(x, axis=squeeze_dims if squeeze_dims is None else tuple(squeeze_dims))


register("Squeeze", _squeeze_infer, cpu=_squeeze_kernel, public_name="squeeze")


def squeeze(input, axis=None, name=None):  # noqa: A002
    """Remove axes of length 1 (all of them, or those in `axis`) (`tf.squeeze`).

    >>> jf.squeeze(jf.zeros([1, 3, 1])).shape
    TensorShape([3])
    """
    axes = None if axis is None else tuple(_static_ints(axis, "axis"))
    return apply("Squeeze", [convert_to_tensor(input)], {"squeeze_dims": axes}, name=name)[0]


# -- concat, stack, unstack ------------------------------------------------------------
def _concat_infer(specs, attrs):
    dtype = specs[0][1]
    for _, other in specs[1:]:
        same_dtype(dtype, other, ("values[0]", "values[i]"))
    ranks = {len(d) for d, _ in specs if d is not None}
    if not ranks:
        return [(None, dtype)]
    if len(ranks) > 1:
        raise InvalidArgumentError(f"concat needs tensors of equal rank; got shapes "
                                   f"{[format_dims(d) for d, _ in specs]}")
    rank = ranks.pop()
    axis = normalize_axis(attrs["axis"], rank)
    out = [None] * rank
    total = 0
    for dims, _ in specs:
        if dims is None:
            total = None
            continue
        for i, d in enumerate(dims):
            if i == axis:
                continue
            if out[i] is not None and d is not None and out[i] != d:
                raise InvalidArgumentError(
                    f"concat along axis {axis}: dimension {i} differs between inputs "
                    f"({[format_dims(d) for d, _ in specs]})")
            out[i] = out[i] if out[i] is not None else d
        total = None if total is None or dims[axis] is None else total + dims[axis]
    out[axis] = total
    return [(tuple(out), dtype)]


register("ConcatV2", _concat_infer, public_name="concat", default_name="concat",
         cpu=lambda *xs, axis: np.concatenate(xs, axis=axis))


def concat(values, axis, name=None):
    """Join tensors along an existing `axis` (`tf.concat`).

    >>> jf.concat([[[1, 2]], [[3, 4]]], axis=0).numpy()
    array([[1, 2],
           [3, 4]], dtype=int32)
    """
    tensors = [convert_to_tensor(v) for v in values]
    if not tensors:
        raise ValueError("values: jf.concat needs at least one tensor; got an empty list")
    if len(tensors) == 1:
        return identity(tensors[0], name=name)
    return apply("ConcatV2", tensors, {"axis": int(axis)}, name=name)[0]


def _pack_infer(specs, attrs):
    dtype = specs[0][1]
    dims = specs[0][0]
    for d, other in specs[1:]:
        same_dtype(dtype, other, ("values[0]", "values[i]"))
        try:
            dims = merge(dims, d)
        except ValueError:
            raise InvalidArgumentError(f"stack needs tensors of the same shape; got "
                                       f"{[format_dims(s) for s, _ in specs]}") from None
    if dims is None:
        return [(None, dtype)]
    axis = normalize_axis(attrs["axis"], len(dims) + 1)
    return [(dims[:axis] + (len(specs),) + dims[axis:], dtype)]


register("Pack", _pack_infer, public_name="stack", default_name="stack",
         cpu=lambda *xs, axis: np.stack(xs, axis=axis))


def stack(values, axis=0, name=None):
    """Join tensors along a new `axis` (`tf.stack`).

    >>> jf.stack([[1, 2], [3, 4]], axis=1).numpy()
    array([[1, 3],
           [2, 4]], dtype=int32)
    """
    values = list(values)
    first = next((v for v in values if isinstance(v, Tensor)), None)
    hint = first._dtype if first is not None else None
    tensors = [convert_to_tensor(v, dtype_hint=hint) for v in values]
    if not tensors:
        raise ValueError("values: jf.stack needs at least one tensor; got an empty list")
    return apply("Pack", tensors, {"axis": int(axis)}, name=name)[0]


def _unpack_infer(specs, attrs):
    dims, dtype = specs[0]
    num = attrs["num"]
    axis = normalize_axis(attrs["axis"], len(dims))
    return [(dims[:axis] + dims[axis + 1:], dtype)] * num


def _unpack_kernel(x, num, axis):
    parts = tuple(np.moveaxis(np.asarray(x), axis, 0))
    return parts[0] if num == 1 else parts  # one output is returned bare, as by every kernel


register("Unpack", _unpack_infer, public_name="unstack", default_name="unstack", cpu=_unpack_kernel)


def unstack(value, num=None, axis=0, name=None):
    """Split `value` into a list of tensors along `axis` (`tf.unstack`).

    >>> [t.numpy() for t in jf.unstack(jf.constant([[1, 2], [3, 4]]))]
    [array([1, 2], dtype=int32), array([3, 4], dtype=int32)]
    """
    x = convert_to_tensor(value)
    if x._dims is None:
        raise ValueError("value: jf.unstack needs a known rank")
    if not x._dims:
        raise ValueError("value: jf.unstack needs a tensor of rank >= 1; got a scalar (shape ())")
    axis_n = normalize_axis(int(axis), len(x._dims))
    num = x._dims[axis_n] if num is None else num
    if num is None:
        raise ValueError(f"value: cannot infer num from shape {format_dims(x._dims)}; pass num=")
    return apply("Unpack", [x], {"num": num, "axis": axis_n}, name=name)


# -- slicing (Tensor.__getitem__) ------------------------------------------------------
_DYN = "?"  # a slice bound fed by the next dynamic input


def _slice_infer(specs, attrs):
    dims, dtype = specs[0]
    if dims is None:
        return [(None, dtype)]
    out: list = []
    index = attrs["index"]
    n_real = sum(1 for kind, *_ in index if kind in ("int", "dyn", "slice"))
    i = 0
    for kind, *args in index:
        if kind == "ellipsis":
            take = len(dims) - n_real
            out.extend(dims[i:i + take])
            i += take
        elif kind == "newaxis":
            out.append(1)
        elif kind in ("int", "dyn"):
            if i >= len(dims):
                raise InvalidArgumentError(f"too many indices for a tensor of shape {format_dims(dims)}")
            if kind == "int" and dims[i] is not None and not -dims[i] <= args[0] < dims[i]:
                raise InvalidArgumentError(f"index {args[0]} is out of bounds for axis {i} with size {dims[i]}")
            i += 1
        else:  # slice
            if i >= len(dims):
                raise InvalidArgumentError(f"too many indices for a tensor of shape {format_dims(dims)}")
            d = dims[i]
            dynamic = any(a == _DYN for a in args)
            out.append(None if d is None or dynamic else len(builtins.range(*slice(*args).indices(d))))
            i += 1
    out.extend(dims[i:])
    return [(tuple(out), dtype)]


def _slice_kernel(x, *dynamic, index, _key_only=False):
    key = []
    dyn = iter(dynamic)
    for kind, *args in index:
        if kind == "int":
            key.append(args[0])
        elif kind == "dyn":
            key.append(int(next(dyn)))
        elif kind == "slice":
            key.append(slice(*[int(next(dyn)) if a == _DYN else a for a in args]))
        elif kind == "newaxis":
            key.append(None)
        else:
            key.append(Ellipsis)
    if _key_only:
        return tuple(key)
    return np.asarray(x)[tuple(key)]


register("StridedSlice", _slice_infer, cpu=_slice_kernel, public_name="strided_slice",
         default_name="strided_slice")


def _index_spec(item: Any):
    items = item if isinstance(item, tuple) else (item,)
    spec: List[Tuple[Any, ...]] = []  # ("slice", start, stop, step), ("int", i), ("newaxis",), ...
    dynamic: List[Any] = []
    for it in items:
        if it is Ellipsis:
            spec.append(("ellipsis",))
        elif it is None:
            spec.append(("newaxis",))
        elif isinstance(it, slice):
            parts: list = []
            for p in (it.start, it.stop, it.step):
                if isinstance(p, EagerTensor):
                    p = int(p)
                if isinstance(p, SymbolicTensor) and p._dtype.is_integer and p.ndim == 0:
                    parts.append(_DYN)
                    dynamic.append(p)
                    continue
                if p is not None and not isinstance(p, (int, np.integer)):
                    raise TypeError(f"slice bounds must be ints, None or scalar integer tensors; got {p!r}")
                parts.append(None if p is None else int(p))
            if parts[2] == 0:
                raise ValueError("slice step cannot be zero")
            spec.append(("slice", *parts))
        elif isinstance(it, (int, np.integer)) and not isinstance(it, bool):
            spec.append(("int", int(it)))
        elif isinstance(it, Tensor) and it._dtype.is_integer and it.ndim == 0:
            if isinstance(it, EagerTensor):
                spec.append(("int", int(it)))
            else:
                spec.append(("dyn",))
                dynamic.append(it)
        else:
            raise TypeError(f"Only integers, slices (`:`), ellipsis (`...`), None (newaxis) and scalar "
                            f"integer tensors are valid indices; got {it!r}")
    return tuple(spec), dynamic


def getitem(tensor: Tensor, item: Any) -> Tensor:
    spec, dynamic = _index_spec(item)
    return apply("StridedSlice", [tensor] + dynamic, {"index": spec})[0]


# -- shape, size, rank -----------------------------------------------------------------
def _shape_infer(specs, attrs):
    dims = specs[0][0]
    return [((None,) if dims is None else (len(dims),), attrs["out_type"])]


register("Shape", _shape_infer, public_name="shape",
         cpu=lambda x, out_type: np.array(np.shape(x), dtype=out_type.as_numpy_dtype))


def shape(input, out_type=_dt.int32, name=None):  # noqa: A002
    """The shape of `input` as a 1-D int32 tensor, known at run time (`tf.shape`).

    >>> jf.shape(jf.zeros([2, 3])).numpy()
    array([2, 3], dtype=int32)
    """
    return apply("Shape", [convert_to_tensor(input)], {"out_type": _dt.as_dtype(out_type)}, name=name)[0]


def _size_infer(specs, attrs):
    return [((), attrs["out_type"])]


register("Size", _size_infer, public_name="size",
         cpu=lambda x, out_type: np.array(np.size(x), dtype=out_type.as_numpy_dtype))


def size(input, out_type=_dt.int32, name=None):  # noqa: A002
    """The number of elements of `input` as an int32 scalar (`tf.size`).

    >>> jf.size(jf.zeros([2, 3])).numpy()
    np.int32(6)
    """
    return apply("Size", [convert_to_tensor(input)], {"out_type": _dt.as_dtype(out_type)}, name=name)[0]


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` as an int32 scalar (`tf.rank`).

    >>> jf.rank(jf.zeros([2, 3])).numpy()
    np.int32(2)
    """
    x = convert_to_tensor(input)
    if x.ndim is None:
        return reshape(size(shape(x)), [])
    return constant(x.ndim, _dt.int32, name=name)


# -- creation --------------------------------------------------------------------------
def _fill_infer(specs, attrs):
    _, dtype = specs[0]
    return [(attrs["dims"], dtype)]


register("Fill", _fill_infer, public_name="fill",
         cpu=lambda value, dims: np.full(dims, value, dtype=np.asarray(value).dtype))


def _check_dims(shape: Any) -> tuple:
    static = _static_ints(shape, "shape")
    if static is None:
        raise TypeError(f"shape: expected a list of ints (dynamic shapes are not supported here); got {shape!r}")
    if any(d < 0 for d in static):
        raise ValueError(f"shape: dimensions must be >= 0; got {static}")
    return tuple(static)


def fill(dims, value, name=None):
    """A tensor of shape `dims` filled with `value` (`tf.fill`).

    >>> jf.fill([2, 2], 7).numpy()
    array([[7, 7],
           [7, 7]], dtype=int32)
    """
    v = convert_to_tensor(value)
    return apply("Fill", [v], {"dims": _check_dims(dims)}, name=name)[0]


def zeros(shape, dtype=_dt.float32, name=None):
    """A tensor of zeros of the given shape and dtype (float32 by default) (`tf.zeros`).

    >>> jf.zeros([2]).numpy()
    array([0., 0.], dtype=float32)
    """
    dtype = _dt.as_dtype(dtype)
    if context._state.graph is None:
        return _new(EagerTensor(np.zeros(_check_dims(shape), dtype.as_numpy_dtype)
                                if not dtype.is_string else np.full(_check_dims(shape), b"", dtype=object), dtype))
    return fill(shape, constant(0 if not dtype.is_string else "", dtype), name=name or "zeros")


def ones(shape, dtype=_dt.float32, name=None):
    """A tensor of ones of the given shape and dtype (float32 by default) (`tf.ones`).

    >>> jf.ones([2], dtype=jf.int32).numpy()
    array([1, 1], dtype=int32)
    """
    dtype = _dt.as_dtype(dtype)
    if context._state.graph is None:
        return _new(EagerTensor(np.ones(_check_dims(shape), dtype.as_numpy_dtype), dtype))
    return fill(shape, constant(1, dtype), name=name or "ones")


def _zeros_like_kernel(x):
    if x.dtype == object:  # strings: TF's zero is b"" (np.zeros_like would give int 0s)
        return np.full(x.shape, b"", dtype=object)
    return np.zeros_like(x)


def _ones_like_infer(specs, attrs):
    check_kind(specs[0][1], "fibc", "input")  # TF has no "one" string
    return [specs[0]]


register("ZerosLike", same_as_input, public_name="zeros_like", cpu=_zeros_like_kernel)
register("OnesLike", _ones_like_infer, public_name="ones_like", cpu=lambda x: np.ones_like(x))


def zeros_like(input, dtype=None, name=None):  # noqa: A002
    """Zeros with the shape (and dtype, unless given) of `input` (`tf.zeros_like`).

    >>> jf.zeros_like([[1, 2]]).numpy()
    array([[0, 0]], dtype=int32)
    """
    x = convert_to_tensor(input)
    out = apply("ZerosLike", [x], name=name)[0]
    return out if dtype is None else cast(out, dtype)


def ones_like(input, dtype=None, name=None):  # noqa: A002
    """Ones with the shape (and dtype, unless given) of `input` (`tf.ones_like`).

    >>> jf.ones_like([1.5, 2.5]).numpy()
    array([1., 1.], dtype=float32)
    """
    x = convert_to_tensor(input)
    out = apply("OnesLike", [x], name=name)[0]
    return out if dtype is None else cast(out, dtype)


def _range_infer(specs, attrs):
    dtype = specs[0][1]
    for _, d in specs[1:]:
        same_dtype(dtype, d, ("start", "limit/delta"))
    check_kind(dtype, "fi", "start")
    return [((attrs["_length"],), dtype)]


def _range_kernel(start, limit, delta):
    if delta == 0:
        raise InvalidArgumentError("range: delta must not be zero")
    return np.arange(start, limit, delta, dtype=np.asarray(start).dtype)


register("Range", _range_infer, cpu=_range_kernel, public_name="range", default_name="range")


def _known_value(t: Tensor) -> Optional[np.ndarray]:
    """The value of an eager tensor or of a graph constant; None when only known at run time."""
    if isinstance(t, EagerTensor):
        return t._host()
    if isinstance(t, SymbolicTensor) and t.node.op.tf_op == "Const":
        return t.node.attrs["value"]
    return None


def range(start, limit=None, delta=1, dtype=None, name="range"):  # noqa: A001 - TF's name
    """Like Python's range, as a tensor: `range(5)`, `range(1, 10, 2)`, tensors allowed.

    >>> jf.range(1, 10, 3).numpy()
    array([1, 4, 7], dtype=int32)
    """
    if limit is None:
        start, limit = 0, start
    args = [start, limit, delta]
    want = _dt.as_dtype(dtype) if dtype is not None else None
    if want is None:
        inferred = [a._dtype for a in args if isinstance(a, Tensor)]
        if inferred:
            want = inferred[0]
        elif any(isinstance(a, float) for a in args):
            want = _dt.float32
        else:
            want = _dt.int32
    tensors = [cast(a, want) if isinstance(a, Tensor) else convert_to_tensor(a, want) for a in args]
    length = None
    values = [_known_value(t) for t in tensors]
    if all(v is not None for v in values):  # a static length, eagerly and in traces (as TF)
        s, lim, d = (v.item() for v in values)
        if d == 0:
            raise InvalidArgumentError("range: delta must not be zero")
        length = max(0, int(np.ceil((lim - s) / d)))
    return apply("Range", tensors, {"_length": length}, name=name)[0]


# -- select ----------------------------------------------------------------------------
def _select_infer(specs, attrs):
    (dc, tc), (dx, tx), (dy, ty) = specs
    if not tc.is_bool:
        raise TypeError(f"condition must be a bool tensor; got dtype {tc.name}")
    same_dtype(tx, ty)
    return [(broadcast_dims(dc, broadcast_dims(dx, dy)), tx)]


register("SelectV2", _select_infer, public_name="where", default_name="SelectV2",
         cpu=lambda c, x, y: np.where(c, x, y))


def where(condition, x=None, y=None, name=None):
    """Elementwise choice between x and y by condition (broadcasting).

    >>> jf.where([True, False], [1, 2], [10, 20]).numpy()
    array([ 1, 20], dtype=int32)
    """
    if x is None or y is None:
        raise ValueError("x and y: jf.where needs both x and y (index-returning where is not supported)")
    x, y = binary_operands(x, y)
    return apply("SelectV2", [convert_to_tensor(condition), x, y], name=name)[0]


# -- gradient of slicing ---------------------------------------------------------------
def _slice_grad_infer(specs, attrs):
    return [specs[0]]


def _slice_grad_kernel(x, g, *dynamic, index):
    out = np.zeros(np.shape(x), dtype=np.asarray(g).dtype)
    key = _slice_kernel(out, *dynamic, index=index, _key_only=True)
    out[key] = g
    return out


register("StridedSliceGrad", _slice_grad_infer, cpu=_slice_grad_kernel, public_name="strided_slice_grad",
         default_name="StridedSliceGrad")


def apply_slice_grad(x, g, index, dynamic):
    """Zeros shaped like `x` with `g` written where `x[index]` was read."""
    return apply("StridedSliceGrad", [x, g] + list(dynamic), {"index": index})[0]
