"""Keras `fit` / `evaluate` / `predict` under a strategy: one step, run once per replica.

Keras asks for this through `training.strategy_hooks.keras_support` (it sits below this
stage and may not import it). The step function Keras compiles gets the *global* batch;
the wrapper made here

* splits every leaf of it along the first axis into `num_replicas_in_sync` shards (TF's
  split: the first shards one row larger when it does not divide) and gives this worker's
  replicas theirs, in global replica order;
* runs Keras's `train_step` / `test_step` / `predict_step` once per replica with
  `strategy.run`; each replica's gradients are weighted by its share of the global batch
  (rows on the replica ÷ rows in the batch) before `apply_gradients` sums them, so the
  update is the one a single replica would make on the whole batch, whatever the split;
* combines the metrics: on one process the replicas update the same metric variables; with
  several workers, what each step added to them is summed over the workers (one fused
  all-reduce of a few scalars), so every worker reports the metrics of the global batch
  (TF's sync-on-read metric variables give the same numbers);
* with `run_eagerly`, runs the replicas of one process one at a time (they would otherwise
  update the shared metric variables at once); traced steps run them in graph order anyway;
* for `predict`, concatenates the replicas' outputs (and the workers') in replica order.

Every worker of a multi-worker job must call `fit` with the same data: the seed that
shuffles it is drawn by the chief and shared (`shuffle_seed`) unless `jf.random.set_seed`
fixed one.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import context
from jitflow.runtime.core.nest import flatten
from jitflow.runtime.distribute import current as _current
from jitflow.runtime.distribute import replica as _replica
from jitflow.runtime.distribute.values import PerReplica, map_structure, regroup
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.training import strategy_hooks as _hooks


def current() -> Optional[Any]:
    strategy = _current.get_strategy()
    return None if strategy is _current._DEFAULT else strategy


@contextlib.contextmanager
def scope(strategy: Any) -> Iterator[None]:
    with strategy.scope():
        yield


def shuffle_seed(strategy: Any, seed: Optional[int]) -> Optional[int]:
    if seed is not None or strategy._num_workers == 1:
        return seed
    mine = int(np.random.SeedSequence().generate_state(1)[0])
    return int(strategy.communicator.allgather_object(mine, "agreeing on the shuffling seed")[0])


def _rows(data: Any) -> int:
    leaves = [leaf for leaf in flatten(data) if leaf is not None]
    if not leaves:
        raise ValueError("fit/evaluate/predict: the batch has no tensors to split across the replicas")
    shape = leaves[0].shape   # a TensorShape, or a tuple for the numpy batches of run_eagerly
    dims = shape.as_list() if hasattr(shape, "as_list") else list(shape)
    if not dims or dims[0] is None:
        raise ValueError(f"fit/evaluate/predict: the batch must have a known leading (batch) dimension to be split "
                         f"across the replicas; got shape {dims}")
    return int(dims[0])


def _bounds(rows: int, total: int) -> List[Tuple[int, int]]:
    """np.array_split's shard boundaries: the first `rows % total` shards one row larger."""
    base, extra = divmod(rows, total)
    out, start = [], 0
    for i in range(total):
        stop = start + base + (1 if i < extra else 0)
        out.append((start, stop))
        start = stop
    return out


def _shard(data: Any, start: int, stop: int) -> Any:
    """Rows start:stop of every leaf, as tensors (run_eagerly hands numpy arrays: a tensor knows
    its batch size, which weights the replica's loss in the loss metric)."""
    return map_structure(lambda leaf: leaf if leaf is None else convert_to_tensor(leaf[start:stop]), data)


def _metric_variables(model: Any) -> List[Variable]:
    seen, out = set(), []
    for metric in model.metrics:
        for var in metric.variables:
            if id(var) not in seen:
                seen.add(id(var))
                out.append(var)
    return out


def _first(value: Any) -> Any:
    return map_structure(lambda v: v[0] if isinstance(v, PerReplica) else v, value)


def wrap_step(model: Any, strategy: Any, step: Callable[[Any], Any], kind: str) -> Callable[[Any], Any]:
    if kind not in ("train", "test", "predict"):
        raise ValueError(f"kind: expected 'train', 'test' or 'predict'; got {kind!r}")
    local = len(strategy._devices)

    def distributed(data: Any) -> Any:
        rows = _rows(data)
        total = strategy.num_replicas_in_sync
        mine = _bounds(rows, total)[strategy._first_replica_id:strategy._first_replica_id + local]
        shards = [_shard(data, a, b) for a, b in mine]
        shares = [(b - a) / rows for a, b in mine]

        def replica_step(shard: Any) -> Any:
            ctx = _replica.current_replica()
            if ctx is not None:
                ctx._gradient_share = shares[ctx.replica_id_in_sync_group_local]
            return step(shard)

        across_workers = kind != "predict" and strategy._num_workers > 1
        variables = _metric_variables(model) if across_workers else []
        before = [v.read_value() for v in variables]
        eager = context.current_graph() is None   # run_eagerly: the replicas share metric variables
        outputs = strategy.run(replica_step, args=(shards[0] if local == 1 else regroup(shards),),
                               options=_replica.TAKE_TURNS if eager and local > 1 else None)
        if kind == "predict":
            return map_structure(lambda v: strategy.gather(v, axis=0), outputs)
        if variables:  # what this step added to the metrics, summed over the workers
            added = [M.subtract(v.read_value(), b) for v, b in zip(variables, before)]
            summed = strategy._cross_worker(added)
            for var, b, s in zip(variables, before, summed):
                var.assign(M.add(b, s), read_value=False)
        logs = _first(outputs)
        if isinstance(logs, dict):  # metrics read after every replica (and worker) updated them
            names = {m.name: m for m in model.metrics}
            logs = {k: (names[k].result() if k in names else v) for k, v in logs.items()}
        return logs
    distributed.__name__ = f"{kind}_step_replicated"
    return distributed


class _KerasSupport:
    """What `training.strategy_hooks.keras_support` offers Keras (see that module)."""

    current = staticmethod(current)
    scope = staticmethod(scope)
    wrap_step = staticmethod(wrap_step)
    shuffle_seed = staticmethod(shuffle_seed)


_hooks.keras_support = _KerasSupport()

__all__: List[str] = []
