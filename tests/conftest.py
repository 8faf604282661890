"""Shared test setup: this folder is on sys.path, so test modules can import `servers`."""

import pytest


@pytest.fixture(autouse=True)
def _trace_records_stay_in_their_test():
    """Trace records made while no summary writer is the default wait for the first writer
    that becomes one (summary/trace_records.py). In a test session that would be another
    test's writer: start every test with none waiting."""
    from jitflow.summary import trace_records
    trace_records.clear_pending()
    yield
