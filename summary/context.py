"""Which writer, step and recording condition a summary call uses.

Like TF2, `with writer.as_default(step=...)`, `record_if(...)` and `set_step`
inside such a block act on the calling thread only. Unlike TF2,
`writer.set_as_default()` and `set_step` outside any `as_default` block set a
process-wide default, so worker threads that never entered a block still find
the writer and step the main thread configured. A thread's own setting wins
over the process-wide one.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator, Union

from jitflow.runtime.core.context import _state as _rt_state
from jitflow.runtime.core.tensor import SymbolicTensor

_UNSET: Any = object()  # "this thread has no step of its own"

Condition = Union[bool, Callable[[], Any], Any]


class _ThreadState(threading.local):
    # Class attributes are the per-thread defaults (read before any write).
    writer: Any = None  # innermost `as_default` writer of this thread
    step: Any = _UNSET  # this thread's step, or _UNSET to use the global one
    record: Condition = True  # innermost record_if condition
    # Whether the innermost writer scope / record_if was entered while a
    # jf.function was being traced: summary ops traced inside then capture that
    # writer / condition (as TF captures the writer resource), because the block
    # is long gone when the graph runs.
    writer_traced: bool = False
    record_traced: bool = False


tls = _ThreadState()
# Process-wide defaults, set by `set_as_default` / `set_step` outside a block.
# Assignments of module globals are atomic, so no lock is needed.
global_writer: Any = None
global_step: Any = None


def default_writer() -> Any:
    """The writer a summary call in this thread would use, or None."""
    w = tls.writer
    return w if w is not None else global_writer


# Hooks for what must follow a writer rather than a summary call (trace records made before
# any writer existed, call counts that change between traces): `on_default(cb)` runs
# cb(writer) whenever a writer becomes a default; `on_flush(cb)` runs cb(writer) before a
# writer flushes or closes. Callbacks must not raise.
_default_hooks: list = []
_flush_hooks: list = []


def on_default(callback: Callable[[Any], None]) -> None:
    _default_hooks.append(callback)


def on_flush(callback: Callable[[Any], None]) -> None:
    _flush_hooks.append(callback)


def notify_default(writer: Any) -> None:
    for callback in list(_default_hooks):
        callback(writer)


def notify_flush(writer: Any) -> None:
    for callback in list(_flush_hooks):
        callback(writer)


def set_global_writer(writer: Any, step: Any = None) -> None:
    global global_writer, global_step
    global_writer = writer
    if step is not None:
        global_step = step
    if writer is not None:
        notify_default(writer)


@contextlib.contextmanager
def writer_scope(writer: Any, step: Any = None) -> Iterator[None]:
    """Make `writer` (and `step`, when given) this thread's default inside."""
    old_writer, old_step, old_traced = tls.writer, tls.step, tls.writer_traced
    tls.writer = writer
    tls.writer_traced = _rt_state.graph is not None
    if step is not None:
        tls.step = step
    try:
        if writer is not None:
            notify_default(writer)
        yield
    finally:
        tls.writer, tls.step, tls.writer_traced = old_writer, old_step, old_traced


def get_step() -> Any:
    """The default step: this thread's, else the process-wide one, else None.

    A symbolic step set inside a `jf.function` (`set_step(t)`) only means
    something while that function is traced (its summary ops take it as an
    input); anywhere else it counts as no step, so later calls ask for one
    instead of failing on a dead tensor."""
    s = tls.step
    s = global_step if s is _UNSET else s
    if s is not None and type(s) is SymbolicTensor and s.graph is not _rt_state.graph:
        return None
    return s


def set_step(step: Any) -> None:
    """Set the default step; thread-local inside an `as_default` block (restored
    when the block exits, as in TF), process-wide outside one."""
    global global_step
    if tls.writer is not None or tls.step is not _UNSET:
        tls.step = step
    else:
        global_step = step


def evaluate(condition: Condition) -> bool:
    """A record_if condition: a bool, something with __bool__ (a scalar tensor),
    or a zero-argument callable evaluated at each summary call."""
    if callable(condition):
        condition = condition()
    try:
        return bool(condition)
    except (TypeError, ValueError) as e:
        raise TypeError("record_if condition must be a bool, a scalar tensor or a "
                        f"zero-argument callable returning one; got {condition!r}") from e


def recording() -> bool:
    """Whether this thread's record_if condition currently holds."""
    c = tls.record
    return True if c is True else evaluate(c)


@contextlib.contextmanager
def record_if(condition: Condition) -> Iterator[None]:
    """Record summaries inside the block only while `condition` holds (thread-local).

    Example:
        >>> import jitflow.summary as s
        >>> with s.record_if(lambda: s.experimental.get_step() % 100 == 0):
        ...     pass  # summary calls here write only every 100th step
    """
    if not (isinstance(condition, bool) or callable(condition) or hasattr(condition, "__bool__")):
        raise TypeError(f"record_if expects a bool or a zero-argument callable, got {condition!r}")
    old, old_traced = tls.record, tls.record_traced
    tls.record = condition
    tls.record_traced = _rt_state.graph is not None
    try:
        yield
    finally:
        tls.record, tls.record_traced = old, old_traced
