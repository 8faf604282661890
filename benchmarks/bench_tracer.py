"""What tracing costs: per-call overhead of trace_on vs off, and trace_export for a big graph.

  (a) overhead on the compiled tier: a 150-op elementwise chain `jf.function` compiled
      up front (`jit_compile=True`) on 10 float32 values, called with tracing off (the
      runtime checks one flag) and between trace_on/trace_off (the compiled plan's timed
      variant: one record per fused segment, ops attributed at export); steady per-call
      times and their ratio (goal: <= 1.5x). Also: tracing with `exact_ops=True` (every
      op timed on the interpreter), and the interpreter plan traced and untraced; with
      the garbage collector on, a mean over calls while the trace grows.
  (b) export: a 1,000-node graph (a chain of tanh/sin, no constants) run once under
      `trace_on(graph=True, profiler=True)`, then `trace_export`: total time (best of
      --export-repeat, a fresh trace each time), the time of each exporter on its own,
      and the sizes of what it writes (RunMetadata summary, xplane.pb, trace.json.gz).

    python benchmarks/bench_tracer.py [--quick] [--repeat N] [--gc-calls N] [--nodes N] [--json PATH]

Importing this module runs nothing; `main(["--quick"])` runs a smoke benchmark and
returns 0.
"""
from __future__ import annotations

import argparse
import gc
import glob
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (environment, format_ns, format_ratio, print_table, time_once,  # noqa: E402
                     time_steady, write_json)


def make_chain(jf: Any, n_ops: int, **options: Any) -> Callable:
    """`n_ops` elementwise ops: (mul, add, tanh) repeated, remainder mul/add (as bench_runtime)."""
    rounds, rest = divmod(n_ops, 3)

    def chain(x):
        for _ in range(rounds):
            x = jf.tanh(x * 0.5 + 0.1)
        if rest >= 1:
            x = x * 0.5
        if rest >= 2:
            x = x + 0.1
        return x
    return jf.function(chain, **options)


def mean_with_gc(fn: Callable[[], Any], calls: int) -> float:
    """Mean ns per call over `calls` calls with the garbage collector on, as in a program:
    a median would hide the collections that a growing trace triggers now and then."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.enable()
    try:
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        return (time.perf_counter_ns() - start) / calls
    finally:
        if not was_enabled:
            gc.disable()


def make_big_graph(jf: Any, n_nodes: int) -> Callable:
    """A graph of exactly `n_nodes` nodes: one placeholder, then tanh/sin alternately.

    On the interpreter plan (what a traced call runs anyway), so that no background
    compile of the big graph competes with the export for the CPU."""
    def big(x):
        for i in range(n_nodes - 1):
            x = jf.tanh(x) if i % 2 == 0 else jf.sin(x)
        return x
    return jf.function(big, jit_compile=False)


def _sizes(logdir: str, tag: str) -> Dict[str, int]:
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    acc = EventAccumulator(logdir, size_guidance={"tensors": 0})
    acc.Reload()
    run_metadata = len(acc.Tensors(tag)[0].tensor_proto.string_val[0])
    (xplane,) = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb"))
    (trace,) = glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.trace.json.gz"))
    with gzip.open(trace, "rb") as f:
        trace_json = len(f.read())
    events = sum(os.path.getsize(p) for p in glob.glob(os.path.join(logdir, "events.out.tfevents.*")))
    return {"run_metadata": run_metadata, "event_file": events, "xplane_pb": os.path.getsize(xplane),
            "trace_json_gz": os.path.getsize(trace), "trace_json": trace_json}


def interleaved(jf: Any, call: Callable[[], Any], rounds: int, block: int = 500) -> Dict[str, float]:
    """Blocks of `block` calls, untraced and traced alternately, best block of each: on a
    shared machine the load changes between two separate measurements, not within a pair."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    best = {"off_ns": float("inf"), "on_ns": float("inf")}
    try:
        for _ in range(rounds):
            for key, traced in (("off_ns", False), ("on_ns", True)):
                if traced:
                    jf.summary.trace_on(graph=True, profiler=True)
                start = time.perf_counter_ns()
                for _ in range(block):
                    call()
                best[key] = min(best[key], (time.perf_counter_ns() - start) / block)
                if traced:
                    jf.summary.trace_off()
    finally:
        if was_enabled:
            gc.enable()
    best["ratio"] = best["on_ns"] / best["off_ns"]
    return best


