"""`jf.data.Dataset`: the public class, iteration, and the registry its methods build from.

A dataset is a node in a chain of transformations; iterating it builds one generator per
node, each pulling flat tuples of numpy arrays from its input. Sources
(`sources.py`) and transformations (`transforms.py`, `parallel.py`) register their
classes here by method name, so this module never imports them (they subclass
`Dataset`). Every node has TF's dataset type name (`Map`, `ParallelMapV2`, `BatchV2`, ...);
while a profiler listens, each `GetNext` of each node is a region named like TF's
iterator events (`Iterator::Root::Prefetch::BatchV2::ParallelMapV2::TFRecord`), which
TensorBoard's input-pipeline analysis groups by those names.
"""
from __future__ import annotations

import abc
from time import perf_counter_ns
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TypeVar

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core import context, input_stats, instrument
from jitflow.runtime.core.errors import InvalidArgumentError, OutOfRangeError
from jitflow.runtime.ops.constant_op import constant
from jitflow.runtime.core.shapes import TensorShape
from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.data import structure as _s
from jitflow.runtime.data.options import Options
from jitflow.runtime.data.traced import fold

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2

Element = tuple  # a flat tuple of numpy arrays
_REGISTRY: Dict[str, Callable[..., "Dataset"]] = {}


class DatasetSpec:
    """The type of a dataset-valued element, such as each window of `Dataset.window` (TF's name).

    >>> jf.data.Dataset.range(5).window(2).element_spec
    DatasetSpec(TensorSpec(shape=(), dtype=jf.int64, name=None), TensorShape([]))
    """

    _dims: tuple = ()
    _dtype = _dt.variant

    def __init__(self, element_spec: Any, dataset_shape: Any = ()) -> None:
        self._element_spec = element_spec

    @property
    def element_spec(self) -> Any:
        return self._element_spec

    @property
    def shape(self) -> Any:
        return TensorShape(())

    @property
    def value_type(self) -> type:
        return Dataset

    def __repr__(self) -> str:
        return f"DatasetSpec({self._element_spec!r}, TensorShape([]))"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, DatasetSpec) and repr(other._element_spec) == repr(self._element_spec)

    def __hash__(self) -> int:
        return hash(repr(self))


_Builder = TypeVar("_Builder", bound=Callable[..., Any])


def register(name: str) -> Callable[[_Builder], _Builder]:
    """Decorator: `Dataset.<name>(...)` builds with this class or function (sources: `Dataset.<name>`
    staticmethods)."""
    def deco(cls: _Builder) -> _Builder:
        _REGISTRY[name] = cls
        return cls
    return deco


def _build(name: str, *args: Any, **kwargs: Any) -> "Dataset":
    return _REGISTRY[name](*args, **kwargs)


def _bucket_by_sequence_length(*args: Any) -> "Dataset":
    return _REGISTRY["bucket_by_sequence_length"](*args)


