"""Safety: requests never reach outside the logdir, everything user-derived is escaped, and
a corrupt event file breaks only its own run."""
from __future__ import annotations

import os
import struct
from urllib.parse import quote

import pytest
from markupsafe import escape
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

from webui_testutil import XSS_ARG, XSS_FN
from jitflow.webui import create_app
from jitflow.webui.logdir import Logdir

TRAVERSALS = [
    "..", "../..", "train/..", "train/../..", "..%2F..%2Fetc", "..%2f..%2f..%2fetc%2fpasswd",
    "%2Fetc", "%2F", "/etc", "%2E%2E", "%2e%2e%2f%2e%2e", "train%2F..%2F..", "escape", "linked",
    "escape/..", "~root~/..", "....//....//etc", "%252E%252E%252Fetc",
]


@pytest.mark.parametrize("run", TRAVERSALS)
@pytest.mark.parametrize("page", ["/runs/{}/functions", "/api/runs/{}/functions", "/api/runs/{}",
                                  "/runs/{}/profiles", "/api/runs/{}/profiles",
                                  "/api/runs/{}/functions/f/traces", "/runs/{}/profiles/step_trace"])
def test_run_names_never_escape_the_logdir(client, run, page):
    # Werkzeug answers "//" with a redirect to the merged path; wherever it leads, it is a 404.
    resp = client.get(page.format(run), follow_redirects=True)
    assert resp.status_code == 404, (page.format(run), resp.status_code)


def test_absolute_and_relative_paths_to_outside_runs_are_404(client, logdir, outside_dir):
    secret = outside_dir / "secret_run"
    relative = os.path.relpath(secret, logdir)                 # ../outside0/secret_run
    assert relative.startswith("..")
    for name in (str(secret), relative, quote(str(secret), safe=""), quote(relative, safe="")):
        for url in (f"/api/runs/{name}/functions", f"/runs/{name}/functions", f"/api/runs/{name}"):
            assert client.get(url, follow_redirects=True).status_code == 404, url


def test_symlinks_out_of_the_logdir_are_not_runs(client, logdir):
    assert os.path.islink(logdir / "escape") and os.path.islink(logdir / "linked" / "events.out.tfevents.2.link")
    names = {r["run"] for r in client.get("/api/runs").get_json()["runs"]}
    assert "escape" not in names and "linked" not in names
    lookup = Logdir(logdir)
    assert lookup.run("escape") is None and lookup.run("linked") is None
    assert lookup.run("train") is not None


@pytest.mark.parametrize("url", ["/api/runs/train/profiles/..%2F..%2F..%2Fetc%2Fpasswd",
                                 "/api/runs/train/profiles/../../etc/passwd",
                                 "/api/runs/train/functions/..%2F..%2Fetc/traces"])
def test_tags_and_function_names_are_lookups_not_paths(client, url):
    assert client.get(url).status_code == 404


def test_symlinked_run_inside_the_logdir_is_allowed(tmp_path, logdir):
    # A link that stays inside the logdir is harmless: both directories are runs.
    root = tmp_path / "logs"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    src = next(p for p in (logdir / "train").iterdir() if "tfevents" in p.name)
    (root / "a" / src.name).write_bytes(src.read_bytes())
    os.symlink(root / "a" / src.name, root / "b" / src.name)
    assert sorted(Logdir(root).run_names()) == ["a", "b"]


# -- escaping -------------------------------------------------------------------------------
XSS_PAGES = ["/", "/runs/eval/xss/functions", "/runs/eval/xss/functions/" + quote(XSS_FN, safe="/"),
             "/runs/eval/xss/functions/takes_object"]


@pytest.mark.parametrize("url", XSS_PAGES)
def test_user_derived_text_is_escaped(client, url):
    resp = client.get(url)
    assert resp.status_code == 200
    page = resp.get_data(as_text=True)
    assert "<script>alert" not in page
    assert "<Weird" not in page


def test_escaped_reasons_and_names_are_shown(client):
    page = client.get("/runs/eval/xss/functions").get_data(as_text=True)
    assert str(escape(f"arg 'tag': Python str 'a' → '{XSS_ARG}'")) in page
    assert str(escape(XSS_FN)) in page
    assert "&lt;Weird at 0x" in page
    data = client.get("/api/runs/eval/xss/functions").get_json()       # JSON keeps the raw text
    reasons = {t["reason"] for fn in data["functions"] for t in fn["retrace_list"]}
    assert f"arg 'tag': Python str 'a' → '{XSS_ARG}'" in reasons


