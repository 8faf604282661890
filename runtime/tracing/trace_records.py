"""Structured records of every trace, and the in-process registry others subscribe to.

Every time a `jf.function` traces, the runtime publishes a `TraceRecord`: which function,
where it is defined, which call triggered it, how long tracing took, and *why* it
traced (first call, or the exact argument that changed, old → new) with advice on
avoiding it. The summary writer, tracer and panel subscribe:

    unsubscribe = jf.trace_records.subscribe(lambda record: print(record))
"""
from __future__ import annotations

import threading
import time
import weakref
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Dict, List, Optional, Tuple

from jitflow.runtime.tracing.trace_types import ArgChange

FIRST_CALL = "first_call"
RETRACE = "retrace"
NEW_FUNCTION_OBJECT = "new_function_object"
SIGNATURE = "get_concrete_function"
VARIABLE_LIFTING = "variable_lifting"


@dataclass
class TraceRecord:
    """One trace of a `jf.function`: which function, where, how long, and why it traced.

    >>> @jf.function
    ... def square(x):
    ...     return x * x
    >>> _ = square(jf.constant(1.0)); _ = square(jf.constant([1.0, 2.0]))
    >>> record = jf.trace_records.records()[-1]
    >>> record.function.endswith("square"), record.trace_number, record.reason_kind
    (True, 2, 'retrace')
    """

    function: str                  # qualified name, e.g. "DemoModule.addprint"
    function_id: int               # stable per Function object within the process
    source: str                    # "path/to/file.py:12"
    call_site: str                 # "path/to/caller.py:40 in train"
    key: str                       # readable cache key
    trace_number: int              # 1 for the first trace of this Function
    trace_seconds: float
    reason_kind: str               # FIRST_CALL, RETRACE, NEW_FUNCTION_OBJECT, ...
    changes: Tuple[ArgChange, ...] = ()
    advice: str = ""
    graph_name: str = ""
    num_nodes: int = 0
    calls_so_far: int = 0          # calls of this Function when it traced
    compile_seconds: Optional[float] = None
    timestamp: float = field(default_factory=time.time)

    @property
    def reason(self) -> str:
        """One line: `first call` or `arg 'x': dtype int32 → float32; ...`."""
        if self.reason_kind == FIRST_CALL:
            return "first call"
        if self.reason_kind == NEW_FUNCTION_OBJECT:
            return "new jf.function object for an already-traced Python function"
        if self.reason_kind == SIGNATURE:
            return "get_concrete_function"
        if self.reason_kind == VARIABLE_LIFTING:
            return "retrace after creating variables (variables may only be created once)"
        return "; ".join(str(c) for c in self.changes) or "cache miss"

    def to_dict(self) -> dict:
        return {
            "function": self.function, "function_id": self.function_id, "source": self.source,
            "call_site": self.call_site, "key": self.key, "trace_number": self.trace_number,
            "trace_seconds": self.trace_seconds, "compile_seconds": self.compile_seconds,
            "reason_kind": self.reason_kind, "reason": self.reason,
            "changes": [c.to_dict() for c in self.changes], "advice": self.advice,
            "graph_name": self.graph_name, "num_nodes": self.num_nodes,
            "calls_so_far": self.calls_so_far, "timestamp": self.timestamp,
        }

    def __str__(self) -> str:
        return (f"trace #{self.trace_number} of {self.function} ({self.reason}) at {self.call_site}, "
                f"{self.trace_seconds * 1e3:.2f} ms")


def advice_for(changes: Tuple[ArgChange, ...], reason_kind: str, function: str,
               reduce_retracing: bool = False) -> str:
    """A specific fix for the most telling change (never the option the function already uses)."""
    if reason_kind == NEW_FUNCTION_OBJECT:
        return (f"A new jf.function wrapping {function} is created each time (e.g. inside a loop or "
                "another function), so nothing is reused. Define the jf.function once, at module "
                "or class level, and call that object repeatedly.")
    if reason_kind != RETRACE or not changes:
        return ""
    kinds = {c.kind for c in changes}
    first = changes[0]
    if "value" in kinds or ("type" in kinds and (first.new.startswith("Python") or first.old.startswith("Python"))):
        c = next(c for c in changes if c.kind in ("value", "type"))
        return (f"{c.path} is a Python value, and every distinct Python value is part of the cache "
                "key. Pass it as a tensor (jf.constant(...)) so one graph serves all values, or "
                "fix the function's input_signature.")
    if kinds == {"shape"}:
        dims = [c.path for c in changes]
        if reduce_retracing:
            return (f"The shape of {', '.join(dims)} changes between calls; reduce_retracing=True "
                    "already relaxed the differing dimensions to None, so these shapes are now served "
                    "by one graph. If retraces continue, the rank changes: pass an input_signature "
                    "with the rank fixed, or keep the rank constant.")
        return (f"The shape of {', '.join(dims)} changes between calls. Use "
                "jf.function(reduce_retracing=True), or an input_signature with None for the "
                "dimensions that vary, e.g. jf.TensorSpec(shape=[None, ...]).")
    if "dtype" in kinds:
        c = next(c for c in changes if c.kind == "dtype")
        return (f"{c.path} arrives with a different dtype ({c.old} → {c.new}). Cast it to one dtype "
                "before calling (jf.cast), or fix the dtype with an input_signature.")
    if "object" in kinds:
        c = next(c for c in changes if c.kind == "object")
        return (f"{c.path} is a new object on each call, and objects are keyed by identity. Create "
                "it once outside the loop and reuse it, or pass the tensors/values it holds instead.")
    if "structure" in kinds:
        return ("The nesting or length of a list/dict argument changed. Keep the structure fixed, or "
                "pass one stacked tensor instead of a Python list of tensors.")
    return "Keep the argument types, shapes and Python values stable between calls."


