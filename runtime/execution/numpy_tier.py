"""The first tier of a new process: the interpreter on numpy kernels while numba loads.

With a warm disk cache a concrete function's first call needs no compiling, yet it would
wait 0.5-1 s for `import numba` (llvmlite, numba's typing and ufunc machinery) and for
numba to load its cached kernels. Most graphs' first calls are small, so instead:

* if numba is not loaded yet and every op of the plan has an exact numpy kernel for its
  dtypes (`ops.numpy_kernels`: the numba kernels' results bit for bit), the function's
  interpreter plan is built on those kernels and the call runs at once;
* one background thread imports numba, builds the function's usual interpreter plan (which
  loads its ufuncs from numba's cache) and, for a stateless graph with small inputs, runs it
  once on the first call's inputs so its njit kernels are loaded too; then it hands the plan
  to the function (`on_ready`), which runs on it from its next call. The compiled tier
  comes after that exactly as before (`function._tier_up`).

Nothing changes once numba is loaded (any later function starts on the numba kernels), nor
with a GPU visible, nor for graphs with an op the table lacks. `JITFLOW_NUMPY_TIER=0`
turns the tier off (every first call then waits for numba, as before).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from jitflow.runtime.core import devices as _devices
from jitflow.runtime.core import instrument, lazyjit
from jitflow.runtime.core.graph import Graph, Node
from jitflow.runtime.core.tensor import SymbolicTensor
from jitflow.runtime.execution.executor import Plan, _select_nodes
from jitflow.runtime.ops import numpy_kernels

ENABLED = os.environ.get("JITFLOW_NUMPY_TIER", "1").lower() not in ("0", "false", "no", "off")
WARM_BYTES = 1 << 20  # inputs up to this size are run once through the numba plan to load its njit kernels

_lock = threading.Lock()
_jobs: List[Callable[[], None]] = []
_worker: Optional[threading.Thread] = None


def supported(node: Node) -> bool:
    """Whether `node` has a numpy kernel exact for its input dtypes."""
    if node.op.tf_op in ("Placeholder", "Const"):
        return True
    return numpy_kernels.kernel(node.op.tf_op, [t._dtype for t in node.inputs]) is not None


def first_plan(graph: Graph, feeds: Sequence[SymbolicTensor], outputs: Sequence[SymbolicTensor],
               on_ready: Callable[[Plan], None]) -> Optional["NumpyPlan"]:
    """A plan on numpy kernels to run while numba loads, or None where the tier does not apply
    (numba already loaded, a GPU visible, an op without an exact numpy kernel, tier off).

    Once numba is in, `on_ready(plan)` is called from the loader thread with the usual
    (numba-kernel) interpreter plan of the same graph."""
    if not ENABLED or lazyjit.loaded() or _devices.active:
        return None
    if not all(supported(n) for n in _select_nodes(graph, outputs)):
        return None
    plan = NumpyPlan(graph, feeds, outputs)
    _submit(lambda: _tier_up(plan, on_ready))
    return plan


class NumpyPlan(Plan):
    """The interpreter plan on the "numpy" kernel table; keeps its first call's inputs, which
    the loader thread runs through the numba plan once to load its kernels."""

    def __init__(self, graph: Graph, feeds: Sequence[SymbolicTensor], outputs: Sequence[SymbolicTensor]) -> None:
        super().__init__(graph, feeds, outputs, backend="numpy")
        self.sample: Optional[Tuple[Any, ...]] = None
        run: Callable[..., tuple] = self.run

        def first_run(*values: Any) -> tuple:
            self.run = run
            self.sample = values
            return run(*values)
        self.run = first_run


def _finish_before_fork() -> None:
    """Wait for the loader before `os.fork()`: a child forked mid-import would inherit numba's
    import locks (and half-loaded modules) held by a thread that does not exist there."""
    worker = _worker
    if worker is not None and worker is not threading.current_thread():
        worker.join()


_fork_hook = False


def _submit(job: Callable[[], None]) -> None:
    global _worker, _fork_hook
    if not _fork_hook and hasattr(os, "register_at_fork"):
        # numba imports logging, which adds fork hooks of its own: were that to happen while a
        # fork waits in `_finish_before_fork`, logging's after-fork hook would release a lock its
        # before-fork hook never took. Import it first, so its hooks are in place before ours.
        import logging  # noqa: F401
        os.register_at_fork(before=_finish_before_fork)
        _fork_hook = True
    with _lock:
        _jobs.append(job)
        if _worker is None:
            _worker = threading.Thread(target=_work, name="jitflow-numba-load", daemon=True)
            _worker.start()


def _work() -> None:
    """Import numba, then run the queued jobs; ends when the queue is empty."""
    global _worker
    start = time.perf_counter_ns()
    try:
        lazyjit.numba()
    except Exception:  # noqa: BLE001 - the numba tier will report it when it is asked for
        pass
    if instrument.enabled:
        instrument.runtime_event("jitflow.numba_load", start, time.perf_counter_ns())
    while True:
        with _lock:
            if not _jobs:
                _worker = None
                return
            job = _jobs.pop(0)
        job()


def _tier_up(first: NumpyPlan, on_ready: Callable[[Plan], None]) -> None:
    start = time.perf_counter_ns()
    try:
        plan = Plan(first.graph, first.feeds, first.outputs)
        sample = first.sample
        stateless = not any(n.op.stateful for n in plan.nodes)
        if sample is not None and stateless and sum(getattr(v, "nbytes", 0) for v in sample) <= WARM_BYTES:
            plan.run(*sample)  # loads the njit kernels' machine code now, not on the caller's next call
    except Exception:  # noqa: BLE001 - the numpy plan keeps running; the caller's own path reports errors
        return
    first.sample = None
    on_ready(plan)
    if instrument.enabled:
        instrument.runtime_event("jitflow.tier_up", start, time.perf_counter_ns(), function=first.graph.name,
                                 tier="interpreter", kernels="numba")


__all__ = ["first_plan", "supported", "NumpyPlan", "ENABLED"]
