"""Replica contexts, and how the replicas of one `strategy.run` meet.

Each replica of `MirroredStrategy.run` runs in its own thread with a `ReplicaContext`
made current for that thread. Replicas meet in `merge_call` (TF's name): every replica
leaves its value in a slot and waits at a barrier; replica 0 then runs the merge
function in *cross-replica* context on all the values (the sum of the gradients and the
optimizer update, for instance), and everyone waits again to pick up its result. Merging
on one thread, in replica order, makes every replica see bit-identical results.

While `strategy.run` is traced inside a `jf.function`, the replicas build nodes of the
same graph. A graph is not built by several threads at once: the replicas take turns
holding the group's build lock, handing it over only where they wait for each other
(TF's mirrored_run does the same), and each keeps its own name scope across the turns.

Failures: a replica that raises aborts the barrier, so the others stop with
`jf.errors.AbortedError` instead of waiting forever; replicas that reach different
collectives (one returns while another all-reduces) all get a `ValueError` naming both.
"""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Callable, List, Optional, Tuple

from jitflow.runtime.core import context, devices
from jitflow.runtime.core.errors import AbortedError, DeadlineExceededError
from jitflow.runtime.core.nest import flatten, pack
from jitflow.runtime.distribute.values import ReduceOp, regroup

if TYPE_CHECKING:
    from jitflow.runtime.distribute.strategy import Strategy


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.replica: Optional["ReplicaContext"] = None   # set in a replica thread (None in a merge)
        self.cross_replica: Optional["Strategy"] = None   # set while a merge function runs


_thread = _ThreadState()

# `strategy.run(..., options=TAKE_TURNS)`: the replica threads run one at a time, handing over
# where they meet (Keras's run_eagerly steps: their metric updates are read-modify-writes of
# variables the replicas share).
TAKE_TURNS = object()


class _Group:
    """The replicas of one `strategy.run` call: slots, a barrier, and the build lock when tracing."""

    def __init__(self, num_replicas: int, graph: Any, timeout: Optional[float], take_turns: bool = False) -> None:
        self.n = num_replicas
        self.graph = graph
        self.timeout = timeout
        self.barrier = threading.Barrier(num_replicas)
        self.slots: List[Tuple[str, Any]] = [("", None)] * num_replicas
        self.outcome: Tuple[str, Any] = ("ok", None)
        self.failed: Optional[Tuple[int, BaseException]] = None
        self.failed_lock = threading.Lock()
        # Tracing (one graph is built by one thread at a time) or devices that run one kernel at a
        # time (numba's CUDA simulator): the replicas take turns, handing over where they meet.
        self.build_lock = threading.Lock() if graph is not None or take_turns else None

    # -- the build lock: one replica adds graph nodes at a time ----------------------------
    def acquire(self, ctx: "ReplicaContext") -> None:
        if self.build_lock is not None:
            self.build_lock.acquire()
            ctx._holding = True
            if ctx._scope is not None and self.graph is not None:
                self.graph.scope = ctx._scope

    def release(self, ctx: "ReplicaContext") -> None:
        if self.build_lock is not None and ctx._holding:
            if self.graph is not None:
                ctx._scope = self.graph.scope
            ctx._holding = False
            self.build_lock.release()

    # -- failures -------------------------------------------------------------------------------
    def fail(self, replica: int, error: BaseException) -> None:
        with self.failed_lock:
            if self.failed is None:
                self.failed = (replica, error)
        self.barrier.abort()

    def _wait(self, replica: int, what: str) -> None:
        try:
            self.barrier.wait(self.timeout)
        except threading.BrokenBarrierError:
            failed = self.failed
            if failed is not None:
                raise AbortedError(f"replica {replica}: {what} was aborted because replica {failed[0]} raised "
                                   f"{type(failed[1]).__name__}: {failed[1]}") from None
            raise DeadlineExceededError(
                f"replica {replica} waited {self.timeout} s in {what} and not every replica arrived; "
                "every replica must make the same collective calls (all_reduce, apply_gradients)") from None

    # -- meeting --------------------------------------------------------------------------------
    def merge(self, ctx: "ReplicaContext", tag: str, value: Any, merge_fn: Callable[[List[Any]], Any]) -> Any:
        """Every replica brings `value`; replica 0 runs `merge_fn(values)`; all get its result."""
        rid = ctx.replica_id_in_sync_group_local
        self.release(ctx)
        self.slots[rid] = (tag, value)
        self._wait(rid, tag)
        if rid == 0:
            tags = [s[0] for s in self.slots]
            if len(set(tags)) > 1:
                calls = ", ".join(f"replica {i} called {t}" for i, t in enumerate(tags))
                self.outcome = ("error", ValueError(
                    f"replicas made different collective calls ({calls}); every replica must make the same "
                    "all_reduce / merge_call / apply_gradients calls in the same order"))
            else:
                values = [s[1] for s in self.slots]
                self.acquire(ctx)
                saved = (_thread.replica, _thread.cross_replica)
                _thread.replica, _thread.cross_replica = None, ctx.strategy
                try:
                    self.outcome = ("ok", merge_fn(values))
                except BaseException as e:  # noqa: B036 - handed to every replica, re-raised below
                    self.outcome = ("raised", e)
                finally:
                    _thread.replica, _thread.cross_replica = saved
                    self.release(ctx)
        self._wait(rid, tag)
        kind, payload = self.outcome
        self.acquire(ctx)
        if kind == "ok":
            return payload
        if kind == "raised" and rid != 0:
            raise AbortedError(f"replica {rid}: {tag} failed on replica 0 with {type(payload).__name__}: "
                               f"{payload}") from payload
        raise payload