# The registry keeps the most recent records only: a program that retraces forever must
# not grow without bound (subscribers, e.g. the summary writer, see every record).
MAX_RECORDS = 10_000


class TraceRegistry:
    """Keeps the last MAX_RECORDS records of this process and notifies subscribers (thread-safe).

    Besides records it tells subscribers of `subscribe_compiles` when a traced graph has
    been compiled (its compile time is known only then, often on a background thread)."""

    def __init__(self) -> None:
        self._records: Deque[TraceRecord] = deque(maxlen=MAX_RECORDS)
        self._subscribers: Dict[int, Callable[[TraceRecord], None]] = {}
        self._compile_subscribers: Dict[int, Callable[[str, float], None]] = {}
        self._lock = threading.Lock()
        self._next = 0

    def compiled(self, graph_name: str, seconds: float) -> None:
        """The graph `graph_name` compiled in `seconds`: update its records, tell subscribers."""
        with self._lock:
            for record in self._records:
                if record.graph_name == graph_name:
                    record.compile_seconds = seconds
            subscribers = list(self._compile_subscribers.values())
        for callback in subscribers:
            callback(graph_name, seconds)

    def subscribe_compiles(self, callback: Callable[[str, float], None]) -> Callable[[], None]:
        """Call `callback(graph_name, compile_seconds)` after every compile; returns an unsubscribe function."""
        with self._lock:
            token = self._next
            self._next += 1
            self._compile_subscribers[token] = callback

        def unsubscribe() -> None:
            with self._lock:
                self._compile_subscribers.pop(token, None)
        return unsubscribe

    def publish(self, record: TraceRecord) -> None:
        with self._lock:
            self._records.append(record)
            subscribers = list(self._subscribers.values())
        for callback in subscribers:
            callback(record)

    def subscribe(self, callback: Callable[[TraceRecord], None]) -> Callable[[], None]:
        """Call `callback(record)` for every future trace; returns an unsubscribe function.

        >>> seen = []
        >>> unsubscribe = jf.trace_records.subscribe(seen.append)
        >>> _ = jf.function(lambda x: x + 1)(jf.constant(1))
        >>> unsubscribe(); len(seen)
        1
        """
        with self._lock:
            token = self._next
            self._next += 1
            self._subscribers[token] = callback

        def unsubscribe() -> None:
            with self._lock:
                self._subscribers.pop(token, None)
        return unsubscribe

    def records(self, function: Optional[str] = None) -> List[TraceRecord]:
        """Every trace so far (of `function`, a qualified name, when given), oldest first.

        >>> jf.trace_records.clear()
        >>> _ = jf.function(lambda x: x * 2)(jf.constant(1))
        >>> [r.trace_number for r in jf.trace_records.records()]
        [1]
        """
        with self._lock:
            return [r for r in self._records if function is None or r.function == function]

    def clear(self) -> None:
        """Forget every record kept so far (subscribers stay subscribed).

        >>> jf.trace_records.clear(); jf.trace_records.records()
        []
        """
        with self._lock:
            self._records.clear()

    def most_common_reason(self, function_id: int) -> Optional[str]:
        with self._lock:
            reasons = [r.reason for r in self._records
                       if r.function_id == function_id and r.reason_kind != FIRST_CALL]
        if not reasons:
            return None
        return Counter(reasons).most_common(1)[0][0]


registry = TraceRegistry()
subscribe = registry.subscribe
records = registry.records
clear = registry.clear


# -- call counts, read lazily ---------------------------------------------------------------
# Every jf.function counts its calls in one machine word (C's FunctionBase.call_count, or the
# Python twin's `_call_count`): the direct path pays one increment and nothing else. Writers of
# records read the counts when they write (see `call_counts`), not per call.
_traced_functions: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()
_last_counts: Dict[int, int] = {}   # counts of functions since collected, kept for the record


def track_calls(function: Any) -> None:
    """Remember `function` (a jf.Function that has traced) so `call_counts` can read it."""
    _traced_functions[function.function_id] = function


def call_counts() -> Dict[int, int]:
    """Calls so far of every traced function, by `function_id` (cheap: one read per function)."""
    for fid, fn in list(_traced_functions.items()):
        _last_counts[fid] = int(getattr(fn, "_call_count", 0))
    return dict(_last_counts)


__all__ = ["TraceRecord", "records", "subscribe", "clear"]
