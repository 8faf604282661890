"""What `compile(loss=..., loss_weights=..., metrics=..., weighted_metrics=...)` turns into.

Keras 3's rules (`keras/src/trainers/compile_utils.py`), for one output or several:

- `loss` is one loss (applied to every output), a list (one per output, in output
  order) or a dict keyed by output name (outputs without an entry get no loss).
  `loss_weights` has the same shape (a float for one output). The model's loss is
  Σ weightᵢ · lossᵢ; with several losses each is also tracked (without its weight) as
  `<output>_loss`, the mean of the per-batch values. TF's Keras means to weight those by
  batch size but, tracing with an unknown batch dimension, gives every batch the same
  weight; jitflow logs what TF logs (so `<output>_loss` values only add up to `loss`
  when all batches are full).
- `metrics` / `weighted_metrics`: a list (one output: all apply to it), or per output
  a list of lists or a dict of lists. They log as `<name>` for one output and
  `<output>_<name>` for several. `metrics` ignore `sample_weight`;
  `weighted_metrics` use it (a weighted metric whose name is taken becomes
  `weighted_<name>`). `"accuracy"` becomes binary, sparse-categorical or categorical
  accuracy from the shapes of the labels and predictions, as in Keras.
- `sample_weight` is one array for every output, or one per output (list or dict).

Both objects are built on the first batch (they need the shapes of `y` and the
model's outputs), eagerly before `fit`'s step function is traced, so their metric
variables exist before tracing.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.keras import losses as _losses
from jitflow.runtime.keras import metrics as _metrics
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.core.tensor import Tensor


def flat_outputs(y: Any, names: Sequence[str]) -> List[Any]:
    """A model's outputs (or targets, or sample weights) as a list in output order."""
    if isinstance(y, dict):
        if names and set(y) != set(names):
            raise ValueError(f"expected a dict keyed by the model's output names {list(names)}; got keys "
                             f"{sorted(y)}")
        return [y[n] for n in names] if names else [y[k] for k in sorted(y)]
    if isinstance(y, (list, tuple)):
        return list(y)
    return [y]


def _per_output(spec: Any, names: Sequence[str], n: int, what: str, nested_item: bool) -> List[Any]:
    """`spec` (one value, a list or a dict by output name) → one entry per output (None: none).

    `nested_item`: an entry may itself be a list (metrics), so a flat list of entries
    means "all of these for every output" only when the model has one output.
    """
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ValueError(f"compile: {what} names output(s) {unknown}, which the model does not have; its "
                             f"outputs are {list(names)}")
        return [spec.get(name) for name in names]
    if isinstance(spec, (list, tuple)):
        if nested_item:
            if n == 1 and not any(isinstance(s, (list, tuple, dict)) for s in spec):
                return [list(spec)]
            if len(spec) != n or not all(s is None or isinstance(s, (list, tuple)) for s in spec):
                raise ValueError(f"compile: {what} for a model with {n} outputs {list(names)} must be a dict keyed "
                                 f"by output name or a list of {n} lists (one per output); got {spec!r}")
            return [None if s is None else list(s) for s in spec]
        if len(spec) != n:
            raise ValueError(f"compile: {what} must have one entry per output ({n}: {list(names)}); got "
                             f"{len(spec)}: {spec!r}")
        return list(spec)
    return [spec] * n


class CompileLoss:
    """The compiled loss of a model with one or several outputs."""

    def __init__(self, loss: Any, loss_weights: Any = None) -> None:
        if loss_weights is not None and not isinstance(loss_weights, (int, float, list, tuple, dict)):
            raise ValueError("compile: loss_weights must be a float (one output), a list or a dict (several "
                             f"outputs); got {loss_weights!r} of type {type(loss_weights).__name__}")
        self._user_loss, self._user_weights = loss, loss_weights
        # Resolve every name now: a bad one fails in compile, before the model changes.
        for item in (loss.values() if isinstance(loss, dict) else loss if isinstance(loss, (list, tuple))
                     else [loss]):
            if item is not None:
                _losses.get(item)
        self.losses: List[Tuple[int, Any, Optional[float], str]] = []   # (output index, fn, weight, name)
        self.trackers: List[_metrics.Mean] = []
        self.built = False

    @property
    def single(self) -> Any:
        """The one resolved loss when the user gave exactly one (what `model.loss` shows)."""
        loss = self._user_loss
        return None if isinstance(loss, (list, tuple, dict)) else _losses.get(loss)

    def build(self, names: Sequence[str]) -> None:
        n = len(names)
        losses = _per_output(self._user_loss, names, n, "loss", False)
        weights = [None] * n if self._user_weights is None else (
            [float(self._user_weights)] * n if isinstance(self._user_weights, (int, float))
            else _per_output(self._user_weights, names, n, "loss_weights", False))
        self.losses = []
        for i, (identifier, weight) in enumerate(zip(losses, weights)):
            if identifier is None:
                continue
            fn = _losses.get(identifier)
            if not isinstance(fn, _losses.Loss):   # functions reduce as Keras's LossFunctionWrapper does
                fn = _losses.LossFunctionWrapper(fn, name=identifier if isinstance(identifier, str)
                                                 else _losses.name_of(fn))
            label = names[i] if n > 1 else (identifier if isinstance(identifier, str) else _losses.name_of(fn))
            self.losses.append((i, fn, None if weight is None else float(weight), label))
        if not self.losses:
            raise ValueError(f"compile: no loss applies to any of the model's outputs {list(names)}; got "
                             f"loss={self._user_loss!r}")
        self.trackers = [_metrics.Mean(name=f"{label}_loss") for *_, label in self.losses] \
            if len(self.losses) > 1 else []
        self.built = True

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any, names: Sequence[str]) -> Tensor:
        """Σ weightᵢ · lossᵢ(y_trueᵢ, y_predᵢ, sample_weightᵢ); updates the per-output trackers."""
        preds = flat_outputs(y_pred, names)
        if not self.built:
            self.build(names)
        trues = flat_outputs(y_true, names)
        if len(trues) != len(preds):
            raise ValueError(f"The model has {len(preds)} outputs {list(names)} but the targets y have "
                             f"{len(trues)} entries; pass one target array per output (a list, or a dict keyed "
                             "by output name)")
        weights = flat_outputs(sample_weight, names) if isinstance(sample_weight, (list, tuple, dict)) \
            else [sample_weight] * len(preds)
        total = None
        for k, (i, fn, weight, _) in enumerate(self.losses):
            value = fn(trues[i], preds[i], sample_weight=weights[i])
            if self.trackers:   # each batch counts once (see the module docstring)
                self.trackers[k].update_state(value)
            if weight is not None:
                value = M.multiply(value, weight)
            total = value if total is None else M.add(total, value)
        assert total is not None, "build() guarantees at least one loss"
        return total


