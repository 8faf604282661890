"""Timing helpers shared by the jitflow benchmarks (no jitflow import here).

Everything measures with `time.perf_counter_ns` and keeps the garbage collector off
while a timed loop runs, so a collection triggered by one implementation is not billed
to another. Typical use:

    from _common import time_once, time_steady, print_table

    first_ns, result = time_once(lambda: f(x))        # one call, e.g. a first call
    stats = time_steady(lambda: f(x), repeat=200)     # median per-call time after warm-up
    print(stats.median_ns, stats.p10_ns, stats.p90_ns)

`NumbaWatch` counts what numba compiles (and the time spent under numba's compiler
lock, which covers loading machine code from the disk cache too) inside a `with` block;
that is how a benchmark tells a cold numba cache from a warm one.
"""
from __future__ import annotations

import contextlib
import gc
import json
import os
import platform
import statistics
import sys
import time
import types
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

__all__ = [
    "Stats", "gc_disabled", "time_once", "time_steady", "NumbaWatch", "fresh_function",
    "format_ns", "format_ratio", "print_table", "environment", "write_json", "import_optional",
]


@contextlib.contextmanager
def gc_disabled() -> Iterator[None]:
    """Disable the cyclic GC for the block (restoring the previous state afterwards)."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def time_once(fn: Callable[[], Any]) -> tuple:
    """(nanoseconds, result) of one call of `fn`, with the GC off."""
    with gc_disabled():
        start = time.perf_counter_ns()
        result = fn()
        elapsed = time.perf_counter_ns() - start
    return elapsed, result


@dataclass
class Stats:
    """Per-call times in nanoseconds over `samples`, each the mean of `inner` calls."""

    median_ns: float
    p10_ns: float
    p90_ns: float
    min_ns: float
    samples: int
    inner: int
    warmup: int

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


def _quantile(sorted_values: Sequence[float], q: float) -> float:
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


def time_steady(fn: Callable[[], Any], repeat: int = 200, warmup: int = 20,
                min_sample_ns: int = 200_000, max_inner: int = 10_000) -> Stats:
    """Steady-state per-call time of `fn`: median over `repeat` samples after `warmup` calls.

    Each sample times `inner` back-to-back calls and divides, with `inner` chosen so that
    a sample lasts at least `min_sample_ns` (a ~100 ns timer read then stays negligible
    for sub-microsecond calls). The GC is disabled for the whole measurement.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be >= 1, got {repeat}")
    clock = time.perf_counter_ns
    with gc_disabled():
        for _ in range(warmup):
            fn()
        # Calibrate: how many calls make one sample of at least min_sample_ns?
        inner = 1
        while inner < max_inner:
            start = clock()
            for _ in range(inner):
                fn()
            if clock() - start >= min_sample_ns:
                break
            inner *= 2
        inner = min(inner, max_inner)
        per_call: List[float] = []
        loop = range(inner)
        for _ in range(repeat):
            start = clock()
            for _ in loop:
                fn()
            per_call.append((clock() - start) / inner)
    per_call.sort()
    return Stats(median_ns=statistics.median(per_call), p10_ns=_quantile(per_call, 0.10),
                 p90_ns=_quantile(per_call, 0.90), min_ns=per_call[0], samples=repeat,
                 inner=inner, warmup=warmup)


class NumbaWatch:
    """Counts numba compilations inside a `with` block, and time under its compiler lock.

    `compiled` lists the distinct functions (qualname + argument types) that went through
    numba's compiler pipeline; loading machine code from the disk cache does not
    run the pipeline, so `compiled == []` after a first call means the kernels came from
    the cache (or were already in memory). `lock_ns` is the wall time spent holding
    numba's compiler lock (compiling *or* loading from the disk cache).
    Works only if numba is importable; otherwise it records nothing.
    """

    def __init__(self) -> None:
        self.compiled: List[str] = []
        self.lock_ns = 0
        self._depth = 0
        self._since = 0
        self._installed: List[tuple] = []

    def __enter__(self) -> "NumbaWatch":
        try:
            from numba.core import event as ev
        except ImportError:
            return self
        watch = self

        class _Passes(ev.Listener):
            def on_start(self, event):
                data = event.data or {}
                name = f"{data.get('qualname', '?')}{data.get('args', '')}"
                if name not in watch.compiled:
                    watch.compiled.append(name)

            def on_end(self, event):
                pass

        class _Lock(ev.Listener):
            def on_start(self, event):
                if watch._depth == 0:
                    watch._since = time.perf_counter_ns()
                watch._depth += 1

            def on_end(self, event):
                watch._depth -= 1
                if watch._depth == 0:
                    watch.lock_ns += time.perf_counter_ns() - watch._since

        for kind, listener in (("numba:run_pass", _Passes()), ("numba:compiler_lock", _Lock())):
            ev.register(kind, listener)
            self._installed.append((kind, listener))
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self._installed:
            return
        from numba.core import event as ev
        for kind, listener in self._installed:
            ev.unregister(kind, listener)
        self._installed.clear()


