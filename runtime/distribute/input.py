"""Input for the replicas: every global batch split across them (TF's distributed datasets).

`experimental_distribute_dataset(dataset)` takes anything iterable that yields batches:
a `jf.data.Dataset`, a list of `(x, y)` tuples, a generator of dicts of numpy arrays. Each
leaf of a batch is split along its first axis into `num_replicas_in_sync` nearly equal
parts (the first ones one row larger when it does not divide, as TF does); this worker's
replicas take theirs, in global replica order, so training on N replicas sees exactly
the rows one replica would have seen in the same step.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, List

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.tensor import EagerTensor, Tensor
from jitflow.runtime.distribute.values import PerReplica, map_structure, regroup
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor


def _split_leaf(leaf: Any, total: int, first: int, local: int) -> List[Any]:
    if isinstance(leaf, TensorConvertible):  # a variable: its value
        leaf = leaf._as_tensor()
    if isinstance(leaf, EagerTensor):
        dtype = leaf.dtype
        array = np.asarray(leaf.numpy())
    elif isinstance(leaf, Tensor):
        raise TypeError("dataset: got a symbolic tensor; iterate the distributed dataset outside jf.function "
                        "and pass each element to the function")
    elif isinstance(leaf, (np.ndarray, list)):
        array = np.asarray(leaf)
        dtype = _dt.string if array.dtype.kind in "OUS" else _dt.as_dtype(array.dtype)
    else:
        raise TypeError(f"dataset: batches must be made of tensors or arrays (with the batch on the first axis); "
                        f"got {type(leaf).__name__}")
    if array.ndim == 0:
        raise ValueError(f"dataset: cannot split a scalar across {total} replicas; batch the dataset first "
                         "(dataset.batch(global_batch_size)) so each element has a leading batch axis")
    parts = np.array_split(array, total, axis=0)
    return [convert_to_tensor(parts[first + i], dtype=dtype) for i in range(local)]


def split_batch(strategy: Any, batch: Any) -> Any:
    """One global batch → the structure for `strategy.run` (PerReplica leaves if several local replicas)."""
    total = strategy.num_replicas_in_sync
    first = strategy._first_replica_id
    local = len(strategy._devices)

    def split(leaf: Any) -> Any:
        parts = _split_leaf(leaf, total, first, local)
        return parts[0] if local == 1 else PerReplica(*parts)
    return map_structure(split, batch)


class DistributedDataset:
    """Iterating it yields each global batch split for the replicas (TF's `DistributedDataset`).

    >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
    >>> batches = [(np.ones((4, 2), np.float32), np.zeros(4, np.float32))]
    >>> for x, y in strategy.experimental_distribute_dataset(batches):
    ...     print(x.shape)
    (4, 2)
    """

    def __init__(self, strategy: Any, dataset: Iterable[Any]) -> None:
        if not hasattr(dataset, "__iter__"):
            raise TypeError(f"dataset: expected an iterable of batches (a jf.data.Dataset, a list, a generator); "
                            f"got {type(dataset).__name__}")
        self._strategy = strategy
        self._dataset = dataset

    def __iter__(self) -> Iterator[Any]:
        for batch in self._dataset:
            yield split_batch(self._strategy, batch)

    def __repr__(self) -> str:
        return f"<DistributedDataset of {type(self._dataset).__name__} over {self._strategy!r}>"


class InputContext:
    """What `dataset_fn` of `distribute_datasets_from_function` is told (TF's `tf.distribute.InputContext`).

    >>> ctx = jf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1, num_replicas_in_sync=4)
    >>> ctx.get_per_replica_batch_size(64)
    16
    """

    def __init__(self, num_input_pipelines: int = 1, input_pipeline_id: int = 0, num_replicas_in_sync: int = 1) -> None:
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def get_per_replica_batch_size(self, global_batch_size: int) -> int:
        if global_batch_size % self.num_replicas_in_sync:
            raise ValueError(f"global_batch_size: {global_batch_size} is not divisible by num_replicas_in_sync "
                             f"({self.num_replicas_in_sync})")
        return global_batch_size // self.num_replicas_in_sync

    def __repr__(self) -> str:
        return (f"InputContext(num_input_pipelines={self.num_input_pipelines}, input_pipeline_id="
                f"{self.input_pipeline_id}, num_replicas_in_sync={self.num_replicas_in_sync})")


class DatasetsFromFunction:
    """Each worker's `dataset_fn(InputContext)` yields per-replica batches; each local replica
    takes the next one (TF's `distribute_datasets_from_function`)."""

    def __init__(self, strategy: Any, dataset_fn: Callable[[InputContext], Iterable[Any]]) -> None:
        if not callable(dataset_fn):
            raise TypeError(f"dataset_fn: expected a callable taking an InputContext; got {type(dataset_fn).__name__}")
        self._strategy = strategy
        ctx = InputContext(strategy._num_workers, strategy._worker_rank, strategy.num_replicas_in_sync)
        self._dataset = dataset_fn(ctx)
        if not hasattr(self._dataset, "__iter__"):
            raise TypeError(f"dataset_fn: must return an iterable of batches; returned {type(self._dataset).__name__}")

    def __iter__(self) -> Iterator[Any]:
        local = len(self._strategy._devices)
        it = iter(self._dataset)
        while True:
            batches = []
            for _ in range(local):
                try:
                    batches.append(map_structure(lambda leaf: _split_leaf(leaf, 1, 0, 1)[0], next(it)))
                except StopIteration:
                    return
            if local == 1:
                yield batches[0]
            else:
                yield regroup(batches)
