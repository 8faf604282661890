"""`jf.sparse`: sparse tensors (TF's `tf.sparse`) and their ops.

    st = jf.sparse.SparseTensor(indices=[[0, 0], [1, 2]], values=[1.0, 2.0], dense_shape=[3, 4])
    dense = jf.sparse.to_dense(st)                        # [3, 4], zeros elsewhere
    y = jf.sparse.sparse_dense_matmul(st, jf.ones([4, 2]))

`jf.io.parse_example` gives a SparseTensor for each `VarLenFeature`; datasets carry
them (`element_spec` is a `SparseTensorSpec`, `batch` stacks them into a rank+1 sparse
tensor) and `jf.function` takes them as arguments, keyed by their spec. See docs/data.md.
"""
from __future__ import annotations

from jitflow.runtime.sparse.sparse_math import add, concat, reduce_sum, sparse_dense_matmul
from jitflow.runtime.sparse.sparse_ops import (expand_dims, fill_empty_rows, from_dense, map_values, reorder, reshape,
                                               retain, slice, to_dense, transpose)
from jitflow.runtime.sparse.sparse_tensor import SparseTensor, SparseTensorSpec, SparseTensorValue

__all__ = ["SparseTensor", "SparseTensorSpec", "SparseTensorValue", "add", "concat", "expand_dims", "fill_empty_rows",
           "from_dense", "map_values", "reduce_sum", "reorder", "reshape", "retain", "slice", "sparse_dense_matmul",
           "to_dense", "transpose"]
