"""The data benchmark runs end to end (a smoke run, not a measurement)."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "bench_data.py")


@pytest.mark.slow
def test_bench_data_smoke(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_data", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # importing runs nothing
    out = tmp_path / "bench.json"
    assert bench.main(["--records", "300", "--images", "16", "--repeat", "1", "--no-tf", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    rates = payload["results"]["jitflow"]
    assert len(rates) == 5 and all(v > 0 for v in rates.values())
    assert set(payload["map_scaling_images_per_s"]) >= {"1"}
