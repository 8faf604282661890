"""Batching and slicing SparseTensor elements, as TF's `batch`/`unbatch`/`from_tensor_slices` do.

`batch` of sparse elements of rank r gives a rank r+1 SparseTensor: each element's indices
gain its position in the batch as a new first column, the values are concatenated and the
dense shape is `[n, max over the elements of each dim]`. `unbatch` (and slicing) is the
inverse, each slice keeping the batch's inner dense shape.
"""
from __future__ import annotations

from typing import Any, Iterator, List, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import normalize
from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.data import structure as _s
from jitflow.runtime.data.dataset import Dataset, register
from jitflow.runtime.sparse.sparse_tensor import SparseTensorSpec

Parts = Tuple[np.ndarray, np.ndarray, np.ndarray]


def batch(parts: Sequence[Parts], component: int) -> Parts:
    """One rank+1 SparseTensor (as components) from the elements' components."""
    ranks = {int(p[2].shape[0]) for p in parts}
    if len(ranks) != 1:
        raise InvalidArgumentError(f"Cannot batch SparseTensors of different ranks in component {component}: "
                                   f"{sorted(ranks)}")
    rank = ranks.pop()
    indices = []
    for i, (ind, _, _) in enumerate(parts):
        ind = np.asarray(ind, dtype=np.int64).reshape(-1, rank)
        indices.append(np.concatenate([np.full((ind.shape[0], 1), i, dtype=np.int64), ind], axis=1))
    shape = np.max(np.stack([np.asarray(p[2], dtype=np.int64) for p in parts]), axis=0) if rank else \
        np.zeros(0, dtype=np.int64)
    values = np.concatenate([np.asarray(p[1]) for p in parts])
    return (np.concatenate(indices).reshape(-1, rank + 1), values,
            np.concatenate([[len(parts)], shape]).astype(np.int64))


def unbatch(indices: np.ndarray, values: np.ndarray, dense_shape: np.ndarray) -> List[Parts]:
    """The slices of a SparseTensor along its first dimension."""
    dense_shape = np.asarray(dense_shape, dtype=np.int64)
    if dense_shape.shape[0] == 0:
        raise InvalidArgumentError("unbatch: a rank-0 SparseTensor has no first dimension to split")
    n = int(dense_shape[0])
    indices = np.asarray(indices, dtype=np.int64).reshape(-1, dense_shape.shape[0])
    values = np.asarray(values)
    rows = indices[:, 0]
    order = np.argsort(rows, kind="stable")
    bounds = np.searchsorted(rows[order], np.arange(n + 1))
    inner = dense_shape[1:].copy()
    out = []
    for i in range(n):
        sel = order[bounds[i]:bounds[i + 1]]
        out.append((indices[sel, 1:], values[sel], inner.copy()))
    return out


def inner_spec(spec: Any) -> Any:
    """The spec of one slice along the first dimension (a SparseTensorSpec stays one)."""
    dims = None if spec._dims is None else spec._dims[1:]
    return SparseTensorSpec(dims, spec._dtype) if _s.is_sparse(spec) else TensorSpec(dims, spec._dtype)


def unbatch_slots(elements: Iterator[tuple], slots: List[Any]) -> Iterator[tuple]:
    """Split elements with SparseTensor components (`slots`: (first component, is sparse)) along dim 0."""
    for flat in elements:
        columns: List[List[Any]] = []
        for start, sparse in slots:
            if sparse:
                columns.append(unbatch(*flat[start:start + 3]))
            else:
                columns.append(list(flat[start]))
        sizes = [len(c) for c in columns]
        if len(set(sizes)) > 1:
            raise InvalidArgumentError(f"unbatch: components have different sizes in dimension 0: {sizes}")
        for i in range(sizes[0]):
            row: List[np.ndarray] = []
            for (_, sparse), column in zip(slots, columns):
                row.extend(column[i] if sparse else [np.asarray(column[i])])
            yield tuple(row)


@register("sparse_batch")
class DenseToSparseBatchDataset(Dataset):
    """TF's `sparse_batch` (`dense_to_sparse_batch`): `batch_size` elements of rank
    `len(row_shape)`, each no larger than `row_shape`, become one SparseTensor of dense shape
    `[n, *row_shape]` holding every entry of every element (zeros included), row-major."""

    _kind = "DenseToSparseBatch"

    def __init__(self, input_ds: Dataset, batch_size: Any, row_shape: Any) -> None:
        leaves = _s.slots(input_ds._template)
        if len(leaves) != 1 or _s.is_sparse(leaves[0][0]) or input_ds._dtypes[0] is _dt.variant:
            raise TypeError(f"sparse_batch: the elements must be single dense tensors; got {input_ds.element_spec!r}")
        self._input = input_ds
        if hasattr(batch_size, "numpy"):
            batch_size = batch_size.numpy()
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size <= 0:
            raise ValueError(f"batch_size: expected a positive int; got {batch_size!r}")
        self._batch_size = int(batch_size)
        dims = normalize(row_shape)
        if dims is None:
            raise ValueError("row_shape: expected a list of dimension sizes; got None")
        spec = input_ds._specs[0]
        if spec._dims is not None and len(spec._dims) != len(dims):
            raise ValueError(f"row_shape: has rank {len(dims)}; the elements have shape {spec.shape}")
        self._row = dims
        super().__init__(SparseTensorSpec((None,) + dims, spec._dtype), [input_ds])

    def _gen(self, name: str) -> Iterator[tuple]:
        rows: List[np.ndarray] = []
        for (value,) in self._input._iter_flat(name):
            rows.append(np.asarray(value))
            if len(rows) == self._batch_size:
                yield self._combine(rows)
                rows = []
        if rows:
            yield self._combine(rows)

    def _combine(self, rows: List[np.ndarray]) -> tuple:
        rank = len(self._row)
        limit = [max(r.shape[d] for r in rows) if want is None else want for d, want in enumerate(self._row)]
        indices, values = [], []
        for i, r in enumerate(rows):
            if r.ndim != rank or any(r.shape[d] > limit[d] for d in range(rank)):
                raise InvalidArgumentError(f"sparse_batch: an element of shape {list(r.shape)} does not fit "
                                           f"row_shape {list(self._row)}")
            idx = np.argwhere(np.ones(r.shape, dtype=bool)).astype(np.int64).reshape(-1, rank)
            indices.append(np.concatenate([np.full((idx.shape[0], 1), i, dtype=np.int64), idx], axis=1))
            values.append(r.reshape(-1))
        return (np.concatenate(indices).reshape(-1, rank + 1), np.concatenate(values),
                np.asarray([len(rows)] + limit, dtype=np.int64))

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return n if n < 0 else -(-n // self._batch_size)