class ReplicaContext:
    """The replica a piece of code runs as, inside `strategy.run` (TF's `tf.distribute.ReplicaContext`).

    >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
    >>> def step():
    ...     ctx = jf.distribute.get_replica_context()
    ...     return ctx.all_reduce("sum", 1.0)                     # 1.0 times num_replicas_in_sync
    >>> float(strategy.run(step))
    1.0
    """

    def __init__(self, strategy: "Strategy", local_id: int, group: Optional[_Group]) -> None:
        self._strategy = strategy
        self.replica_id_in_sync_group_local = local_id
        self._group = group
        self._holding = False
        self._scope: Optional[str] = None
        self._gradient_share: Optional[float] = None   # set by Keras's fit: this replica's share of the batch

    @property
    def strategy(self) -> "Strategy":
        return self._strategy

    @property
    def num_replicas_in_sync(self) -> int:
        return self._strategy.num_replicas_in_sync

    @property
    def replica_id_in_sync_group(self) -> int:
        """This replica's index among all replicas of all workers (0 … num_replicas_in_sync − 1)."""
        return self._strategy._first_replica_id + self.replica_id_in_sync_group_local

    @property
    def devices(self) -> Tuple[str, ...]:
        return (self._strategy._devices[self.replica_id_in_sync_group_local],)

    def merge_call(self, merge_fn: Callable[..., Any], args: tuple = (), kwargs: Optional[dict] = None) -> Any:
        """Run `merge_fn(strategy, *args, **kwargs)` once, in cross-replica context, with each
        argument a `PerReplica` of what every replica passed; every replica gets the result."""
        if not callable(merge_fn):
            raise TypeError(f"merge_fn: expected a callable; got {type(merge_fn).__name__}")
        kwargs = dict(kwargs or {})

        def merge(values: List[Any]) -> Any:
            merged_args = regroup([v[0] for v in values]) if args else ()
            merged_kwargs = regroup([v[1] for v in values]) if kwargs else {}
            return merge_fn(self._strategy, *merged_args, **merged_kwargs)
        return self._meet("merge_call", (tuple(args), kwargs), merge)

    def all_reduce(self, reduce_op: Any, value: Any, options: Any = None) -> Any:
        """Combine `value` (a tensor or a nested structure of them) over all replicas; every
        replica gets the same result."""
        op = ReduceOp.from_any(reduce_op)
        leaves = flatten(value)

        def merge(values: List[List[Any]]) -> List[Any]:
            return self._strategy._reduce_lists(op, values)
        return pack(value, self._meet(f"all_reduce({op.value})", leaves, merge))

    def all_gather(self, value: Any, axis: int, options: Any = None) -> Any:
        """Concatenate `value` from all replicas along `axis` (in replica order)."""
        leaves = flatten(value)

        def merge(values: List[List[Any]]) -> List[Any]:
            return self._strategy._gather_lists(values, axis)
        return pack(value, self._meet("all_gather", leaves, merge))

    def _meet(self, tag: str, value: Any, merge_fn: Callable[[List[Any]], Any]) -> Any:
        if self._group is None:  # the only local replica: nothing to wait for
            saved = (_thread.replica, _thread.cross_replica)
            _thread.replica, _thread.cross_replica = None, self._strategy
            try:
                return merge_fn([value])
            finally:
                _thread.replica, _thread.cross_replica = saved
        return self._group.merge(self, tag, value, merge_fn)

    def __repr__(self) -> str:
        return (f"<ReplicaContext replica {self.replica_id_in_sync_group} of {self.num_replicas_in_sync} "
                f"on {self.devices[0]}>")


def run_replica(group: _Group, ctx: ReplicaContext, fn: Callable[..., Any], args: tuple, kwargs: dict,
                device_spec: str, eager_scope: str, results: List[Any]) -> None:
    """The body of one replica thread: make `ctx` current, join the caller's trace if it is
    tracing, call `fn`, and wait until every replica has returned."""
    rid = ctx.replica_id_in_sync_group_local
    _thread.replica = ctx
    try:
        with contextlib.ExitStack() as stack:
            if group.graph is not None:
                stack.enter_context(context.graph_scope(group.graph))
            else:
                context._state.eager_scope = eager_scope
            stack.enter_context(devices.device(device_spec))
            group.acquire(ctx)
            try:
                results[rid] = fn(*args, **kwargs)
                group.merge(ctx, "return", None, lambda values: None)
            finally:
                group.release(ctx)
    except BaseException as e:  # noqa: B036 - reported by the caller of strategy.run
        group.fail(rid, e)
    finally:
        _thread.replica = None


def current_replica() -> Optional[ReplicaContext]:
    """The replica context of this thread (None outside `strategy.run` and inside merges)."""
    return _thread.replica


def current_cross_replica() -> Optional["Strategy"]:
    """The strategy whose merge function this thread is running, if any."""
    return _thread.cross_replica
