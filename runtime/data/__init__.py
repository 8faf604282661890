"""`jf.data`: input pipelines (TF's `tf.data`).

    ds = (jf.data.Dataset.from_tensor_slices((filenames, labels))
          .map(decode_and_resize, num_parallel_calls=jf.data.AUTOTUNE)
          .shuffle(1000).batch(32).prefetch(jf.data.AUTOTUNE))
    for images, labels in ds:
        train_step(images, labels)

Map and filter functions are traced once into `jf.function` graphs; parallel map,
prefetch and parallel reads use threads (jitflow's kernels release the GIL). See
docs/data.md.
"""
from __future__ import annotations

import types as _types
from typing import Any

from jitflow.runtime.data import graph_loop as _graph_loop  # noqa: F401 - `for x in dataset` inside jf.function
from jitflow.runtime.data import sparse_rows as _sparse_rows  # noqa: F401 - registers sparse_batch
from jitflow.runtime.data import parallel as _parallel  # noqa: F401 - registers map(num_parallel_calls), prefetch, interleave
from jitflow.runtime.data import sources as _sources  # noqa: F401 - registers the source datasets
from jitflow.runtime.data import transforms as _transforms  # noqa: F401 - registers the transformations
from jitflow.runtime.data import windows as _windows  # noqa: F401 - registers window, group_by_window, with_options
from jitflow.runtime.data.dataset import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY,
                                          Dataset, DatasetSpec, OwnedIterator)
from jitflow.runtime.data.options import (AutoShardPolicy, AutotuneOptions, DistributeOptions, ExternalStatePolicy,
                                          OptimizationOptions, Options, ThreadingOptions)
from jitflow.runtime.data.readers import TextLineDataset, TFRecordDataset

experimental: Any = _types.ModuleType("jitflow.data.experimental", "TF's tf.data.experimental names.")
experimental.AUTOTUNE = AUTOTUNE
experimental.INFINITE_CARDINALITY = INFINITE_CARDINALITY
experimental.UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY
experimental.cardinality = lambda dataset: dataset.cardinality()
experimental.sample_from_datasets = Dataset.sample_from_datasets
experimental.get_single_element = lambda dataset: dataset.get_single_element()
experimental.AutoShardPolicy = AutoShardPolicy
experimental.ExternalStatePolicy = ExternalStatePolicy
experimental.AutotuneOptions = AutotuneOptions
experimental.DistributeOptions = DistributeOptions
experimental.OptimizationOptions = OptimizationOptions
experimental.ThreadingOptions = ThreadingOptions
experimental.DatasetSpec = DatasetSpec


def _bucket_by_sequence_length(element_length_func: Any, bucket_boundaries: Any, bucket_batch_sizes: Any,
                               padded_shapes: Any = None, padding_values: Any = None,
                               pad_to_bucket_boundary: bool = False, no_padding: bool = False,
                               drop_remainder: bool = False) -> Any:
    """TF's `tf.data.experimental.bucket_by_sequence_length`: a function for `dataset.apply`.

    >>> rows = lambda: ([1] * n for n in [1, 5, 2, 6])
    >>> ds = jf.data.Dataset.from_generator(rows, output_signature=jf.TensorSpec([None], jf.int32))
    >>> ds = ds.apply(jf.data.experimental.bucket_by_sequence_length(lambda x: jf.size(x), [4], [2, 2]))
    >>> [b.shape for b in ds.as_numpy_iterator()]
    [(2, 2), (2, 6)]
    """
    return lambda dataset: dataset.bucket_by_sequence_length(
        element_length_func, bucket_boundaries, bucket_batch_sizes, padded_shapes, padding_values,
        pad_to_bucket_boundary, no_padding, drop_remainder)


def _group_by_window(key_func: Any, reduce_func: Any, window_size: Any = None, window_size_func: Any = None) -> Any:
    """TF's `tf.data.experimental.group_by_window`: a function for `dataset.apply`."""
    return lambda dataset: dataset.group_by_window(key_func, reduce_func, window_size, window_size_func)


def _dense_to_sparse_batch(batch_size: Any, row_shape: Any) -> Any:
    """TF's `tf.data.experimental.dense_to_sparse_batch`: `dataset.sparse_batch` for `dataset.apply`."""
    return lambda dataset: dataset.sparse_batch(batch_size, row_shape)


experimental.dense_to_sparse_batch = _dense_to_sparse_batch
experimental.bucket_by_sequence_length = _bucket_by_sequence_length
experimental.group_by_window = _group_by_window

__all__ = ["AUTOTUNE", "Dataset", "DatasetSpec", "INFINITE_CARDINALITY", "Options", "OwnedIterator",
           "TFRecordDataset", "TextLineDataset", "ThreadingOptions", "UNKNOWN_CARDINALITY", "experimental"]
