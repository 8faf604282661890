"""Helpers shared by the input-pipeline tests: generated images and their encodings."""
from __future__ import annotations

import io

import numpy as np


def make_image(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Smooth gradients plus a little noise: JPEG round trips stay close, unlike pure noise."""
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([(x * 255 // max(w - 1, 1)), (y * 255 // max(h - 1, 1)), ((x + y) * 127 // max(h + w - 2, 1))], -1)
    return np.clip(base + rng.integers(-8, 9, base.shape), 0, 255).astype(np.uint8)


def gradient_image(h: int = 30, w: int = 40, seed: int = 0) -> np.ndarray:
    return make_image(np.random.default_rng(seed), h, w)


def encode(arr: np.ndarray, fmt: str, **kw) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()