class Dataset(abc.ABC):
    """A sequence of elements (nested structures of tensors) with TF's `tf.data.Dataset` API.

    >>> ds = jf.data.Dataset.from_tensor_slices(([1, 2, 3], ["a", "b", "c"]))
    >>> ds = ds.map(lambda x, s: (x * 2, s)).shuffle(3, seed=1).batch(2)
    >>> for xs, ss in ds:
    ...     print(xs.numpy(), ss.numpy())          # doctest: +SKIP
    """

    _kind = "Dataset"  # TF's dataset type name, used in iterator event names

    _own_options: Optional[Options] = None   # set by with_options
    _pipeline_options: Optional[Options] = None  # the whole pipeline's, set when iteration starts

    def __init__(self, template: Any, inputs: Sequence["Dataset"] = ()) -> None:
        self._template = template
        leaves = _s.spec_leaves(template)
        self._specs: List[TensorSpec] = leaves
        self._dtypes: List[_dt.DType] = [s._dtype for s in leaves]
        self._inputs = list(inputs)

    # -- what subclasses provide ----------------------------------------------------------
    @abc.abstractmethod
    def _gen(self, name: str) -> Iterator[Element]:
        """The flat elements, produced by a fresh iterator (`name`: this node's event name)."""

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    # -- iteration ----------------------------------------------------------------------
    def _iter_flat(self, prefix: str = "Iterator::Root") -> Iterator[Element]:
        if prefix == "Iterator::Root":  # a new pipeline: every node sees its merged options
            self._configure(self.options())
        return self._iter_node(prefix)

    def _iter_node(self, prefix: str) -> Iterator[Element]:
        name = f"{prefix}::{self._kind}"
        it = self._gen(name)
        if instrument.enabled:
            return _traced(it, name)
        return it

    def __iter__(self) -> "OwnedIterator":
        if context.current_graph() is not None:
            # Iterating here would run the pipeline once, at trace time, and freeze its
            # elements into the graph as constants.
            raise TypeError("iterating a jf.data.Dataset while tracing a jf.function is only supported "
                            "as `for element in dataset:` with AutoGraph on (jf.function's default), "
                            "which becomes a graph loop; iter()/next() work eagerly")
        return OwnedIterator(self)

    def as_numpy_iterator(self) -> Iterator[Any]:
        """Iterate elements as numpy values (scalars as numpy scalars, strings as bytes).

        >>> list(jf.data.Dataset.range(3).as_numpy_iterator())
        [np.int64(0), np.int64(1), np.int64(2)]
        """
        template = self._template
        if _s.has_datasets(template):
            raise TypeError("`jf.data.Dataset.as_numpy_iterator()` is not supported for datasets that produce "
                            "values of type Dataset (window elements); iterate them, or flat_map them first")
        for flat in self._iter_flat():
            yield _s.to_numpy(template, flat)

    def __bool__(self) -> bool:
        return True

    def __len__(self) -> int:
        n = self._cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def _configure(self, options: Options) -> None:
        seen = set()
        stack: List[Dataset] = [self]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            node._pipeline_options = options
            stack.extend(node._inputs)

    # -- properties ---------------------------------------------------------------------
    @property
    def element_spec(self) -> Any:
        """The nested structure of `jf.TensorSpec` every element matches."""
        return self._template

    def cardinality(self) -> Any:
        """The number of elements, `jf.data.INFINITE_CARDINALITY` (-1) or `UNKNOWN_CARDINALITY` (-2).

        >>> jf.data.Dataset.range(10).batch(3, drop_remainder=True).cardinality().numpy()
        np.int64(3)
        """
        return constant(self._cardinality(), dtype=_dt.int64)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} element_spec={self._template!r}>"

    # -- sources --------------------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any, name: Optional[str] = None) -> "Dataset":
        """One element per slice along the first dimension of every component.

        >>> list(jf.data.Dataset.from_tensor_slices({"a": [1, 2]}).as_numpy_iterator())
        [{'a': np.int32(1)}, {'a': np.int32(2)}]
        """
        return _build("from_tensor_slices", tensors)

    @staticmethod
    def from_tensors(tensors: Any, name: Optional[str] = None) -> "Dataset":
        """A dataset of exactly one element, `tensors`.

        >>> jf.data.Dataset.from_tensors([1, 2]).cardinality().numpy()
        np.int64(1)
        """
        return _build("from_tensors", tensors)

    @staticmethod
    def from_generator(generator: Callable, output_types: Any = None, output_shapes: Any = None,
                       args: Any = None, output_signature: Any = None, name: Optional[str] = None) -> "Dataset":
        """Elements produced by calling `generator(*args)`, checked against `output_signature`.

        >>> def gen():
        ...     for i in range(3):
        ...         yield i, [i] * i
        >>> ds = jf.data.Dataset.from_generator(gen, output_signature=(
        ...     jf.TensorSpec([], jf.int32), jf.TensorSpec([None], jf.int32)))
        """
        return _build("from_generator", generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def range(*args: Any, dtype: Any = _dt.int64, name: Optional[str] = None) -> "Dataset":  # noqa: A003
        """`range(stop)`, `range(start, stop[, step])` as int64 scalars (Python's range rules).

        >>> list(jf.data.Dataset.range(1, 8, 3).as_numpy_iterator())
        [np.int64(1), np.int64(4), np.int64(7)]
        """
        return _build("range", args, dtype)

    @staticmethod
    def zip(*datasets: Any, name: Optional[str] = None) -> "Dataset":
        """Elements of several datasets side by side (a nested structure of datasets), until one ends.

        >>> a, b = jf.data.Dataset.range(3), jf.data.Dataset.range(3, 6)
        >>> list(jf.data.Dataset.zip((a, b)).as_numpy_iterator())[0]
        (np.int64(0), np.int64(3))
        """
        structure = datasets[0] if len(datasets) == 1 else datasets
        return _build("zip", structure)

    @staticmethod
    def list_files(file_pattern: Any, shuffle: Optional[bool] = None, seed: Optional[int] = None,
                   name: Optional[str] = None) -> "Dataset":
        """File names matching glob pattern(s), shuffled unless `shuffle=False` (TF's default).

        >>> jf.data.Dataset.list_files("/data/*.jpg", shuffle=False)   # doctest: +SKIP
        """
        return _build("list_files", file_pattern, shuffle, seed)

    # -- transformations ------------------------------------------------------------------
    def map(self, map_func: Callable, num_parallel_calls: Optional[int] = None,  # noqa: A003
            deterministic: Optional[bool] = None, name: Optional[str] = None) -> "Dataset":
        """Apply `map_func` (traced once as a `jf.function`) to every element.

        Tuples are unpacked into positional arguments, as in TF. With
        `num_parallel_calls` (an int or `jf.data.AUTOTUNE`) that many threads run the traced
        function at once; jitflow's kernels and Pillow's codecs release the GIL, so this
        uses several cores. Output order is the input order unless `deterministic=False`.

        >>> ds = jf.data.Dataset.range(4).map(lambda x: x * x, num_parallel_calls=jf.data.AUTOTUNE)
        """
        if num_parallel_calls is None:
            return _build("map", self, map_func)
        return _build("parallel_map", self, map_func, num_parallel_calls, deterministic)

    def filter(self, predicate: Callable, name: Optional[str] = None) -> "Dataset":
        """Keep the elements for which `predicate` (traced; returns a bool scalar) is true.

        >>> list(jf.data.Dataset.range(6).filter(lambda x: x % 2 == 0).as_numpy_iterator())
        [np.int64(0), np.int64(2), np.int64(4)]
        """
        return _build("filter", self, predicate)

    def shuffle(self, buffer_size: int, seed: Optional[int] = None, reshuffle_each_iteration: Optional[bool] = None,
                name: Optional[str] = None) -> "Dataset":
        """Randomly shuffle through a buffer of `buffer_size` elements (TF's algorithm).

        The buffer fills with the first `buffer_size` elements; each output is a uniformly
        chosen buffer slot, refilled from the input. `buffer_size >= len` is a full
        permutation. With a `seed` (or `jf.random.set_seed`) the order is reproducible; each
        iteration reshuffles unless `reshuffle_each_iteration=False`.

        >>> ds = jf.data.Dataset.range(10).shuffle(10, seed=42)
        """
        return _build("shuffle", self, buffer_size, seed, reshuffle_each_iteration)

    def batch(self, batch_size: int, drop_remainder: bool = False, num_parallel_calls: Optional[int] = None,
              deterministic: Optional[bool] = None, name: Optional[str] = None) -> "Dataset":
        """Stack `batch_size` consecutive elements along a new first dimension.

        `num_parallel_calls`/`deterministic` are accepted for TF compatibility; stacking runs
        in the consumer's thread (parallelise the `map` before it, or `prefetch` after).

        >>> jf.data.Dataset.range(7).batch(3).element_spec
        TensorSpec(shape=(None,), dtype=jf.int64, name=None)
        """
        return _build("batch", self, batch_size, drop_remainder)

    def padded_batch(self, batch_size: int, padded_shapes: Any = None, padding_values: Any = None,
                     drop_remainder: bool = False, name: Optional[str] = None) -> "Dataset":
        """Batch elements of different shapes, padding each component to a common shape.

        >>> rows = lambda: ([k] * k for k in range(1, 4))
        >>> ds = jf.data.Dataset.from_generator(rows, output_signature=jf.TensorSpec([None], jf.int32))
        >>> list(ds.padded_batch(3).as_numpy_iterator())[0].tolist()
        [[1, 0, 0], [2, 2, 0], [3, 3, 3]]
        """
        return _build("padded_batch", self, batch_size, padded_shapes, padding_values, drop_remainder)

    def sparse_batch(self, batch_size: int, row_shape: Any, name: Optional[str] = None) -> "Dataset":
        """Batch variable-size elements into SparseTensors of dense shape `[n, *row_shape]`
        holding every entry (zeros too); each element must fit `row_shape` (TF's
        `sparse_batch`, `dense_to_sparse_batch`).

        >>> rows = lambda: iter([[1, 2, 3], [4, 5]])
        >>> ds = jf.data.Dataset.from_generator(rows, output_signature=jf.TensorSpec([None], jf.int32))
        >>> sp = next(iter(ds.sparse_batch(2, [4])))
        >>> sp.indices.numpy().tolist(), sp.dense_shape.numpy().tolist()
        ([[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]], [2, 4])
        """
        return _build("sparse_batch", self, batch_size, row_shape)

    def unbatch(self, name: Optional[str] = None) -> "Dataset":
        """Split every element along its first dimension into separate elements.

        >>> jf.data.Dataset.from_tensors([[1, 2], [3, 4]]).unbatch().cardinality().numpy()
        np.int64(-2)
        """
        return _build("unbatch", self)

    def repeat(self, count: Optional[int] = None, name: Optional[str] = None) -> "Dataset":
        """Repeat the dataset `count` times (forever when None or -1); each pass re-iterates the input.

        >>> jf.data.Dataset.range(2).repeat(2).cardinality().numpy()
        np.int64(4)
        """
        return _build("repeat", self, count)

    def take(self, count: int, name: Optional[str] = None) -> "Dataset":
        """The first `count` elements (all when -1).

        >>> list(jf.data.Dataset.range(10).repeat().take(3).as_numpy_iterator())
        [np.int64(0), np.int64(1), np.int64(2)]
        """
        return _build("take", self, count)

    def skip(self, count: int, name: Optional[str] = None) -> "Dataset":
        """All but the first `count` elements (all skipped when -1)."""
        return _build("skip", self, count)

    def prefetch(self, buffer_size: int, name: Optional[str] = None) -> "Dataset":
        """Produce up to `buffer_size` elements ahead in a background thread (bounded memory).

        `jf.data.AUTOTUNE` picks a small buffer. The training step then overlaps with the
        input pipeline, which is what `prefetch` is for.

        >>> ds = ds.batch(32).prefetch(jf.data.AUTOTUNE)        # doctest: +SKIP
        """
        return _build("prefetch", self, buffer_size)

    def cache(self, filename: str = "", name: Optional[str] = None) -> "Dataset":
        """Remember the elements of the first complete pass: in memory, or in `filename`.

        A file cache is written to a temporary name and renamed once a pass completes, so an
        interrupted pass never leaves a partial cache; later iterations (and later
        processes) read the file instead of the input.

        >>> ds = jf.data.Dataset.range(5).map(lambda x: x * 2).cache()
        """
        return _build("cache", self, filename)

    def interleave(self, map_func: Callable, cycle_length: Optional[int] = None, block_length: Optional[int] = None,
                   num_parallel_calls: Optional[int] = None, deterministic: Optional[bool] = None,
                   name: Optional[str] = None) -> "Dataset":
        """Map each element to a dataset and interleave them: `block_length` elements from each
        of `cycle_length` open datasets in turn (TF's order).

        >>> files = jf.data.Dataset.from_tensor_slices(["a.tfrecord", "b.tfrecord"])
        >>> ds = files.interleave(jf.data.TFRecordDataset, cycle_length=2)   # doctest: +SKIP
        """
        return _build("interleave", self, map_func, cycle_length, block_length, num_parallel_calls)

    def flat_map(self, map_func: Callable, name: Optional[str] = None) -> "Dataset":
        """Map each element to a dataset and concatenate them in order.

        >>> jf.data.Dataset.range(3).flat_map(lambda x: jf.data.Dataset.range(x)).cardinality().numpy()
        np.int64(-2)
        """
        return _build("interleave", self, map_func, 1, 1, None)

    def concatenate(self, dataset: "Dataset", name: Optional[str] = None) -> "Dataset":
        """This dataset's elements followed by `dataset`'s (same structure and dtypes)."""
        return _build("concatenate", self, dataset)

    def enumerate(self, start: int = 0, name: Optional[str] = None) -> "Dataset":  # noqa: A003
        """Pairs `(index, element)` with int64 indices from `start`.

        >>> list(jf.data.Dataset.from_tensor_slices([7, 8]).enumerate().as_numpy_iterator())
        [(np.int64(0), np.int32(7)), (np.int64(1), np.int32(8))]
        """
        return Dataset.zip((Dataset.range(start, np.iinfo(np.int64).max), self))

    def scan(self, initial_state: Any, scan_func: Callable, name: Optional[str] = None) -> "Dataset":
        """Carry a state through the elements: `scan_func(state, element)` returns
        `(new_state, output)` and the dataset yields the outputs (traced once).

        >>> cumsum = jf.data.Dataset.range(5).scan(jf.constant(0, jf.int64), lambda s, x: (s + x, s + x))
        >>> list(cumsum.as_numpy_iterator())
        [np.int64(0), np.int64(1), np.int64(3), np.int64(6), np.int64(10)]
        """
        return _build("scan", self, initial_state, scan_func)

    @staticmethod
    def sample_from_datasets(datasets: Sequence["Dataset"], weights: Optional[Sequence[float]] = None,
                             seed: Optional[int] = None, stop_on_empty_dataset: bool = False,
                             rerandomize_each_iteration: Optional[bool] = None) -> "Dataset":
        """Draw each element from one of `datasets`, chosen at random with `weights` (uniform by
        default); an exhausted dataset drops out (or ends the result with `stop_on_empty_dataset`).

        >>> mixed = jf.data.Dataset.sample_from_datasets(
        ...     [jf.data.Dataset.range(3), jf.data.Dataset.range(10, 13)], weights=[0.5, 0.5], seed=1)
        """
        return _build("sample_from_datasets", datasets, weights, seed, stop_on_empty_dataset,
                      rerandomize_each_iteration)

    def shard(self, num_shards: int, index: int, name: Optional[str] = None) -> "Dataset":
        """Every `num_shards`-th element starting at `index` (one worker's share of the data).

        >>> list(jf.data.Dataset.range(10).shard(3, 1).as_numpy_iterator())
        [np.int64(1), np.int64(4), np.int64(7)]
        """
        return _build("shard", self, num_shards, index)

    def reduce(self, initial_state: Any, reduce_func: Callable, name: Optional[str] = None) -> Any:
        """Fold the elements into a state with `reduce_func(state, element)` (traced once).

        >>> jf.data.Dataset.range(5).reduce(jf.constant(0, jf.int64), lambda s, x: s + x).numpy()
        np.int64(10)
        """
        return fold(self, initial_state, reduce_func)

    def get_single_element(self, name: Optional[str] = None) -> Any:
        """The only element of a one-element dataset; `InvalidArgumentError` otherwise.

        >>> jf.data.Dataset.from_tensors([1, 2]).get_single_element().numpy()
        array([1, 2], dtype=int32)
        """
        it = self._iter_flat()
        first = next(it, None)
        if first is None:
            raise InvalidArgumentError("get_single_element: the dataset is empty; it must have exactly one element")
        if next(it, None) is not None:
            raise InvalidArgumentError("get_single_element: the dataset has more than one element")
        return _s.to_tensors(self._template, first, self._dtypes)

    def window(self, size: int, shift: Optional[int] = None, stride: int = 1, drop_remainder: bool = False,
               name: Optional[str] = None) -> "Dataset":
        """A dataset of windows, each a dataset (a structure of datasets for structured
        elements) of up to `size` elements: window i starts at element `i * shift` (default
        `size`) and takes every `stride`-th element. The last windows may be shorter unless
        `drop_remainder` (TF's rules).

        >>> windows = jf.data.Dataset.range(7).window(3, shift=2, drop_remainder=True)
        >>> [w.tolist() for w in windows.flat_map(lambda w: w.batch(3)).as_numpy_iterator()]
        [[0, 1, 2], [2, 3, 4], [4, 5, 6]]
        """
        return _build("window", self, size, shift, stride, drop_remainder)

    def group_by_window(self, key_func: Callable, reduce_func: Callable, window_size: Optional[int] = None,
                        window_size_func: Optional[Callable] = None, name: Optional[str] = None) -> "Dataset":
        """Group elements by `key_func(element)` (an int64 scalar, traced); each full group of
        `window_size` (or `window_size_func(key)`) elements becomes `reduce_func(key, window)`,
        a dataset whose elements are produced in its place. Unfinished groups are reduced at
        the end of the input in increasing key order (TF's order).

        >>> ds = jf.data.Dataset.range(10).group_by_window(
        ...     key_func=lambda x: x % 2, reduce_func=lambda key, w: w.batch(5), window_size=5)
        >>> [b.tolist() for b in ds.as_numpy_iterator()]
        [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]
        """
        return _build("group_by_window", self, key_func, reduce_func, window_size, window_size_func)

    def bucket_by_sequence_length(self, element_length_func: Callable, bucket_boundaries: Sequence[int],
                                  bucket_batch_sizes: Sequence[int], padded_shapes: Any = None,
                                  padding_values: Any = None, pad_to_bucket_boundary: bool = False,
                                  no_padding: bool = False, drop_remainder: bool = False,
                                  name: Optional[str] = None) -> "Dataset":
        """Batch elements of similar length together: an element of length L goes to bucket i
        where `bucket_boundaries[i-1] <= L < bucket_boundaries[i]`, and each bucket is
        `padded_batch`ed with `bucket_batch_sizes[i]` (padded to the bucket's longest, or to
        `boundary - 1` with `pad_to_bucket_boundary`), as TF's.

        >>> rows = lambda: ([1] * n for n in [1, 5, 2, 6, 3, 7])
        >>> ds = jf.data.Dataset.from_generator(rows, output_signature=jf.TensorSpec([None], jf.int32))
        >>> ds = ds.bucket_by_sequence_length(lambda x: jf.size(x), [4], [3, 3])
        >>> [b.shape for b in ds.as_numpy_iterator()]
        [(3, 3), (3, 7)]
        """
        return _bucket_by_sequence_length(self, element_length_func, bucket_boundaries, bucket_batch_sizes,
                                          padded_shapes, padding_values, pad_to_bucket_boundary, no_padding,
                                          drop_remainder)

    def with_options(self, options: Options, name: Optional[str] = None) -> "Dataset":
        """This dataset with pipeline `options` (merged with those set upstream; these win).

        >>> opts = jf.data.Options(); opts.deterministic = False
        >>> jf.data.Dataset.range(3).with_options(opts).options().deterministic
        False
        """
        return _build("with_options", self, options)

    def options(self) -> Options:
        """The pipeline's options: those of its inputs merged, then its own (`with_options`).

        >>> jf.data.Dataset.range(3).options().deterministic is None
        True
        """
        merged = Options()
        for ds in self._inputs:
            merged = merged.merge(ds.options())
        if self._own_options is not None:
            merged = merged.merge(self._own_options)
        return merged

    def apply(self, transformation_func: Callable[["Dataset"], "Dataset"]) -> "Dataset":
        """`transformation_func(self)`, which must return a Dataset (for reusable pipeline pieces).

        >>> ds = jf.data.Dataset.range(10).apply(lambda d: d.filter(lambda x: x > 5))
        """
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"transformation_func: must return a Dataset; got {type(out).__name__}")
        return out


