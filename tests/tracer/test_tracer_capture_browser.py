"""End to end in a real browser: TensorBoard's Profile tab in headless Chromium, the
CAPTURE PROFILE dialog filled with a running jitflow job's address, and the new session
shown by the page. Screenshots go to <repo>/artifacts/tracer/ (git-ignored)."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from servers import get, tensorboard
from test_tracer_capture import Worker, _plugin_ready

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "tracer"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_capture_profile_button_in_chromium(tmp_path):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    logdir = tmp_path / "logs"
    logdir.mkdir()
    worker = Worker()
    try:
        with tensorboard(str(logdir), _plugin_ready) as base, sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-quic"])
            try:
                page = browser.new_page(viewport={"width": 1366, "height": 900})
                # xprof's page asks Google's CDNs for chart and font scripts: refused here, so the
                # test makes no traffic beyond 127.0.0.1 (the capture does not need them).
                page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base)
                           or route.request.url.startswith("data:") else route.abort())
                page.goto(f"{base}/#profile")
                frame = _profile_frame(page)
                frame.get_by_text("CAPTURE PROFILE").click()
                address = frame.locator("input[placeholder^='localhost:6009']")
                address.wait_for(timeout=30_000)
                address.fill(worker.address)
                frame.locator("input[type=number]").first.fill("800")
                page.screenshot(path=str(ARTIFACTS / "capture_dialog.png"))
                with page.expect_response(lambda r: "/capture_profile" in r.url, timeout=120_000) as answer:
                    frame.get_by_role("button", name="CAPTURE", exact=True).click()
                body = answer.value.json()
                assert "error" not in body, body
                runs = []
                deadline = time.time() + 30
                while not runs and time.time() < deadline:
                    runs = json.loads(get(base, "/data/plugin/profile/runs"))
                    time.sleep(0.5)
                assert len(runs) == 1
                page.reload()  # the page lists the new run once reloaded (as its message says)
                frame = _profile_frame(page)
                shown = ""
                deadline = time.time() + 90
                host = f"localhost_{worker.port}"
                while not (runs[0] in shown and host in shown) and time.time() < deadline:
                    page.screenshot(path=str(ARTIFACTS / "captured_run.png"))
                    shown = frame.locator("body").inner_text()
                    time.sleep(0.5)
                assert runs[0] in shown and host in shown and "Overview Page" in shown, shown[:2000]
            finally:
                browser.close()
    finally:
        assert worker.close() > 0


def _profile_frame(page):
    """The Profile dashboard's frame. TensorBoard creates it from an animation frame, which a
    headless page only runs when it paints: a screenshot makes it paint."""
    deadline = time.time() + 60
    while time.time() < deadline:
        page.screenshot(path=str(ARTIFACTS / "loading.png"))
        for frame in page.frames:
            if "/data/plugin/profile" in frame.url and frame.get_by_text("CAPTURE PROFILE").count():
                return frame
        time.sleep(0.5)
    pytest.fail("the Profile tab never showed its CAPTURE PROFILE button")
