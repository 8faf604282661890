"""Functions of a run and their traces: why each retrace happened, what it cost, and a
timeline. `/runs/<run>/functions`, `/runs/<run>/functions/<fn>` and their `/api/...` twins.
(`<fn>` is a path: a qualified name may hold anything, `/` included.)"""
from __future__ import annotations

from flask import Blueprint, abort, jsonify, render_template, url_for

from . import charts, model
from .data import get_run, sort_args, tensorboard_run_url

bp = Blueprint("functions", __name__)
TIMELINE_ROWS = 30


def functions_payload(run: str) -> dict:
    data = get_run(run)
    sort, order = sort_args(tuple(model.FUNCTION_SORTS), "cost")
    order = order or model.FUNCTION_SORTS[sort][2]
    fns = model.functions(data.records, sort, order)
    for fn in fns:
        fn["links"] = {"html": url_for("functions.detail", run=run, fn=fn["function"]),
                       "traces": url_for("functions.traces_json", run=run, fn=fn["function"])}
    return {"run": run, "errors": data.errors, "summary": model.run_summary(data), "functions": fns,
            "sort": sort, "order": order, "sorted_by": model.FUNCTION_SORTS[sort][0],
            "tensorboard": tensorboard_run_url(run)}


def function_payload(run: str, fn: str) -> dict:
    data = get_run(run)
    records = [r for r in data.records if r["function"] == fn]
    if not records:
        abort(404, description=f"no traces of a function named {fn!r} in run {run!r}")
    summary = model.summarize_function(fn, records)
    summary.pop("retrace_list")
    return {"run": run, "errors": data.errors, "function": summary,
            "traces": [model.trace_view(r) for r in records]}


@bp.get("/runs/<run:run>/functions")
def index(run: str):
    payload = functions_payload(run)
    rows = [{"label": f["function"], "href": f["links"]["html"],
             "traces": [model.trace_view(r) for r in get_run(run).records if r["function"] == f["function"]]}
            for f in payload["functions"][:TIMELINE_ROWS]]
    return render_template("functions.html", **payload, timeline=charts.timeline(rows) if rows else None,
                           hidden_rows=max(0, len(payload["functions"]) - TIMELINE_ROWS))


@bp.get("/runs/<run:run>/functions/<path:fn>")
def detail(run: str, fn: str):
    payload = function_payload(run, fn)
    traces = payload["traces"]
    timeline = charts.timeline([{"label": charts.plural(len(traces), "trace"), "traces": traces}], row_height=40)
    costs = charts.bars([{"label": f"#{t['trace_number']} {t['reason_label']}", "value": t["cost_seconds"],
                          "text": charts.format_seconds(t["cost_seconds"]), "title": t["reason"],
                          "cls": charts.KIND_CLASS.get(t["reason_kind"], "k-other")} for t in traces],
                        label_width=220)
    return render_template("function.html", **payload, timeline=timeline, costs=costs)


@bp.get("/api/runs/<run:run>/functions")
def index_json(run: str):
    return jsonify(functions_payload(run))


@bp.get("/api/runs/<run:run>/functions/<path:fn>/traces")
def traces_json(run: str, fn: str):
    return jsonify(function_payload(run, fn))
