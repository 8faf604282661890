"""The panel's app factory: `create_app(logdir)`, blueprints, template helpers, safety headers."""
from __future__ import annotations

import os
from datetime import datetime
from typing import Any, Mapping, Optional, cast
from urllib.parse import urlencode

from flask import Flask, Response, jsonify, render_template, request
from flask.json.provider import DefaultJSONProvider
from werkzeug.exceptions import HTTPException, SecurityError

from . import charts, functions, hosts, inputs, profiles, runs, workers
from .data import EXTENSION, ROOT_TOKEN, RunConverter, tensorboard_base
from .logdir import Logdir

__all__ = ["create_app"]

# Pages are self-contained: no inline scripts or styles, nothing from other origins.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'")


def create_app(logdir: str | os.PathLike | None = None,
               test_config: Optional[Mapping[str, Any]] = None) -> Flask:
    """The panel for `logdir` as a Flask app.

    Config: LOGDIR (or the `logdir` argument, or $JITFLOW_LOGDIR); TENSORBOARD_PORT
    (default 6006: run pages link to TensorBoard on the host the browser used) or
    TENSORBOARD_URL (an explicit base URL); None for both hides the links. ALLOWED_HOSTS:
    the host names (besides IP literals) a request's Host header may name (webui/hosts.py;
    default: `localhost` only; None turns the DNS-rebinding check off).

    Example:
        >>> import tempfile
        >>> client = create_app(tempfile.mkdtemp()).test_client()
        >>> client.get("/api/runs").get_json()["runs"]
        []
    """
    app = Flask(__name__)
    app.config.from_mapping(
        LOGDIR=os.fspath(logdir) if logdir is not None else os.environ.get("JITFLOW_LOGDIR"),
        TENSORBOARD_PORT=6006,
        TENSORBOARD_URL=None,
        JSON_SORT_KEYS=False,
        ALLOWED_HOSTS=hosts.allowed_names("127.0.0.1"),
    )
    if test_config is not None:
        app.config.update(test_config)
    if not app.config["LOGDIR"]:
        raise ValueError("logdir: the panel needs a logdir (create_app(logdir), LOGDIR in the config, "
                         "or $JITFLOW_LOGDIR)")
    cast(DefaultJSONProvider, app.json).sort_keys = False  # Flask's default provider
    app.extensions[EXTENSION] = Logdir(app.config["LOGDIR"])
    app.url_map.converters["run"] = RunConverter

    app.register_blueprint(runs.bp)
    app.register_blueprint(functions.bp)
    app.register_blueprint(profiles.bp)
    app.register_blueprint(workers.bp)
    app.register_blueprint(inputs.bp)

    _register_template_helpers(app)
    _register_errors(app)

    @app.before_request
    def _check_host():
        names = app.config.get("ALLOWED_HOSTS")
        if names is not None and not hosts.host_allowed(request.headers.get("Host"), frozenset(names)):
            raise SecurityError(f"Host {request.headers.get('Host')!r} is not a name this panel answers to "
                                "(an IP address, localhost, or a name given with --allow-host)")

    @app.after_request
    def _security_headers(response):
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        return response

    return app


def _register_template_helpers(app: Flask) -> None:
    app.add_template_filter(charts.format_seconds, "seconds")
    app.add_template_filter(lambda us: charts.format_seconds(None if us is None else us / 1e6), "micros")
    app.add_template_filter(lambda x: "—" if x is None else f"{x:.1%}", "percent")
    app.add_template_filter(
        lambda t: "—" if not t else datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S"), "datetime")
    app.add_template_filter(lambda kind: charts.KIND_CLASS.get(kind, "k-other"), "kindclass")

    @app.context_processor
    def _globals():
        return {"logdir": app.extensions[EXTENSION].path, "tensorboard_base": tensorboard_base(),
                "root_token": ROOT_TOKEN}

    def sort_link(key: str, default_order: str = "desc") -> str:
        """Query string that sorts a table by `key` (toggling the order when already sorted by it)."""
        args = request.args.to_dict()
        current, order = args.get("sort", "total"), args.get("order", "desc")
        args["order"] = ("asc" if order == "desc" else "desc") if current == key else default_order
        args["sort"] = key
        return request.path + "?" + urlencode(sorted(args.items()))

    app.add_template_global(sort_link, "sort_link")


def _register_errors(app: Flask) -> None:
    @app.errorhandler(HTTPException)
    def _http_error(e: HTTPException):
        if isinstance(e, SecurityError):   # untrusted Host header: say no more than that
            return Response(f"{e.code} {e.name}: {e.description}\n", e.code, mimetype="text/plain")
        if request.path.startswith("/api/"):
            return jsonify({"error": e.description, "status": e.code}), e.code
        return render_template("error.html", error=e), e.code
