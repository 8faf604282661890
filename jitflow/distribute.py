"""`jf.distribute`: data-parallel training on several devices (`MirroredStrategy`) and several
machines (`MultiWorkerMirroredStrategy`, over MPI), as TF's `tf.distribute`.

    >>> import jitflow as jf
    >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
    >>> with strategy.scope():
    ...     w = jf.Variable(2.0)
    >>> float(strategy.reduce("sum", strategy.run(lambda: w * 3.0), axis=None))
    6.0

See docs/distribute.md for multi-worker jobs (`mpiexec`, `mpirun -H`, Slurm `srun`).
"""
from jitflow.runtime.distribute import (ClusterResolver, DistributedDataset, InputContext, MirroredStrategy,
                                        MultiWorkerMirroredStrategy, PerReplica, ReduceOp, ReplicaContext, Strategy,
                                        ValueContext, get_replica_context, get_strategy, has_strategy,
                                        in_cross_replica_context, is_chief, worker_logdir)

__all__ = ["MirroredStrategy", "MultiWorkerMirroredStrategy", "Strategy", "ReplicaContext", "ReduceOp", "PerReplica",
           "DistributedDataset", "InputContext", "ValueContext", "ClusterResolver", "get_strategy", "has_strategy",
           "in_cross_replica_context", "get_replica_context", "worker_logdir", "is_chief"]