def _rank_and_last(x: Any) -> Tuple[int, Optional[int]]:
    dims = getattr(x, "_dims", None)
    if dims is None:
        dims = np.shape(x)
    return len(dims), (dims[-1] if dims else None)


def resolve_metric(identifier: Any, y_true: Any, y_pred: Any) -> _metrics.Metric:
    """One metric for one output; `"accuracy"` picks its kind from the shapes, as Keras 3 does."""
    if isinstance(identifier, str) and identifier.lower() in ("accuracy", "acc"):
        (t_rank, t_last), (p_rank, p_last) = _rank_and_last(y_true), _rank_and_last(y_pred)
        if p_last == 1:
            return _metrics.BinaryAccuracy(name=identifier)
        if t_rank < p_rank or (t_last == 1 and (p_last or 0) > 1):
            return _metrics.SparseCategoricalAccuracy(name=identifier)
        return _metrics.CategoricalAccuracy(name=identifier)
    return _metrics.get(identifier)


class CompileMetrics:
    """The compiled metrics (unweighted and weighted) of a model with one or several outputs."""

    def __init__(self, metrics: Any, weighted_metrics: Any, loss: Any = None) -> None:
        for what, spec in (("metrics", metrics), ("weighted_metrics", weighted_metrics)):
            if spec is not None and not isinstance(spec, (list, tuple, dict)):
                raise TypeError(f"compile: {what} must be a list or a dict keyed by output name; got {spec!r}")
            for item in _leaves(spec):   # fail in compile on an unknown name, as before
                if not (isinstance(item, str) and item.lower() in ("accuracy", "acc")):
                    _metrics.get(item, loss)
        self._user = (metrics, weighted_metrics)
        self.metrics: List[Tuple[int, _metrics.Metric, str]] = []     # (output, metric, log name)
        self.weighted: List[Tuple[int, _metrics.Metric, str]] = []
        self.built = False
        if not _leaves(metrics) and not _leaves(weighted_metrics):
            self.built = True

    def build(self, y_true: Any, y_pred: Any, names: Sequence[str]) -> None:
        preds, trues = flat_outputs(y_pred, names), flat_outputs(y_true, names)
        n = len(preds)
        taken: Dict[str, int] = {}
        for user, out, weighted in ((self._user[0], self.metrics, False), (self._user[1], self.weighted, True)):
            if user is None:
                continue
            for i, items in enumerate(_per_output(user, names, n, "weighted_metrics" if weighted else "metrics",
                                                  True)):
                for item in items or []:
                    metric = item if isinstance(item, _metrics.Metric) else resolve_metric(
                        item, trues[i] if i < len(trues) else preds[i], preds[i])
                    prefix = f"{names[i]}_" if n > 1 else ""
                    name = prefix + metric.name
                    if name in taken and weighted:
                        name = prefix + "weighted_" + metric.name
                    if name in taken:
                        taken[name] += 1
                        name = f"{name}_{taken[name] - 1}"
                    else:
                        taken[name] = 1
                    out.append((i, metric, name))
        self.built = True

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any, names: Sequence[str]) -> None:
        if not self.built:
            self.build(y_true, y_pred, names)
        preds, trues = flat_outputs(y_pred, names), flat_outputs(y_true, names)
        weights = flat_outputs(sample_weight, names) if isinstance(sample_weight, (list, tuple, dict)) \
            else [sample_weight] * len(preds)
        for i, metric, _ in self.metrics:
            metric.update_state(trues[i], preds[i])
        for i, metric, _ in self.weighted:
            metric.update_state(trues[i], preds[i], sample_weight=weights[i])

    def all(self) -> List[Tuple[_metrics.Metric, str]]:
        return [(m, name) for _, m, name in self.metrics + self.weighted]


def _leaves(spec: Any) -> List[Any]:
    if spec is None:
        return []
    if isinstance(spec, dict):
        return [x for v in spec.values() for x in _leaves(v)]
    if isinstance(spec, (list, tuple)):
        return [x for v in spec for x in _leaves(v)]
    return [spec]


def ordered_values(logs: Dict[str, Any], names: Sequence[str]) -> Any:
    """`evaluate`'s list: the values named by `names` in that order, then the rest by name (Keras's
    `_flatten_metrics_in_order`); a single value alone."""
    values = [logs[n] for n in names if n in logs]
    values += [logs[k] for k in sorted(logs) if k not in names]
    return values[0] if len(values) == 1 else values


__all__: List[str] = []
