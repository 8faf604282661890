"""The workers of multi-worker jobs side by side, with stragglers and divergent retraces
flagged: `/workers` and `/api/workers` (the logic is in `job_model`)."""
from __future__ import annotations

import os

from flask import Blueprint, jsonify, render_template, url_for

from . import job_model
from .data import get_logdir

bp = Blueprint("workers", __name__)


def workers_payload() -> dict:
    logdir = get_logdir()
    jobs = []
    for job, workers in sorted(job_model.worker_runs(logdir.runs()).items()):
        job_dir = logdir.path if job == "." else os.path.join(logdir.path, *job.split("/"))
        view = job_model.job_view(job, job_dir, workers)
        for row in view["workers"]:
            row["links"] = {"functions": url_for("functions.index", run=row["run"]) if row["run"] else None}
        jobs.append(view)
    return {"logdir": logdir.path, "jobs": jobs, "flags": [dict(f, job=j["job"]) for j in jobs for f in j["flags"]],
            "straggler_ratio": job_model.STRAGGLER_RATIO}


@bp.get("/workers")
def index():
    return render_template("workers.html", **workers_payload())


@bp.get("/api/workers")
def index_json():
    return jsonify(workers_payload())
