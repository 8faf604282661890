"""`jf.TensorArray`: a list of same-dtype tensors that works eagerly and in graph loops.

Two representations, chosen when the array is created (as TF does):

- Eagerly, a Python list of tensors, changed in place; methods return `self`, so
  `ta.write(0, x)` works without reassigning (seed 003), and elements may differ in
  shape when `infer_shape=False` (`split` into pieces of different lengths).
- Inside a `jf.function`, a value: one stacked buffer tensor `[size, *element_shape]`.
  `write` returns a *new* TensorArray whose buffer is `TensorScatterUpdate(buffer, i,
  x)`, so `ta = ta.write(i, x)` must be assigned (seed 004). Being a `CompositeTensor`,
  it flattens to that buffer, so it can be a `jf.while_loop` / AutoGraph loop variable;
  `dynamic_size=True` grows the buffer with `Pad` (the loop relaxes its first dimension
  to None). When the element shape is unknown until the first write inside a loop, the
  loop traces its body once to learn it. In a graph all elements share one shape, and
  `clear_after_read` has no effect (elements are values; reading twice is fine).
"""
from __future__ import annotations

from typing import Any, List, Optional

import numpy as np

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.tracing.control_flow import CompositeTensor
from jitflow.runtime.core.errors import InvalidArgumentError, OutOfRangeError
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.indexing_ops import gather, pad, tensor_scatter_nd_update
from jitflow.runtime.core.shapes import TensorShape, format_dims, known_dims, merge, normalize
from jitflow.runtime.core.tensor import EagerTensor, Tensor


