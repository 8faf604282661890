"""Datasets of datasets: `window`, and `group_by_window` with `bucket_by_sequence_length` on top.

A window element is a nested structure of datasets, one per component of the input
(TF's rule: `(x, y)` elements give `(dataset_of_x, dataset_of_y)` windows). In the flat
pipeline each such leaf is a 0-d object array holding a small in-memory dataset, whose
template leaf is a `DatasetSpec`. User functions over windows (`flat_map`, `interleave`,
`group_by_window`'s `reduce_func`) run in Python, as jitflow's interleave does, so
`ds.window(3).flat_map(lambda w: w.batch(3))` works as in TF.
"""
from __future__ import annotations

import collections
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import relax
from jitflow.runtime.core.tensor import EagerTensor, TensorSpec
from jitflow.runtime.ops import array_ops, math_ops
from jitflow.runtime.ops.constant_op import constant
from jitflow.runtime.ops.indexing_ops import gather
from jitflow.runtime.data import structure as _s
from jitflow.runtime.data.dataset import (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset, DatasetSpec,
                                          Element, register)
from jitflow.runtime.data.options import Options
from jitflow.runtime.data.traced import TracedFunction


def _positive(value: Any, what: str) -> int:
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{what}: expected a positive int; got {value!r}")
    return int(value)


class ElementsDataset(Dataset):
    """A dataset of elements already in memory (a window's, a group's)."""

    _kind = "Window"

    def __init__(self, template: Any, elements: Sequence[Element]) -> None:
        self._elements = list(elements)
        super().__init__(template)

    def _gen(self, name: str) -> Iterator[Element]:
        yield from self._elements

    def _cardinality(self) -> int:
        return len(self._elements)


def _holder(ds: Dataset) -> np.ndarray:
    cell = np.empty((), dtype=object)
    cell[()] = ds
    return cell