def measure_overhead(jf: Any, n_ops: int, size: int, repeat: int, warmup: int, gc_calls: int,
                     log: Callable[[str], None]) -> Dict[str, Any]:
    from jitflow.runtime.core import instrument
    from jitflow.tracer import capture

    f = make_chain(jf, n_ops, jit_compile=True)            # the compiled tier, compiled at the first call
    f_interp = make_chain(jf, n_ops, jit_compile=False)    # its interpreter plan only
    x = jf.constant(np.random.default_rng(0).uniform(-1, 1, size).astype(np.float32))
    for _ in range(5):  # trace, compile, settle
        f(x)
        f_interp(x)
    concrete = f.get_concrete_function(x)
    if concrete.tier != "compiled":
        raise RuntimeError(f"the chain did not compile (tier {concrete.tier!r}); the benchmark needs numba")
    graph_nodes = len(concrete.graph.nodes)
    for fn in (f, f_interp):  # the timed plan variants are generated on the first traced call: not measured
        for exact in (False, True):
            jf.summary.trace_on(exact_ops=exact)
            fn(x)
            jf.summary.trace_off()

    def traced(fn: Callable, exact: bool = False) -> Dict[str, float]:
        jf.summary.trace_on(graph=True, profiler=True, exact_ops=exact)
        try:
            return time_steady(lambda: fn(x), repeat=repeat, warmup=warmup).as_dict()
        finally:
            jf.summary.trace_off()

    rows: Dict[str, Any] = {}
    assert not instrument.enabled
    log("overhead: tracing off ...")
    rows["off"] = time_steady(lambda: f(x), repeat=repeat, warmup=warmup).as_dict()
    rows["off_interpreter"] = time_steady(lambda: f_interp(x), repeat=repeat, warmup=warmup).as_dict()
    rows["off_gc_mean_ns"] = mean_with_gc(lambda: f(x), gc_calls)
    log("overhead: tracing on ...")
    rows["on"] = traced(f)
    jf.summary.trace_on(graph=True, profiler=True)
    try:
        f(x)
        recorded = len(capture.active().runs[-1].outputs)
        fused = sum(len(seg.fused) for seg, *_ in capture.active().runs[-1].fusions)
    finally:
        jf.summary.trace_off()
    rows["on_exact_ops"] = traced(f, exact=True)
    rows["on_interpreter"] = traced(f_interp)
    jf.summary.trace_on(graph=True, profiler=True)
    try:  # a fresh trace that grows over gc_calls calls, collector on
        rows["on_gc_mean_ns"] = mean_with_gc(lambda: f(x), gc_calls)
    finally:
        jf.summary.trace_off()
    log("overhead: interleaved off/on blocks ...")
    rows["interleaved"] = interleaved(jf, lambda: f(x), rounds=max(5, repeat // 10))
    off, on = rows["off"]["median_ns"], rows["on"]["median_ns"]
    return {"n_ops": n_ops, "size": size, "graph_nodes": graph_nodes, "records_per_call": recorded,
            "fused_ops_per_call": fused, "gc_calls": gc_calls, **rows,
            "on_over_off": on / off, "exact_ops_over_off": rows["on_exact_ops"]["median_ns"] / off,
            "on_over_off_interpreter": rows["on_interpreter"]["median_ns"] / rows["off_interpreter"]["median_ns"],
            "on_over_off_gc": rows["on_gc_mean_ns"] / rows["off_gc_mean_ns"],
            "added_ns_per_call": on - off}


def measure_export(jf: Any, n_nodes: int, size: int, repeat: int,
                   log: Callable[[str], None]) -> Dict[str, Any]:
    from jitflow.tracer import capture, profile, run_metadata

    f = make_big_graph(jf, n_nodes)
    x = jf.constant(np.linspace(-1, 1, size, dtype=np.float32))
    f(x)
    jf.summary.trace_on()
    f(x)  # generate the timed plan variant once, outside what is measured
    jf.summary.trace_off()
    concrete = f.get_concrete_function(x)
    graph_nodes = len(concrete.graph.nodes)
    root = tempfile.mkdtemp(prefix="bench_tracer_")
    best: Dict[str, float] = {}
    sizes: Dict[str, int] = {}
    try:
        for i in range(repeat):
            log(f"export: run {i + 1}/{repeat} ...")
            logdir = os.path.join(root, f"run{i}")
            writer = jf.summary.create_file_writer(logdir)
            jf.summary.trace_on(graph=True, profiler=True)
            call_ns, _ = time_once(lambda: f(x))
            captured = capture.active()
            # Each exporter on its own, on the same capture (before trace_export ends it).
            rm_ns, meta = time_once(lambda: run_metadata.build(captured).SerializeToString())
            xs_ns, _ = time_once(lambda: profile.build_xspace(captured, "bench").SerializeToString())
            ct_ns, _ = time_once(lambda: gzip.compress(json.dumps(profile.chrome_trace(captured)).encode()))
            with writer.as_default():
                export_ns, written = time_once(lambda: jf.summary.trace_export("big", step=0, profiler_outdir=logdir))
            writer.close()
            if not written:
                raise RuntimeError("trace_export wrote nothing")
            for key, value in (("traced_call_ns", call_ns), ("run_metadata_ns", rm_ns), ("xspace_ns", xs_ns),
                               ("chrome_trace_ns", ct_ns), ("export_ns", export_ns)):
                best[key] = min(best.get(key, value), value)
            sizes = _sizes(logdir, "big")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"graph_nodes": graph_nodes, "size": size, "repeat": repeat, "times_ns": best, "bytes": sizes,
            "export_us_per_node": best["export_ns"] / 1000 / graph_nodes,
            "export_over_traced_call": best["export_ns"] / best["traced_call_ns"],
            "bytes_per_node": {k: v / graph_nodes for k, v in sizes.items()}}


def print_report(payload: Dict[str, Any], out=None) -> None:
    out = out or sys.stdout
    o, e = payload["overhead"], payload["export"]
    print(f"(a) per-call overhead on the compiled tier: {o['n_ops']}-op chain on {o['size']} float32 "
          f"({o['graph_nodes']} graph nodes; traced: {o['records_per_call']} record(s) per call, "
          f"{o['fused_ops_per_call']} ops fused)", file=out)
    def row(label: str, st: Dict[str, float], base: float) -> List[str]:
        return [label, format_ns(st["median_ns"]), format_ns(st["p10_ns"]), format_ns(st["p90_ns"]),
                format_ratio(st["median_ns"], base)]
    off = o["off"]["median_ns"]
    print_table(["tracing", "steady/call", "p10", "p90", "÷ compiled, off"], [
        row("compiled, off", o["off"], off),
        row("compiled, on (graph+profiler; per fused segment)", o["on"], off),
        row("compiled, on with exact_ops=True (interpreter, per op)", o["on_exact_ops"], off),
        row("interpreter plan (jit_compile=False), off", o["off_interpreter"], off),
        row("interpreter plan, on", o["on_interpreter"], off),
    ], out=out)
    print(f"with the garbage collector on (mean of {o['gc_calls']} calls, the trace growing): "
          f"off {format_ns(o['off_gc_mean_ns'])}, on {format_ns(o['on_gc_mean_ns'])} "
          f"({format_ratio(o['on_gc_mean_ns'], o['off_gc_mean_ns'])})", file=out)
    i = o["interleaved"]
    print(f"interleaved blocks (best of each): off {format_ns(i['off_ns'])}, on {format_ns(i['on_ns'])} "
          f"= {i['ratio']:.2f}x", file=out)
    print(f"tracing on adds {format_ns(o['added_ns_per_call'])} per call on the compiled tier", file=out)
    print(file=out)
    t, b = e["times_ns"], e["bytes"]
    print(f"(b) export of a {e['graph_nodes']}-node graph run once (best of {e['repeat']})", file=out)
    print_table(["step", "time", "÷ traced call"], [
        ["traced call", format_ns(t["traced_call_ns"]), "1x"],
        ["RunMetadata build+serialize", format_ns(t["run_metadata_ns"]),
         format_ratio(t["run_metadata_ns"], t["traced_call_ns"])],
        ["XSpace build+serialize", format_ns(t["xspace_ns"]), format_ratio(t["xspace_ns"], t["traced_call_ns"])],
        ["Chrome trace json+gzip", format_ns(t["chrome_trace_ns"]),
         format_ratio(t["chrome_trace_ns"], t["traced_call_ns"])],
        ["trace_export (all, to disk)", format_ns(t["export_ns"]), format_ratio(t["export_ns"], t["traced_call_ns"])],
    ], out=out)
    print_table(["file", "bytes", "bytes/node"], [
        ["RunMetadata (summary tensor)", f"{b['run_metadata']:,}", f"{b['run_metadata'] / e['graph_nodes']:.0f}"],
        ["event file", f"{b['event_file']:,}", f"{b['event_file'] / e['graph_nodes']:.0f}"],
        ["<host>.xplane.pb", f"{b['xplane_pb']:,}", f"{b['xplane_pb'] / e['graph_nodes']:.0f}"],
        ["<host>.trace.json.gz", f"{b['trace_json_gz']:,}", f"{b['trace_json_gz'] / e['graph_nodes']:.0f}"],
        ["  (trace.json uncompressed)", f"{b['trace_json']:,}", f"{b['trace_json'] / e['graph_nodes']:.0f}"],
    ], out=out)
    print(f"ratios: tracing on ÷ off = {o['on_over_off']:.2f}x per call on the compiled tier, "
          f"{o['interleaved']['ratio']:.2f}x interleaved (goal <= 1.5x; "
          f"exact_ops {o['exact_ops_over_off']:.2f}x, interpreter on ÷ off {o['on_over_off_interpreter']:.2f}x, "
          f"GC on {o['on_over_off_gc']:.2f}x); export = "
          f"{e['export_us_per_node']:.1f} µs/node = {e['export_over_traced_call']:.1f}x the traced call; "
          f"xplane.pb ÷ RunMetadata = {b['xplane_pb'] / b['run_metadata']:.2f}x, "
          f"trace.json.gz ÷ RunMetadata = {b['trace_json_gz'] / b['run_metadata']:.2f}x", file=out)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="bench_tracer", description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=None,
                    help="steady-state samples per row (default 200; 15 with --quick)")
    ap.add_argument("--warmup", type=int, default=20, help="warm-up calls before sampling (default 20)")
    ap.add_argument("--chain-ops", type=int, default=150, help="ops in the overhead chain (default 150)")
    ap.add_argument("--size", type=int, default=10, help="float32 values per input (default 10)")
    ap.add_argument("--nodes", type=int, default=1000, help="nodes in the exported graph (default 1000)")
    ap.add_argument("--gc-calls", type=int, default=None,
                    help="calls timed with the garbage collector on (default 2000; 200 with --quick)")
    ap.add_argument("--export-repeat", type=int, default=None,
                    help="exports timed, best kept (default 5; 1 with --quick)")
    ap.add_argument("--quick", action="store_true", help="smoke run: few samples, one export")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)
    if args.chain_ops < 1 or args.size < 1 or args.nodes < 2:
        ap.error("--chain-ops and --size must be >= 1, --nodes >= 2")
    repeat = args.repeat or (15 if args.quick else 200)
    export_repeat = args.export_repeat or (1 if args.quick else 5)
    gc_calls = args.gc_calls or (200 if args.quick else 2000)

    def log(msg: str) -> None:
        print(msg, file=sys.stderr)

    import jitflow as jf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # retrace/compile notices are not what is measured here
        overhead = measure_overhead(jf, args.chain_ops, args.size, repeat, args.warmup, gc_calls, log)
        export = measure_export(jf, args.nodes, args.size, export_repeat, log)
    payload = {"benchmark": "bench_tracer", "environment": environment(), "quick": args.quick,
               "overhead": overhead, "export": export}
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print_report(payload)
    if args.json:
        write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
