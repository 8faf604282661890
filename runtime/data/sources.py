"""Datasets that start a pipeline: tensor slices, single tensors, generators, ranges, zips,
file lists.
"""
from __future__ import annotations

import functools
import glob
import os
from typing import Any, Callable, Iterator, List, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError, NotFoundError
from jitflow.runtime.ops import random_ops
from jitflow.runtime.core.shapes import is_compatible, relax
from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.data import sparse_rows
from jitflow.runtime.data import structure as _s
from jitflow.runtime.data.dataset import (INFINITE_CARDINALITY, UNKNOWN_CARDINALITY, Dataset,
                                          Element, register)


@register("from_tensor_slices")
class TensorSliceDataset(Dataset):
    _kind = "TensorSlice"

    def __init__(self, tensors: Any) -> None:
        template, arrays, dtypes = _s.to_arrays(tensors, "from_tensor_slices")
        if not arrays:
            raise ValueError("from_tensor_slices: tensors must contain at least one tensor; got an empty structure")
        slots = _s.slots(template)
        self._rows: Optional[List[Element]] = None
        if len(slots) != len(arrays):  # SparseTensor components: sliced row by row once, as unbatch does
            self._rows = list(sparse_rows.unbatch_slots(iter([tuple(arrays)]), [(start, _s.is_sparse(spec))
                                                                    for spec, start in slots]))
            self._arrays = []
            self._n = len(self._rows)
            Dataset.__init__(self, _s.map_structure(sparse_rows.inner_spec, template))
            return
        for i, a in enumerate(arrays):
            if a.ndim == 0:
                raise InvalidArgumentError(f"from_tensor_slices: component {i} is a scalar; every component "
                                           "needs a first dimension to slice along")
        n = arrays[0].shape[0]
        for i, a in enumerate(arrays):
            if a.shape[0] != n:
                raise InvalidArgumentError(f"from_tensor_slices: all components must have the same size in "
                                           f"dimension 0; component 0 has {n} and component {i} has {a.shape[0]}")
        self._arrays = arrays
        self._n = n
        specs = [TensorSpec(a.shape[1:], d) for a, d in zip(arrays, dtypes)]
        super().__init__(_s.pack(template, specs))

    def _gen(self, name: str) -> Iterator[Element]:
        if self._rows is not None:
            yield from self._rows
            return
        arrays = self._arrays
        if len(arrays) == 1:
            a = arrays[0]
            for i in range(self._n):
                yield (a[i, ...],)
        else:
            for i in range(self._n):
                yield tuple(a[i, ...] for a in arrays)

    def _cardinality(self) -> int:
        return self._n


@register("from_tensors")
class TensorDataset(Dataset):
    _kind = "Tensor"

    def __init__(self, tensors: Any) -> None:
        template, arrays, _ = _s.to_arrays(tensors, "from_tensors")
        self._element = tuple(arrays)
        super().__init__(template)

    def _gen(self, name: str) -> Iterator[Element]:
        yield self._element

    def _cardinality(self) -> int:
        return 1


@register("range")
class RangeDataset(Dataset):
    _kind = "Range"

    def __init__(self, args: tuple, dtype: Any) -> None:
        if not 1 <= len(args) <= 3:
            raise TypeError(f"range: expected 1 to 3 arguments (stop | start, stop[, step]); got {len(args)}")
        ints = []
        for a in args:
            v = a.numpy() if hasattr(a, "numpy") else a
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
                raise TypeError(f"range: arguments must be ints; got {a!r}")
            ints.append(int(v))
        self._range = range(*ints)
        self._dtype = _dt.as_dtype(dtype)
        super().__init__(TensorSpec((), self._dtype))

    def _gen(self, name: str) -> Iterator[Element]:
        np_dtype = self._dtype.as_numpy_dtype
        for i in self._range:
            yield (np.array(i, dtype=np_dtype),)

    def _cardinality(self) -> int:
        return len(self._range)


@register("zip")
class ZipDataset(Dataset):
    _kind = "Zip"

    def __init__(self, datasets: Any) -> None:
        leaves = _s.flatten(datasets)
        if not leaves or not all(isinstance(d, Dataset) for d in leaves):
            raise TypeError(f"zip: expected a (nested) tuple or dict of Datasets; got {datasets!r}")
        self._parts = leaves
        super().__init__(_s.pack(datasets, [d._template for d in leaves]), leaves)

    def _gen(self, name: str) -> Iterator[Element]:
        its = [d._iter_flat(name) for d in self._parts]
        while True:
            out: tuple = ()
            for it in its:
                try:
                    out += next(it)
                except StopIteration:
                    return
            yield out

    def _cardinality(self) -> int:
        cards = [d._cardinality() for d in self._parts]
        finite = [c for c in cards if c >= 0]
        if finite:
            return min(finite)
        return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in cards else INFINITE_CARDINALITY


def _signature_from_types(output_types: Any, output_shapes: Any) -> Any:
    if output_shapes is None:
        return _s.map_structure(lambda t: TensorSpec(None, t), output_types)
    types = _s.flatten(output_types)
    shapes = _s.flatten(output_shapes, lists_are_structure=False) if not isinstance(output_types, _dt.DType) \
        else [output_shapes]
    if len(types) != len(shapes):
        raise ValueError(f"output_shapes: has {len(shapes)} components; output_types has {len(types)}")
    return _s.pack(output_types, [TensorSpec(s, t) for t, s in zip(types, shapes)])