def fresh_function(fn: types.FunctionType, tag: str) -> types.FunctionType:
    """A copy of `fn` with a code object of its own, as if its `def` had never run before.

    Name, source location and bytecode stay the same (tools that re-read the source, such
    as AutoGraph, still find it); only an unused constant tagged `tag` is appended, which
    makes the code object unequal to the original. Anything a framework caches per code
    object (AutoGraph conversions, "function re-created in a loop" counters) is therefore
    not reused, so repeated "first call" measurements each pay the full cost and do not
    trip retrace warnings.
    """
    code = fn.__code__.replace(co_consts=fn.__code__.co_consts + (f"<fresh copy {tag}>",))
    copy = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__ = fn.__qualname__
    copy.__kwdefaults__ = fn.__kwdefaults__
    copy.__module__ = fn.__module__
    copy.__doc__ = fn.__doc__
    return copy


def format_ns(ns: Optional[float]) -> str:
    """A duration with a unit that keeps 3 significant digits: `812 ns`, `4.21 µs`, `1.30 s`."""
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):  # noqa: B007 -- `unit` is read after the break
        if ns >= scale:
            value = ns / scale
            break
    else:
        unit, value = "ns", float(ns)
    digits = 0 if value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{digits}f} {unit}"


def format_ratio(num: Optional[float], den: Optional[float]) -> str:
    """`num / den` as `3.2x` (or `-` when either is missing)."""
    if num is None or den is None or den == 0:
        return "-"
    r = num / den
    return f"{r:.3g}x" if r < 1000 else f"{r:.0f}x"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], out=None) -> None:
    """A plain-text table: first column left-aligned, the others right-aligned."""
    out = out or sys.stdout
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        return "  ".join(parts).rstrip()
    print(line(cells[0]), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for row in cells[1:]:
        print(line(row), file=out)


def environment(**extra: Any) -> Dict[str, Any]:
    """Machine and package versions, for the header of a report or its JSON."""
    info: Dict[str, Any] = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    for module in ("numpy", "numba", "llvmlite", "tensorflow"):
        mod = sys.modules.get(module)
        if mod is not None:
            info[module] = getattr(mod, "__version__", "?")
    info.update(extra)
    return info


def write_json(path: str, payload: Dict[str, Any]) -> None:
    """Write `payload` as indented JSON, creating the parent folder."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, sort_keys=False, default=str)
        f.write("\n")


def import_optional(name: str, setup: Optional[Callable[[], None]] = None):
    """(module, None, import_ns) if `import name` works, else (None, reason, import_ns)."""
    if setup is not None:
        setup()
    start = time.perf_counter_ns()
    try:
        module = __import__(name)
    except Exception as e:  # ImportError, but also broken installs (e.g. protobuf clashes)
        return None, f"{type(e).__name__}: {e}".splitlines()[0], time.perf_counter_ns() - start
    return module, None, time.perf_counter_ns() - start


# -- the shared workloads: one source, run against any namespace (jf, tf, a numpy shim) -----
def make_small(m: Any) -> Callable:
    """reduce_sum(tanh(a * b + c)) against namespace `m`."""
    def small(a, b, c):
        return m.reduce_sum(m.tanh(a * b + c))
    return small


def make_chain(m: Any, n_ops: int) -> Callable:
    """An `n_ops`-op elementwise chain: (mul, add, tanh) repeated, remainder mul/add."""
    rounds, rest = divmod(n_ops, 3)

    def chain(x):
        for _ in range(rounds):
            x = m.tanh(x * 0.5 + 0.1)
        if rest >= 1:
            x = x * 0.5
        if rest >= 2:
            x = x + 0.1
        return x
    return chain


def run_benchmark(opts: Any, run: Callable, print_report: Callable[[dict], None]) -> int:
    """The shared `main`: run with progress on stderr, print the report, optionally save JSON."""
    payload = run(opts, log=lambda s: print(s, file=sys.stderr, flush=True))
    print_report(payload)
    if opts.json_path:
        write_json(opts.json_path, payload)
        print(f"\nwrote {opts.json_path}")
    return 0
