"""The panel as a TensorBoard dynamic plugin: a "jitflow" tab inside TensorBoard itself.

TensorBoard finds it through the `tensorboard_plugins` entry point group:

    [project.entry-points.tensorboard_plugins]
    jitflow = "jitflow.webui.plugin:JitflowPlugin"

The tab is an iframe (TensorBoard's `plugin_entry.html`) that loads `index.js` from this
plugin; `render()` sends the frame to the panel, which this plugin serves from the
same logdir under `/data/plugin/jitflow/panel/` (the whole Flask app, mounted there).
"""
from __future__ import annotations

from tensorboard.plugins import base_plugin
from werkzeug.wrappers import Response

from jitflow.summary.trace import RUN_METADATA_PLUGIN
from jitflow.summary.trace_records import PLUGIN_NAME as TRACE_PLUGIN

PLUGIN_NAME = "jitflow"
MOUNT = "/data/plugin/" + PLUGIN_NAME + "/panel"

INDEX_JS = """// jitflow panel tab: show the panel served by this plugin in TensorBoard's plugin frame.
export function render() {
  window.location.replace(new URL("panel/", document.baseURI).href);
}
"""


class _Mounted:
    """Serves a WSGI app below `MOUNT`: moves the mount point from PATH_INFO to SCRIPT_NAME,
    so the app's own routes and `url_for` links work unchanged under TensorBoard."""

    def __init__(self, app) -> None:
        self.app = app

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith(MOUNT):
            script = environ.get("SCRIPT_NAME", "")
            environ = dict(environ, SCRIPT_NAME=script + MOUNT, PATH_INFO=path[len(MOUNT):] or "/")
            environ["jitflow.tensorboard_url"] = (script or "") + "/"
        return self.app(environ, start_response)


class JitflowPlugin(base_plugin.TBPlugin):
    """Retraces and op profiles from jitflow trace records, as a TensorBoard tab."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        self._logdir = context.logdir
        self._app = None
        flags = context.flags
        # The Host check (webui/hosts.py) for the address TensorBoard listens on: TensorBoard
        # itself answers any Host header, the panel inside it does not (DNS rebinding).
        self._bind_host = ("0.0.0.0" if getattr(flags, "bind_all", False)
                           else (getattr(flags, "host", None) or "localhost"))

    def _panel(self):
        if self._app is None:
            from . import hosts  # lazy: the Flask panel loads only when the jitflow tab is opened
            from .app import create_app  # lazy: the Flask panel loads only when the jitflow tab is opened
            self._app = _Mounted(create_app(self._logdir, {
                "TENSORBOARD_PORT": None, "ALLOWED_HOSTS": hosts.allowed_names(self._bind_host)}))
        return self._app

    def _serve_panel(self, environ, start_response):
        if not self._logdir:
            return Response("the jitflow panel needs --logdir", status=404,
                            mimetype="text/plain")(environ, start_response)
        return self._panel()(environ, start_response)

    def _serve_index_js(self, environ, start_response):
        response = Response(INDEX_JS, mimetype="text/javascript")
        response.headers["X-Content-Type-Options"] = "nosniff"
        return response(environ, start_response)

    def get_plugin_apps(self):
        # TensorBoard routes ".../panel/" as ".../panel" (it strips a trailing slash): both.
        return {"/index.js": self._serve_index_js, "/panel": self._serve_panel, "/panel/*": self._serve_panel}

    def data_plugin_names(self):
        return (TRACE_PLUGIN, RUN_METADATA_PLUGIN)

    def is_active(self) -> bool:
        # Asked only when TensorBoard's data provider did not already find trace data.
        if not self._logdir:
            return False
        from .logdir import Logdir  # lazy: TensorBoard loads every plugin at start; read the logdir on demand
        try:
            return any(run.records or run.profiles for run in Logdir(self._logdir).runs())
        except OSError:
            return False

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name="jitflow",
                                            disable_reload=True)
