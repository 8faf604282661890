"""Transformations that run in the consumer's thread: map, filter, shuffle, batch,
padded_batch, unbatch, repeat, take, skip, cache, concatenate.

The threaded ones (parallel map, prefetch, interleave) are in `parallel.py`.
"""
from __future__ import annotations

import os
import pickle
from typing import Any, Callable, Iterator, List, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import random_ops
from jitflow.runtime.core.shapes import format_dims, relax
from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.io import records
from jitflow.runtime.io.tfrecord import read_records
from jitflow.runtime.data import sparse_rows
from jitflow.runtime.data import structure as _s
from jitflow.runtime.sparse.sparse_tensor import SparseTensorSpec
from jitflow.runtime.data.dataset import (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset,
                                          Element, register)
from jitflow.runtime.data.traced import TracedFunction


def _positive_int(value: Any, what: str, allow: tuple = ()) -> int:
    if hasattr(value, "numpy"):
        value = value.numpy()
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or (value <= 0 and value not in allow):
        extra = f" (or {', '.join(map(str, allow))})" if allow else ""
        raise ValueError(f"{what}: expected a positive int{extra}; got {value!r}")
    return int(value)


@register("map")
class MapDataset(Dataset):
    _kind = "Map"

    def __init__(self, input_ds: Dataset, map_func: Callable) -> None:
        self._input = input_ds
        self._fn = TracedFunction(map_func, input_ds._template, "map")
        super().__init__(self._fn.out_template, [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        fn = self._fn
        for flat in self._input._iter_flat(name):
            yield fn(flat)

    def _cardinality(self) -> int:
        return self._input._cardinality()


@register("filter")
class FilterDataset(Dataset):
    _kind = "Filter"

    def __init__(self, input_ds: Dataset, predicate: Callable) -> None:
        self._input = input_ds
        self._fn = TracedFunction(predicate, input_ds._template, "filter")
        out = _s.spec_leaves(self._fn.out_template)
        if len(out) != 1 or out[0]._dtype is not _dt.bool_ or out[0]._dims not in ((), None):
            raise TypeError(f"predicate: must return a scalar bool tensor; got {self._fn.out_template!r}")
        super().__init__(input_ds._template, [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        fn = self._fn
        for flat in self._input._iter_flat(name):
            if fn(flat)[0]:
                yield flat


@register("shuffle")
class ShuffleDataset(Dataset):
    _kind = "Shuffle"

    def __init__(self, input_ds: Dataset, buffer_size: Any, seed: Optional[int],
                 reshuffle_each_iteration: Optional[bool]) -> None:
        self._input = input_ds
        self._buffer_size = _positive_int(buffer_size, "buffer_size")
        self._seeds = random_ops.get_seed(seed)  # fixed at construction, as TF's op seeds are
        self._reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        self._epoch = 0
        super().__init__(input_ds._template, [input_ds])

    def _rng(self) -> np.random.Generator:
        g, o = self._seeds
        epoch = self._epoch
        if self._reshuffle:
            self._epoch += 1
        if g is None:
            return np.random.default_rng()
        assert o is not None  # get_seed gives an op seed whenever it gives a global one
        return np.random.default_rng([g, o, epoch if self._reshuffle else 0])

    def _gen(self, name: str) -> Iterator[Element]:
        rng = self._rng()
        size = self._buffer_size
        buf: List[Element] = []
        it = self._input._iter_flat(name)
        for flat in it:  # fill
            buf.append(flat)
            if len(buf) == size:
                break
        randint = rng.integers
        for flat in it:  # steady state: emit a random slot, refill it
            i = int(randint(len(buf)))
            out = buf[i]
            buf[i] = flat
            yield out
        while buf:  # drain
            i = int(randint(len(buf)))
            buf[i], buf[-1] = buf[-1], buf[i]
            yield buf.pop()

    def _cardinality(self) -> int:
        return self._input._cardinality()


def _stack(rows: List[Element], k: int, index: int) -> np.ndarray:
    column = [r[k] for r in rows]
    first = column[0]
    if first.ndim == 0 and all(c.ndim == 0 for c in column):
        # Scalars (a TFRecordDataset's records, labels): one array from the items, without
        # np.stack's per-element reshaping (several times faster for a batch of strings).
        out = np.empty(len(column), dtype=first.dtype)
        out[:] = [c[()] for c in column]
        return out
    try:
        return np.stack(column)
    except ValueError:
        first = column[0].shape
        bad = next(j for j, c in enumerate(column) if c.shape != first)
        raise InvalidArgumentError(
            f"Cannot batch tensors with different shapes in component {k}. First element had shape "
            f"{list(first)} and element {bad} had shape {list(column[bad].shape)} (batch {index}); "
            "use padded_batch, or resize/pad the elements first") from None


@register("batch")
class BatchDataset(Dataset):
    _kind = "BatchV2"

    def __init__(self, input_ds: Dataset, batch_size: Any, drop_remainder: bool) -> None:
        self._input = input_ds
        self._batch_size = _positive_int(batch_size, "batch_size")
        self._drop = bool(drop_remainder)
        lead = self._batch_size if self._drop else None

        def batched(spec: Any) -> Any:
            dims = None if spec._dims is None else (lead,) + spec._dims
            return SparseTensorSpec(dims, spec._dtype) if _s.is_sparse(spec) else TensorSpec(dims, spec._dtype)
        super().__init__(_s.map_structure(batched, input_ds._template), [input_ds])
        self._slots = [(start, _s.is_sparse(spec)) for spec, start in _s.slots(input_ds._template)]

    def _combine(self, rows: List[Element], index: int) -> Element:
        if len(self._slots) == len(self._specs):  # no sparse components: one stack per component
            return tuple(_stack(rows, k, index) for k in range(len(self._specs)))
        out: List[np.ndarray] = []
        for start, sparse in self._slots:
            if sparse:
                out.extend(sparse_rows.batch([r[start:start + 3] for r in rows], start))
            else:
                out.append(_stack(rows, start, index))
        return tuple(out)

    def _gen(self, name: str) -> Iterator[Element]:
        n = self._batch_size
        rows: List[Element] = []
        index = 0
        for flat in self._input._iter_flat(name):
            rows.append(flat)
            if len(rows) == n:
                yield self._combine(rows, index)
                rows = []
                index += 1
        if rows and not self._drop:
            yield self._combine(rows, index)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        return n // self._batch_size if self._drop else -(-n // self._batch_size)


@register("padded_batch")
class PaddedBatchDataset(BatchDataset):
    _kind = "PaddedBatchV2"

    def __init__(self, input_ds: Dataset, batch_size: Any, padded_shapes: Any, padding_values: Any,
                 drop_remainder: bool) -> None:
        if any(_s.is_sparse(spec) for spec, _ in _s.slots(input_ds._template)):
            raise TypeError("padded_batch: SparseTensor components cannot be padded (as in TF); use batch(), which "
                            "combines SparseTensors of different dense shapes")
        specs = input_ds._specs
        if padded_shapes is None:
            shapes = [s._dims for s in specs]
            if any(d is None for d in shapes):
                raise ValueError("padded_batch: padded_shapes is needed when a component's rank is unknown")
        else:
            shapes = [tuple(getattr(p, "dims", p)) if p is not None else None
                      for p in _s.flatten(padded_shapes, lists_are_structure=False)]
            if len(shapes) != len(specs):
                raise ValueError(f"padded_shapes: has {len(shapes)} components; the elements have {len(specs)}")
        # a None component pads every unknown dimension of that component to the batch's longest
        known = [spec._dims if s is None else s for s, spec in zip(shapes, specs)]
        if any(s is None for s in known):
            raise ValueError("padded_batch: padded_shapes is needed when a component's rank is unknown")
        self._shapes = [tuple(None if d in (None, -1) else int(d) for d in s) for s in known if s is not None]
        for k, (s, spec) in enumerate(zip(self._shapes, specs)):
            if spec._dims is not None and len(s) != len(spec._dims):
                raise ValueError(f"padded_shapes: component {k} has rank {len(s)}; the elements have "
                                 f"shape {format_dims(spec._dims)}")
        if padding_values is None:
            self._pads = [b"" if s._dtype.is_string else 0 for s in specs]
        else:
            pads = _s.flatten(padding_values)
            if len(pads) == 1 and len(specs) > 1:
                pads = pads * len(specs)
            self._pads = [p.numpy() if hasattr(p, "numpy") else p for p in pads]
        super().__init__(input_ds, batch_size, drop_remainder)
        lead = self._batch_size if self._drop else None
        self._specs = [TensorSpec((lead,) + s, spec._dtype) for s, spec in zip(self._shapes, specs)]
        self._template = _s.pack(input_ds._template, self._specs)

    def _gen(self, name: str) -> Iterator[Element]:
        n = self._batch_size
        rows: List[Element] = []
        for flat in self._input._iter_flat(name):
            rows.append(flat)
            if len(rows) == n:
                yield self._pad(rows)
                rows = []
        if rows and not self._drop:
            yield self._pad(rows)

    def _pad(self, rows: List[Element]) -> Element:
        out = []
        for k, (shape, spec, pad) in enumerate(zip(self._shapes, self._specs, self._pads)):
            column = [r[k] for r in rows]
            target = tuple(max(c.shape[i] for c in column) if d is None else d for i, d in enumerate(shape))
            arr = np.empty((len(column),) + target, dtype=spec._dtype.as_numpy_dtype)
            arr[...] = pad
            for j, c in enumerate(column):
                if any(a > b for a, b in zip(c.shape, target)):
                    raise InvalidArgumentError(f"padded_batch: component {k} of an element has shape "
                                               f"{list(c.shape)}, larger than the padded shape {list(target)}")
                arr[(j,) + tuple(slice(0, d) for d in c.shape)] = c
            out.append(arr)
        return tuple(out)


@register("unbatch")
class UnbatchDataset(Dataset):
    _kind = "Unbatch"

    def __init__(self, input_ds: Dataset) -> None:
        self._input = input_ds
        slots = _s.slots(input_ds._template)
        for k, (spec, _) in enumerate(slots):
            if spec._dims is not None and len(spec._dims) == 0:
                raise ValueError(f"unbatch: component {k} is a scalar; every component needs a first dimension")
        super().__init__(_s.map_structure(sparse_rows.inner_spec, input_ds._template), [input_ds])
        self._slots = [(start, _s.is_sparse(spec)) for spec, start in slots]

    def _gen(self, name: str) -> Iterator[Element]:
        if len(self._slots) != len(self._specs):
            yield from sparse_rows.unbatch_slots(self._input._iter_flat(name), self._slots)
            return
        for flat in self._input._iter_flat(name):
            n = flat[0].shape[0]
            if any(a.shape[0] != n for a in flat):
                raise InvalidArgumentError(f"unbatch: components have different sizes in dimension 0: "
                                           f"{[a.shape[0] for a in flat]}")
            for i in range(n):
                yield tuple(a[i, ...] for a in flat)


@register("repeat")
class RepeatDataset(Dataset):
    _kind = "Repeat"

    def __init__(self, input_ds: Dataset, count: Any) -> None:  # None, an int or a scalar tensor
        if hasattr(count, "numpy"):
            count = count.numpy()
        if count is not None and (not isinstance(count, (int, np.integer)) or count < -1):
            raise ValueError(f"count: expected None, -1 (forever) or a non-negative int; got {count!r}")
        self._input = input_ds
        self._count = -1 if count is None else int(count)
        super().__init__(input_ds._template, [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        done = 0
        while self._count < 0 or done < self._count:
            empty = True
            for flat in self._input._iter_flat(name):
                empty = False
                yield flat
            done += 1
            if empty:  # repeating an empty dataset forever would hang: TF stops too
                return

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return 0 if n == 0 else INFINITE_CARDINALITY if n != UNKNOWN_CARDINALITY else UNKNOWN_CARDINALITY
        if n == INFINITE_CARDINALITY:
            return 0 if self._count == 0 else INFINITE_CARDINALITY
        return n * self._count if n >= 0 else n


@register("take")
class TakeDataset(Dataset):
    _kind = "FiniteTake"

    def __init__(self, input_ds: Dataset, count: Any) -> None:
        if hasattr(count, "numpy"):
            count = count.numpy()
        if not isinstance(count, (int, np.integer)) or count < -1:
            raise ValueError(f"count: expected a non-negative int or -1 (all); got {count!r}")
        self._input = input_ds
        self._count = int(count)
        super().__init__(input_ds._template, [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        if self._count == 0:
            return
        for i, flat in enumerate(self._input._iter_flat(name)):
            yield flat
            if i + 1 == self._count:
                return

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return n
        if n == INFINITE_CARDINALITY:
            return self._count
        return min(n, self._count) if n >= 0 else UNKNOWN_CARDINALITY


@register("skip")
class SkipDataset(Dataset):
    _kind = "FiniteSkip"

    def __init__(self, input_ds: Dataset, count: Any) -> None:
        if hasattr(count, "numpy"):
            count = count.numpy()
        if not isinstance(count, (int, np.integer)) or count < -1:
            raise ValueError(f"count: expected a non-negative int or -1 (skip all); got {count!r}")
        self._input = input_ds
        self._count = int(count)
        super().__init__(input_ds._template, [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        it = self._input._iter_flat(name)
        if self._count < 0:
            for _ in it:
                pass
            return
        for i, flat in enumerate(it):
            if i >= self._count:
                yield flat

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count < 0:
            return 0 if n != INFINITE_CARDINALITY else INFINITE_CARDINALITY
        return max(n - self._count, 0) if n >= 0 else n


@register("scan")
class ScanDataset(Dataset):
    _kind = "Scan"

    def __init__(self, input_ds: Dataset, initial_state: Any, scan_func: Callable) -> None:
        self._input = input_ds
        state_template, state, self._state_dtypes = _s.to_arrays(initial_state, "initial_state")
        self._state_template, self._initial = state_template, tuple(state)
        self._fn = TracedFunction(scan_func, (state_template, input_ds._template), "scan")
        result = self._fn.out_template
        if not (isinstance(result, tuple) and len(result) == 2):
            raise TypeError(f"scan_func: must return (new_state, output); got {result!r}")
        new_state = _s.spec_leaves(result[0])
        if [t._dtype for t in new_state] != self._state_dtypes or \
                [t._dims for t in new_state] != [a.shape for a in state]:
            raise TypeError(f"scan_func: the new state must keep the initial state's structure, dtypes and "
                            f"shapes {[(d.name, a.shape) for d, a in zip(self._state_dtypes, state)]}; got "
                            f"{[(t._dtype.name, t._dims) for t in new_state]}")
        self._n_state = len(new_state)
        super().__init__(result[1], [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        state, n, fn = self._initial, self._n_state, self._fn
        for flat in self._input._iter_flat(name):
            out = fn(state + tuple(flat))
            state = out[:n]
            yield out[n:]

    def _cardinality(self) -> int:
        return self._input._cardinality()


@register("shard")
class ShardDataset(Dataset):
    _kind = "Shard"

    def __init__(self, input_ds: Dataset, num_shards: Any, index: Any) -> None:
        self._input = input_ds
        self._n = _positive_int(num_shards, "num_shards")
        if hasattr(index, "numpy"):
            index = index.numpy()
        if not isinstance(index, (int, np.integer)) or not 0 <= index < self._n:
            raise ValueError(f"index: expected an int in [0, num_shards={self._n}); got {index!r}")
        self._index = int(index)
        super().__init__(input_ds._template, [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        for i, flat in enumerate(self._input._iter_flat(name)):
            if i % self._n == self._index:
                yield flat

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if n < 0:
            return n
        return n // self._n + (1 if self._index < n % self._n else 0)


@register("concatenate")
class ConcatenateDataset(Dataset):
    _kind = "Concatenate"

    def __init__(self, first: Dataset, second: Dataset) -> None:
        if not isinstance(second, Dataset):
            raise TypeError(f"dataset: expected a Dataset; got {type(second).__name__}")
        if len(first._specs) != len(second._specs) or any(
                a._dtype is not b._dtype for a, b in zip(first._specs, second._specs)):
            raise TypeError(f"concatenate: the datasets must have the same structure and dtypes; got "
                            f"{first._template!r} and {second._template!r}")
        self._parts = (first, second)
        specs = [TensorSpec(relax(a._dims, b._dims), a._dtype) for a, b in zip(first._specs, second._specs)]
        super().__init__(_s.pack(first._template, specs), [first, second])

    def _gen(self, name: str) -> Iterator[Element]:
        for d in self._parts:
            yield from d._iter_flat(name)

    def _cardinality(self) -> int:
        a, b = (d._cardinality() for d in self._parts)
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        return a + b if a >= 0 and b >= 0 else UNKNOWN_CARDINALITY


@register("cache")
class CacheDataset(Dataset):
    """Memory cache: the first complete pass is kept. File cache: framed pickles of the
    flat elements, in TFRecord framing (so corruption is detected), renamed into place
    when a pass completes."""

    def __init__(self, input_ds: Dataset, filename: Any) -> None:
        if hasattr(filename, "numpy"):
            filename = filename.numpy()
        if isinstance(filename, bytes):
            filename = filename.decode("utf-8")
        if not isinstance(filename, str):
            raise TypeError(f"filename: expected a str (\"\" caches in memory); got {type(filename).__name__}")
        self._input = input_ds
        self._filename = filename
        self._kind = "Cache" if filename else "MemoryCache"
        self._memory: Optional[List[Element]] = None
        super().__init__(input_ds._template, [input_ds])

    def _path(self) -> str:
        return self._filename + ".jfcache"

    def _gen(self, name: str) -> Iterator[Element]:
        if self._filename:
            yield from self._gen_file(name)
            return
        if self._memory is not None:
            yield from self._memory
            return
        seen: List[Element] = []
        for flat in self._input._iter_flat(name):
            seen.append(flat)
            yield flat
        self._memory = seen  # only a complete pass becomes the cache

    def _gen_file(self, name: str) -> Iterator[Element]:
        path = self._path()
        if os.path.exists(path):
            for payload in read_records(path):
                yield pickle.loads(payload)
            return
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "wb") as f:
            try:
                for flat in self._input._iter_flat(name):
                    f.write(records.frame(pickle.dumps(flat, protocol=pickle.HIGHEST_PROTOCOL)))
                    yield flat
            except BaseException:
                f.close()
                os.unlink(tmp)
                raise
        os.replace(tmp, path)

    def _cardinality(self) -> int:
        return self._input._cardinality()
