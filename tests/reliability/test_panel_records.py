"""Issue 22 item 3: one malformed trace record must not take the panel down.

Each field of a trace record gets a wrong-typed value in its own run, beside a good record;
every page and API answers 200, the good record is still shown, and the bad one is dropped
and named in the run's `errors` (webui/API.md's promise for damaged runs).
"""
from __future__ import annotations

import json
import time

import pytest

import jitflow as jf
from jitflow.summary import protos
from jitflow.summary import trace_records as tr
from jitflow.webui import create_app

GOOD = {"function": "good_fn", "function_id": 1, "source": "a.py:1", "call_site": "a.py:9 in main",
        "key": "(x: float32[])", "trace_number": 1, "trace_seconds": 0.01, "compile_seconds": None,
        "reason_kind": "first_call", "reason": "first call", "changes": [], "advice": "",
        "graph_name": "__inference_good_1", "num_nodes": 3, "calls_so_far": 1, "timestamp": time.time()}

BAD_VALUES = {
    "function": [3, "", None, ["f"]],
    "function_id": ["7", 1.5, True],
    "source": [5, ["a"]],
    "call_site": [{"a": 1}],
    "key": [1],
    "trace_number": ["2", -1, [1], 2.5],
    "trace_seconds": ["0.1", [0.1], -1.0, None, {"s": 1}],
    "compile_seconds": ["1", [1]],
    "reason_kind": [4],
    "reason": [["x"]],
    "changes": ["abc", [1, 2], [{"path": ["x"]}], {"a": 1}],
    "advice": [7],
    "graph_name": [3],
    "num_nodes": ["9", -3],
    "calls_so_far": ["5", [5], -2, 1.5, None],
    "timestamp": ["yesterday", [1], {"t": 1}],
}
CASES = [(field, value) for field, values in BAD_VALUES.items() for value in values]
PAGES = ["/", "/api/runs", "/api/runs/r", "/runs/r/functions", "/api/runs/r/functions",
         "/runs/r/functions/good_fn", "/api/runs/r/functions/good_fn/traces", "/runs/r/profiles"]


def _write(writer, payload: bytes, step: int, tag: str = "jitflow/trace/x", plugin: str = tr.PLUGIN_NAME) -> None:
    writer._write_event(protos.summary_event(tag, protos.string_tensor([payload], ()),
                                             tr._metadata(plugin), step, time.time()))


def _logdir(root, bad_payloads, stats=None):
    writer = jf.summary.create_file_writer(str(root / "r"))
    _write(writer, json.dumps(GOOD).encode(), 1, "jitflow/trace/good_fn")
    for i, payload in enumerate(bad_payloads):
        _write(writer, payload, 2 + i)
    for i, payload in enumerate(stats or []):
        _write(writer, payload, 10 + i, tr.STATS_TAG, tr.STATS_PLUGIN)
    writer.close()
    return root


@pytest.mark.parametrize("field,value", CASES, ids=[f"{f}={v!r}" for f, v in CASES])
def test_a_wrong_typed_field_drops_only_its_record(tmp_path, field, value):
    bad = dict(GOOD, function="bad_fn")
    bad[field] = value
    client = create_app(_logdir(tmp_path, [json.dumps(bad).encode()])).test_client()
    for page in PAGES:
        resp = client.get(page)
        assert resp.status_code == 200, (page, resp.get_data(as_text=True)[:500])
    data = client.get("/api/runs/r/functions").get_json()
    assert [f["function"] for f in data["functions"]] == ["good_fn"]
    assert len(data["errors"]) == 1 and f"field {field!r}" in data["errors"][0], data["errors"]
    assert client.get("/api/runs").get_json()["runs"][0]["errors"] == data["errors"]


def test_unreadable_payloads_are_reported_not_fatal(tmp_path):
    payloads = [b"not json", b"\xff\xfe", b"[1, 2]", b"42", b'"str"', b"null", json.dumps({"x": 1}).encode()]
    client = create_app(_logdir(tmp_path, payloads)).test_client()
    for page in PAGES:
        assert client.get(page).status_code == 200, page
    data = client.get("/api/runs/r/functions").get_json()
    assert [f["function"] for f in data["functions"]] == ["good_fn"]
    assert len(data["errors"]) == len(payloads)
    assert all("dropped a trace record" in e for e in data["errors"])


def test_malformed_call_statistics_are_dropped_and_reported(tmp_path):
    stats = [b"garbage", json.dumps({"calls": "many"}).encode(),
             json.dumps({"calls": [{"function": "good_fn", "function_id": 1, "calls": "9"}],
                         "compiles": [{"graph_name": "__inference_good_1", "compile_seconds": "fast"}]}).encode(),
             json.dumps({"calls": [{"function": "good_fn", "function_id": 1, "calls": 40}],
                         "compiles": [{"graph_name": "__inference_good_1", "compile_seconds": 0.5}]}).encode()]
    client = create_app(_logdir(tmp_path, [], stats)).test_client()
    for page in PAGES:
        assert client.get(page).status_code == 200, page
    data = client.get("/api/runs/r/functions").get_json()
    (fn,) = data["functions"]
    assert (fn["calls"], fn["compile_seconds"]) == (40, 0.5)       # the good statistics still count
    assert len(data["errors"]) == 4, data["errors"]