class TensorArray(CompositeTensor):
    """A dynamically written array of tensors (TF's `tf.TensorArray`).

    >>> ta = jf.TensorArray(jf.float32, size=2)
    >>> ta = ta.write(0, 1.0).write(1, 2.0)
    >>> ta.stack().numpy()
    array([1., 2.], dtype=float32)
    """

    def __init__(self, dtype: Any, size: Any = 0, dynamic_size: bool = False, clear_after_read: bool = True,
                 infer_shape: bool = True, element_shape: Any = None, name: Optional[str] = None) -> None:
        self._dtype = _dt.as_dtype(dtype)
        self._dynamic_size = bool(dynamic_size)
        self._clear_after_read = True if clear_after_read is None else bool(clear_after_read)
        self._infer_shape = bool(infer_shape)
        self._element_shape = normalize(element_shape)
        self._eager = context.current_graph() is None
        if size is None:
            size = 0
        if self._eager:
            n = int(size)
            if n < 0:
                raise ValueError(f"size: must be >= 0; got {n}")
            self._items: List[Optional[Tensor]] = [None] * n
            self._cleared: set = set()
            return
        if isinstance(size, EagerTensor):
            size = int(size)
        self._size = size if isinstance(size, Tensor) else int(size)
        if isinstance(self._size, Tensor):
            self._size = A.cast(self._size, _dt.int32) if self._size.dtype is not _dt.int32 else self._size
        self._buffer: Optional[Tensor] = None
        if TensorShape(self._element_shape).is_fully_defined():
            self._buffer = self._zeros(self._element_shape)

    # -- properties ------------------------------------------------------------------------
    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        return TensorShape(self._element_shape)

    @property
    def dynamic_size(self) -> bool:
        return self._dynamic_size

    def __repr__(self) -> str:
        where = "eager" if self._eager else "graph"
        return (f"<jf.TensorArray ({where}) dtype={self._dtype.name} "
                f"element_shape={format_dims(self._element_shape)}>")

    # -- helpers ---------------------------------------------------------------------------
    def _check_mode(self) -> None:
        tracing = context.current_graph() is not None
        if self._eager and tracing:
            raise ValueError("this TensorArray was created eagerly; inside a jf.function create the "
                             "TensorArray in the function (it then becomes part of the graph)")

    def _value(self, value: Any) -> Tensor:
        t = convert_to_tensor(value, dtype_hint=self._dtype)
        if t.dtype is not self._dtype:
            raise InvalidArgumentError(f"TensorArray dtype is {self._dtype.name} but the value written has "
                                       f"dtype {t.dtype.name}; use jf.cast")
        return t

    def _merge_shape(self, dims: Any) -> Any:
        """The element shape after seeing an element of shape `dims` (infer_shape)."""
        if not self._infer_shape and self._eager:
            return self._element_shape
        try:
            return merge(self._element_shape, dims)
        except ValueError:
            raise ValueError(f"TensorArray has inconsistent element shapes: an element of shape "
                             f"{format_dims(dims)} after elements of shape "
                             f"{format_dims(self._element_shape)}") from None

    def _with(self, buffer: Tensor, element_shape: Any) -> "TensorArray":
        """A graph TensorArray like this one holding `buffer` (the functional update)."""
        ta = object.__new__(TensorArray)
        ta.__dict__.update(self.__dict__)
        ta._buffer = buffer
        ta._element_shape = element_shape
        return ta

    # -- eager implementation --------------------------------------------------------------
    def _eager_index(self, index: Any) -> int:
        i = int(index)
        if i < 0:
            raise OutOfRangeError(f"TensorArray index {i} is negative")
        return i

    def _eager_zero(self, i: int) -> Tensor:
        if not TensorShape(self._element_shape).is_fully_defined():
            raise ValueError(f"TensorArray element {i} was never written and the element shape "
                             f"{format_dims(self._element_shape)} is not fully known, so it cannot be "
                             "read as zeros; write it first or pass element_shape=")
        return A.zeros(self._element_shape, self._dtype)

    def _eager_items(self) -> List[Tensor]:
        return [self._eager_zero(i) if t is None else t for i, t in enumerate(self._items)]

    def _eager_write(self, index: Any, value: Any) -> "TensorArray":
        i = self._eager_index(index)
        value = self._value(value)
        element = self._merge_shape(value._dims)
        if i >= len(self._items):
            if not self._dynamic_size:
                raise OutOfRangeError(f"Tried to write to index {i} but array is not resizeable and size "
                                      f"is: {len(self._items)}")
            self._items.extend([None] * (i + 1 - len(self._items)))
        self._element_shape = element
        self._items[i] = value
        self._cleared.discard(i)
        return self

    # -- graph implementation --------------------------------------------------------------
    def _zeros(self, element_dims: Any) -> Tensor:
        """Zeros `[size, *element_dims]` (the buffer before any write)."""
        if not TensorShape(element_dims).is_fully_defined():
            raise ValueError(f"TensorArray: the element shape {format_dims(element_dims)} must be fully "
                             "known to allocate the array inside a jf.function: pass element_shape=, or "
                             "write to it first. Inside a jf.function write() returns a new TensorArray, "
                             "so assign its result: `ta = ta.write(i, x)`")
        dims = list(element_dims)
        if not isinstance(self._size, Tensor):
            return A.zeros([self._size] + dims, self._dtype)
        empty = A.zeros([0] + dims, self._dtype)
        return pad(empty, A.stack([A.stack([self._size, 0])] + [[0, 0]] * len(dims)))

    def _graph_buffer(self, element_dims: Any = None) -> Tensor:
        if self._buffer is not None:
            return self._buffer
        return self._zeros(self._element_shape if element_dims is None else element_dims)

    def _grow(self, buffer: Tensor, needed: Any) -> Tensor:
        """`buffer` padded with zero rows up to `needed` rows (dynamic_size)."""
        extra = M.maximum(M.subtract(needed, A.shape(buffer)[0]), 0)
        rank = buffer.ndim
        assert rank is not None  # a buffer is (size, *element shape): its rank is known
        return pad(buffer, A.stack([A.stack([0, extra])] + [[0, 0]] * (rank - 1)))

    def _graph_index(self, index: Any) -> Tensor:
        i = convert_to_tensor(index, dtype_hint=_dt.int32)
        if not i.dtype.is_integer or i.ndim not in (0, None):
            raise TypeError(f"index: expected a scalar integer; got {i!r}")
        return A.cast(i, _dt.int32) if i.dtype is not _dt.int32 else i

    # -- the API -----------------------------------------------------------------------------
    def size(self, name: Optional[str] = None) -> Tensor:
        """The number of elements, as an int32 scalar tensor."""
        self._check_mode()
        if self._eager:
            return convert_to_tensor(len(self._items), _dt.int32)
        if self._buffer is not None:
            return A.shape(self._buffer)[0]
        return convert_to_tensor(self._size, _dt.int32)

    def write(self, index: Any, value: Any, name: Optional[str] = None) -> "TensorArray":
        """Element `index` := `value`; returns the updated array (in a graph: assign it!)."""
        self._check_mode()
        if self._eager:
            return self._eager_write(index, value)
        value = self._value(value)
        element = self._merge_shape(value._dims)
        buffer = self._graph_buffer(element)
        i = self._graph_index(index)
        if self._dynamic_size:
            buffer = self._grow(buffer, M.add(i, 1))
        buffer = tensor_scatter_nd_update(buffer, A.reshape(i, [1, 1]), A.expand_dims(value, 0))
        return self._with(buffer, element)

    def read(self, index: Any, name: Optional[str] = None) -> Tensor:
        """Element `index` (zeros if never written and the element shape is known)."""
        self._check_mode()
        if not self._eager:
            return gather(self._graph_buffer(), self._graph_index(index))
        i = self._eager_index(index)
        if i >= len(self._items):
            raise OutOfRangeError(f"Tried to read from index {i} but array size is: {len(self._items)}")
        value = self._items[i]
        if value is None:
            if i in self._cleared:
                raise InvalidArgumentError(f"Could not read index {i} twice because it was cleared after a "
                                           "previous read (perhaps try setting clear_after_read = false?)")
            value = self._eager_zero(i)
        if self._clear_after_read:
            self._items[i] = None
            self._cleared.add(i)
        return value

    def stack(self, name: Optional[str] = None) -> Tensor:
        """All elements stacked along a new first dimension."""
        self._check_mode()
        if not self._eager:
            return self._graph_buffer()
        if not self._items:
            return self._eager_empty()
        return A.stack(self._eager_items())

    def _eager_empty(self) -> Tensor:
        if not TensorShape(self._element_shape).is_fully_defined():
            raise ValueError("stack() of an empty TensorArray with an unknown element shape; pass element_shape=")
        return A.zeros([0] + list(known_dims(self._element_shape)), self._dtype)

    def gather(self, indices: Any, name: Optional[str] = None) -> Tensor:
        """The elements at `indices`, stacked."""
        self._check_mode()
        if not self._eager:
            return gather(self._graph_buffer(), convert_to_tensor(indices, dtype_hint=_dt.int32))
        ids = np.asarray(indices)
        items = self._eager_items_at([int(i) for i in ids.reshape(-1)])
        if not items:
            return self._eager_empty()
        stacked = A.stack(items)
        return stacked if ids.ndim == 1 else A.reshape(stacked, list(ids.shape) + list(stacked.shape[1:]))

    def _eager_items_at(self, indices: List[int]) -> List[Tensor]:
        out = []
        for i in indices:
            if not 0 <= i < len(self._items):
                raise OutOfRangeError(f"Tried to read from index {i} but array size is: {len(self._items)}")
            item = self._items[i]
            out.append(self._eager_zero(i) if item is None else item)
        return out

    def unstack(self, value: Any, name: Optional[str] = None) -> "TensorArray":
        """Element i := value[i] for every i; the array takes value's first dimension as its size."""
        self._check_mode()
        value = self._value(value)
        if value.ndim == 0:
            raise ValueError("unstack: value must have rank >= 1; got a scalar")
        n = value._dims[0]
        if self._eager:
            if n > len(self._items) and not self._dynamic_size:
                raise ValueError(f"Cannot unstack {n} tensors into a TensorArray of static size {len(self._items)}")
            self._element_shape = self._merge_shape(value._dims[1:])
            self._items = list(A.unstack(value)) if n else []
            self._cleared = set()
            return self
        if (not self._dynamic_size and not isinstance(self._size, Tensor) and n is not None
                and n > self._size):
            raise ValueError(f"Cannot unstack {n} tensors into a TensorArray of static size {self._size}")
        return self._with(value, self._merge_shape(value._dims[1:]))

    def scatter(self, indices: Any, value: Any, name: Optional[str] = None) -> "TensorArray":
        """Element indices[k] := value[k] for every k."""
        self._check_mode()
        value = self._value(value)
        if self._eager:
            for k, i in enumerate(np.asarray(indices).reshape(-1)):
                self._eager_write(int(i), value[k])
            return self
        ids = convert_to_tensor(indices, dtype_hint=_dt.int32)
        element = self._merge_shape(value._dims[1:] if value._dims is not None else None)
        buffer = self._graph_buffer(element)
        if self._dynamic_size:
            buffer = self._grow(buffer, M.add(M.reduce_max(ids), 1))
        buffer = tensor_scatter_nd_update(buffer, A.expand_dims(ids, -1), value)
        return self._with(buffer, element)

    def split(self, value: Any, lengths: Any, name: Optional[str] = None) -> "TensorArray":
        """Element i := the i-th piece of `value` cut along its first dimension by `lengths`."""
        self._check_mode()
        value = self._value(value)
        sizes = [int(n) for n in np.asarray(lengths).reshape(-1)] if not (
            isinstance(lengths, Tensor) and not isinstance(lengths, EagerTensor)) else None
        if value.ndim == 0:
            raise InvalidArgumentError("split: value must have rank >= 1; got a scalar")
        if self._eager:
            assert sizes is not None  # an eager array gets eager lengths
            total = value._dims[0]
            if sum(sizes) != total:
                raise InvalidArgumentError(f"Expected sum of lengths to be equal to values.shape[0], but sum "
                                           f"of lengths is {sum(sizes)} and value's shape is: "
                                           f"{format_dims(value._dims)}")
            if not self._dynamic_size and len(sizes) != len(self._items):
                raise InvalidArgumentError(f"TensorArray's size is not equal to the size of lengths "
                                           f"({len(self._items)} vs. {len(sizes)}), and the TensorArray is "
                                           "not marked as dynamically resizeable.")
            starts = np.cumsum([0] + sizes)
            self._items = [value[int(a):int(b)] for a, b in zip(starts[:-1], starts[1:])]
            self._cleared = set()
            if len(set(sizes)) == 1:
                self._element_shape = self._merge_shape((sizes[0],) + tuple(value._dims[1:]))
            return self
        if sizes is None or len(set(sizes)) != 1:
            raise ValueError("split: inside a jf.function a TensorArray holds one stacked tensor, so the "
                             f"lengths must be known and equal; got {lengths!r}")
        rest = list(value._dims[1:])
        pieces = A.reshape(value, [len(sizes), sizes[0]] + [-1 if d is None else d for d in rest])
        return self._with(pieces, self._merge_shape(tuple(pieces._dims[1:])))

    def concat(self, name: Optional[str] = None) -> Tensor:
        """All elements concatenated along their first dimension."""
        self._check_mode()
        if self._eager:
            items = self._eager_items()
            if not items:
                raise ValueError("concat() of an empty TensorArray")
            return A.concat(items, axis=0)
        buffer = self._graph_buffer()
        rest = buffer._dims[2:] if buffer._dims is not None else None
        if rest is None or any(d is None for d in rest):
            raise ValueError(f"concat: the element shape {format_dims(self._element_shape)} must be known "
                             "beyond its first dimension inside a jf.function")
        return A.reshape(buffer, [-1] + list(rest))

    def identity(self) -> "TensorArray":
        return self

    def close(self, name: Optional[str] = None) -> None:
        """Nothing to release (TF API compatibility)."""

    def mark_used(self) -> None:
        """TF API compatibility."""

    # -- CompositeTensor: how loops and conds carry a graph TensorArray --------------------
    def _components(self) -> List[Tensor]:
        if self._eager or self._buffer is None:
            return []
        return [self._buffer]

    def _from_components(self, components: List[Tensor]) -> "TensorArray":
        if not components:
            return self
        (buffer,) = components
        return self._with(buffer, self._element_shape)

    def _component_invariants(self) -> List[Any]:
        if self._eager or self._buffer is None:
            return []
        if self._dynamic_size:  # the size may change from one iteration to the next
            dims = self._buffer._dims
            assert dims is not None  # a buffer is (size, *element shape): its rank is known
            return [(None,) + tuple(dims[1:])]
        return [None]

    def _needs_probe(self) -> bool:
        return not self._eager and self._buffer is None

    def _complete(self, like: Any) -> "TensorArray":
        if not isinstance(like, TensorArray) or like._needs_probe():
            raise ValueError(
                "a TensorArray loop variable has an unknown element shape and the loop body does not "
                "write to it (or does not return it); pass element_shape= when creating it, or assign "
                "the result of write(): `ta = ta.write(i, x)`")
        assert like._buffer is not None  # a loop's graph array that needs no probe has its buffer
        dims = like._buffer._dims
        assert dims is not None  # a buffer is (size, *element shape): its rank is known
        element = dims[1:]
        return self._with(self._zeros(element), element)


__all__ = ["TensorArray"]
