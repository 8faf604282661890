"""The runs overview: `/` and `/api/runs`."""
from __future__ import annotations

from flask import Blueprint, jsonify, redirect, render_template, url_for

from . import model
from .data import get_logdir, get_run, tensorboard_run_url

bp = Blueprint("runs", __name__)


def runs_payload() -> dict:
    logdir = get_logdir()
    runs = []
    for run in logdir.runs():
        summary = model.run_summary(run)
        summary["links"] = {
            "functions": url_for("functions.index", run=run.name),
            "profiles": url_for("profiles.index", run=run.name),
            "input": url_for("inputs.index", run=run.name),
            "api": url_for("runs.run_json", run=run.name),
            "tensorboard": tensorboard_run_url(run.name),
        }
        runs.append(summary)
    totals = {k: sum(r[k] for r in runs) for k in ("functions", "traces", "retraces", "warnings", "profiles")}
    totals["input_bound"] = sum(1 for r in runs if r["input"]["verdict"] in ("highly", "moderately"))
    return {"logdir": logdir.path, "runs": runs, "totals": totals,
            "runs_with_errors": sum(1 for r in runs if r["errors"])}


@bp.get("/")
def index():
    return render_template("runs.html", **runs_payload())


@bp.get("/runs/<run:run>/")
def run_page(run: str):
    get_run(run)
    return redirect(url_for("functions.index", run=run))


@bp.get("/api/runs")
def index_json():
    return jsonify(runs_payload())


@bp.get("/api/runs/<run:run>")
def run_json(run: str):
    data = get_run(run)
    summary = model.run_summary(data)
    summary["tags_by_plugin"] = data.tags_by_plugin
    summary["links"] = {"functions": url_for("functions.index_json", run=run),
                        "profiles": url_for("profiles.index_json", run=run),
                        "input": url_for("inputs.index_json", run=run),
                        "tensorboard": tensorboard_run_url(run)}
    return jsonify(summary)
