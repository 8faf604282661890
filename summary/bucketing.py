"""Histogram bucketing: TF2's k x 3 buckets and PyTorch's HistogramProto.

`tf_buckets` follows `tensorboard.plugins.histogram.summary_v2` (what
`tf.summary.histogram` writes): `k` equal-width buckets from min to max as rows
`(left, right, count)`. `torch_histogram` follows
`torch.utils.tensorboard.summary.make_histogram` (`add_histogram`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

DEFAULT_BUCKET_COUNT = 30


def tf_buckets(data: np.ndarray, bucket_count: int = DEFAULT_BUCKET_COUNT) -> np.ndarray:
    """float64 array of shape (bucket_count, 3): rows of (left, right, count).

    Empty data gives all-zero rows; data with a single distinct value puts all
    of it in the last bucket, with both edges equal to that value (as TF does).
    Non-finite values cannot be bucketed and are left out, with a warning.
    """
    k = int(bucket_count)
    if k < 0:
        raise ValueError(f"buckets: expected an int >= 0, got {k}")
    x = np.asarray(data, dtype=np.float64).reshape(-1)
    finite = np.isfinite(x)
    if not finite.all():
        warnings.warn(f"histogram: leaving out {int((~finite).sum())} NaN/inf value(s) "
                      f"of {x.size}", RuntimeWarning, stacklevel=4)
        x = x[finite]
    if k == 0 or x.size == 0:
        return np.zeros((k, 3))
    lo, hi = x.min(), x.max()
    if lo == hi:
        out = np.zeros((k, 3))
        out[:, :2] = hi
        out[-1, 2] = x.size
        return out
    with np.errstate(over="ignore"):
        span = hi - lo
    if np.isfinite(span):
        width = (hi - lo) / k
        idx = np.floor((x - lo) / width)
        edges = np.linspace(lo, hi, k + 1)
    else:
        # The range overflows float64 (data spanning +-1e308): bucket in units of
        # max(|lo|, |hi|), where every difference is finite, and scale the edges back.
        scale = max(abs(lo), abs(hi))
        xs, los, his = x / scale, lo / scale, hi / scale
        width = (his - los) / k
        idx = np.floor((xs - los) / width)
        edges = np.linspace(los, his, k + 1) * scale
    idx = np.minimum(idx.astype(np.int64), k - 1)
    counts = np.bincount(idx, minlength=k).astype(np.float64)
    edges[0], edges[-1] = lo, hi
    return np.stack([edges[:-1], edges[1:], counts], axis=1)


def torch_default_bins() -> list[float]:
    """PyTorch's `bins="tensorflow"`: exponential buckets 1e-12 * 1.1**k up to
    1e20, mirrored for negatives, with 0 in the middle."""
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-b for b in reversed(pos)] + [0.0] + pos


# An array, not a list: numpy.histogram would convert a 1,549-element list on every call.
_TORCH_BINS: np.ndarray = np.asarray(torch_default_bins())


def torch_histogram(values: np.ndarray, bins: Any = "tensorflow", max_bins: int | None = None) -> dict:
    """HistogramProto fields for `values`, as PyTorch's `add_histogram` computes
    them: numpy histogram over `bins`, trimmed to the bins with data plus one
    empty bin on the left (TensorBoard stores only right edges)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("values: expected at least one element, got an empty array")
    if isinstance(bins, str) and bins == "tensorflow":
        bins = _TORCH_BINS
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            counts, limits = np.histogram(values, bins=bins)
    except (ValueError, TypeError, MemoryError) as e:
        raise ValueError(f"bins: numpy.histogram cannot bin these values with bins={bins!r} "
                         f"(values span [{values.min()}, {values.max()}]): {e}") from None
    if max_bins is not None and len(counts) > max_bins:
        step = len(counts) // max_bins
        if len(counts) % step:
            counts = np.pad(counts, (0, step - len(counts) % step))
        counts = counts.reshape(-1, step).sum(axis=-1)
        limits = np.concatenate([limits[:-1:step], limits[-1:]])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError("values: no value falls inside the histogram bins "
                         f"[{limits[0]}, {limits[-1]}]")
    start, end = int(nonzero[0]), int(nonzero[-1]) + 1
    kept = counts[start - 1:end] if start > 0 else np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    with np.errstate(over="ignore"):  # sums of values near 1e308 overflow to inf, as in PyTorch
        total, sum_squares = float(values.sum()), float(values.dot(values))
    return dict(vmin=float(values.min()), vmax=float(values.max()), num=int(values.size),
                total=total, sum_squares=sum_squares,
                bucket_limit=limits.tolist(), bucket=np.asarray(kept, dtype=np.float64).tolist())
