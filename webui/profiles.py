"""Op profiles of exported traces (`jf.summary.trace_export`): where time went, by op type
and by name scope, from the RunMetadata step stats. `/runs/<run>/profiles[/<tag>]`."""
from __future__ import annotations

from typing import Optional

from flask import Blueprint, abort, jsonify, render_template, request, url_for

from . import charts, model
from .data import get_run, sort_args

bp = Blueprint("profiles", __name__)
CHART_BARS = 15


def profiles_payload(run: str) -> dict:
    data = get_run(run)
    items = []
    for ref in data.profiles:
        item = model.profile_summary(ref)
        item["links"] = {"html": url_for("profiles.detail", run=run, tag=ref.tag, step=ref.step),
                         "api": url_for("profiles.detail_json", run=run, tag=ref.tag, step=ref.step)}
        items.append(item)
    return {"run": run, "errors": data.errors, "profiles": items}


def _step_arg() -> Optional[int]:
    raw = request.args.get("step")
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        abort(400, description=f"step must be an integer, got {raw!r}")


def profile_payload(run: str, tag: str) -> dict:
    data = get_run(run)
    sort, order = sort_args(model.SORT_KEYS, "total")
    ref = data.profile(tag, _step_arg())
    if ref is None:
        abort(404, description=f"no exported trace {tag!r} in run {run!r}")
    try:
        meta = data.run_metadata(ref)
    except Exception as e:  # noqa: BLE001 - a damaged RunMetadata breaks this page only
        abort(422, description=f"the RunMetadata of {tag!r} at step {ref.step} could not be parsed: {e}")
    profile = model.op_profile(meta, sort=sort, order=order or "desc")
    return {"run": run, "errors": data.errors, "profile": model.profile_summary(ref),
            "steps": [p.step for p in data.profiles if p.tag == tag], **profile}


@bp.get("/runs/<run:run>/profiles")
def index(run: str):
    return render_template("profiles.html", **profiles_payload(run))


@bp.get("/runs/<run:run>/profiles/<path:tag>")
def detail(run: str, tag: str):
    payload = profile_payload(run, tag)
    top = model.sort_rows(payload["by_op"], "total", "desc")[:CHART_BARS]
    chart = charts.bars([{"label": r["name"], "value": r["total_us"],
                          "text": f"{charts.format_seconds(r['total_us'] / 1e6)} · {r['share']:.0%}",
                          "title": f"{r['name']}: {r['count']} × mean {charts.format_seconds(r['mean_us'] / 1e6)}"}
                         for r in top]) if top else None
    return render_template("profile.html", **payload, chart=chart)


@bp.get("/api/runs/<run:run>/profiles")
def index_json(run: str):
    return jsonify(profiles_payload(run))


@bp.get("/api/runs/<run:run>/profiles/<path:tag>")
def detail_json(run: str, tag: str):
    return jsonify(profile_payload(run, tag))
