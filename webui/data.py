"""Request-side access to the logdir (flaskr's `db.py`): the app's `Logdir`, runs looked up
by name or 404, and links into TensorBoard."""
from __future__ import annotations

import re
from typing import Optional
from urllib.parse import quote, urlsplit

from flask import abort, current_app, g, request
from werkzeug.routing import PathConverter

from .logdir import ROOT_RUN, Logdir, RunData

EXTENSION = "jitflow_logdir"
# Browsers drop "." path segments, so the root run "." travels as this token in URLs.
ROOT_TOKEN = "~root~"


class RunConverter(PathConverter):
    """`<run:name>`: a run name, which may contain slashes; "." is spelled ROOT_TOKEN."""

    def to_python(self, value: str) -> str:
        return ROOT_RUN if value == ROOT_TOKEN else value

    def to_url(self, value: str) -> str:
        return ROOT_TOKEN if value == ROOT_RUN else super().to_url(value)


def get_logdir() -> Logdir:
    return current_app.extensions[EXTENSION]


def get_run(name: str) -> RunData:
    """The run called `name` (loaded at most once per request), or a 404."""
    cache = g.setdefault("jitflow_runs", {})
    if name not in cache:
        cache[name] = get_logdir().run(name)
    if cache[name] is None:
        abort(404, description=f"no run named {name!r} in this logdir")
    return cache[name]


def tensorboard_base() -> Optional[str]:
    """TensorBoard's URL: TensorBoard's own root when the panel is its plugin, else
    TENSORBOARD_URL, else this host at TENSORBOARD_PORT (None: no link)."""
    url = request.environ.get("jitflow.tensorboard_url") or current_app.config.get("TENSORBOARD_URL")
    if url:
        return url.rstrip("/") + "/"   # "/" when served inside TensorBoard: same origin
    port = current_app.config.get("TENSORBOARD_PORT")
    if not port:
        return None
    host = urlsplit(request.host_url).hostname or "127.0.0.1"
    if ":" in host:
        host = f"[{host}]"
    return f"{request.scheme}://{host}:{int(port)}/"


def tensorboard_run_url(run: str) -> Optional[str]:
    """TensorBoard's time series dashboard filtered to exactly this run."""
    base = tensorboard_base()
    if base is None:
        return None
    return f"{base}?runFilter={quote('^' + re.escape(run) + '$', safe='')}#timeseries"
