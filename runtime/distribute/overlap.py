"""All-reducing gradients while the backward pass still runs (multi-worker strategies).

`GradientTape.gradient` tells a listener (`autodiff.tape.gradient_listener`, filled in
here) when each source's gradient is final. Inside `strategy.run` of a
`MultiWorkerMirroredStrategy` with one local replica, the listener gathers the ready
gradients of the strategy's variables into buckets of `bucket_bytes` and starts each
bucket's all-reduce at once (`JfCollectiveAllReduceStart`: the MPI calls run on the
collective thread) while the tape goes on with the earlier layers. `apply_gradients`
then finds that its gradients are exactly the ones started (`take`) and only waits for
the sums (`JfCollectiveAllReduceWait`) before updating. Eagerly the overlap is real
time; inside a `jf.function` the start and wait nodes sit at the same places in the
graph, whose nodes run in creation order, so it overlaps there too.

Gradients that the program changes between `gradient` and `apply_gradients` (clipping,
scaling) are not the ones started: those reductions are waited for and dropped, and
`apply_gradients` all-reduces the changed gradients as usual. Every worker runs the same
program, so every worker makes the same choice and the collectives stay matched.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Optional, Tuple

from jitflow.runtime.autodiff import tape as _tape
from jitflow.runtime.distribute import replica as _replica
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.core import context
from jitflow.runtime.ops.registry import apply
from jitflow.runtime.state.variables import Variable

_state = threading.local()


class _Started:
    """The buckets one `gradient()` call started: for each gradient, its ticket and position."""

    def __init__(self) -> None:
        self.tickets: List[Tuple[Any, List[Any]]] = []           # (ticket tensor, the gradients it reduces)
        self.where: Dict[int, Tuple[int, int]] = {}              # id(gradient) → (bucket, position)
        self.keep: List[Any] = []                                # the gradients (their ids stay theirs)
        self.graph = context.current_graph()                     # None: eager


class _Listener:
    def __init__(self, strategy: Any, share: Optional[float]) -> None:
        self.strategy = strategy
        self.comm = strategy.communicator
        self.share = share
        self.bucket: List[Any] = []
        self.scaled: List[Any] = []
        self.bytes = 0
        self.started = _Started()

    def ready(self, position: int, grad: Any) -> None:
        if grad is None or not hasattr(grad, "dtype") or not grad.dtype.is_floating:
            return
        dims = grad.shape.as_list()
        if any(d is None for d in dims):
            return  # an unknown shape: left to apply_gradients' all-reduce
        self.bucket.append(grad)
        if self.share is None or self.share == 1.0:
            self.scaled.append(grad)
        elif self.share == 0.0:  # an empty shard: its loss may be NaN (see current._weighted)
            self.scaled.append(A.zeros_like(grad))
        else:
            self.scaled.append(M.multiply(grad, convert_to_tensor(self.share, dtype=grad.dtype)))
        size = grad.dtype.size
        for d in dims:
            size *= d
        self.bytes += size
        if self.bytes >= self.comm.bucket_bytes:
            self._start()

    def _start(self) -> None:
        if not self.bucket:
            return
        (ticket,) = apply("JfCollectiveAllReduceStart", self.scaled, {"communicator": self.comm})
        index = len(self.started.tickets)
        self.started.tickets.append((ticket, list(self.bucket)))
        for i, grad in enumerate(self.bucket):
            self.started.where[id(grad)] = (index, i)
            self.started.keep.append(grad)
        self.bucket, self.scaled, self.bytes = [], [], 0

    def done(self, grads: List[Any]) -> None:
        self._start()
        previous = getattr(_state, "started", None)
        if previous is not None:
            _drop(self.comm, previous)
        _state.started = self.started


def _listener(sources: List[Any]) -> Optional[_Listener]:
    """A listener for `gradient()` calls made inside `run` of a multi-worker strategy with one
    local replica, for the strategy's variables; None elsewhere (nothing changes there)."""
    ctx = _replica.current_replica()
    if ctx is None:
        return None
    strategy = ctx.strategy
    if strategy._num_workers == 1 or len(strategy._devices) != 1 or not getattr(strategy, "_overlap", False):
        return None
    if not sources or not all(isinstance(s, Variable) and strategy._owns(s) for s in sources):
        return None
    return _Listener(strategy, ctx._gradient_share)


def _wait(comm: Any, ticket: Any, grads: List[Any]) -> List[Any]:
    specs = [(tuple(g.shape.as_list()), g.dtype) for g in grads]
    return list(apply("JfCollectiveAllReduceWait", [ticket], {"communicator": comm, "specs": specs}))


def _drop(comm: Any, started: _Started) -> None:
    if started.graph is not context.current_graph():
        return  # started in another trace (or eagerly): the communicator waits for them itself, later
    for ticket, grads in started.tickets:
        _wait(comm, ticket, grads)


def take(strategy: Any, grads: List[Any]) -> Optional[List[Any]]:
    """The all-reduced (and batch-share weighted) `grads` if this replica's last `gradient()`
    started them all, waiting for the buckets they are in; else None (the caller reduces).
    Started buckets that are not used are waited for and dropped either way."""
    started: Optional[_Started] = getattr(_state, "started", None)
    if started is None:
        return None
    _state.started = None
    comm = strategy.communicator
    if not grads or started.graph is not context.current_graph() or any(id(g) not in started.where for g in grads):
        _drop(comm, started)
        return None
    sums: List[Optional[List[Any]]] = [None] * len(started.tickets)
    for index, (ticket, bucket) in enumerate(started.tickets):  # every bucket: the collective thread frees them
        sums[index] = _wait(comm, ticket, bucket)
    out = []
    for g in grads:
        index, i = started.where[id(g)]
        out.append(sums[index][i])  # type: ignore[index]
    return out


_tape.gradient_listener = _listener

__all__: List[str] = []
