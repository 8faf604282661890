"""`jf.image.resize`: bilinear and nearest-neighbour resizing with TF 2's half-pixel rules.

TF 2's `tf.image.resize` (antialias=False) maps output pixel `x` to the input coordinate
`(x + 0.5) * in / out - 0.5` (bilinear: interpolate between floor and ceil, both
clamped into the image) or `floor((x + 0.5) * in / out)` (nearest, clamped), computing in
float32. The kernels are numba loops that release the GIL (`nogil=True`), so a parallel
`Dataset.map` resizes on several cores at once; they compile on first use and cache to disk.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core import lazyjit
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor

_kernels: dict = {}


def _compile():
    numba = lazyjit.numba()

    @numba.njit(cache=True, nogil=True)
    def bilinear(src, out_h, out_w):  # src: [n, h, w, c] float32
        n, in_h, in_w, c = src.shape
        out = np.empty((n, out_h, out_w, c), dtype=np.float32)
        sy = np.float32(in_h) / np.float32(out_h)
        sx = np.float32(in_w) / np.float32(out_w)
        x0 = np.empty(out_w, dtype=np.int64)
        x1 = np.empty(out_w, dtype=np.int64)
        xl = np.empty(out_w, dtype=np.float32)
        for x in range(out_w):
            fx = (np.float32(x) + np.float32(0.5)) * sx - np.float32(0.5)
            ff = np.floor(fx)
            x0[x] = max(np.int64(ff), 0)
            x1[x] = min(np.int64(np.ceil(fx)), in_w - 1)
            xl[x] = fx - ff
        for b in range(n):
            for y in range(out_h):
                fy = (np.float32(y) + np.float32(0.5)) * sy - np.float32(0.5)
                fyf = np.floor(fy)
                y0 = max(np.int64(fyf), 0)
                y1 = min(np.int64(np.ceil(fy)), in_h - 1)
                yl = fy - fyf
                for x in range(out_w):
                    a0 = x0[x]
                    a1 = x1[x]
                    w = xl[x]
                    for ch in range(c):
                        tl = src[b, y0, a0, ch]
                        tr = src[b, y0, a1, ch]
                        bl = src[b, y1, a0, ch]
                        br = src[b, y1, a1, ch]
                        top = tl + (tr - tl) * w
                        bottom = bl + (br - bl) * w
                        out[b, y, x, ch] = top + (bottom - top) * yl
        return out

    @numba.njit(cache=True, nogil=True)
    def nearest_index(in_size, out_size):
        scale = np.float32(in_size) / np.float32(out_size)
        idx = np.empty(out_size, dtype=np.int64)
        for i in range(out_size):
            idx[i] = min(np.int64(np.floor((np.float32(i) + np.float32(0.5)) * scale)), in_size - 1)
        return idx

    _kernels["bilinear"] = bilinear
    _kernels["nearest_index"] = nearest_index


def _kernel(name: str):
    k = _kernels.get(name)
    if k is None:
        _compile()
        k = _kernels[name]
    return k


def _as4d(image: np.ndarray):
    return (image[None], True) if image.ndim == 3 else (image, False)


def _resize_kernel(images, size, method):
    x, squeeze = _as4d(np.asarray(images))
    out_h, out_w = size
    if method == "bilinear":
        src = x if x.dtype == np.float32 else x.astype(np.float32)
        out = _kernel("bilinear")(np.ascontiguousarray(src), out_h, out_w)
    else:
        ys = _kernel("nearest_index")(x.shape[1], out_h)
        xs = _kernel("nearest_index")(x.shape[2], out_w)
        out = x[:, ys][:, :, xs]
    return out[0] if squeeze else out


def _resize_infer(specs, attrs):
    dims, dtype = specs[0]
    if dims is not None and len(dims) not in (3, 4):
        raise InvalidArgumentError(f"images must be 3-D [height, width, channels] or 4-D [batch, height, "
                                   f"width, channels]; got shape {list(dims)}")
    if not (dtype.is_floating or dtype.is_integer):
        raise TypeError(f"images must be a numeric tensor; got dtype {dtype.name}")
    h, w = attrs["size"]
    out_dt = dtype if attrs["method"] == "nearest" else _dt.float32
    if dims is None:
        return [(None, out_dt)]
    return [(dims[:-3] + (h, w, dims[-1]), out_dt)]


register("ResizeBilinear", _resize_infer, cpu=_resize_kernel, public_name="image.resize",
         default_name="resize")
register("ResizeNearestNeighbor", _resize_infer, cpu=_resize_kernel, public_name="image.resize",
         default_name="resize")

_METHODS = {"bilinear": "bilinear", "nearest": "nearest", "nearest_neighbor": "nearest"}


class ResizeMethod:
    """Method names for `jf.image.resize` (TF's `tf.image.ResizeMethod`).

    >>> jf.image.resize(jf.ones([4, 4, 1]), [2, 2], method=jf.image.ResizeMethod.NEAREST_NEIGHBOR).shape
    TensorShape([2, 2, 1])
    """
    BILINEAR = "bilinear"
    NEAREST_NEIGHBOR = "nearest"


def _static_size(size: Any) -> tuple:
    if isinstance(size, Tensor):
        size = size.numpy() if hasattr(size, "numpy") else None
        if size is None:
            raise ValueError("size: jf.image.resize needs a size known when the graph is traced "
                             "(Python ints or a constant); got a symbolic tensor")
    try:
        h, w = (int(v) for v in np.asarray(size).reshape(-1))
    except (TypeError, ValueError):
        raise ValueError(f"size: expected [new_height, new_width]; got {size!r}") from None
    if h <= 0 or w <= 0:
        raise ValueError(f"size: both dimensions must be positive; got [{h}, {w}]")
    return h, w


def resize(images: Any, size: Sequence[int], method: str = "bilinear", preserve_aspect_ratio: bool = False,
           antialias: bool = False, name: Optional[str] = None) -> Tensor:
    """Resize `[h, w, c]` or `[n, h, w, c]` images to `size` (TF 2's `tf.image.resize`).

    `bilinear` returns float32 (as TF does); `nearest` keeps the dtype. Pixel centres are
    at half-integers, exactly as TF 2 computes them. `antialias=True` (bilinear) uses TF's
    ScaleAndTranslate with a triangle kernel widened by the downscaling factor.

    >>> img = jf.zeros([32, 48, 3])
    >>> jf.image.resize(img, [16, 24]).shape
    TensorShape([16, 24, 3])
    """
    if method not in _METHODS:
        raise ValueError(f"method: expected one of {sorted(_METHODS)}; got {method!r}")
    images = convert_to_tensor(images)
    h, w = _static_size(size)
    dims = images._dims
    if preserve_aspect_ratio and dims is not None and None not in dims[-3:-1]:
        in_h, in_w = dims[-3], dims[-2]
        scale = min(h / in_h, w / in_w)
        h, w = max(int(round(in_h * scale)), 1), max(int(round(in_w * scale)), 1)
    if antialias and method == "bilinear":
        return apply("ScaleAndTranslate", [images], {"size": (h, w), "kernel_type": "triangle"}, name=name)[0]
    m = _METHODS[method]
    op = "ResizeBilinear" if m == "bilinear" else "ResizeNearestNeighbor"
    return apply(op, [images], {"size": (h, w), "method": m}, name=name)[0]


def _span_weights(in_size: int, out_size: int) -> np.ndarray:
    """[out, in] weights of TF's ScaleAndTranslate with a triangle kernel, antialiased.

    When shrinking, the kernel widens by the scale factor (so every input pixel counts);
    each output's weights are normalised to sum to one, as TF computes them (float32).
    """
    scale = np.float32(out_size) / np.float32(in_size)
    inv_scale = np.float32(1.0) / scale
    kernel_scale = max(inv_scale, np.float32(1.0))
    radius = np.float32(1.0) * kernel_scale
    weights = np.zeros((out_size, in_size), dtype=np.float32)
    for x in range(out_size):
        sample = (np.float32(x) + np.float32(0.5)) * inv_scale
        if sample < 0 or sample > in_size:
            continue
        start = max(int(np.ceil(sample - radius - np.float32(0.5))), 0)
        end = min(int(np.floor(sample + radius - np.float32(0.5))), in_size - 1) + 1
        src = np.arange(start, end, dtype=np.float32)
        wts = np.maximum(np.float32(0), np.float32(1) - np.abs((src + np.float32(0.5) - sample) / kernel_scale))
        total = wts.sum(dtype=np.float32)
        if abs(total) >= 1000 * np.finfo(np.float32).tiny:
            wts = wts / total
        weights[x, start:end] = wts
    return weights


def _scale_translate_kernel(images, size, kernel_type):
    x, squeeze = _as4d(np.asarray(images, dtype=np.float32))
    wy = _span_weights(x.shape[1], size[0])
    wx = _span_weights(x.shape[2], size[1])
    rows = np.einsum("yh,nhwc->nywc", wy, x, dtype=np.float32)
    out = np.einsum("xw,nywc->nyxc", wx, rows, dtype=np.float32)
    return out[0] if squeeze else out


register("ScaleAndTranslate", lambda specs, attrs: [(
    None if specs[0][0] is None else specs[0][0][:-3] + tuple(attrs["size"]) + specs[0][0][-1:], _dt.float32)],
    cpu=_scale_translate_kernel, public_name="image.resize", default_name="resize")
