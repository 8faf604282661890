"""Was training input-bound? `/runs/<run>/input` and `/api/runs/<run>/input`: the share of
step time spent waiting for the `jf.data` pipeline, per iterator, with the fix to try."""
from __future__ import annotations

from flask import Blueprint, jsonify, render_template

from . import input_model
from .data import get_run

bp = Blueprint("inputs", __name__)


def input_payload(run: str) -> dict:
    data = get_run(run)
    return {"run": run, "errors": data.errors, **input_model.analysis(data.input_iterators)}


@bp.get("/runs/<run:run>/input")
def index(run: str):
    return render_template("input.html", **input_payload(run))


@bp.get("/api/runs/<run:run>/input")
def index_json(run: str):
    return jsonify(input_payload(run))
