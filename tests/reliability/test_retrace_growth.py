"""Issue #22 item 12: retracing costs the same after thousands of traces, and records stay small.

The cost of one retrace used to grow with the number of earlier traces (each retrace
diffed its key against every earlier trace), and a retrace reason quoted whole Python
values (4.3 M characters for a big list). Timings belong in benchmarks/ (see
benchmarks/retrace_cost.py); here the *work* per retrace is counted instead.
"""
import json

import jitflow as jf
from jitflow.runtime.tracing import trace_records, trace_types


def test_work_per_retrace_does_not_grow_with_earlier_traces(monkeypatch):
    f = jf.function(lambda x: x + 1)
    compared = []
    real = trace_types.diff_args

    def counting(names, old, new):
        compared.append(1)
        return real(names, old, new)

    monkeypatch.setattr(trace_types, "diff_args", counting)
    per_trace = []
    for n in range(300):
        before = len(compared)
        f(n)  # a new Python value: a retrace
        per_trace.append(len(compared) - before)
    assert f.experimental_get_tracing_count() == 300
    assert max(per_trace) <= trace_types.CLOSEST_WINDOW
    assert per_trace[-1] == per_trace[50]  # flat, not growing with the trace count


def test_reason_for_a_big_python_list_is_bounded():
    seen = []
    unsubscribe = jf.trace_records.subscribe(seen.append)
    try:
        f = jf.function(lambda xs: jf.constant(0.0))
        f(list(range(100_000)))
        f(list(range(1, 100_001)))
        f("x" * 5_000_000)
    finally:
        unsubscribe()
    assert len(seen) == 3
    for record in seen:
        size = len(json.dumps(record.to_dict()))
        assert size < 8_000, (size, record.reason[:200])
    assert "more elements changed" in seen[1].reason
    assert "characters" in seen[2].key


def test_changes_still_name_the_argument_and_values():
    seen = []
    unsubscribe = jf.trace_records.subscribe(seen.append)
    try:
        f = jf.function(lambda x, n: x * n)
        f(jf.constant(1.0), 2)
        f(jf.constant(1.0), 3)
    finally:
        unsubscribe()
    assert seen[-1].reason == "arg 'n': Python int 2 → 3"


def test_registry_keeps_a_bounded_number_of_records():
    assert trace_records.registry._records.maxlen == trace_records.MAX_RECORDS