@register("from_generator")
class GeneratorDataset(Dataset):
    _kind = "Generator"

    def __init__(self, generator: Callable, output_types: Any, output_shapes: Any, args: Any,
                 output_signature: Any) -> None:
        if not callable(generator):
            raise TypeError(f"generator: expected a callable returning an iterator; got {type(generator).__name__}")
        if output_signature is None:
            if output_types is None:
                raise TypeError("from_generator: pass output_signature (a nested structure of jf.TensorSpec), "
                                "or output_types")
            output_signature = _signature_from_types(output_types, output_shapes)
        leaves = _s.flatten(output_signature)
        if not all(isinstance(s, TensorSpec) for s in leaves):
            raise TypeError(f"output_signature: expected a nested structure of jf.TensorSpec; got {output_signature!r}")
        self._generator = generator
        # TF evaluates `args` to tensors and passes them to the generator as numpy values.
        self._args = tuple(_s.to_numpy(t, a) for t, a in (_s.to_arrays(arg, "args")[:2] for arg in args)) \
            if args is not None else ()
        super().__init__(output_signature)

    def _gen(self, name: str) -> Iterator[Element]:
        specs = self._specs
        template = self._template
        for index, value in enumerate(self._generator(*self._args)):
            leaves = _s.flatten(value) if not isinstance(template, TensorSpec) else [value]
            if len(leaves) != len(specs):
                raise TypeError(f"from_generator: element {index} has {len(leaves)} components; "
                                f"output_signature has {len(specs)}")
            out = []
            for j, (v, spec) in enumerate(zip(leaves, specs)):
                try:
                    arr = _s.leaf_as_array(v, spec._dtype, f"component {j}")
                except (TypeError, ValueError) as e:
                    raise TypeError(f"from_generator: element {index} does not match output_signature: "
                                    f"{e}") from None
                if not is_compatible(spec._dims, arr.shape):
                    raise TypeError(f"from_generator: element {index}, component {j} has shape "
                                    f"{list(arr.shape)}; output_signature expects {spec.shape}")
                out.append(arr)
            yield tuple(out)


@register("list_files")
class ListFilesDataset(Dataset):
    _kind = "TensorSlice"

    def __init__(self, file_pattern: Any, shuffle: Optional[bool], seed: Optional[int]) -> None:
        patterns = _patterns(file_pattern)
        files: List[str] = sorted({f for p in patterns for f in glob.glob(p)})
        if not files:
            raise InvalidArgumentError(f"list_files: no files match the pattern(s) {patterns}")
        self._files = files
        self._shuffle = True if shuffle is None else bool(shuffle)
        self._seeds = random_ops.get_seed(seed)  # fixed when the dataset is built, as in TF
        self._epoch = 0
        super().__init__(TensorSpec((), _dt.string))

    def _gen(self, name: str) -> Iterator[Element]:
        order = list(self._files)
        if self._shuffle:
            g, o = self._seeds
            seq = None if g is None or o is None else [g, o, self._epoch]  # get_seed gives both or neither
            np.random.default_rng(seq).shuffle(order)
            self._epoch += 1
        for f in order:
            arr = np.empty((), dtype=object)
            arr[()] = f.encode("utf-8")
            yield (arr,)

    def _cardinality(self) -> int:
        return len(self._files)


def _patterns(value: Any) -> List[str]:
    if hasattr(value, "numpy"):
        value = value.numpy()
    arr = np.asarray(value, dtype=object).reshape(-1)
    out = []
    for v in arr:
        if isinstance(v, bytes):
            v = v.decode("utf-8")
        if isinstance(v, os.PathLike):
            v = os.fspath(v)
        if not isinstance(v, str):
            raise TypeError(f"file_pattern: expected a string or a list of strings; got {value!r}")
        out.append(v)
    if not out:
        raise NotFoundError("file_pattern: no pattern given")
    return out


@register("sample_from_datasets")
class SampleFromDatasets(Dataset):
    """TF's `sample_from_datasets`: a weighted random choice of input per element."""

    _kind = "DirectedInterleave"

    def __init__(self, datasets: Any, weights: Any, seed: Optional[int], stop_on_empty: bool,
                 rerandomize: Optional[bool]) -> None:
        datasets = list(datasets)
        if not datasets or not all(isinstance(d, Dataset) for d in datasets):
            raise TypeError(f"datasets: expected a non-empty list of Datasets; got {datasets!r}")
        first = datasets[0]
        for i, d in enumerate(datasets[1:], 1):
            if [s._dtype for s in d._specs] != [s._dtype for s in first._specs]:
                raise TypeError(f"datasets[{i}]: element dtypes differ from datasets[0]: {d._template!r} "
                                f"vs {first._template!r}")
        w = np.ones(len(datasets)) if weights is None else np.asarray(
            weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if w.shape != (len(datasets),) or (w < 0).any() or w.sum() <= 0:
            raise ValueError(f"weights: expected {len(datasets)} non-negative numbers, not all zero; got {weights!r}")
        self._datasets = datasets
        self._weights = w / w.sum()
        self._stop = bool(stop_on_empty)
        self._seeds = random_ops.get_seed(seed)
        self._rerandomize = rerandomize is not False
        self._epoch = 0
        specs = [TensorSpec(functools.reduce(relax, [d._specs[k]._dims for d in datasets]), a._dtype)
                 for k, a in enumerate(first._specs)]
        super().__init__(_s.pack(first._template, specs), datasets)

    def _gen(self, name: str) -> Iterator[Element]:
        g, o = self._seeds
        rng = np.random.default_rng(None if g is None or o is None else [g, o, self._epoch])  # both or neither
        if self._rerandomize:
            self._epoch += 1
        its = [d._iter_flat(name) for d in self._datasets]
        weights = self._weights.copy()
        while weights.sum() > 0:
            k = int(rng.choice(len(its), p=weights / weights.sum()))
            try:
                yield next(its[k])
            except StopIteration:
                if self._stop:
                    return
                weights[k] = 0.0
