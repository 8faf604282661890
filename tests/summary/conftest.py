"""Fixtures for the summary tests (helpers live in summary_testutil.py)."""

from __future__ import annotations

import pytest

from jitflow.summary import context


def _reset() -> None:
    context.set_global_writer(None)
    context.global_step = None
    context.tls.writer, context.tls.step, context.tls.record = None, context._UNSET, True


@pytest.fixture(autouse=True)
def _fresh_defaults():
    """Tests must not see each other's default writer, step or record_if."""
    _reset()
    yield
    _reset()
