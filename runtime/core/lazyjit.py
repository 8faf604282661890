"""numba on first use: `njit` that neither imports nor compiles anything until a kernel runs.

Importing numba costs about 0.3 s, more than the rest of `import jitflow` together, and
most programs import jitflow long before their first op runs (or never run one on the CPU
path at all: a summary-only user). So kernels are declared with this module's `njit`,
which returns a `LazyDispatcher`: calling it imports numba, compiles the function (from
numba's disk cache when it is warm) and calls it. Inside other jitted code a
`LazyDispatcher` types as the numba dispatcher it stands for, so kernels can call each
other exactly as plain numba functions do.

Code that needs numba itself (overloads, `vectorize`, the compiled tier) gets it from
`numba()`, which also runs the hooks registered with `on_numba_load` — e.g. the
`@overload` that lets compiled code call jitflow's float32 tanh.

    from jitflow.runtime.core.lazyjit import njit

    @njit(cache=True)
    def total(x):
        s = 0.0
        for v in x:
            s += v
        return s
"""
from __future__ import annotations

import threading
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional

_lock = threading.RLock()
_numba: Optional[ModuleType] = None
_loading: Optional[ModuleType] = None  # numba while its load hooks run
_on_load: List[Callable[[ModuleType], None]] = []


def numba() -> ModuleType:
    """The numba module, imported on the first call (which also runs the load hooks).

    Every import of numba in jitflow goes through here first (`lazyjit.numba()` before a
    `from numba... import`): numba may be importing on another thread (`numpy_tier` loads it
    in the background), and numba's modules import each other, so a thread that entered that
    cycle at a submodule meanwhile would get a half-initialised module. This lock makes
    it wait for the whole import instead."""
    global _numba, _loading
    if _numba is not None:
        return _numba
    with _lock:  # other threads wait here until the hooks have run
        if _numba is not None:
            return _numba
        if _loading is not None:  # a load hook of this thread asking (the lock is reentrant)
            return _loading
        import numba as nb  # the one place jitflow imports numba for CPU kernels
        from numba.core.typing.typeof import typeof_impl

        @typeof_impl.register(LazyDispatcher)
        def _typeof_lazy(value: LazyDispatcher, context: Any) -> Any:
            return typeof_impl(value.dispatcher, context)

        _loading = nb
        try:
            for hook in _on_load:
                hook(nb)
        finally:
            _loading = None
        _numba = nb
    return _numba


def loaded() -> bool:
    """Whether numba has been imported through this module yet."""
    return _numba is not None


def on_numba_load(hook: Callable[[ModuleType], None]) -> Callable[[ModuleType], None]:
    """Run `hook(numba)` once numba is imported (at once if it already is)."""
    with _lock:
        if _numba is not None:
            hook(_numba)
        else:
            _on_load.append(hook)
    return hook


class LazyDispatcher:
    """Stands for `numba.njit(**options)(py_func)` until first used, then forwards to it."""

    __slots__ = ("py_func", "options", "_dispatcher", "__name__", "__qualname__", "__wrapped__")

    def __init__(self, py_func: Callable, options: Dict[str, Any]) -> None:
        self.py_func = py_func
        self.options = options
        self._dispatcher: Any = None
        self.__name__ = py_func.__name__
        self.__qualname__ = getattr(py_func, "__qualname__", py_func.__name__)
        self.__wrapped__ = py_func

    @property
    def dispatcher(self) -> Any:
        """The numba dispatcher (created on first access; compiling happens on its first call)."""
        d = self._dispatcher
        if d is None:
            nb = numba()
            with _lock:
                if self._dispatcher is None:
                    # `cache=` may be a callable, asked now: whether numba can write its cache is
                    # known only once numba is imported (see `core/numba_cache`).
                    options = {k: (v() if k == "cache" and callable(v) else v) for k, v in self.options.items()}
                    self._dispatcher = nb.njit(**options)(self.py_func)
                d = self._dispatcher
        return d

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self._dispatcher
        if d is None:
            d = self.dispatcher
        return d(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # signatures, inspect_types, ... of the dispatcher
        return getattr(self.dispatcher, name)

    def __repr__(self) -> str:
        state = "compiled" if self._dispatcher is not None else "lazy"
        return f"<jitflow njit {self.__qualname__} ({state})>"


def njit(*args: Any, **options: Any) -> Any:
    """`numba.njit`, deferred: `@njit` or `@njit(cache=True, nogil=True, ...)`."""
    if args and callable(args[0]) and len(args) == 1 and not options:
        return LazyDispatcher(args[0], {})
    if args:
        raise TypeError("njit: signatures are not supported by the lazy njit; pass options by keyword")
    return lambda fn: LazyDispatcher(fn, options)


__all__ = ["njit", "numba", "on_numba_load", "loaded", "LazyDispatcher"]
