"""Where ops go: the current graph builder (or eager execution) and name scopes.

Tracing is a builder made current by a context manager (`Graph.as_default()`); with no
graph current, ops run eagerly. `name_scope` pushes a prefix on whichever is current.
State is thread-local, as in TF: a trace in one thread does not capture another
thread's eager ops.
"""
from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from jitflow.runtime.core.graph import Graph


class _State(threading.local):
    def __init__(self) -> None:
        self.graph: Optional["Graph"] = None
        self.eager_scope: str = ""
        self.device: Optional[str] = None  # the innermost jf.device(...) spec, e.g. "/device:GPU:0"


_state = _State()

# How many graph scopes are open in all threads. Zero means no thread is tracing, which the
# direct call path of `jf.function` checks with one global read instead of a thread-local
# one; a trace in any thread only sends calls down the general path, which checks this
# thread's own state.
scopes_open = 0
_scopes_lock = threading.Lock()


def current_graph() -> Optional["Graph"]:
    """The graph being traced in this thread, or None when executing eagerly."""
    return _state.graph


def executing_eagerly() -> bool:
    """True outside any `jf.function` trace (TF's `tf.executing_eagerly`).

    >>> jf.executing_eagerly()
    True
    """
    return _state.graph is None


@contextlib.contextmanager
def graph_scope(graph: Optional["Graph"]):
    """Make `graph` (or eager execution, for None) current for the block."""
    global scopes_open
    saved = _state.graph
    _state.graph = graph
    with _scopes_lock:
        scopes_open += 1
    try:
        yield graph
    finally:
        _state.graph = saved
        with _scopes_lock:
            scopes_open -= 1


def init_scope():
    """Leave every trace for the block: run eagerly (TF's `tf.init_scope`).

    Variable creation inside a traced function happens here so the variable outlives the
    trace, as TF lifts variable initialisers out of function graphs.

    >>> @jf.function
    ... def f():
    ...     with jf.init_scope():
    ...         return jf.executing_eagerly()
    >>> f()
    <jf.Tensor: shape=(), dtype=bool, numpy=True>
    """
    return graph_scope(None)


def current_scope() -> str:
    """The active name-scope prefix (`"outer/inner/"`, or `""`)."""
    graph = _state.graph
    return graph.scope if graph is not None else _state.eager_scope


class name_scope:
    """A context manager that prefixes names of ops and variables created inside it.

    `name_scope("dense")` opens `dense/` under the current scope (made unique inside a
    graph: `dense_1/` the second time); a name ending in `/` (`"dense/"`) re-enters that
    exact scope, which is how `Module.name_scope` puts a module's ops under one box.

    >>> with name_scope("layer") as scope:
    ...     scope
    'layer/'
    """

    def __init__(self, name: Optional[str]) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name_scope: name must be a str or None; got {type(name).__name__}")
        self._name = name
        self._saved: list = []

    @property
    def name(self) -> Optional[str]:
        return self._name

    def __enter__(self) -> str:
        graph = _state.graph
        name = self._name
        if graph is not None:
            self._saved.append((graph, graph.scope))
            graph.scope = graph.scope_for(name)
            return graph.scope
        self._saved.append((None, _state.eager_scope))
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name
        else:
            new = _state.eager_scope + name + "/"
        _state.eager_scope = new
        return new

    def __exit__(self, *exc) -> None:
        graph, saved = self._saved.pop()
        if graph is not None:
            graph.scope = saved
        else:
            _state.eager_scope = saved

    def __repr__(self) -> str:
        return f"name_scope({self._name!r})"
