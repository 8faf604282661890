"""The compiled-tier benchmark runs end to end (a smoke run, not a measurement)."""
from __future__ import annotations

import importlib.util
import json
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "bench_compiler.py")


@pytest.mark.slow
def test_bench_compiler_smoke(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JITFLOW_CACHE_DIR", str(tmp_path / "cache"))
    spec = importlib.util.spec_from_file_location("bench_compiler", BENCH)
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, bench)  # dataclasses look their module up
    spec.loader.exec_module(bench)  # importing runs nothing
    out = tmp_path / "bench.json"
    assert bench.main(["--quick", "--repeat", "3", "--warmup", "2", "--cases", "small,big", "--big-log2", "12",
                       "--no-tf", "--no-jax", "--no-second-process", "--json", str(out)]) == 0
    report = capsys.readouterr().out
    assert "jf compiled vs jf interpreter results: bit-identical" in report
    payload = json.loads(out.read_text())
    small = payload["cases"]["small"]
    assert small["jf_tiers_identical"] and small["results"]["jf compiled"]["tier"] == "compiled"
    assert all(row["ok"] for row in small["results"].values())
    assert payload["cases"]["big"]["results"]["np.copyto"]["gb_per_s"] > 0