@pytest.mark.parametrize("url", ["/runs/<script>alert(3)</script>/functions",
                                 "/runs/train/profiles/step_trace?sort=<script>alert(4)</script>",
                                 "/runs/train/profiles/step_trace?order=\"><script>alert(5)</script>",
                                 "/runs/train/functions/<img src=x onerror=alert(6)>"])
def test_request_values_are_escaped_when_echoed(client, url):
    page = client.get(url).get_data(as_text=True)
    assert "<script>alert" not in page and "<img src=x" not in page


def test_loopback_panels_reject_foreign_host_headers(logdir):
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 must not read the panel.
    from jitflow.webui.server import allowed_hosts
    client = create_app(logdir, {"ALLOWED_HOSTS": allowed_hosts("127.0.0.1")}).test_client()
    for host in ("127.0.0.1:6007", "localhost:6007", "localhost", "[::1]:6007", "127.0.0.2"):
        assert client.get("/api/runs", headers={"Host": host}).status_code == 200, host
    for host in ("evil.example", "evil.example:6007", "127.0.0.1.evil.example", "localhost.evil.example",
                 "[::1", "127.0.0.1:99999", ""):
        assert client.get("/api/runs", headers={"Host": host}).status_code == 400, host
        assert client.get("/static/style.css", headers={"Host": host}).status_code == 400, host


def test_security_headers(client):
    for url in ("/", "/runs/train/functions", "/api/runs"):
        resp = client.get(url)
        csp = resp.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "default-src 'self'" in csp
        assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert client.get("/api/runs/eval/xss/functions").content_type == "application/json"


# -- corrupt event files --------------------------------------------------------------------
def test_corrupt_runs_report_errors_and_others_keep_working(client):
    runs = {r["run"]: r for r in client.get("/api/runs").get_json()["runs"]}
    assert "truncated" in runs["broken"]["errors"][0]
    assert "crc32" in runs["garbage"]["errors"][0]
    assert runs["broken"]["traces"] > 0                       # what could be read is shown
    for name in ("train", "eval/xss", "."):
        assert runs[name]["errors"] == []
    page = client.get("/").get_data(as_text=True)
    assert page.count('class="error-inline"') == 2
    for run in ("broken", "garbage"):
        resp = client.get(f"/runs/{run}/functions")
        assert resp.status_code == 200
        assert "could not be read completely" in resp.get_data(as_text=True)
    assert "could not be read completely" not in client.get("/runs/train/functions").get_data(as_text=True)
    assert client.get("/api/runs/broken/functions").get_json()["errors"]


def _record(payload: bytes) -> bytes:
    header = struct.pack("<Q", len(payload))
    return header + struct.pack("<I", masked_crc32c(header)) + payload + struct.pack("<I", masked_crc32c(payload))


def test_valid_frame_holding_no_event_is_an_error_for_that_run(tmp_path, logdir):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "events.out.tfevents.1.bad").write_bytes(_record(b"\xff\xff\xff not a proto"))
    (tmp_path / "good").mkdir()
    src = next(p for p in (logdir / "train").iterdir() if "tfevents" in p.name)
    (tmp_path / "good" / src.name).write_bytes(src.read_bytes())
    client = create_app(tmp_path).test_client()
    runs = {r["run"]: r for r in client.get("/api/runs").get_json()["runs"]}
    assert runs["bad"]["errors"] and "could not be read" in runs["bad"]["errors"][0]
    assert runs["good"]["errors"] == [] and runs["good"]["functions"] == 4
    assert client.get("/runs/bad/functions").status_code == 200


def test_an_unreadable_run_metadata_breaks_only_its_profile(tmp_path):
    import jitflow as jf
    from jitflow.summary import protos
    from tensorboard.compat.proto import summary_pb2
    w = jf.summary.create_file_writer(str(tmp_path / "run"))
    md = summary_pb2.SummaryMetadata()
    md.plugin_data.plugin_name = "graph_run_metadata"
    w._write_event(protos.summary_event("damaged", protos.string_tensor([b"\xff\xff\xff"], ()), md, 0, 1.0))
    w.close()
    client = create_app(tmp_path).test_client()
    assert client.get("/api/runs/run/profiles").get_json()["profiles"][0]["tag"] == "damaged"
    resp = client.get("/api/runs/run/profiles/damaged")
    assert resp.status_code == 422 and "could not be parsed" in resp.get_json()["error"]
    assert client.get("/runs/run/profiles/damaged").status_code == 422
    assert client.get("/").status_code == 200