@register("window")
class WindowDataset(Dataset):
    _kind = "Window"

    def __init__(self, input_ds: Dataset, size: Any, shift: Any, stride: Any, drop_remainder: bool) -> None:
        if _s.has_datasets(input_ds._template):
            raise TypeError("window: the elements are datasets already; window a dataset of tensors")
        self._input = input_ds
        self._size = _positive(size, "size")
        self._shift = self._size if shift is None else _positive(shift, "shift")
        self._stride = 1 if stride is None else _positive(stride, "stride")
        self._drop = bool(drop_remainder)
        self._slots = _s.slots(input_ds._template)
        super().__init__(_s.map_structure(DatasetSpec, input_ds._template), [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        size, shift, stride = self._size, self._shift, self._stride
        span = (size - 1) * stride + 1
        buffer: "collections.deque[Element]" = collections.deque()
        buffer_start = next_start = 0
        it = self._input._iter_flat(name)
        exhausted = False
        while True:
            while not exhausted and buffer_start + len(buffer) < next_start + span:
                try:
                    buffer.append(next(it))
                except StopIteration:
                    exhausted = True
            while buffer and buffer_start < next_start:
                buffer.popleft()
                buffer_start += 1
            if buffer_start < next_start or not buffer:
                return
            window = [buffer[k] for k in range(0, min(span, len(buffer)), stride)]
            if self._drop and len(window) < size:
                return
            yield self._split(window)
            next_start += shift

    def _split(self, window: List[Element]) -> Element:
        """One dataset per leaf of the element structure, as TF's window gives."""
        out = []
        for spec, start in self._slots:
            width = _s.SPARSE_WIDTH if _s.is_sparse(spec) else 1
            out.append(_holder(ElementsDataset(spec, [e[start:start + width] for e in window])))
        return tuple(out)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        if self._drop:
            span = (self._size - 1) * self._stride + 1
            return max(0, (n - span) // self._shift + 1)
        return -(-n // self._shift)


def _scalar_key(fn: TracedFunction, what: str) -> None:
    out = _s.spec_leaves(fn.out_template)
    if len(out) != 1 or out[0]._dtype is not _dt.int64 or out[0]._dims not in ((), None):
        raise TypeError(f"{what}: must return a single jf.int64 scalar tensor; got {fn.out_template!r}")


@register("group_by_window")
class GroupByWindowDataset(Dataset):
    """TF's GroupByWindow: elements go to the group of their key; a group of `window_size`
    elements becomes `reduce_func(key, window_dataset)`, whose elements are produced then.
    At the end of the input the unfinished groups are reduced in increasing key order
    (TF keeps them in an ordered map)."""

    _kind = "GroupByWindow"

    def __init__(self, input_ds: Dataset, key_func: Callable, reduce_func: Callable, window_size: Any,
                 window_size_func: Optional[Callable], template: Any = None) -> None:
        if (window_size is None) == (window_size_func is None):
            raise ValueError("group_by_window: give exactly one of window_size and window_size_func")
        if not callable(reduce_func):
            raise TypeError(f"reduce_func: expected a callable (key, window dataset) -> Dataset; got {reduce_func!r}")
        self._input = input_ds
        self._key_fn = TracedFunction(key_func, input_ds._template, "key_func")
        _scalar_key(self._key_fn, "key_func")
        self._size_fn: Optional[TracedFunction] = None
        self._fixed = None if window_size is None else _positive(window_size, "window_size")
        if window_size_func is not None:
            self._size_fn = TracedFunction(window_size_func, TensorSpec((), _dt.int64), "window_size_func")
            _scalar_key(self._size_fn, "window_size_func")
        self._reduce_func = reduce_func
        if template is None:
            template = self._probe_template()
        super().__init__(template, [input_ds])

    def _probe_template(self) -> Any:
        """The output structure: reduce_func applied to empty windows (datasets are built lazily,
        so this reads no input) for keys 0 and 1, dims that differ relaxed to None. TF traces
        reduce_func with a symbolic key; a dim that depends on the key is unknown there too."""
        first = self._reduce(0, [])._template
        try:
            second = self._reduce(1, [])._template
        except Exception:  # noqa: BLE001 - reduce_func may only know the keys it will see (key 0's spec stands)
            return first
        a, b = _s.spec_leaves(first), _s.spec_leaves(second)
        if len(a) != len(b) or any(x._dtype is not y._dtype for x, y in zip(a, b)):
            return first
        return _s.pack(first, [TensorSpec(relax(x._dims, y._dims), x._dtype) for x, y in zip(a, b)])

    def _reduce(self, key: int, elements: List[Element]) -> Dataset:
        window = ElementsDataset(self._input._template, elements)
        out = self._reduce_func(EagerTensor(np.asarray(key, dtype=np.int64), _dt.int64), window)
        if not isinstance(out, Dataset):
            raise TypeError(f"reduce_func: must return a Dataset; got {type(out).__name__}")
        return out

    def _window_size(self, key: int) -> int:
        if self._size_fn is None:
            assert self._fixed is not None
            return self._fixed
        size = int(self._size_fn((np.asarray(key, dtype=np.int64),))[0])
        if size <= 0:
            raise InvalidArgumentError(f"window_size_func: must return a positive size; got {size} for key {key}")
        return size

    def _gen(self, name: str) -> Iterator[Element]:
        groups: Dict[int, List[Element]] = {}
        sizes: Dict[int, int] = {}
        for flat in self._input._iter_flat(name):
            key = int(self._key_fn(flat)[0])
            if key not in sizes:
                sizes[key] = self._window_size(key)
            group = groups.setdefault(key, [])
            group.append(flat)
            if len(group) == sizes[key]:
                del groups[key]
                yield from self._checked(self._reduce(key, group), name)
        for key in sorted(groups):
            yield from self._checked(self._reduce(key, groups[key]), name)

    def _checked(self, ds: Dataset, name: str) -> Iterator[Element]:
        if [s._dtype for s in ds._specs] != self._dtypes:
            raise TypeError(f"reduce_func: every returned dataset must have the element dtypes "
                            f"{[d.name for d in self._dtypes]}; got {[s._dtype.name for s in ds._specs]}")
        yield from ds._iter_flat(name)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return INFINITE_CARDINALITY if n == INFINITE_CARDINALITY else UNKNOWN_CARDINALITY


@register("bucket_by_sequence_length")
def bucket_by_sequence_length(dataset: Dataset, element_length_func: Callable, bucket_boundaries: Sequence[int],
                              bucket_batch_sizes: Sequence[int], padded_shapes: Any = None,
                              padding_values: Any = None, pad_to_bucket_boundary: bool = False,
                              no_padding: bool = False, drop_remainder: bool = False) -> Dataset:
    """TF's `bucket_by_sequence_length`, built as TF builds it: `group_by_window` keyed by the
    bucket of `element_length_func(element)` (bucket i holds lengths in
    `[boundaries[i-1], boundaries[i])`), each window `padded_batch`ed with its bucket's size."""
    boundaries = [int(b) for b in bucket_boundaries]
    sizes = [_positive(b, "bucket_batch_sizes") for b in bucket_batch_sizes]
    if len(sizes) != len(boundaries) + 1:
        raise ValueError(f"bucket_batch_sizes: must have len(bucket_boundaries) + 1 = {len(boundaries) + 1} "
                         f"entries; got {len(sizes)}")
    if any(b <= a for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError(f"bucket_boundaries: must be strictly increasing; got {boundaries}")
    bounds = constant(np.asarray(boundaries, dtype=np.int64), dtype=_dt.int64)
    batch_sizes = constant(np.asarray(sizes, dtype=np.int64), dtype=_dt.int64)

    def bucket_of(*args: Any) -> Any:  # the number of boundaries <= the length
        length = array_ops.cast(element_length_func(*args), _dt.int64)
        return math_ops.reduce_sum(array_ops.cast(math_ops.greater_equal(length, bounds), _dt.int64))

    def batching(bucket: Any, window: Dataset) -> Dataset:
        b = int(bucket.numpy())
        if no_padding:
            return window.batch(sizes[b], drop_remainder=drop_remainder)
        filler = None
        if pad_to_bucket_boundary:
            if b >= len(boundaries):
                raise InvalidArgumentError("When pad_to_bucket_boundary=True, elements must have length < "
                                           f"max(bucket_boundaries) = {boundaries[-1] if boundaries else None}")
            filler = boundaries[b] - 1
        given = padded_shapes if padded_shapes is not None else _s.map_structure(
            lambda spec: spec.shape, window.element_spec)
        shapes = _s.map_structure(lambda shape: _fill(shape, filler), given)
        return window.padded_batch(sizes[b], shapes, padding_values, drop_remainder=drop_remainder)

    # TF's element spec: batch sizes and boundary paddings come from tensors, so those dims are None.
    def spec(leaf: Any) -> TensorSpec:
        dims = leaf._dims
        if no_padding or dims is None:
            return TensorSpec(None if dims is None else (None,) + dims, leaf._dtype)
        return TensorSpec((None,) + tuple(None if pad_to_bucket_boundary else d for d in dims), leaf._dtype)
    template = _s.map_structure(spec, dataset.element_spec)
    if padded_shapes is not None and not no_padding:
        leaves = [_fill(p, None) for p in _s.flatten(padded_shapes)]
        template = _s.pack(template, [TensorSpec((None,) + tuple(None if pad_to_bucket_boundary else d for d in dims)
                                                 if dims is not None else None, s._dtype)
                                      for dims, s in zip(leaves, _s.spec_leaves(template))])
    return GroupByWindowDataset(dataset, bucket_of, batching, None, lambda b: gather(batch_sizes, b), template)


def _fill(shape: Any, filler: Optional[int]) -> Any:
    """TF's make_padded_shapes: unknown dims become `filler` (None: pad to the batch's longest)."""
    dims = getattr(shape, "dims", shape)
    if dims is None:
        return None
    return [filler if d is None or d == -1 else int(d) for d in dims]


@register("with_options")
class OptionsDataset(Dataset):
    """`with_options`: passes elements through; carries the options it was given."""

    _kind = "Options"

    def __init__(self, input_ds: Dataset, options: Any) -> None:
        if not isinstance(options, Options):
            raise TypeError(f"options: expected jf.data.Options; got {type(options).__name__} {options!r}")
        self._input = input_ds
        super().__init__(input_ds._template, [input_ds])
        self._own_options = options

    def _iter_node(self, prefix: str) -> Iterator[Element]:
        return self._input._iter_node(prefix)  # no node of its own in the iterator names

    def _gen(self, name: str) -> Iterator[Element]:  # pragma: no cover - _iter_flat skips this node
        return self._input._iter_flat(name)

    def _cardinality(self) -> int:
        return self._input._cardinality()
