"""End to end: the seed 002/004 retracing examples run in a fresh process with a writer, the
panel serves their logdir, and headless Chromium finds every retrace reason on the
functions page. Screenshots go to <repo>/artifacts/webui/ (git-ignored)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jitflow.webui import serve_in_background

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts" / "webui"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REASONS = ("arg 'num_steps': Python int 10 → 20", "arg 'x': dtype int32 → float32")


@pytest.fixture(scope="module")
def seed_logdir(tmp_path_factory) -> Path:
    logdir = tmp_path_factory.mktemp("seed_logdir")
    subprocess.run([sys.executable, str(Path(__file__).with_name("webui_seed.py")), str(logdir)],
                   check=True, capture_output=True, timeout=120)
    return logdir


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium chromium-driver)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        # A persistent context is the way to hand Chromium a fresh --user-data-dir.
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium_profile")), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1366, "height": 900})
        try:
            yield context
        finally:
            context.close()


def test_functions_page_in_chromium_shows_each_retrace_reason(seed_logdir, browser):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with serve_in_background(seed_logdir, TENSORBOARD_PORT=None) as panel:
        page = browser.new_page()
        problems = []
        page.on("console", lambda msg: msg.type == "error" and problems.append(msg.text))
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("request", lambda req: None if req.url.startswith(panel.url) else problems.append(req.url))

        page.goto(panel.url)
        link = page.locator("a", has_text="seed").first
        link.click()
        page.wait_for_url("**/runs/seed/functions")
        for reason in REASONS:
            change = page.locator("ul.changes code", has_text=reason)
            assert change.count() >= 1, reason
            assert change.first.is_visible()
        assert page.locator("svg.timeline rect.mark").count() == 5    # train ×2, f ×2, train_one_step
        assert page.evaluate("document.documentElement.classList.contains('js')")   # panel.js ran under the CSP
        shot = ARTIFACTS / "functions.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000

        # In-page sorting (progressive enhancement): a header click reorders rows without a reload.
        page.goto(panel.url + "runs/seed/functions")
        names = lambda: page.locator("#functions tbody tr td:first-child a").all_inner_texts()  # noqa: E731
        page.locator("#functions th[data-sort='name']").click()
        assert names() == sorted(names())
        assert page.url.endswith("/runs/seed/functions")

        page.goto(panel.url + "runs/seed/functions/train")
        assert page.locator("ul.changes code", has_text=REASONS[0]).count() == 1
        page.screenshot(path=str(ARTIFACTS / "function_train.png"), full_page=True)
        page.goto(panel.url)
        page.screenshot(path=str(ARTIFACTS / "runs.png"), full_page=True)
        page.close()
    assert problems == []
