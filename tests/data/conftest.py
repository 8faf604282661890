"""Fixtures for the input-pipeline tests: a small folder of generated JPEG/PNG images."""
from __future__ import annotations

import numpy as np
import pytest
from data_helpers import make_image


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
                arr = make_image(rng, h, w)
                fmt = "PNG" if i % 3 == 2 else "JPEG"
                # The seed calls decode_jpeg on every file; jitflow's decodes PNGs too.
                Image.fromarray(arr).save(d / f"{animal[:-1]}.{i}.{'png' if fmt == 'PNG' else 'jpg'}", format=fmt)
    return str(root)
