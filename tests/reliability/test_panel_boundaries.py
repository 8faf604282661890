"""Issue 22 item 9: the panel's boundaries.

- a symlinked event file inside a real run directory that leads out of the logdir is not read;
- the Host header is checked (DNS rebinding) for every --host, and in the TensorBoard tab;
- `--host 0.0.0.0` warns and prints a URL other machines can use;
- a run named `~root~` can be viewed (it is not the logdir itself);
- `?sort=bogus` is a 400, as webui/API.md says.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

import jitflow as jf
from jitflow.webui import create_app, serve_in_background
from jitflow.webui.server import allowed_hosts


def _traced_run(run_dir, fn_name: str) -> None:
    """A run directory holding the trace record of a function called `fn_name`."""
    writer = jf.summary.create_file_writer(str(run_dir))
    ns = {"jf": jf}
    exec(f"def {fn_name}(x):\n    return x + 1.0\n", ns)
    with writer.as_default():
        jf.function(ns[fn_name], autograph=False)(jf.constant(1.0))
    writer.close()


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("boundaries")
    outside = tmp_path_factory.mktemp("outside")
    _traced_run(root / "train", "public_fn")
    _traced_run(outside / "secret", "secret_fn")
    (secret_file,) = (outside / "secret").iterdir()
    os.symlink(secret_file, root / "train" / "events.out.tfevents.9999999999.zz.link")
    _traced_run(root / "~root~", "tilde_fn")
    _traced_run(root, "root_fn")
    return root


def test_symlinked_event_file_leading_out_of_the_logdir_is_not_read(logdir):
    client = create_app(logdir).test_client()
    text = json.dumps([client.get("/api/runs/train/functions").get_json(), client.get("/api/runs").get_json()])
    assert "public_fn" in text
    assert "secret_fn" not in text
    assert "secret_fn" not in client.get("/runs/train/functions").get_data(as_text=True)


def test_a_run_named_like_the_root_token_is_viewable(logdir):
    client = create_app(logdir).test_client()
    runs = {r["run"]: r for r in client.get("/api/runs").get_json()["runs"]}
    assert {".", "~root~", "train"} <= set(runs)
    tilde = client.get(runs["~root~"]["links"]["functions"])
    assert tilde.status_code == 200 and "tilde_fn" in tilde.get_data(as_text=True)
    root = client.get(runs["."]["links"]["functions"])
    assert root.status_code == 200 and "root_fn" in root.get_data(as_text=True)
    assert "tilde_fn" not in root.get_data(as_text=True)
    assert client.get("/api/runs/~~root~/functions").get_json()["run"] == "~root~"
    assert client.get("/api/runs/~root~/functions").get_json()["run"] == "."


@pytest.mark.parametrize("url", ["/api/runs/train/functions?sort=bogus", "/runs/train/functions?sort=bogus",
                                 "/api/runs/train/functions?order=sideways",
                                 "/api/runs/train/profiles/none?sort=bogus"])
def test_bad_sort_parameters_are_a_400(logdir, url):
    client = create_app(logdir).test_client()
    resp = client.get(url)
    assert resp.status_code == 400, resp.get_data(as_text=True)[:300]
    if url.startswith("/api/"):
        assert "expected" in resp.get_json()["error"]


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2", "::1", "0.0.0.0", "::", "192.0.2.7", "panel.lan"])
def test_every_bind_host_rejects_foreign_names(logdir, bind):
    client = create_app(logdir, {"ALLOWED_HOSTS": allowed_hosts(bind)}).test_client()
    for host in ("evil.example", "evil.example:6007", "127.0.0.1.evil.example"):
        assert client.get("/api/runs", headers={"Host": host}).status_code == 400, host
    for host in ("127.0.0.1:6007", "[::1]:6007", "localhost", "192.0.2.7"):
        assert client.get("/api/runs", headers={"Host": host}).status_code == 200, host
    if bind in ("0.0.0.0", "::", "192.0.2.7", "panel.lan"):
        assert client.get("/api/runs", headers={"Host": socket.gethostname()}).status_code == 200
    if bind == "panel.lan":
        assert client.get("/api/runs", headers={"Host": "panel.lan:6007"}).status_code == 200


def _status(url: str, host: str) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Host": host}), timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.parametrize("bind", ["127.0.0.2", "::1"])
def test_real_servers_on_other_loopback_addresses_check_the_host(logdir, bind):
    try:
        panel = serve_in_background(logdir, host=bind)
    except OSError as e:
        pytest.skip(f"cannot listen on {bind}: {e}")
    try:
        assert _status(panel.url + "api/runs", "evil.example") == 400
        assert _status(panel.url + "api/runs", panel.url.split("/")[2]) == 200
    finally:
        panel.stop()


def test_tensorboard_tab_checks_the_host(logdir):
    from tensorboard import program
    from tensorboard.backend import application
    from tensorboard.plugins.core import core_plugin
    from werkzeug.test import Client

    from jitflow.webui.plugin import JitflowPlugin
    tb = program.TensorBoard(plugins=[core_plugin.CorePluginLoader(), JitflowPlugin])
    tb.configure(logdir=str(logdir), load_fast="false")
    client = Client(application.TensorBoardWSGIApp(tb.flags, tb.plugin_loaders, None, tb.assets_zip_provider, None))
    url = "/data/plugin/jitflow/panel/api/runs"
    assert client.get(url, headers={"Host": "evil.example:6006"}).status_code == 400
    assert client.get("/data/plugin/jitflow/panel/", headers={"Host": "evil.example"}).status_code == 400
    assert client.get(url, headers={"Host": "localhost:6006"}).status_code == 200
    assert client.get(url, headers={"Host": "127.0.0.1:6006"}).status_code == 200


@pytest.mark.slow
def test_all_interfaces_warns_and_prints_a_usable_url(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "jitflow", "panel", "--logdir", str(tmp_path), "--host", "0.0.0.0",
                             "--port", "0", "--no-tensorboard"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith(f"jitflow panel: http://{socket.gethostname()}:"), line
        url = line.split()[-1]
        port = int(url.rsplit(":", 1)[1].strip("/"))
        assert _status(f"http://127.0.0.1:{port}/api/runs", f"127.0.0.1:{port}") == 200
        assert _status(f"http://127.0.0.1:{port}/api/runs", f"{socket.gethostname()}:{port}") == 200
        assert _status(f"http://127.0.0.1:{port}/api/runs", "evil.example") == 400
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "WARNING" in err and "every network interface" in err
