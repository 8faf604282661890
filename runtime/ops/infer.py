"""Shape and dtype rules shared by many ops. Each returns a list of (dims, dtype).

Rules validate as they infer, so a bad call fails when the op is created, eagerly or at
trace time, with a message that names both sides of the mismatch.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import broadcast, format_dims

Spec = Tuple[Any, _dt.DType]


def _is(kinds: str, dtype: _dt.DType) -> bool:
    return ((dtype.is_floating and "f" in kinds) or (dtype.is_integer and "i" in kinds)
            or (dtype.is_bool and "b" in kinds) or (dtype.is_string and "s" in kinds)
            or (dtype.is_complex and "c" in kinds))


_KIND_WORDS = {"f": "floating-point", "i": "integer", "b": "bool", "s": "string", "c": "complex"}


def check_kind(dtype: _dt.DType, kinds: str, what: str = "x") -> None:
    if not _is(kinds, dtype):
        allowed = " or ".join(_KIND_WORDS[k] for k in kinds)
        hint = ""
        if "f" in kinds and dtype.is_integer:
            hint = f"; convert it first, e.g. jf.cast({what}, jf.float32)"
        raise TypeError(f"{what} must be a {allowed} tensor; got dtype {dtype.name}{hint}")


def same_dtype(a: _dt.DType, b: _dt.DType, names=("x", "y")) -> None:
    if a is not b:
        raise TypeError(
            f"{names[0]} has dtype {a.name} but {names[1]} has dtype {b.name}. jitflow never "
            f"promotes dtypes implicitly (like TensorFlow); cast one side first, e.g. "
            f"jf.cast({names[1]}, jf.{a.name}).")


def broadcast_dims(a, b) -> Any:
    try:
        return broadcast(a, b)
    except ValueError:
        raise InvalidArgumentError(
            f"shapes {format_dims(a)} and {format_dims(b)} are not broadcastable "
            "(trailing dimensions must be equal or 1)") from None


def elementwise(kinds: str, out: Optional[_dt.DType] = None) -> Callable:
    """Rule for n-ary elementwise ops: same dtype everywhere, broadcast shapes."""
    def infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
        dims, dtype = specs[0]
        check_kind(dtype, kinds)
        if len(specs) == 2:
            same_dtype(dtype, specs[1][1])
            dims = broadcast_dims(dims, specs[1][0])
        return [(dims, out or dtype)]
    return infer


def same_as_input(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    return [specs[0]]


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    if not -rank <= axis < max(rank, 1):
        raise InvalidArgumentError(f"{what} {axis} is out of range for a tensor of rank {rank} "
                                   f"(expected {-rank} <= {what} < {rank})")
    return axis % rank if rank else 0


def normalize_axes(axis: Any, rank: Optional[int]) -> Optional[Tuple[int, ...]]:
    """None → None (all axes); int or sequence → sorted unique non-negative tuple."""
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if rank is None:
        return tuple(axes)
    return tuple(sorted({normalize_axis(int(a), rank) for a in axes}))


def reduction(kinds: str, out: Optional[_dt.DType] = None) -> Callable:
    def infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
        dims, dtype = specs[0]
        check_kind(dtype, kinds)
        return [(reduced_dims(dims, attrs["axis"], attrs["keepdims"]), out or dtype)]
    return infer


def reduced_dims(dims, axis, keepdims: bool):
    if dims is None:
        return None
    axes = normalize_axes(axis, len(dims))
    if axes is None:
        axes = tuple(range(len(dims)))
    if keepdims:
        return tuple(1 if i in axes else d for i, d in enumerate(dims))
    return tuple(d for i, d in enumerate(dims) if i not in axes)
