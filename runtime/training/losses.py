"""`jf.losses`: Keras-style losses (TF's `tf.keras.losses`), composed of jitflow ops.

Functions return one loss per example (`mean_squared_error(y_true, y_pred)` averages the
last axis only); `Loss` objects reduce that to a scalar, by default the mean over the
batch (Keras's "sum_over_batch_size"). Everything is built from differentiable
primitives, so gradients work eagerly and inside `jf.function`.

    loss_fn = jf.losses.SparseCategoricalCrossentropy(from_logits=True)
    loss = loss_fn(labels, logits)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.nn_ops import (softmax_cross_entropy_with_logits,
                                        sparse_softmax_cross_entropy_with_logits)
from jitflow.runtime.core.tensor import Tensor

EPSILON = 1e-7  # Keras's backend.epsilon(): probabilities are clipped to [ε, 1 − ε]


class Reduction:
    """How a `Loss` turns per-example losses into its result.

    >>> jf.losses.MeanSquaredError(reduction=jf.losses.Reduction.SUM)([[0.0], [0.0]], [[1.0], [2.0]]).numpy()
    np.float32(5.0)
    """

    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"
    AUTO = "auto"  # = SUM_OVER_BATCH_SIZE

    ALL = (NONE, SUM, SUM_OVER_BATCH_SIZE, AUTO)


def _pred_and_true(y_true: Any, y_pred: Any):
    y_pred = convert_to_tensor(y_pred)
    y_true = convert_to_tensor(y_true, dtype_hint=y_pred.dtype)
    if y_true.dtype is not y_pred.dtype:
        y_true = A.cast(y_true, y_pred.dtype)
    return y_true, y_pred


def _clip(p: Tensor) -> Tensor:
    return M.minimum(M.maximum(p, EPSILON), 1.0 - EPSILON)


# -- functions (one loss per example) --------------------------------------------------------
def mean_squared_error(y_true: Any, y_pred: Any) -> Tensor:
    """mean((y_pred − y_true)², axis=-1).

    >>> jf.losses.mean_squared_error([[1.0, 2.0]], [[1.0, 4.0]]).numpy()
    array([2.], dtype=float32)
    """
    y_true, y_pred = _pred_and_true(y_true, y_pred)
    return M.reduce_mean(M.square(M.subtract(y_pred, y_true)), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Tensor:
    """mean(|y_pred − y_true|, axis=-1).

    >>> jf.losses.mean_absolute_error([[1.0, 2.0]], [[1.0, 4.0]]).numpy()
    array([1.], dtype=float32)
    """
    y_true, y_pred = _pred_and_true(y_true, y_pred)
    return M.reduce_mean(M.abs(M.subtract(y_pred, y_true)), axis=-1)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                                    axis: int = -1) -> Tensor:
    """Cross-entropy of integer class labels against probabilities (or logits).

    >>> sparse_categorical_crossentropy([1], [[0.5, 0.5]]).numpy()
    array([0.6931472], dtype=float32)
    """
    if axis != -1:
        raise ValueError(f"axis: only the last axis (-1) holds the classes; got {axis}")
    y_pred = convert_to_tensor(y_pred)
    labels = convert_to_tensor(y_true, dtype_hint=_dt.int32)
    if not labels.dtype.is_integer:
        labels = A.cast(labels, _dt.int32)  # Keras accepts float class ids
    if labels._dims is not None and y_pred.ndim is not None and len(labels._dims) == y_pred.ndim \
            and labels._dims[-1] == 1:
        labels = A.squeeze(labels, [-1])  # (batch, 1) labels, as Keras allows
    logits = y_pred if from_logits else M.log(_clip(y_pred))
    return sparse_softmax_cross_entropy_with_logits(labels, logits)


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                             label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """Cross-entropy of one-hot (or soft) labels against probabilities (or logits).

    >>> np.round(jf.losses.categorical_crossentropy([[1.0, 0.0]], [[0.5, 0.5]]).numpy(), 4)
    array([0.6931], dtype=float32)
    """
    y_true, y_pred = _pred_and_true(y_true, y_pred)
    if label_smoothing:
        classes = A.cast(A.shape(y_true)[axis], y_pred.dtype)
        y_true = M.add(M.multiply(y_true, 1.0 - label_smoothing), M.divide(label_smoothing, classes))
    if from_logits:
        return softmax_cross_entropy_with_logits(y_true, y_pred, axis=axis)
    probs = M.divide(y_pred, M.reduce_sum(y_pred, axis=axis, keepdims=True))
    return M.negative(M.reduce_sum(M.multiply(y_true, M.log(_clip(probs))), axis=axis))


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


# -- Loss objects (reduced to a scalar) -------------------------------------------------------
class Loss:
    """Base class: subclasses implement `call(y_true, y_pred)` → per-example losses.

    >>> class MeanSquaredError(Loss):
    ...     def call(self, y_true, y_pred):
    ...         return M.reduce_mean(M.square(y_pred - y_true))
    """

    def __init__(self, reduction: str = Reduction.SUM_OVER_BATCH_SIZE, name: Optional[str] = None) -> None:
        if reduction not in Reduction.ALL:
            raise ValueError(f"reduction: expected one of {list(Reduction.ALL)}; got {reduction!r}")
        self.reduction = reduction
        self.name = name or type(self).__name__

    def call(self, y_true: Any, y_pred: Any) -> Tensor:  # pragma: no cover - interface
        raise NotImplementedError(f"{type(self).__name__}.call(y_true, y_pred) is not implemented")

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        losses = convert_to_tensor(self.call(y_true, y_pred))
        if sample_weight is not None:
            weight = convert_to_tensor(sample_weight, dtype_hint=losses.dtype)
            if weight.dtype is not losses.dtype:
                weight = A.cast(weight, losses.dtype)
            while weight._dims is not None and losses.ndim is not None and len(weight._dims) > losses.ndim \
                    and weight._dims[-1] == 1:
                weight = A.squeeze(weight, [-1])
            losses = M.multiply(losses, weight)
        if self.reduction == Reduction.NONE:
            return losses
        if self.reduction == Reduction.SUM:
            return M.reduce_sum(losses)
        return M.reduce_mean(losses)

    def get_config(self) -> dict:
        return {"reduction": self.reduction, "name": self.name}


class LossFunctionWrapper(Loss):
    """A `Loss` around a per-example loss function and its keyword arguments.

    >>> loss = jf.losses.LossFunctionWrapper(jf.losses.mean_absolute_error)
    >>> loss([[1.0, 2.0]], [[2.0, 4.0]]).numpy()
    np.float32(1.5)
    """

    def __init__(self, fn: Callable, reduction: str = Reduction.SUM_OVER_BATCH_SIZE,
                 name: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(reduction=reduction, name=name)
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        return {**super().get_config(), **self._fn_kwargs}


class MeanSquaredError(LossFunctionWrapper):
    """mean((y_pred − y_true)²) over the last axis, reduced over the batch (`tf.keras.losses.MeanSquaredError`).

    >>> jf.losses.MeanSquaredError()([[1.0, 2.0]], [[1.0, 4.0]]).numpy()
    np.float32(2.0)
    """
    def __init__(self, reduction: str = Reduction.SUM_OVER_BATCH_SIZE, name: str = "mean_squared_error") -> None:
        super().__init__(mean_squared_error, reduction=reduction, name=name)


class MeanAbsoluteError(LossFunctionWrapper):
    """mean(|y_pred − y_true|) over the last axis, reduced over the batch (`tf.keras.losses.MeanAbsoluteError`).

    >>> jf.losses.MeanAbsoluteError()([[1.0, 2.0]], [[1.0, 4.0]]).numpy()
    np.float32(1.0)
    """
    def __init__(self, reduction: str = Reduction.SUM_OVER_BATCH_SIZE, name: str = "mean_absolute_error") -> None:
        super().__init__(mean_absolute_error, reduction=reduction, name=name)


class SparseCategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy of integer class labels against probabilities or logits
    (`tf.keras.losses.SparseCategoricalCrossentropy`).

    >>> loss = jf.losses.SparseCategoricalCrossentropy(from_logits=True)
    >>> round(float(loss([0], [[2.0, 0.0]])), 4)
    0.1269
    """
    def __init__(self, from_logits: bool = False, reduction: str = Reduction.SUM_OVER_BATCH_SIZE,
                 name: str = "sparse_categorical_crossentropy") -> None:
        super().__init__(sparse_categorical_crossentropy, reduction=reduction, name=name,
                         from_logits=from_logits)


class CategoricalCrossentropy(LossFunctionWrapper):
    """Cross-entropy of one-hot (or soft) labels against probabilities or logits
    (`tf.keras.losses.CategoricalCrossentropy`).

    >>> loss = jf.losses.CategoricalCrossentropy()
    >>> round(float(loss([[1.0, 0.0]], [[0.8, 0.2]])), 4)
    0.2231
    """
    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0,
                 reduction: str = Reduction.SUM_OVER_BATCH_SIZE, name: str = "categorical_crossentropy") -> None:
        super().__init__(categorical_crossentropy, reduction=reduction, name=name, from_logits=from_logits,
                         label_smoothing=label_smoothing)


__all__ = ["Loss", "LossFunctionWrapper", "Reduction", "MeanSquaredError", "MeanAbsoluteError",
           "SparseCategoricalCrossentropy", "CategoricalCrossentropy", "mean_squared_error",
           "mean_absolute_error", "sparse_categorical_crossentropy", "categorical_crossentropy",
           "mse", "MSE", "mae", "MAE"]
