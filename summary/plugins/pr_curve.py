"""PR curves (`pr_curves` plugin): a float32 [6, num_thresholds] tensor of
true/false positive/negative counts, precision and recall per threshold.

`compute_curve` follows `torch.utils.tensorboard.summary.compute_curve` (and
tensorboardX): predictions are bucketed into `num_thresholds` equal-width bins
on [0, 1], and counts are accumulated from the top threshold down.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.pr_curve import metadata as pr_md
from tensorboard.util import tensor_util

from jitflow.summary.values import as_numpy, describe

# PyTorch and tensorboardX cap the threshold count at 127; kept for parity.
MAX_THRESHOLDS = 127
_MINIMUM_COUNT = 1e-7


def check_num_thresholds(num_thresholds: Any) -> int:
    if isinstance(num_thresholds, bool) or not hasattr(num_thresholds, "__index__") or int(num_thresholds) < 2:
        raise ValueError(f"num_thresholds: expected an int >= 2, got {describe(num_thresholds)}")
    return min(int(num_thresholds), MAX_THRESHOLDS)


def compute_curve(labels: Any, predictions: Any, num_thresholds: int, weights: Any = None) -> np.ndarray:
    """[6, num_thresholds] float64: tp, fp, tn, fn, precision, recall."""
    lab = as_numpy(labels, "labels").reshape(-1)
    pred = as_numpy(predictions, "predictions").reshape(-1)
    if lab.dtype.kind not in "biuf":
        raise TypeError(f"labels: expected booleans or 0/1 numbers, got {describe(lab)}")
    if pred.dtype.kind not in "biuf":
        raise TypeError(f"predictions: expected numbers in [0, 1], got {describe(pred)}")
    if lab.shape != pred.shape:
        raise ValueError(f"labels: expected as many elements as predictions ({pred.size}), got {lab.size}")
    if pred.size and (np.nanmin(pred) < 0 or np.nanmax(pred) > 1 or np.isnan(pred).any()):
        raise ValueError(f"predictions: expected values in [0, 1], got values in "
                         f"[{np.nanmin(pred)}, {np.nanmax(pred)}]" + (" and NaN" if np.isnan(pred).any() else ""))
    w: float | np.ndarray = 1.0
    if weights is not None:
        given = as_numpy(weights, "weights").astype(np.float64)
        if given.size != 1 and given.reshape(-1).shape != pred.shape:
            raise ValueError(f"weights: expected a scalar or one weight per prediction ({pred.size}), "
                             f"got {describe(given)}")
        w = given.reshape(-1) if given.size != 1 else float(given.reshape(()))
    bucket = np.floor(pred.astype(np.float64) * (num_thresholds - 1)).astype(np.int32)
    lab = lab.astype(np.float64)
    rng = (0, num_thresholds - 1)
    tp_b, _ = np.histogram(bucket, bins=num_thresholds, range=rng, weights=lab * w)
    fp_b, _ = np.histogram(bucket, bins=num_thresholds, range=rng, weights=(1.0 - lab) * w)
    tp = np.cumsum(tp_b[::-1])[::-1]
    fp = np.cumsum(fp_b[::-1])[::-1]
    tn, fn = fp[0] - fp, tp[0] - tp
    precision = tp / np.maximum(_MINIMUM_COUNT, tp + fp)
    recall = tp / np.maximum(_MINIMUM_COUNT, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def raw_curve(num_thresholds: int, **columns: Any) -> np.ndarray:
    """Stack user-computed counts (`add_pr_curve_raw`) after checking their lengths."""
    rows = []
    for name, v in columns.items():
        a = as_numpy(v, name).astype(np.float64).reshape(-1)
        if a.size != num_thresholds:
            raise ValueError(f"{name}: expected {num_thresholds} values (num_thresholds), got {describe(a)}")
        rows.append(a)
    return np.stack(rows)


def pr_curve_value(tag: str, data: np.ndarray, num_thresholds: int,
                   description: str | None = None) -> summary_pb2.Summary.Value:
    md = pr_md.create_summary_metadata(display_name=tag, description=description or "",
                                       num_thresholds=num_thresholds)
    md.data_class = summary_pb2.DATA_CLASS_TENSOR
    return summary_pb2.Summary.Value(tag=tag, metadata=md,
                                     tensor=tensor_util.make_tensor_proto(data.astype(np.float32)))
