"""What the pages show, as plain JSON-ready dicts: one builder per page.

Every HTML page renders the dict its JSON twin returns (`/api/...`), so the API and the
pages cannot drift apart. Pure functions of `RunData` snapshots; no Flask here.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Dict, Iterable, List, Optional

from tensorboard.compat.proto import config_pb2

from jitflow.runtime.tracing import trace_records as _tr

from . import input_model
from .logdir import ProfileRef, RunData

WARN_TRACES = 5   # the runtime's RetraceWarning fires after 5 traces; flag those functions
# Traces that are the cost of retracing. Not: a first call, an explicit get_concrete_function,
# or the one extra trace after a first call that created variables (TF traces twice there
# too, and nothing the user changes avoids it).
RETRACE_KINDS = (_tr.RETRACE, _tr.NEW_FUNCTION_OBJECT)
REASON_LABELS = {
    _tr.FIRST_CALL: "first call",
    _tr.RETRACE: "retrace",
    _tr.NEW_FUNCTION_OBJECT: "new function object",
    _tr.SIGNATURE: "get_concrete_function",
    _tr.VARIABLE_LIFTING: "variable lifting",
}
SORT_KEYS = ("name", "count", "total", "mean", "share")
CHANGE_LABELS = {"value": "Python value changed", "type": "argument type changed", "dtype": "dtype changed",
                 "shape": "shape changed", "object": "new object each call", "structure": "structure changed"}


# -- functions and traces -------------------------------------------------------------------
def _cost(record: dict) -> float:
    return float(record.get("trace_seconds") or 0.0) + float(record.get("compile_seconds") or 0.0)


def trace_view(record: dict) -> dict:
    """One trace record as the pages show it."""
    kind = record.get("reason_kind", "")
    return {
        "function": record["function"], "function_id": record.get("function_id"),
        "trace_number": record.get("trace_number"), "step": record.get("step"),
        "wall_time": record.get("wall_time"), "timestamp": record.get("timestamp"),
        "reason_kind": kind, "reason_label": REASON_LABELS.get(kind, kind or "?"),
        "is_retrace": kind in RETRACE_KINDS,
        "reason": record.get("reason", ""),
        "changes": [{k: c.get(k, "") for k in ("path", "kind", "old", "new", "detail", "text")}
                    for c in record.get("changes", [])],
        "advice": record.get("advice", ""),
        "source": record.get("source", ""), "call_site": record.get("call_site", ""),
        "key": record.get("key", ""), "graph_name": record.get("graph_name", ""),
        "num_nodes": record.get("num_nodes", 0), "calls_so_far": record.get("calls_so_far", 0),
        "trace_seconds": float(record.get("trace_seconds") or 0.0),
        "compile_seconds": record.get("compile_seconds"),
        "cost_seconds": _cost(record),
    }


def _calls(records: List[dict]) -> Optional[int]:
    """Calls of the function, summed over its function objects: the count the writer last
    wrote (`jitflow/stats`, merged in as `calls_total`), else `calls_so_far` of the latest
    trace (a lower bound: calls after it were not recorded)."""
    latest: Dict[object, int] = {}
    for r in records:
        known = r.get("calls_total") or r.get("calls_so_far") or 0
        latest[r.get("function_id")] = max(latest.get(r.get("function_id"), 0), int(known))
    total = sum(latest.values())
    return total or None


def summarize_function(name: str, records: List[dict]) -> dict:
    traces = [trace_view(r) for r in records]
    retraces = [t for t in traces if t["is_retrace"]]
    compile_known = [t["compile_seconds"] for t in traces if t["compile_seconds"] is not None]
    reasons = Counter(c["kind"] for t in retraces for c in t["changes"]) or Counter(t["reason_kind"] for t in retraces)
    return {
        "function": name,
        "calls": _calls(records),
        "traces": len(traces),
        "retraces": len(retraces),
        "objects": len({r.get("function_id") for r in records}),
        "trace_seconds": sum(t["trace_seconds"] for t in traces),
        "compile_seconds": sum(compile_known) if compile_known else None,
        "cost_seconds": sum(t["cost_seconds"] for t in traces),
        "retrace_seconds": sum(t["cost_seconds"] for t in retraces),
        "warning": len(traces) >= WARN_TRACES,
        "sources": sorted({t["source"] for t in traces if t["source"]}),
        "top_reason": _top_reason(reasons),
        "first_wall_time": min((t["wall_time"] for t in traces), default=None),
        "last_wall_time": max((t["wall_time"] for t in traces), default=None),
        "retrace_list": retraces,
    }


def _top_reason(reasons: Counter) -> Optional[str]:
    if not reasons:
        return None
    kind, n = reasons.most_common(1)[0]
    label = CHANGE_LABELS.get(kind) or REASON_LABELS.get(kind, kind)
    return f"{label} ({n}×)"


# How the functions table can be sorted: key -> (what the page says, sort key, default order).
FUNCTION_SORTS = {
    "cost": ("cost (tracing + compiling)", lambda f: (f["cost_seconds"], f["traces"]), "desc"),
    "traces": ("traces", lambda f: (f["traces"], f["cost_seconds"]), "desc"),
    "retraces": ("retraces", lambda f: (f["retraces"], f["cost_seconds"]), "desc"),
    "calls": ("calls", lambda f: (f["calls"] or 0, f["cost_seconds"]), "desc"),
    "name": ("name", lambda f: f["function"], "asc"),
}


def functions(records: Iterable[dict], sort: str = "cost", order: Optional[str] = None) -> List[dict]:
    """Per function: calls, traces, time tracing and compiling, and its retraces; sorted by
    `sort` (a FUNCTION_SORTS key; costliest first by default)."""
    groups: Dict[str, List[dict]] = defaultdict(list)
    for r in records:
        groups[r["function"]].append(r)
    out = sorted((summarize_function(name, rs) for name, rs in groups.items()), key=lambda f: f["function"])
    _, key, default = FUNCTION_SORTS[sort]
    out.sort(key=key, reverse=(order or default) == "desc")
    return out


# -- runs -----------------------------------------------------------------------------------
def wall_seconds(records: Iterable[dict]) -> float:
    """Wall-clock time spent tracing: the union of the records' [end - cost, end] intervals.
    (Tracing a function that calls another jf.function traces both, nested: summing their
    costs would count the inner one twice.)"""
    spans = sorted((end - _cost(r), end) for r in records
                   for end in [r.get("timestamp") or r.get("wall_time")] if end is not None)
    total, cur_start, cur_end = 0.0, None, None
    for start, end in spans:
        if cur_end is None or start > cur_end:
            if cur_end is not None:
                total += cur_end - cur_start
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    if cur_end is not None:
        total += cur_end - cur_start
    return total


def run_summary(run: RunData) -> dict:
    fns = functions(run.records)
    return {
        "run": run.name,
        "errors": list(run.errors),
        "scalar_tags": list(run.scalar_tags),
        "functions": len(fns),
        "traces": sum(f["traces"] for f in fns),
        "retraces": sum(f["retraces"] for f in fns),
        "warnings": sum(1 for f in fns if f["warning"]),
        "trace_seconds": wall_seconds(run.records),
        "profiles": len(run.profiles),
        "input": input_model.brief(run.input_iterators),
        "last_step": run.last_step,
        "loaded_at": run.loaded_at,
    }


# -- op profiles ----------------------------------------------------------------------------
def profile_summary(ref: ProfileRef) -> dict:
    return {"tag": ref.tag, "step": ref.step, "wall_time": ref.wall_time, "plugin": ref.plugin,
            "has_step_stats": ref.has_step_stats}


def _op_types(meta: config_pb2.RunMetadata) -> Dict[str, str]:
    """Node name (as step stats name it) → op type, from the function graphs."""
    graphs = list(meta.function_graphs)
    types: Dict[str, str] = {}
    for i, fg in enumerate(graphs):
        prefix = "" if len(graphs) == 1 else f"graph_{i + 1}/"
        for node in fg.pre_optimization_graph.node:
            types[prefix + node.name] = node.op
    for graph in meta.partition_graphs:
        for node in graph.node:
            types.setdefault(node.name, node.op)
    return types


def _op_from_label(label: str) -> str:
    # "scope/name = OpType(inputs...)" (the timeline label step stats carry)
    if " = " in label:
        rhs = label.split(" = ", 1)[1]
        return rhs.split("(", 1)[0].strip() or "?"
    return "?"


def _node_micros(ns) -> float:
    if ns.all_end_rel_nanos:
        return ns.all_end_rel_nanos / 1000.0
    return float(ns.all_end_rel_micros)


def _table(totals: Dict[str, List[float]], grand: float) -> List[dict]:
    rows = []
    for name, (count, total) in totals.items():
        rows.append({"name": name, "count": int(count), "total_us": total,
                     "mean_us": total / count if count else 0.0,
                     "share": total / grand if grand else 0.0})
    return rows


def sort_rows(rows: List[dict], key: str = "total", order: str = "desc") -> List[dict]:
    key = key if key in SORT_KEYS else "total"
    field = {"name": "name", "count": "count", "total": "total_us", "mean": "mean_us", "share": "total_us"}[key]
    return sorted(rows, key=lambda r: (r[field], r["name"]) if key != "name" else r["name"],
                  reverse=(order != "asc"))


def op_profile(meta: config_pb2.RunMetadata, sort: str = "total", order: str = "desc",
               top_nodes: int = 50) -> dict:
    """Step stats of one exported trace, by op type, by name scope and by node."""
    types = _op_types(meta)
    by_op: Dict[str, List[float]] = defaultdict(lambda: [0, 0.0])
    by_scope: Dict[str, List[float]] = defaultdict(lambda: [0, 0.0])
    by_node: Dict[str, List[float]] = defaultdict(lambda: [0, 0.0])
    node_op: Dict[str, str] = {}
    devices = []
    grand = 0.0
    count = 0
    for dev in meta.step_stats.dev_stats:
        devices.append(dev.device)
        for ns in dev.node_stats:
            us = _node_micros(ns)
            op = types.get(ns.node_name) or _op_from_label(ns.timeline_label)
            scope = ns.node_name.rsplit("/", 1)[0] if "/" in ns.node_name else "(top level)"
            for table, key in ((by_op, op), (by_scope, scope), (by_node, ns.node_name)):
                table[key][0] += 1
                table[key][1] += us
            node_op[ns.node_name] = op
            grand += us
            count += 1
    nodes = _table(by_node, grand)
    for row in nodes:
        row["op"] = node_op[row["name"]]
    nodes = sort_rows(nodes, "total", "desc")[:top_nodes]
    return {
        "total_us": grand, "node_executions": count, "devices": devices,
        "graphs": len(meta.function_graphs),
        "sort": sort if sort in SORT_KEYS else "total", "order": "asc" if order == "asc" else "desc",
        "by_op": sort_rows(_table(by_op, grand), sort, order),
        "by_scope": sort_rows(_table(by_scope, grand), sort, order),
        "top_nodes": nodes,
    }
