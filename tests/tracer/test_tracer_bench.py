"""The tracer benchmark runs end to end (a smoke run, not a measurement)."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "bench_tracer.py")


@pytest.mark.slow
def test_bench_tracer_smoke(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_tracer", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # importing runs nothing
    out = tmp_path / "bench.json"
    assert bench.main(["--quick", "--repeat", "3", "--warmup", "2", "--gc-calls", "20", "--nodes", "200",
                       "--json", str(out)]) == 0
    report = capsys.readouterr().out
    assert "tracing on ÷ off" in report and "xplane.pb" in report
    payload = json.loads(out.read_text())
    o, e = payload["overhead"], payload["export"]
    assert o["n_ops"] == 150 and o["fused_ops_per_call"] >= 150 and 1 <= o["records_per_call"] < 150
    assert o["on_over_off"] > 0 and o["off"]["median_ns"] > 0 and o["on_gc_mean_ns"] > 0
    assert o["exact_ops_over_off"] > 0 and o["on_interpreter"]["median_ns"] > 0
    assert e["graph_nodes"] == 200
    assert all(e["bytes"][k] > 0 for k in ("run_metadata", "xplane_pb", "trace_json_gz"))
    # Not a speed test; only that each file scales with the graph (> 20 bytes per node).
    assert e["bytes"]["run_metadata"] > 20 * 200 and e["bytes"]["xplane_pb"] > 20 * 200
