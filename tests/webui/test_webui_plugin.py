"""The panel as a TensorBoard dynamic plugin, inside TensorBoard's own WSGI app."""
from __future__ import annotations

import pytest
from tensorboard import program
from tensorboard.backend import application
from tensorboard.plugins.core import core_plugin
from werkzeug.test import Client

from jitflow.webui.plugin import JitflowPlugin


@pytest.fixture(scope="module")
def tensorboard(logdir):
    tb = program.TensorBoard(plugins=[core_plugin.CorePluginLoader(), JitflowPlugin])
    tb.configure(logdir=str(logdir), load_fast="false")
    app = application.TensorBoardWSGIApp(tb.flags, tb.plugin_loaders, None, tb.assets_zip_provider, None)
    return Client(app)


def test_plugin_is_listed_as_an_iframe_tab(tensorboard):
    listing = tensorboard.get("/data/plugins_listing").get_json()
    assert listing["jitflow"]["enabled"] is True
    assert listing["jitflow"]["tab_name"] == "jitflow"
    assert listing["jitflow"]["loading_mechanism"] == {"type": "IFRAME", "module_path": "/data/plugin/jitflow/index.js"}
    entry = tensorboard.get("/data/plugin_entry.html?name=jitflow").get_data(as_text=True)
    assert "./index.js" in entry


def test_index_js_sends_the_frame_to_the_panel(tensorboard):
    resp = tensorboard.get("/data/plugin/jitflow/index.js")
    assert resp.status_code == 200 and "javascript" in resp.content_type
    assert "export function render()" in resp.get_data(as_text=True)
    assert 'new URL("panel/", document.baseURI)' in resp.get_data(as_text=True)


def test_panel_pages_are_served_under_the_plugin_route(tensorboard):
    page = tensorboard.get("/data/plugin/jitflow/panel/").get_data(as_text=True)
    assert 'href="/data/plugin/jitflow/panel/runs/train/functions"' in page
    assert 'href="/data/plugin/jitflow/panel/static/style.css"' in page
    assert 'href="/?runFilter=%5Etrain%24#timeseries"' in page          # TensorBoard itself, same origin
    resp = tensorboard.get("/data/plugin/jitflow/panel/runs/train/functions")
    assert resp.status_code == 200 and "Python int 10 → 20" in resp.get_data(as_text=True)
    data = tensorboard.get("/data/plugin/jitflow/panel/api/runs/train/functions").get_json()
    assert {f["function"] for f in data["functions"]} == {"f", "train", "noisy", "model"}
    assert tensorboard.get("/data/plugin/jitflow/panel/static/style.css").status_code == 200
    assert tensorboard.get("/data/plugin/jitflow/panel/runs/..%2F..%2Fetc/functions").status_code == 404


def test_inactive_without_jitflow_data(tmp_path):
    from tensorboard.plugins import base_plugin
    assert JitflowPlugin(base_plugin.TBContext(logdir=str(tmp_path))).is_active() is False
    assert JitflowPlugin(base_plugin.TBContext(logdir="")).is_active() is False


def test_entry_point_when_registered():
    from importlib.metadata import entry_points
    found = [ep for ep in entry_points(group="tensorboard_plugins") if ep.name == "jitflow"]
    if not found:
        pytest.skip("no `jitflow` entry point in [project.entry-points.tensorboard_plugins] (yet)")
    assert found[0].load() is JitflowPlugin
