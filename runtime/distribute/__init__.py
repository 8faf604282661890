"""`jf.distribute`: data-parallel training on several devices and several machines.

    strategy = jf.distribute.MirroredStrategy()            # or MultiWorkerMirroredStrategy()
    with strategy.scope():
        model, optimizer = make_model(), jf.optimizers.SGD(0.1)
    for batch in strategy.experimental_distribute_dataset(batches):
        losses = strategy.run(step_fn, args=(batch,))    # step_fn calls optimizer.apply_gradients
        loss = strategy.reduce(jf.distribute.ReduceOp.SUM, losses, axis=None)

Stages inside: `values` (ReduceOp, PerReplica), `replica` (replica contexts and how the
replicas of one step meet), `input` (splitting batches), `strategy` (the shared part),
`current` (which strategy is current; the hooks into optimizers, variables and
checkpoints), `mirrored` (one process), `cluster` (TF_CONFIG and MPI ranks),
`collectives` (MPI all-reduce and broadcast with a watchdog), `multi_worker`, and
`keras_support` (Keras's `fit`/`evaluate`/`predict` once per replica).
"""
from jitflow.runtime.distribute.current import (get_replica_context, get_strategy, has_strategy,
                                                in_cross_replica_context)
from jitflow.runtime.distribute.cluster import ClusterResolver
from jitflow.runtime.distribute import keras_support as _keras_support  # noqa: F401 - fills Keras's hook
from jitflow.runtime.distribute.input import DistributedDataset, InputContext
from jitflow.runtime.distribute.logdirs import is_chief, worker_logdir
from jitflow.runtime.distribute.mirrored import MirroredStrategy
from jitflow.runtime.distribute.multi_worker import MultiWorkerMirroredStrategy
from jitflow.runtime.distribute.replica import ReplicaContext
from jitflow.runtime.distribute.strategy import Strategy, ValueContext
from jitflow.runtime.distribute.values import PerReplica, ReduceOp

__all__ = ["MirroredStrategy", "MultiWorkerMirroredStrategy", "ClusterResolver", "worker_logdir", "is_chief",
           "Strategy", "ReplicaContext", "ReduceOp", "PerReplica", "DistributedDataset", "InputContext", "ValueContext",
           "get_strategy", "has_strategy", "in_cross_replica_context", "get_replica_context"]
