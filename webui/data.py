"""Request-side access to the logdir (flaskr's `db.py`): the app's `Logdir`, runs looked up
by name or 404, and links into TensorBoard."""
from __future__ import annotations

import re
from typing import Optional, Tuple
from urllib.parse import quote, urlsplit

from flask import abort, current_app, g, request
from werkzeug.routing import PathConverter

from .logdir import ROOT_RUN, Logdir, RunData

EXTENSION = "jitflow_logdir"
# Browsers drop "." path segments, so the root run "." travels as this token in URLs.
ROOT_TOKEN = "~root~"


class RunConverter(PathConverter):
    """`<run:name>`: a run name, which may contain slashes; "." is spelled ROOT_TOKEN, and a
    name that itself starts with "~" (a directory called `~root~`, say) gets one more "~"
    in front, so every run has exactly one URL."""

    def to_python(self, value: str) -> str:
        if value == ROOT_TOKEN:
            return ROOT_RUN
        return value[1:] if value.startswith("~~") else value

    def to_url(self, value: str) -> str:
        if value == ROOT_RUN:
            return ROOT_TOKEN
        return super().to_url("~" + value if value.startswith("~") else value)


ORDERS = ("asc", "desc")


def sort_args(allowed, default: str) -> Tuple[str, Optional[str]]:
    """`?sort=KEY&order=asc|desc` of this request, checked: a key outside `allowed` or
    another order is a 400 naming what is accepted. The order is None when not given."""
    sort = request.args.get("sort", default)
    order = request.args.get("order")
    if sort not in allowed:
        abort(400, description=f"sort: expected one of {', '.join(allowed)}; got {sort!r}")
    if order is not None and order not in ORDERS:
        abort(400, description=f"order: expected asc or desc; got {order!r}")
    return sort, order


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
