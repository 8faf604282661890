"""Fixtures for the tracer tests (readers and helpers live in tracer_testutil.py)."""
from __future__ import annotations

import pytest

import jitflow as jf
from jitflow.runtime.core import instrument
from jitflow.summary import context
from jitflow.tracer import capture, profiler


def _reset() -> None:
    context.set_global_writer(None)
    context.global_step = None
    context.tls.writer, context.tls.step, context.tls.record = None, context._UNSET, True
    if profiler._logdir is not None:
        profiler.stop(save=False)
    jf.summary.trace_off()


@pytest.fixture(autouse=True)
def _fresh_tracer():
    """No test sees another's trace, profiler, default writer or step."""
    _reset()
    yield
    _reset()
    assert not instrument.enabled and capture.active() is None
