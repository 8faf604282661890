"""`Strategy`: the part every distribution strategy shares, and which strategy is current.

A strategy owns the variables created in its `scope()`, runs a function once per local
replica (`run`), and combines values across replicas (`reduce`, and the all-reduce of
gradients that `optimizer.apply_gradients` does inside `run`). Subclasses say where the
replicas run (`_devices`) and how values cross *workers* (`_cross_worker`): not at all
for `MirroredStrategy` (one process), through MPI for `MultiWorkerMirroredStrategy`.

The runtime's lower stages learn about strategies through hooks this module fills in:
variable creation (`variables._creation_hooks`), gradient application
(`optimizers.cross_replica_hook`) and checkpoint writes (`checkpoint.write_guards`).
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from jitflow.runtime.core import context
from jitflow.runtime.core.devices import device
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.distribute import replica as _replica
from jitflow.runtime.distribute.input import DatasetsFromFunction, DistributedDataset
from jitflow.runtime.distribute.values import (PerReplica, ReduceOp, as_tensor, combine, local_reduce,
                                               regroup, select_replica, sum_tensors, to_float_count)
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.tracing.function import Function, function

_scope_lock = threading.Lock()
_scope_stack: List["Strategy"] = []
# The multi-worker strategy of this process, if one was created (at most one may be): its
# non-chief workers skip checkpoint writes even outside its scope.
_live_multi_worker: List["Strategy"] = []


class Strategy:
    """Base class of the distribution strategies (TF's `tf.distribute.Strategy`).

    >>> isinstance(jf.distribute.get_strategy(), jf.distribute.Strategy)   # the default strategy
    True
    """

    _worker_rank = 0       # this process's index among the workers
    _first_replica_id = 0  # the global id of this process's first replica (workers × local replicas)

    def __init__(self, devices: Sequence[str], collective_timeout: Optional[float] = None) -> None:
        self._devices = tuple(devices)
        self._collective_timeout = collective_timeout
        self._variables: "weakref.WeakValueDictionary[int, Variable]" = weakref.WeakValueDictionary()
        self._wrapped: Dict[int, Function] = {}

    # -- what it is -------------------------------------------------------------------------
    @property
    def num_replicas_in_sync(self) -> int:
        """Replicas that take part in every step, over all workers."""
        return len(self._devices) * self._num_workers

    @property
    def _num_workers(self) -> int:
        return 1

    @property
    def extended(self) -> "Strategy":
        return self

    @property
    def worker_devices(self) -> tuple:
        return self._devices

    # -- scope and the variables created in it -------------------------------------------------
    @contextlib.contextmanager
    def scope(self):
        """Variables (model weights, optimizer state) created in this block belong to the strategy.

        >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
        >>> with strategy.scope():
        ...     v = jf.Variable(1.0)
        ...     print(jf.distribute.get_strategy() is strategy)
        True
        >>> jf.distribute.has_strategy()
        False
        """
        with _scope_lock:
            for other in _scope_stack:
                if other is not self:
                    raise RuntimeError(
                        f"Mixing different jf.distribute.Strategy objects: {self!r} is entered while the scope of "
                        f"{other!r} is open; use one strategy for the whole model (get_strategy() returns it)")
            _scope_stack.append(self)
        try:
            yield self
        finally:
            with _scope_lock:
                _scope_stack.remove(self)
            self._on_scope_exit()

    def _on_scope_exit(self) -> None:
        pass

    def _track(self, var: Variable) -> None:
        self._variables[id(var)] = var

    def _owns(self, var: Variable) -> bool:
        return self._variables.get(id(var)) is var

    # -- running the replicas -------------------------------------------------------------------
    def run(self, fn: Callable[..., Any], args: tuple = (), kwargs: Optional[dict] = None, options: Any = None) -> Any:
        """Run `fn(*args, **kwargs)` once per local replica; PerReplica arguments are split, so
        replica *i* gets component *i*. Returns the results, as PerReplica values when there
        is more than one local replica.

        >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
        >>> strategy.run(lambda x: x * 2.0, args=(jf.constant(3.0),)).numpy()
        np.float32(6.0)
        """
        if not callable(fn):
            raise TypeError(f"fn: expected a callable; got {type(fn).__name__}")
        if not isinstance(args, (tuple, list)):
            raise TypeError(f"args: expected a tuple of positional arguments; got {type(args).__name__}")
        kwargs = dict(kwargs or {})
        if _replica.current_replica() is not None:
            raise RuntimeError("strategy.run was called inside strategy.run; call it once, from cross-replica code")
        if isinstance(fn, Function):  # a jf.function per replica: trace the whole step once instead
            fn = self._whole_step(fn)
            return fn(*args, **kwargs)
        self._before_run()
        graph = context.current_graph()
        n = len(self._devices)
        with self._entered():
            if n == 1:
                ctx = _replica.ReplicaContext(self, 0, None)
                saved = _replica._thread.replica
                _replica._thread.replica = ctx
                try:
                    with device(self._devices[0]):
                        return fn(*select_replica(0, tuple(args)), **select_replica(0, kwargs))
                finally:
                    _replica._thread.replica = saved
            return self._run_threads(fn, tuple(args), kwargs, graph, options is _replica.TAKE_TURNS)

    def _run_threads(self, fn: Callable[..., Any], args: tuple, kwargs: dict, graph: Any,
                     take_turns: bool = False) -> Any:
        n = len(self._devices)
        group = _replica._Group(n, graph, self._collective_timeout, take_turns or self._replicas_take_turns())
        caller_scope = graph.scope if graph is not None else None
        results: List[Any] = [None] * n
        threads = []
        for i in range(n):
            ctx = _replica.ReplicaContext(self, i, group)
            ctx._scope = caller_scope
            t = threading.Thread(
                target=_replica.run_replica, name=f"jitflow-replica-{i}",
                args=(group, ctx, fn, select_replica(i, args), select_replica(i, kwargs), self._devices[i],
                      context.current_scope() if graph is None else "", results), daemon=True)
            threads.append(t)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if graph is not None:
            graph.scope = caller_scope
        if group.failed is not None:
            rid, error = group.failed
            if hasattr(error, "add_note"):
                error.add_note(f"(raised on replica {rid} of strategy.run, device {self._devices[rid]})")
            raise error
        return regroup(results)

    def _replicas_take_turns(self) -> bool:
        """True where the devices cannot run the replicas at once (MirroredStrategy says when)."""
        return False

    def _whole_step(self, fn: Function) -> Function:
        wrapped = self._wrapped.get(id(fn))
        if wrapped is None:
            python_fn = fn.python_function

            def step(*args: Any, **kwargs: Any) -> Any:
                return self.run(python_fn, args, kwargs)
            step.__name__ = f"{getattr(python_fn, '__name__', 'fn')}_replicated"
            wrapped = function(step)
            self._wrapped[id(fn)] = wrapped
        return wrapped

    @contextlib.contextmanager
    def _entered(self):
        """While `run` runs, this strategy is current even if its scope is not open."""
        with _scope_lock:
            _scope_stack.append(self)
        try:
            yield
        finally:
            with _scope_lock:
                _scope_stack.remove(self)

    def _before_run(self) -> None:
        pass

    # -- combining values ----------------------------------------------------------------------
    def reduce(self, reduce_op: Any, value: Any, axis: Any = None) -> Tensor:
        """Combine a per-replica value into one tensor, in cross-replica context.

        `axis=None` combines across replicas only; with an axis, each replica's value is first
        summed along it, and MEAN divides by the number of elements over all replicas (TF's rule).

        >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
        >>> strategy.reduce("sum", jf.constant([1.0, 2.0]), axis=0).numpy()
        np.float32(3.0)
        """
        op = ReduceOp.from_any(reduce_op)
        if _replica.current_replica() is not None:
            raise RuntimeError("strategy.reduce is for cross-replica code (outside strategy.run); inside it, use "
                               "jf.distribute.get_replica_context().all_reduce")
        if isinstance(value, PerReplica):
            parts = list(value)
        elif len(self._devices) == 1:
            parts = [value]
        elif op is ReduceOp.MEAN:
            parts = [value] * len(self._devices)
        else:
            raise ValueError(f"value: a value that is not per-replica cannot be reduced with SUM over "
                             f"{len(self._devices)} replicas (it would count it {len(self._devices)} times); "
                             f"got {type(value).__name__}")
        if len(parts) != len(self._devices):
            raise ValueError(f"value: expected a PerReplica of {len(self._devices)} values (one per local replica); "
                             f"got {len(parts)}")
        if axis is None:
            return self._reduce_lists(op, [[p] for p in parts])[0]
        summed = [local_reduce(op, p, axis) for p in parts]
        if op is ReduceOp.SUM:
            return self._reduce_lists(ReduceOp.SUM, [[s] for s, _ in summed])[0]
        dtype = as_tensor(summed[0][0]).dtype
        total, count = self._reduce_lists(ReduceOp.SUM, [[s, to_float_count(c, dtype)] for s, c in summed])
        return M.divide(total, count)

    def _reduce_lists(self, op: ReduceOp, per_replica: List[List[Any]]) -> List[Tensor]:
        """Position-wise reduction of one list of tensors per local replica, then across workers."""
        width = len(per_replica[0])
        if any(len(values) != width for values in per_replica):
            raise ValueError(f"all_reduce: replicas contributed different numbers of values: "
                             f"{[len(v) for v in per_replica]}")
        local = [sum_tensors([values[i] for values in per_replica]) for i in range(width)]
        total = self._cross_worker(local)
        if op is ReduceOp.MEAN:
            total = [combine(ReduceOp.MEAN, [t], self.num_replicas_in_sync) for t in total]
        return total

    def _gather_lists(self, per_replica: List[List[Any]], axis: int) -> List[Tensor]:
        width = len(per_replica[0])
        return [self._cross_worker_gather(A.concat([as_tensor(values[i]) for values in per_replica], axis), axis)
                for i in range(width)]

    def _cross_worker(self, tensors: List[Tensor]) -> List[Tensor]:
        """Sum each tensor over the workers (one process: nothing to do)."""
        return tensors

    def _cross_worker_gather(self, tensor: Tensor, axis: int) -> Tensor:
        return tensor

    def gather(self, value: Any, axis: int) -> Tensor:
        """Concatenate a per-replica value along `axis`, in global replica order (cross-replica context).

        >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
        >>> strategy.gather(jf.constant([[1.0, 2.0]]), axis=0).numpy().tolist()
        [[1.0, 2.0]]
        """
        if _replica.current_replica() is not None:
            raise RuntimeError("strategy.gather is for cross-replica code; inside strategy.run use "
                               "get_replica_context().all_gather")
        parts = list(value) if isinstance(value, PerReplica) else [value] * len(self._devices)
        if len(parts) != len(self._devices):
            raise ValueError(f"value: expected a PerReplica of {len(self._devices)} values; got {len(parts)}")
        return self._gather_lists([[p] for p in parts], axis)[0]

    def experimental_distribute_values_from_function(self, value_fn: Callable[[Any], Any]) -> Any:
        """`value_fn(ValueContext)` once per local replica → a PerReplica of the results (TF's API).

        >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
        >>> strategy.experimental_distribute_values_from_function(lambda ctx: ctx.replica_id_in_sync_group)
        0
        """
        if not callable(value_fn):
            raise TypeError(f"value_fn: expected a callable taking a ValueContext; got {type(value_fn).__name__}")
        values = [value_fn(ValueContext(self._first_replica_id + i, self.num_replicas_in_sync))
                  for i in range(len(self._devices))]
        return values[0] if len(values) == 1 else PerReplica(*values)

    @property
    def cluster_resolver(self) -> Any:
        """None for one process (TF's value); the workers' description for multi-worker strategies."""
        return None

    def experimental_local_results(self, value: Any) -> tuple:
        """The values of the local replicas, as a tuple."""
        if isinstance(value, PerReplica):
            return tuple(value)
        return (value,)

    # -- input -------------------------------------------------------------------------------
    def experimental_distribute_dataset(self, dataset: Iterable[Any], options: Any = None):
        """Split every (global) batch of `dataset` across the replicas (see `DistributedDataset`)."""
        return DistributedDataset(self, dataset)

    def distribute_datasets_from_function(self, dataset_fn: Callable[..., Any], options: Any = None):
        """Each worker builds its own input with `dataset_fn(InputContext)`; batches are per replica."""
        return DatasetsFromFunction(self, dataset_fn)

    # -- checkpoints ---------------------------------------------------------------------------
    @property
    def _is_chief(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<jf.distribute.{type(self).__name__} devices={list(self._devices)}>"


class ValueContext:
    """What `experimental_distribute_values_from_function` tells `value_fn` (TF's `ValueContext`).

    >>> ctx = jf.distribute.ValueContext(replica_id_in_sync_group=1, num_replicas_in_sync=2)
    >>> ctx.replica_id_in_sync_group, ctx.num_replicas_in_sync
    (1, 2)
    """

    def __init__(self, replica_id_in_sync_group: int = 0, num_replicas_in_sync: int = 1) -> None:
        self.replica_id_in_sync_group = replica_id_in_sync_group
        self.num_replicas_in_sync = num_replicas_in_sync

    def __repr__(self) -> str:
        return (f"ValueContext(replica_id_in_sync_group={self.replica_id_in_sync_group}, "
                f"num_replicas_in_sync={self.num_replicas_in_sync})")
