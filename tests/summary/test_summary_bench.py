"""The summary benchmark runs end to end (a smoke run, not a measurement)."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "bench_summary.py")


@pytest.mark.slow
def test_bench_summary_smoke(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_summary", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # importing runs nothing
    out = tmp_path / "bench.json"
    assert bench.main(["--n", "3000", "--media-n", "10", "--repeat", "1", "--no-tf", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    results = report["results"]
    assert {"jitflow SummaryWriter", "tensorboardX SummaryWriter"} <= set(report["media"]["images"])
    assert {"jitflow SummaryWriter", "tensorboardX SummaryWriter"} <= set(report["media"]["histograms"])
    assert {"jitflow.summary.scalar", "jitflow SummaryWriter.add_scalar",
            "tensorboard.summary.Writer.add_scalar"} <= set(results)
    # Not a speed test (shared CI machines are noisy), only a sanity floor.
    assert results["jitflow.summary.scalar"]["x_tensorboard"] > 2
