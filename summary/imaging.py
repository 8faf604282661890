"""Image checks and layout conversions for the two writer front ends.

TF style (`image`): a rank-4 NHWC batch, uint8 or float in [0, 1]; floats are
converted as `tf.image.convert_image_dtype(..., tf.uint8, saturate=True)` does
(x * 255.5, clipped, truncated). PyTorch style (`add_image(s)`): any layout
named by `dataformats`, turned into one HWC picture (a grid for batches, grey
expanded to RGB) and floats scaled by 255, as `torch.utils.tensorboard` does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from jitflow.summary.values import as_numpy, describe


def _check_dtype(a: np.ndarray, name: str) -> None:
    if a.dtype != np.uint8 and a.dtype.kind != "f":
        raise TypeError(f"{name}: expected uint8 or floating point pixels (floats in [0, 1]), "
                        f"got {describe(a)}")


def tf_images(data: Any, name: str = "data") -> np.ndarray:
    """A uint8 NHWC batch from TF-style image data ([k, h, w, c], c in 1..4)."""
    a = as_numpy(data, name)
    if a.ndim != 4:
        raise ValueError(f"{name}: expected a rank-4 [k, height, width, channels] image "
                         f"batch, got {describe(a)}")
    if a.shape[3] not in (1, 2, 3, 4):
        raise ValueError(f"{name}: expected 1, 2, 3 or 4 channels in the last axis, got {describe(a)}")
    _check_dtype(a, name)
    if a.dtype == np.uint8:
        return a
    with np.errstate(invalid="ignore"):
        scaled = np.nan_to_num(a.astype(np.float64) * 255.5, nan=0.0)
    return np.clip(scaled, 0, 255).astype(np.uint8)


def make_grid(nchw: np.ndarray, ncols: int = 8) -> np.ndarray:
    """Tile an N x C x H x W batch into one C x H' x W' image, `ncols` per row
    (grey is expanded to RGB), as PyTorch's `add_images` does."""
    if nchw.shape[1] == 1:
        nchw = np.concatenate([nchw] * 3, axis=1)
    n, c, h, w = nchw.shape
    ncols = min(n, ncols)
    nrows = math.ceil(n / ncols)
    canvas = np.zeros((c, h * nrows, w * ncols), dtype=nchw.dtype)
    for i in range(n):
        y, x = divmod(i, ncols)
        canvas[:, y * h:(y + 1) * h, x * w:(x + 1) * w] = nchw[i]
    return canvas


def torch_image(img: Any, dataformats: str, name: str = "img_tensor") -> np.ndarray:
    """A uint8 HWC image (3 or 4 channels) from PyTorch-style image data."""
    a = as_numpy(img, name)
    fmt = dataformats.upper() if isinstance(dataformats, str) else dataformats
    if not isinstance(fmt, str) or sorted(fmt) not in (sorted("NCHW"), sorted("HWC"), ["H", "W"]):
        raise ValueError("dataformats: expected one of 'CHW', 'HWC', 'HW', 'NCHW', 'NHWC' "
                         f"(letters from NCHW, each once), got {dataformats!r}")
    if a.ndim != len(fmt):
        raise ValueError(f"{name}: dataformats {dataformats!r} needs a rank-{len(fmt)} array, "
                         f"got {describe(a)}")
    _check_dtype(a, name)
    if len(fmt) == 4:
        a = make_grid(a.transpose([fmt.index(ch) for ch in "NCHW"])).transpose(1, 2, 0)
    elif len(fmt) == 3:
        a = a.transpose([fmt.index(ch) for ch in "HWC"])
        if a.shape[2] == 1:
            a = np.concatenate([a] * 3, axis=2)
    else:
        a = a.transpose([fmt.index(ch) for ch in "HW"])
        a = np.stack([a] * 3, axis=2)
    if a.shape[2] not in (3, 4):
        raise ValueError(f"{name}: expected 1, 3 or 4 channels, got {a.shape[2]} "
                         f"(dataformats {dataformats!r})")
    if a.size == 0:
        raise ValueError(f"{name}: expected a non-empty image, got {describe(a)}")
    if a.dtype == np.uint8:
        return np.ascontiguousarray(a)
    with np.errstate(invalid="ignore"):
        scaled = np.nan_to_num(a.astype(np.float32) * 255, nan=0.0)
    return np.clip(scaled, 0, 255).astype(np.uint8)
