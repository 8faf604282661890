"""Runtime benchmark: first-call latency and steady per-call time of small functions.

Two cases, on 10 float32 values (issue 2's acceptance benchmark):
  (a) small: reduce_sum(tanh(a * b + c))                     -> 4 ops
  (b) chain: x = tanh(x * 0.5 + 0.1), repeated to 150 ops     -> 150 ops
each run through the same Python code by
  jf.function   the traced graph (jitflow's generated straight-line plan)
  jf eager      the Python code on jf tensors, op by op
  numpy         the Python code on numpy arrays
  tf.function   TensorFlow's graph function      } when `import tensorflow` works;
  TF eager      the Python code on tf tensors    } otherwise skipped with a note
All numbers come from one run in one process and are printed as a table and as ratios
(against numpy and against TensorFlow).

Measured per implementation:
  first call     trace + first run of a fresh function object, the first time this
                 process runs the case (includes numba compiling or loading kernels from
                 its disk cache; the table says which: numba's cache is cold only the first
                 time a checkout runs, later processes load machine code from the cache).
  fresh-fn call  the same for further fresh function objects once kernels are loaded
                 (median of --retrace-trials): the cost of a trace + plan build + run.
  steady         median per-call time after warm-up (GC off, perf_counter_ns).

Run:
    python benchmarks/bench_runtime.py                # full run
    python benchmarks/bench_runtime.py --quick        # smoke run (seconds)
    python benchmarks/bench_runtime.py --json out.json --repeat 500
    python benchmarks/bench_runtime.py --cold-cache   # numba compiles into a fresh cache dir

Importing this module runs nothing; `main(["--quick"])` runs a smoke benchmark and
returns 0, `run(options)` returns the results as a dict.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import types
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

try:  # `python -m benchmarks.bench_runtime`, or imported as benchmarks.bench_runtime
    from . import _common as C
except ImportError:  # `python benchmarks/bench_runtime.py`, or loaded from its path
    import importlib.util as _ilu
    _spec = _ilu.spec_from_file_location(
        "_jitflow_bench_common", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_common.py"))
    C = _ilu.module_from_spec(_spec)
    sys.modules[_spec.name] = C
    _spec.loader.exec_module(C)

IMPLS = ("jf.function", "jf eager", "numpy", "tf.function", "TF eager")
GRAPH_IMPLS = ("jf.function", "tf.function")
# numba kernels (in jitflow.runtime.ops.cpu_kernels) that the two cases run on.
KERNELS = ("mul_", "add_", "tanh_", "reduce_sum_2d")


# -- the benchmarked Python code (one source, three namespaces) -----------------------------
make_small, make_chain = C.make_small, C.make_chain


NUMPY_NS = types.SimpleNamespace(tanh=np.tanh, reduce_sum=np.sum)


@dataclass
class Case:
    key: str
    title: str
    n_ops: int
    make: Callable[[Any], Callable]
    inputs: List[np.ndarray]


def build_cases(size: int, chain_ops: int, seed: int = 0) -> List[Case]:
    rng = np.random.default_rng(seed)
    a, b, c, x = (rng.uniform(-1, 1, size).astype(np.float32) for _ in range(4))
    return [
        Case("small", f"(a) reduce_sum(tanh(a*b+c)) on {size} float32", 4, make_small, [a, b, c]),
        Case("chain", f"(b) {chain_ops}-op elementwise chain on {size} float32", chain_ops,
             lambda m: make_chain(m, chain_ops), [x]),
    ]


# -- implementations -----------------------------------------------------------------------
@dataclass
class Impl:
    name: str
    namespace: Any
    wrap: Callable[[Callable], Callable]      # python function -> callable to benchmark
    convert: Callable[[np.ndarray], Any]      # numpy input -> framework input
    to_numpy: Callable[[Any], np.ndarray]


def make_impls(jf: Any, tf: Any) -> List[Impl]:
    impls = [
        Impl("jf.function", jf, jf.function, jf.constant, lambda t: np.asarray(t.numpy())),
        Impl("jf eager", jf, lambda f: f, jf.constant, lambda t: np.asarray(t.numpy())),
        Impl("numpy", NUMPY_NS, lambda f: f, lambda a: a, np.asarray),
    ]
    if tf is not None:
        impls += [
            Impl("tf.function", tf, tf.function, tf.constant, lambda t: np.asarray(t.numpy())),
            Impl("TF eager", tf, lambda f: f, tf.constant, lambda t: np.asarray(t.numpy())),
        ]
    return impls


def graph_op_count(impl: str, fn: Any, inputs: Sequence[Any]) -> Optional[int]:
    """Compute ops in the traced graph (no Const/Placeholder/Identity), as a sanity check."""
    skip = {"Const", "Placeholder", "Identity", "NoOp"}
    try:
        if impl == "jf.function":
            graph = fn.list_concrete_functions()[0].graph
            return sum(1 for n in graph.nodes if n.op.tf_op not in skip)
        if impl == "tf.function":
            graph = fn.get_concrete_function(*inputs).graph
            return sum(1 for op in graph.get_operations() if op.type not in skip)
    except Exception:  # a sanity check only: never fail the benchmark over it
        return None
    return None


# -- numba cache state -------------------------------------------------------------------
def numba_cache_state(cpu_kernels: Any) -> Dict[str, Any]:
    """Where numba caches jitflow's kernels, and how many valid entries each index holds.

    An index whose recorded source stamp no longer matches cpu_kernels.py (the file was
    edited) counts as 0 entries, as numba itself would ignore it.
    """
    state: Dict[str, Any] = {"dir": None, "valid_index_entries": {}}
    try:
        from numba.core.caching import FunctionCache
        for name in KERNELS:
            obj = getattr(cpu_kernels, name)
            cache = FunctionCache(getattr(obj, "py_func", obj))
            state["dir"] = cache._cache_path
            state["valid_index_entries"][name] = len(cache._cache_file._load_index())
    except Exception as e:  # private numba API: report, never fail
        state["error"] = f"{type(e).__name__}: {e}"
    return state


# -- measurement -----------------------------------------------------------------------------
@dataclass
class Options:
    repeat: int = 200
    warmup: int = 20
    retrace_trials: int = 5
    min_sample_ns: int = 200_000
    size: int = 10
    chain_ops: int = 150
    tensorflow: bool = True
    cold_cache: bool = False
    json_path: Optional[str] = None
    quick: bool = False


def measure_case(case: Case, impls: List[Impl], opts: Options, log: Callable[[str], None]) -> Dict[str, Any]:
    results: Dict[str, Dict[str, Any]] = {}
    reference = np.asarray(case.make(NUMPY_NS)(*case.inputs), dtype=np.float64)
    for impl in impls:
        py_fn = case.make(impl.namespace)
        inputs = [impl.convert(a) for a in case.inputs]
        row: Dict[str, Any] = {}
        # First call: a fresh function object, the first time this process runs the case.
        fn = impl.wrap(C.fresh_function(py_fn, "first"))
        with C.NumbaWatch() as watch:
            first_ns, out = C.time_once(lambda: fn(*inputs))
        row["first_call_ns"] = first_ns
        row["first_call_numba_compiled"] = list(watch.compiled)
        row["first_call_numba_lock_ns"] = watch.lock_ns
        value = impl.to_numpy(out)
        row["max_abs_err_vs_numpy"] = float(np.max(np.abs(value.astype(np.float64) - reference)))
        row["ok"] = bool(value.shape == reference.shape and
                         np.allclose(value, reference, rtol=1e-4, atol=1e-5))
        row["graph_ops"] = graph_op_count(impl.name, fn, inputs)
        # Further fresh function objects: trace + first run with kernels already loaded.
        if impl.name in GRAPH_IMPLS and opts.retrace_trials > 0:
            times = []
            for i in range(opts.retrace_trials):
                fresh = impl.wrap(C.fresh_function(py_fn, f"fresh{i}"))
                times.append(C.time_once(lambda: fresh(*inputs))[0])
            times.sort()
            row["fresh_fn_first_call_ns"] = float(np.median(times))
        else:
            row["fresh_fn_first_call_ns"] = None
        # Steady state on the first function object.
        stats = C.time_steady(lambda: fn(*inputs), repeat=opts.repeat, warmup=opts.warmup,
                              min_sample_ns=opts.min_sample_ns)
        row["steady"] = stats.as_dict()
        results[impl.name] = row
        log(f"  {case.key:6s} {impl.name:12s} first {C.format_ns(first_ns):>9s}  "
            f"steady {C.format_ns(stats.median_ns):>9s}")
    return {"title": case.title, "n_ops": case.n_ops, "size": opts.size, "results": results,
            "ratios": ratios(results)}


def ratios(results: Dict[str, Dict[str, Any]]) -> Dict[str, Dict[str, Optional[float]]]:
    """steady and first-call time of each implementation divided by numpy's and TF's."""
    def steady(name):
        r = results.get(name)
        return r["steady"]["median_ns"] if r else None

    def first(name):
        r = results.get(name)
        return r["first_call_ns"] if r else None

    def div(a, b):
        return None if a is None or b is None or b == 0 else a / b
    out = {}
    for name in results:
        out[name] = {
            "steady_vs_numpy": div(steady(name), steady("numpy")),
            "steady_vs_tf_function": div(steady(name), steady("tf.function")),
            "steady_vs_tf_eager": div(steady(name), steady("TF eager")),
            "first_call_vs_tf_function": div(first(name), first("tf.function")),
        }
    return out


# -- report ---------------------------------------------------------------------------------
def _numba_cell(row: Dict[str, Any]) -> str:
    compiled = row["first_call_numba_compiled"]
    lock = row["first_call_numba_lock_ns"]
    if not compiled and not lock:
        return "-"
    return f"{len(compiled)} compiled, {C.format_ns(lock)}"


def print_report(payload: Dict[str, Any], out=None) -> None:
    out = out or sys.stdout
    env = payload["environment"]
    print(f"\njitflow runtime benchmark  (python {env['python']}, numpy {env.get('numpy')}, "
          f"numba {env.get('numba')}, tensorflow {env.get('tensorflow', 'not used')}, "
          f"{env['cpu_count']} CPUs)", file=out)
    cache = payload["numba_cache"]
    print(f"numba disk cache: {cache['verdict']} — {cache['detail']}", file=out)
    imports = payload["import_ns"]
    print("import time: " + ", ".join(f"{k} {C.format_ns(v) if v is not None else 'already imported'}"
                                      for k, v in imports.items()), file=out)
    for note in payload["notes"]:
        print(f"note: {note}", file=out)
    opts = payload["options"]
    print(f"steady = median of {opts['repeat']} samples after {opts['warmup']} warm-up calls "
          f"(GC off); fresh-fn = median of {opts['retrace_trials']} fresh function objects", file=out)
    print("numba during 1st = functions numba compiled during that first call, and the time spent "
          "under numba's compiler lock (compiling, loading machine code from the disk cache, "
          "building ufunc wrappers)", file=out)
    for case in payload["cases"].values():
        print(f"\n{case['title']}", file=out)
        rows = []
        for name, row in case["results"].items():
            st = row["steady"]
            rt = case["ratios"][name]
            rows.append([
                name, C.format_ns(row["first_call_ns"]), _numba_cell(row),
                C.format_ns(row["fresh_fn_first_call_ns"]), C.format_ns(st["median_ns"]),
                f"{C.format_ns(st['p10_ns'])} – {C.format_ns(st['p90_ns'])}",
                _r(rt["steady_vs_numpy"]), _r(rt["steady_vs_tf_function"]), _r(rt["steady_vs_tf_eager"]),
                _r(rt["first_call_vs_tf_function"]),
                "" if row["graph_ops"] is None else row["graph_ops"],
                "ok" if row["ok"] else f"MISMATCH {row['max_abs_err_vs_numpy']:.2g}",
            ])
        C.print_table(["impl", "first call", "numba during 1st", "fresh-fn call", "steady/call",
                       "p10 – p90", "÷numpy", "÷tf.function", "÷TF eager", "1st ÷tf.fn 1st",
                       "graph ops", "check"], rows, out=out)
    print("\nratios (time ÷ time; <1 means faster):", file=out)
    for case_key, case in payload["cases"].items():
        res, rt = case["results"], case["ratios"]
        for name in ("jf.function", "jf eager"):
            parts = [f"steady {_r(rt[name]['steady_vs_numpy'])} numpy"]
            counterpart = "tf.function" if name == "jf.function" else "TF eager"
            if counterpart in res:
                key = "steady_vs_tf_function" if counterpart == "tf.function" else "steady_vs_tf_eager"
                parts.append(f"{_r(rt[name][key])} {counterpart}")
            if "tf.function" in res:
                parts.append(f"first call {_r(rt[name]['first_call_vs_tf_function'])} tf.function's")
            print(f"  {case_key:6s} {name:12s} " + ", ".join(parts), file=out)
    if payload.get("cold_start"):
        _cold_start().report(payload["cold_start"], out)


def _cold_start() -> Any:
    """benchmarks/cold_start.py, loaded from its path (fresh processes: import and first call)."""
    import importlib.util as ilu
    spec = ilu.spec_from_file_location("_jitflow_bench_cold_start",
                                       os.path.join(os.path.dirname(os.path.abspath(__file__)), "cold_start.py"))
    assert spec is not None and spec.loader is not None
    module = ilu.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _r(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}x" if x < 1000 else f"{x:.0f}x"


# -- driver ---------------------------------------------------------------------------------
def parse_args(argv: Optional[Sequence[str]]) -> Options:
    p = argparse.ArgumentParser(prog="bench_runtime", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=None,
                   help="steady-state samples per row (default 200; 15 with --quick)")
    p.add_argument("--warmup", type=int, default=None, help="warm-up calls before sampling (default 20)")
    p.add_argument("--retrace-trials", type=int, default=None,
                   help="fresh function objects timed after the first call (default 5)")
    p.add_argument("--size", type=int, default=10, help="number of float32 values (default 10)")
    p.add_argument("--chain-ops", type=int, default=150, help="ops in case (b) (default 150)")
    p.add_argument("--quick", action="store_true", help="fast smoke run: few samples, short samples")
    p.add_argument("--no-tf", action="store_true", help="do not import TensorFlow")
    p.add_argument("--cold-cache", action="store_true",
                   help="point NUMBA_CACHE_DIR at a fresh temporary folder, so numba compiles every "
                        "kernel (only effective when numba is not imported yet)")
    p.add_argument("--json", dest="json_path", metavar="PATH", help="also write the results as JSON")
    a = p.parse_args(argv)
    if a.size < 1 or a.chain_ops < 1:
        p.error("--size and --chain-ops must be >= 1")
    quick = a.quick
    return Options(
        repeat=a.repeat if a.repeat is not None else (15 if quick else 200),
        warmup=a.warmup if a.warmup is not None else (3 if quick else 20),
        retrace_trials=a.retrace_trials if a.retrace_trials is not None else (2 if quick else 5),
        min_sample_ns=20_000 if quick else 200_000,
        size=a.size, chain_ops=a.chain_ops, tensorflow=not a.no_tf, cold_cache=a.cold_cache,
        json_path=a.json_path, quick=quick)


def _timed_import(name: str):
    already = name in sys.modules
    start = time.perf_counter_ns()
    module = __import__(name)
    return module, None if already else time.perf_counter_ns() - start


def run(opts: Options, log: Callable[[str], None] = lambda s: None) -> Dict[str, Any]:
    """Run every case and implementation; return the results (what --json writes)."""
    notes: List[str] = []
    if opts.cold_cache:
        if "numba" in sys.modules:
            notes.append("--cold-cache ignored: numba was imported before the benchmark started")
        else:
            os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="jitflow-bench-numba-")
    import_ns: Dict[str, Optional[int]] = {}
    jf, import_ns["jitflow"] = _timed_import("jitflow")
    from jitflow.runtime.ops import cpu_kernels
    cache_before = numba_cache_state(cpu_kernels)

    tf = None
    if opts.tensorflow:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        already = "tensorflow" in sys.modules
        tf, reason, ns = C.import_optional("tensorflow")
        if tf is None:
            notes.append(f"TensorFlow skipped: `import tensorflow` failed ({reason})")
        else:
            import_ns["tensorflow"] = None if already else ns
    else:
        notes.append("TensorFlow skipped (--no-tf)")

    impls = make_impls(jf, tf)
    cases = build_cases(opts.size, opts.chain_ops)
    results = {}
    for case in cases:
        results[case.key] = measure_case(case, impls, opts, log)

    compiled = sorted({name for case in results.values() for row in case["results"].values()
                       for name in row["first_call_numba_compiled"]})
    compiled_names = {n.split("(")[0].rsplit(".", 1)[-1] for n in compiled}
    cold_kernels = [k for k in KERNELS if k in compiled_names]
    verdict = ("cold" if len(cold_kernels) == len(KERNELS) else "partly cold" if cold_kernels
               else "warm")
    if compiled:
        detail = (f"numba compiled {len(compiled)} function(s) during first calls: "
                  f"{', '.join(sorted(compiled_names))}")
    elif any(row["first_call_numba_lock_ns"] for case in results.values()
             for row in case["results"].values()):
        detail = "nothing compiled: every kernel came from numba's disk cache"
    else:
        verdict = "not used"
        detail = "numba did no work: the kernels were already in memory from earlier in this process"
    detail += f"; cache dir {cache_before['dir']}"
    entries = cache_before["valid_index_entries"]
    if entries:
        detail += ("; valid index entries before the run: "
                   + ", ".join(f"{k} {v}" for k, v in entries.items()))
    payload = {
        "benchmark": "runtime",
        "environment": C.environment(),
        "options": {k: v for k, v in vars(opts).items()},
        "numba_cache": {"verdict": verdict, "detail": detail, "compiled": compiled, **cache_before},
        "import_ns": import_ns,
        "notes": notes,
        "cases": results,
        # import jitflow and the first jf.function call, each in fresh processes
        "cold_start": _cold_start().measure(1 if opts.quick else 5),
    }
    return payload


def main(argv: Optional[Sequence[str]] = None) -> int:
    return C.run_benchmark(parse_args(argv), run, print_report)


if __name__ == "__main__":
    sys.exit(main())
