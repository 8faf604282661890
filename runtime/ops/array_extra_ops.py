"""More array ops from TF 2's top level: linspace, eye, broadcast_to, tile, split, einsum.

Each is a real op with TF's op name (`LinSpace`, `BroadcastTo`, `Tile`, `SplitV`, `Einsum`)
and a shape rule that validates the arguments and names them; the kernels are numpy (views
and copies that numba could only make slower). `eye` is a constant, as TF folds it.
Gradients are in `array_extra_grads`.
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import broadcast, format_dims
from jitflow.runtime.ops.array_ops import _static_ints, cast
from jitflow.runtime.ops.constant_op import binary_operands, constant, convert_to_tensor
from jitflow.runtime.ops.infer import check_kind, normalize_axis, same_dtype
from jitflow.runtime.ops.registry import apply, register


# -- linspace -------------------------------------------------------------------------------
def _linspace_infer(specs, attrs):
    (ds, ts), (dp, tp) = specs
    check_kind(ts, "f", "start")
    same_dtype(ts, tp, ("start", "stop"))
    for what, dims in (("start", ds), ("stop", dp)):
        if dims is not None and dims != ():
            raise InvalidArgumentError(f"linspace: {what} must be a scalar; got shape {format_dims(dims)}")
    return [((attrs["num"],), ts)]


def _linspace_kernel(start, stop, num):
    start, stop = np.asarray(start), np.asarray(stop)
    if num == 1:
        return start.reshape(1).copy()
    # TF computes start + i * step in the input dtype's precision, with the last value = stop.
    step = (stop - start) / start.dtype.type(num - 1)
    out = start + np.arange(num, dtype=start.dtype) * step
    if num:
        out[-1] = stop
    return out.astype(start.dtype, copy=False)


register("LinSpace", _linspace_infer, cpu=_linspace_kernel, public_name="linspace", default_name="LinSpace")


def linspace(start, stop, num, name=None, axis=0):
    """`num` evenly spaced values from `start` to `stop`, both included.

    >>> linspace(10.0, 12.0, 3).numpy()
    array([10., 11., 12.], dtype=float32)
    >>> linspace(-2, 2, 3).dtype  # integer bounds: float64, as TF
    jf.float64
    """
    if isinstance(num, (bool, np.bool_)) or not isinstance(num, (int, np.integer)):
        values = _static_ints(num, "num")
        if values is None or len(values) != 1:
            raise TypeError(f"num: expected a Python int (or a scalar int tensor); got {num!r}")
        num = values[0]
    if num < 0:
        raise InvalidArgumentError(f"num: must be >= 0; got {num}")
    if axis != 0:
        raise ValueError(f"axis: only scalar start/stop are supported, so axis must be 0; got {axis}")
    start, stop = binary_operands(start, stop)
    if start.dtype.is_integer:  # as TF: integer bounds give float64 values
        start, stop = cast(start, _dt.float64), cast(stop, _dt.float64)
    return apply("LinSpace", [start, stop], {"num": int(num)}, name=name)[0]


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dt.float32, name=None):
    """An identity matrix (or a batch of them) of shape batch_shape + [num_rows, num_columns].

    >>> eye(2).numpy()
    array([[1., 0.],
           [0., 1.]], dtype=float32)
    """
    dtype = _dt.as_dtype(dtype)
    rows = _scalar_int(num_rows, "num_rows")
    cols = rows if num_columns is None else _scalar_int(num_columns, "num_columns")
    batch = [] if batch_shape is None else _static_ints(batch_shape, "batch_shape")
    if batch is None or any(b < 0 for b in batch):
        raise InvalidArgumentError(f"batch_shape: expected non-negative ints; got {batch_shape!r}")
    value = np.broadcast_to(np.eye(rows, cols, dtype=dtype.as_numpy_dtype), tuple(batch) + (rows, cols))
    return constant(np.ascontiguousarray(value), dtype=dtype, name=name or "eye")


def _scalar_int(value: Any, what: str) -> int:
    values = _static_ints(value, what)
    if values is None or len(values) != 1 or values[0] < 0:
        raise InvalidArgumentError(f"{what}: expected a non-negative int; got {value!r}")
    return values[0]


# -- broadcast_to ---------------------------------------------------------------------------
def _broadcast_to_infer(specs, attrs):
    dims, dtype = specs[0]
    target = tuple(attrs["shape"])
    if dims is not None:
        try:
            if broadcast(dims, target) != target:
                raise ValueError
        except ValueError:
            raise InvalidArgumentError(f"broadcast_to: cannot broadcast input of shape {format_dims(dims)} "
                                       f"to shape {format_dims(target)}") from None
    return [(target, dtype)]


register("BroadcastTo", _broadcast_to_infer, public_name="broadcast_to", default_name="BroadcastTo",
         cpu=lambda x, shape: np.broadcast_to(x, tuple(shape)))


def broadcast_to(input, shape, name=None):  # noqa: A002 - TF's names
    """`input` broadcast to `shape` (numpy's broadcasting rules).

    >>> broadcast_to([1, 2, 3], [2, 3]).numpy()
    array([[1, 2, 3],
           [1, 2, 3]], dtype=int32)
    """
    dims = _static_ints(shape, "shape")
    if dims is None or any(d < 0 for d in dims):
        raise InvalidArgumentError(f"shape: expected a list of non-negative ints; got {shape!r}")
    return apply("BroadcastTo", [convert_to_tensor(input)], {"shape": tuple(dims)}, name=name)[0]


# -- tile -----------------------------------------------------------------------------------
def _tile_infer(specs, attrs):
    dims, dtype = specs[0]
    multiples = attrs["multiples"]
    if dims is None:
        return [(None, dtype)]
    if len(multiples) != len(dims):
        raise InvalidArgumentError(f"tile: multiples must have one entry per dimension of input; got "
                                   f"multiples {list(multiples)} for input of shape {format_dims(dims)}")
    return [(tuple(None if d is None else d * m for d, m in zip(dims, multiples)), dtype)]


register("Tile", _tile_infer, public_name="tile", default_name="Tile",
         cpu=lambda x, multiples: np.tile(x, tuple(multiples)))


def tile(input, multiples, name=None):  # noqa: A002
    """`input` repeated `multiples[i]` times along dimension i.

    >>> tile([[1, 2]], [2, 2]).numpy()
    array([[1, 2, 1, 2],
           [1, 2, 1, 2]], dtype=int32)
    """
    reps = _static_ints(multiples, "multiples")
    if reps is None or any(m < 0 for m in reps):
        raise InvalidArgumentError(f"multiples: expected a list of non-negative ints; got {multiples!r}")
    return apply("Tile", [convert_to_tensor(input)], {"multiples": tuple(reps)}, name=name)[0]


# -- split ----------------------------------------------------------------------------------
def _split_infer(specs, attrs):
    dims, dtype = specs[0]
    sizes = attrs["size_splits"]
    if dims is None:
        return [(None, dtype)] * len(sizes)
    axis = normalize_axis(attrs["axis"], len(dims))
    if dims[axis] is not None and sum(sizes) != dims[axis]:
        raise InvalidArgumentError(f"split: the sizes {list(sizes)} must sum to dimension {axis} of "
                                   f"value, {dims[axis]} (value has shape {format_dims(dims)})")
    return [(dims[:axis] + (s,) + dims[axis + 1:], dtype) for s in sizes]


def _split_kernel(x, size_splits, axis):
    parts = np.split(x, np.cumsum(size_splits)[:-1], axis=axis)
    return parts[0] if len(parts) == 1 else tuple(parts)


register("SplitV", _split_infer, public_name="split", default_name="split", cpu=_split_kernel)


def split(value, num_or_size_splits, axis=0, num=None, name="split"):
    """Split `value` along `axis`: into `n` equal parts (an int) or parts of the given sizes.

    >>> [t.numpy().tolist() for t in split([1, 2, 3, 4], 2)]
    [[1, 2], [3, 4]]
    >>> [t.numpy().tolist() for t in split([[1, 2, 3]], [1, -1], axis=1)]
    [[[1]], [[2, 3]]]
    """
    x = convert_to_tensor(value)
    if x._dims is None:
        raise ValueError("value: jf.split needs a tensor of known rank")
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis: expected an int; got {axis!r}")
    axis = normalize_axis(int(axis), len(x._dims))
    length = x._dims[axis]
    if isinstance(num_or_size_splits, (int, np.integer)) and not isinstance(num_or_size_splits, bool):
        n = int(num_or_size_splits)
        if n <= 0:
            raise InvalidArgumentError(f"num_or_size_splits: expected a positive int; got {n}")
        if length is None:
            raise ValueError(f"value: dimension {axis} is unknown, so it cannot be split evenly")
        if length % n:
            raise InvalidArgumentError(f"num_or_size_splits: dimension {axis} of value ({length}) is not "
                                       f"divisible by {n}")
        sizes = [length // n] * n
    else:
        sizes = _static_ints(num_or_size_splits, "num_or_size_splits")
        if sizes is None:
            raise TypeError("num_or_size_splits: expected an int or a list of ints known at trace time")
        unknown = [i for i, s in enumerate(sizes) if s == -1]
        if len(unknown) > 1 or any(s < -1 for s in sizes):
            raise InvalidArgumentError(f"num_or_size_splits: sizes must be >= 0 with at most one -1; got {sizes}")
        if unknown:
            if length is None:
                raise ValueError(f"value: dimension {axis} is unknown, so a -1 size cannot be inferred")
            sizes[unknown[0]] = length - (sum(sizes) + 1)
    outs = apply("SplitV", [x], {"size_splits": tuple(sizes), "axis": axis}, name=name)
    return list(outs)


# -- einsum ---------------------------------------------------------------------------------
_EQUATION = re.compile(r"^([a-zA-Z.]*(,[a-zA-Z.]*)*)(->([a-zA-Z.]*))?$")


def parse_equation(equation: str, n_inputs: int):
    """(input subscripts, output subscripts) with the implicit output made explicit."""
    eq = equation.replace(" ", "")
    m = _EQUATION.match(eq)
    if not m or "." in eq:
        raise InvalidArgumentError(f"equation: expected subscripts like 'ij,jk->ik' (letters only); got {equation!r}")
    ins = m.group(1).split(",")
    if len(ins) != n_inputs:
        raise InvalidArgumentError(f"einsum: equation {equation!r} names {len(ins)} inputs but {n_inputs} were given")
    if m.group(3) is None:  # implicit: the letters that appear once, sorted
        letters = "".join(ins)
        out = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    else:
        out = m.group(4)
    for c in out:
        if not any(c in s for s in ins):
            raise InvalidArgumentError(f"einsum: output subscript {c!r} of {equation!r} is not in any input")
    return ins, out


def _einsum_infer(specs, attrs):
    ins, out = parse_equation(attrs["equation"], len(specs))
    dtype = specs[0][1]
    check_kind(dtype, "fic", "inputs")
    sizes = {}
    for k, ((dims, d), subs) in enumerate(zip(specs, ins)):
        same_dtype(dtype, d, ("inputs[0]", f"inputs[{k}]"))
        if dims is None:
            continue
        if len(dims) != len(subs):
            raise InvalidArgumentError(f"einsum: input {k} has rank {len(dims)} but its subscripts "
                                       f"{subs!r} name {len(subs)} dimensions")
        for c, n in zip(subs, dims):
            if n is None:
                continue
            if sizes.get(c, n) != n:
                raise InvalidArgumentError(f"einsum: dimension {c!r} is {sizes[c]} in one input and {n} in "
                                           f"input {k} (equation {attrs['equation']!r})")
            sizes[c] = n
    return [(tuple(sizes.get(c) for c in out), dtype)]


def _einsum_kernel(*xs, equation):
    ins, out = parse_equation(equation, len(xs))
    return np.asarray(np.einsum(",".join(ins) + "->" + out, *xs, optimize=len(xs) > 2))


register("Einsum", _einsum_infer, public_name="einsum", default_name="einsum", cpu=_einsum_kernel)


def einsum(equation, *inputs, **kwargs):
    """Tensor contraction over the subscripts in `equation` (numpy's notation, no ellipsis).

    >>> einsum("ij,jk->ik", [[1.0, 2.0]], [[3.0], [4.0]]).numpy()
    array([[11.]], dtype=float32)
    """
    name = kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected keyword arguments {sorted(kwargs)}")
    if not isinstance(equation, str):
        raise TypeError(f"equation: expected a str like 'ij,jk->ik'; got {equation!r}")
    if not inputs:
        raise ValueError("inputs: einsum needs at least one tensor")
    first = next((t for t in inputs if hasattr(t, "_dtype")), None)
    hint = first._dtype if first is not None else None
    tensors = [convert_to_tensor(t, dtype_hint=hint) for t in inputs]
    return apply("Einsum", tensors, {"equation": equation.replace(" ", "")}, name=name)[0]


__all__ = ["linspace", "eye", "broadcast_to", "tile", "split", "einsum"]
