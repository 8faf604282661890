"""Values of a distributed computation: `ReduceOp`, `PerReplica`, and reducing across replicas.

A `PerReplica` holds one value per local replica. It is a tuple with `_fields`, so
`jf.function` keys its cache on the shapes of the components (as TF's PerReplica is a
CompositeTensor) instead of retracing for every new object; `strategy.run` hands
component *i* to replica *i*.
"""
from __future__ import annotations

import enum
from typing import Any, Callable, List, Sequence

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor

MAX_REPLICAS = 256


class ReduceOp(enum.Enum):
    """How values from the replicas are combined (TF's `tf.distribute.ReduceOp`).

    >>> jf.distribute.ReduceOp.SUM, jf.distribute.ReduceOp.from_any("mean")
    (<ReduceOp.SUM: 'SUM'>, <ReduceOp.MEAN: 'MEAN'>)
    """

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_any(value: Any, argument: str = "reduce_op") -> "ReduceOp":
        if isinstance(value, ReduceOp):
            return value
        if isinstance(value, str) and value.upper() in ("SUM", "MEAN"):
            return ReduceOp(value.upper())
        raise ValueError(f"{argument}: expected jf.distribute.ReduceOp.SUM or ReduceOp.MEAN (or 'sum'/'mean'); "
                         f"got {value!r}")


class PerReplica(tuple):
    """One value per local replica, as `strategy.run` returns them (TF's `PerReplica`).

    >>> jf.distribute.PerReplica(1, 2).values
    (1, 2)
    """

    _fields = tuple(f"replica_{i}" for i in range(MAX_REPLICAS))  # for jf.function's cache keys

    def __new__(cls, *values: Any) -> "PerReplica":
        return super().__new__(cls, values)

    @property
    def values(self) -> tuple:
        return tuple(self)

    def __repr__(self) -> str:
        return "PerReplica:{" + ", ".join(f"{i}: {v!r}" for i, v in enumerate(self)) + "}"


def map_structure(fn: Callable[[Any], Any], structure: Any) -> Any:
    """Apply `fn` to every leaf of lists, tuples, named tuples and dicts (a PerReplica is a leaf)."""
    if isinstance(structure, PerReplica):
        return fn(structure)
    if isinstance(structure, (list, tuple)):
        items = [map_structure(fn, x) for x in structure]
        if isinstance(structure, list):
            return items
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, dict):
        return {k: map_structure(fn, v) for k, v in structure.items()}
    return fn(structure)


def select_replica(replica: int, structure: Any) -> Any:
    """The component of each PerReplica leaf of `structure` for local replica `replica`."""
    return map_structure(lambda v: v[replica] if isinstance(v, PerReplica) else v, structure)


def regroup(per_replica_results: Sequence[Any]) -> Any:
    """[structure of replica 0, structure of replica 1, ...] → one structure of PerReplica leaves."""
    first = per_replica_results[0]
    if len(per_replica_results) == 1:
        return first

    def walk(items: List[Any]) -> Any:
        head = items[0]
        if isinstance(head, (list, tuple)) and not isinstance(head, PerReplica):
            if any(not isinstance(x, (list, tuple)) or len(x) != len(head) for x in items):
                raise ValueError("strategy.run: replicas returned structures of different shapes: "
                                 f"{[type(x).__name__ for x in items]}")
            parts = [walk([x[i] for x in items]) for i in range(len(head))]
            if isinstance(head, list):
                return parts
            return type(head)(*parts) if hasattr(head, "_fields") else tuple(parts)
        if isinstance(head, dict):
            return {k: walk([x[k] for x in items]) for k in head}
        if head is None and all(x is None for x in items):
            return None
        return PerReplica(*items)
    return walk(list(per_replica_results))


def as_tensor(value: Any) -> Tensor:
    return value if isinstance(value, Tensor) else convert_to_tensor(value)


def sum_tensors(values: Sequence[Any]) -> Tensor:
    """The elementwise sum, always in replica order (so every replica gets identical bits)."""
    total = as_tensor(values[0])
    for v in values[1:]:
        total = M.add(total, as_tensor(v))
    return total


def combine(reduce_op: ReduceOp, values: Sequence[Any], count: int) -> Tensor:
    """SUM, or the MEAN over `count` contributions, of `values` (one per replica)."""
    total = sum_tensors(values)
    if reduce_op is ReduceOp.MEAN:
        total = M.divide(total, A.cast(convert_to_tensor(count), total.dtype)) if total.dtype.is_floating \
            else M.floordiv(total, convert_to_tensor(count, dtype=total.dtype))
    return total


def local_reduce(reduce_op: ReduceOp, value: Any, axis: Any) -> tuple:
    """Reduce one replica's value along `axis` first: (the sum, the number of elements summed).

    The count is a Python int when the shape is known, else a tensor (an unknown batch size
    inside a jf.function)."""
    t = as_tensor(value)
    if axis is None:
        return t, 1
    summed = M.reduce_sum(t, axis=axis)
    dims = t.shape.as_list()
    count: Any = 1
    for a in ([axis] if isinstance(axis, int) else list(axis)):
        count = count * (dims[a] if dims[a] is not None else A.shape(t)[a])
    return summed, count


def to_float_count(count: Any, dtype: _dt.DType) -> Tensor:
    return A.cast(convert_to_tensor(count), dtype)


__all__ = ["ReduceOp", "PerReplica"]
