"""Fixtures for the input-pipeline tests: a small folder of generated JPEG/PNG images."""
from __future__ import annotations

import io

import numpy as np
import pytest


def _image(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    # Smooth gradients plus noise: JPEG round trips stay close, unlike pure noise.
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 127 // max(h + w - 2, 1))], -1)
    return np.clip(base + rng.integers(-8, 9, base.shape), 0, 255).astype(np.uint8)


@pytest.fixture(scope="session")
def cats_vs_dogs(tmp_path_factory):
    """The seed's folder layout: train/cats/*.jpg, train/dogs/*.jpg (+ a few PNGs), valid/..."""
    from PIL import Image

    root = tmp_path_factory.mktemp("cats_vs_dogs")
    rng = np.random.default_rng(0)
    for split, n in (("train", 6), ("valid", 2)):
        for animal in ("cats", "dogs"):
            d = root / split / animal
            d.mkdir(parents=True)
            for i in range(n):
                h, w = int(rng.integers(24, 40)), int(rng.integers(24, 40))
                arr = _image(rng, h, w)
                fmt = "PNG" if i % 3 == 2 else "JPEG"
                # decode_jpeg decodes PNGs too in TF; the seed calls it on every file.
                Image.fromarray(arr).save(d / f"{animal[:-1]}.{i}.{'png' if fmt == 'PNG' else 'jpg'}", format=fmt)
    return str(root)


def encode(arr: np.ndarray, fmt: str, **kw) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()


@pytest.fixture
def image_rng():
    return np.random.default_rng(1)


def gradient_image(h: int = 30, w: int = 40, seed: int = 0) -> np.ndarray:
    return _image(np.random.default_rng(seed), h, w)


