"""TensorBoard's own dashboards show what jitflow's SummaryWriter wrote: a real
`tensorboard --logdir` on 127.0.0.1 and headless Chromium open the HParams,
Projector, PR curves, Custom Scalars, Images, Audio and Mesh dashboards and find
the data on the page. Screenshots are kept under artifacts/dashboards/."""

from __future__ import annotations

import io
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import jitflow.summary as s
from servers import tensorboard, fetch

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "dashboards"
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
               "--disable-component-update", "--no-first-run"]
TIMEOUT_MS = 60_000
# All text of the page in document order, through shadow roots (Polymer), skipping styles.
_ALL_TEXT = """b => { const out = []; const walk = n => {
    if (n.nodeType === 3) { out.push(n.textContent); return; }
    if (n.nodeName === 'STYLE' || n.nodeName === 'SCRIPT') return;
    if (n.shadowRoot) walk(n.shadowRoot);
    for (const c of n.childNodes) walk(c); };
  walk(b); return out.join(' ').replace(/\\s+/g, ' '); }"""


def _write(root: str) -> None:
    rng = np.random.default_rng(0)
    with s.SummaryWriter(os.path.join(root, "run1")) as w:
        for step in range(5):
            w.add_scalar("loss/train", 1.0 / (step + 1), step)
            w.add_scalar("loss/val", 1.2 / (step + 1), step)
        w.add_image("sample_image", rng.random((3, 32, 48)), 0)
        w.add_audio("sample_tone", 0.5 * np.sin(np.arange(8000) / 5.0), 0, sample_rate=8000)
        w.add_pr_curve("sample_pr", rng.integers(0, 2, 100), rng.random(100), 0)
        w.add_custom_scalars({"Losses": {"train_vs_val": ["Multiline", ["loss/train", "loss/val"]]}})
        verts = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]]], np.float32)
        w.add_mesh("sample_mesh", verts, colors=np.full((1, 4, 3), 200, np.uint8),
                   faces=np.array([[[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]]), global_step=0)
        w.add_embedding(rng.normal(size=(20, 5)), metadata=[f"point{i}" for i in range(20)],
                        label_img=rng.random((20, 3, 8, 8)), global_step=0, tag="sample_embedding")
        for i, (lr, opt) in enumerate([(0.01, "adam"), (0.1, "sgd")]):
            w.add_hparams({"learning_rate": lr, "optimizer": opt}, {"hparam/accuracy": 0.7 + i / 10},
                          run_name=f"trial{i}")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    sync_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip("no Chromium at /usr/bin/chromium (apt-get install chromium)")
    root = str(tmp_path_factory.mktemp("dashboards"))
    _write(root)
    ready = lambda base: b"run1" in fetch(base + "/data/runs")  # noqa: E731
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with tensorboard(root, ready) as base, sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 900})
            pg.set_default_timeout(TIMEOUT_MS)
            pg.base = base
            yield pg
        finally:
            browser.close()


def _open(page, plugin: str) -> None:
    page.goto(f"{page.base}/#{plugin}")


def _shot(page, plugin: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{plugin}.png"))


def test_hparams_dashboard_lists_both_trials(page):
    _open(page, "hparams")
    for text in ["run1/trial0", "run1/trial1", "sgd", "adam", "learning_rate"]:
        page.get_by_text(text, exact=True).first.wait_for()
    page.get_by_text("hparam/accuracy").first.wait_for()
    _shot(page, "hparams")
    page.get_by_text("PARALLEL COORDINATES VIEW").first.click()
    lines = page.locator("svg .foreground path")
    page.locator("svg g.axis").nth(2).wait_for()  # learning_rate, optimizer, hparam/accuracy
    axis_text = page.locator("svg g.axis text").all_text_contents()
    assert {"learning_rate", "adam", "sgd"} <= set(axis_text), axis_text
    assert lines.count() == 2  # one polyline per trial
    _shot(page, "hparams_parallel_coordinates")


def test_projector_loads_points_labels_and_sprites(page):
    _open(page, "projector")
    # TensorBoard loads the projector in plugin_entry.html, which loads projector_binary.html.
    frame = page.frame_locator("iframe").frame_locator("iframe")
    frame.get_by_text("1 tensor found").first.wait_for()
    frame.get_by_text(re.compile(r"Total variance described")).first.wait_for()  # PCA ran on the points
    frame.get_by_text("metadata.tsv").first.wait_for(state="attached")  # the data panel names the labels file
    counts = frame.locator("body").evaluate(_ALL_TEXT)
    assert re.search(r"Points:\s*20\b", counts) and re.search(r"Dimension:\s*5\b", counts), counts[:500]
    _shot(page, "projector")


def test_pr_curves_dashboard_draws_the_curve(page):
    _open(page, "pr_curves")
    page.get_by_text("sample_pr", exact=True).first.wait_for()
    page.get_by_text("is at", exact=False).first.wait_for()  # "run1 is at step 0": a curve was loaded
    _shot(page, "pr_curves")


def test_custom_scalars_dashboard_uses_the_layout(page):
    _open(page, "custom_scalars")
    page.get_by_text("Losses", exact=True).first.wait_for()
    page.get_by_text("train_vs_val", exact=True).first.wait_for()
    page.get_by_text("Matches (2)").first.wait_for()  # both regexes found their scalars
    _shot(page, "custom_scalars")


def test_images_dashboard_shows_the_png(page):
    _open(page, "images")
    page.get_by_text("sample_image", exact=True).first.wait_for()
    img = page.locator("img[src*='individualImage']").first
    img.wait_for()
    page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=img.element_handle())
    assert img.evaluate("el => [el.naturalWidth, el.naturalHeight]") == [48, 32]
    _shot(page, "images")


def test_audio_dashboard_plays_one_second(page):
    _open(page, "audio")
    page.get_by_text("sample_tone", exact=True).first.wait_for()
    audio = page.locator("audio").first
    audio.wait_for(state="attached")
    page.wait_for_function("el => el.readyState >= 1 && isFinite(el.duration)", arg=audio.element_handle())
    assert audio.evaluate("el => el.duration") == pytest.approx(1.0, abs=0.01)  # 8000 frames at 8 kHz
    _shot(page, "audio")


def test_mesh_dashboard_renders_the_mesh(page):
    Image = pytest.importorskip("PIL.Image")
    _open(page, "mesh")
    canvas = page.locator("canvas >> visible=true").first
    canvas.wait_for()
    page.wait_for_timeout(2000)  # let three.js draw a frame
    pixels = np.asarray(Image.open(io.BytesIO(canvas.screenshot())).convert("RGB")).reshape(-1, 3)
    grey = (np.abs(pixels.astype(int) - pixels.mean(axis=1, keepdims=True)).max(axis=1) < 8) & \
           (pixels.mean(axis=1) > 60) & (pixels.mean(axis=1) < 230)
    assert grey.mean() > 0.05, "no shaded mesh surface on the canvas"
    _shot(page, "mesh")
