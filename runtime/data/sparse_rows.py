"""Batching and slicing SparseTensor elements, as TF's `batch`/`unbatch`/`from_tensor_slices` do.

`batch` of sparse elements of rank r gives a rank r+1 SparseTensor: each element's indices
gain its position in the batch as a new first column, the values are concatenated and the
dense shape is `[n, max over the elements of each dim]`. `unbatch` (and slicing) is the
inverse, each slice keeping the batch's inner dense shape.
"""
from __future__ import annotations

from typing import Any, Iterator, List, Sequence, Tuple

import numpy as np

from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.data import structure as _s
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
