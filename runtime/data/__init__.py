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
from jitflow.runtime.data import parallel as _parallel  # noqa: F401 - registers map(num_parallel_calls), prefetch, interleave
from jitflow.runtime.data import sources as _sources  # noqa: F401 - registers the source datasets
from jitflow.runtime.data import transforms as _transforms  # noqa: F401 - registers the transformations
from jitflow.runtime.data.dataset import (AUTOTUNE, INFINITE_CARDINALITY, UNKNOWN_CARDINALITY,
                                          Dataset, OwnedIterator)
from jitflow.runtime.data.readers import TextLineDataset, TFRecordDataset

experimental: Any = _types.ModuleType("jitflow.data.experimental", "TF's tf.data.experimental names.")
experimental.AUTOTUNE = AUTOTUNE
experimental.INFINITE_CARDINALITY = INFINITE_CARDINALITY
experimental.UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY
experimental.cardinality = lambda dataset: dataset.cardinality()
experimental.sample_from_datasets = Dataset.sample_from_datasets
experimental.get_single_element = lambda dataset: dataset.get_single_element()

__all__ = ["AUTOTUNE", "Dataset", "INFINITE_CARDINALITY", "OwnedIterator", "TFRecordDataset", "TextLineDataset",
           "UNKNOWN_CARDINALITY", "experimental"]