def _describe(dataset: Dataset) -> tuple:
    """(TF-style iterator name of the main chain, every transformation kind in the pipeline)."""
    chain = []
    node: Optional[Dataset] = dataset
    while node is not None:
        if node._kind != "Options":
            chain.append(node._kind)
        node = node._inputs[0] if node._inputs else None
    kinds, seen, stack = [], set(), [dataset]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        kinds.append(node._kind)
        stack.extend(node._inputs)
    return "::".join(["Iterator::Root"] + chain), sorted(set(kinds))


def _traced(it: Iterator[Element], name: str) -> Iterator[Element]:
    """`it` with each GetNext marked as a profiler region named like TF's iterator events."""
    region = instrument.region
    while True:
        with region(name):
            try:
                element = next(it)
            except StopIteration:
                return
        yield element


class OwnedIterator:
    """The Python iterator over a dataset (TF's `iter(dataset)`): `next(it)` or `it.get_next()`.

    >>> it = iter(jf.data.Dataset.from_tensor_slices(([1, 2], [3, 4])))
    >>> a0, b0 = next(it)
    """

    def __init__(self, dataset: Dataset) -> None:
        self._dataset = dataset
        self._template = dataset._template
        self._dtypes = dataset._dtypes
        self._it = dataset._iter_flat()
        self._steps = 0
        self._stats = input_stats.track(*_describe(dataset))

    @property
    def element_spec(self) -> Any:
        return self._template

    def __iter__(self) -> "OwnedIterator":
        return self

    def __next__(self) -> Any:
        start = perf_counter_ns()
        try:
            if instrument.enabled:  # TF's host op for each element the program takes
                with instrument.region("IteratorGetNext", step=self._steps):
                    flat = next(self._it)
            else:
                flat = next(self._it)
        except StopIteration:
            self._stats.record(start, perf_counter_ns(), False)
            raise
        self._stats.record(start, perf_counter_ns(), True)
        self._steps += 1
        return _s.to_tensors(self._template, flat, self._dtypes)

    def get_next(self) -> Any:
        """The next element; raises `jf.errors.OutOfRangeError` at the end (TF's behaviour)."""
        try:
            return self.__next__()
        except StopIteration:
            raise OutOfRangeError("End of sequence") from None

    def close(self) -> None:
        """Stop background work (prefetch threads) now rather than when the iterator is collected."""
        close = getattr(self._it, "close", None)
        if close is not None:
            close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
