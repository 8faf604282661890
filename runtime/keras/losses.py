"""Losses (TF's `tf.keras.losses`): the runtime's, plus binary cross-entropy, Huber and `get`.

Functions return one loss per example; `Loss` objects reduce to a scalar (mean over the
batch by default). `get` resolves what `compile(loss=...)` accepts: a name
(`"sparse_categorical_crossentropy"`, `"mse"`, ...), a function or a `Loss`.

    >>> get("mse")([[1.0]], [[3.0]]).numpy()
    4.0
"""
from __future__ import annotations

from typing import Any, Callable, Dict

from jitflow.runtime.training.losses import *  # noqa: F401,F403
from jitflow.runtime.training.losses import __all__ as _runtime_all
from jitflow.runtime.training.losses import (EPSILON, CategoricalCrossentropy, Loss,
                                             LossFunctionWrapper, MeanAbsoluteError,
                                             MeanSquaredError, Reduction,
                                             SparseCategoricalCrossentropy, _pred_and_true,
                                             categorical_crossentropy, mean_absolute_error,
                                             mean_squared_error, sparse_categorical_crossentropy)
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops import nn_conv_ops as N
from jitflow.runtime.core.tensor import Tensor


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False, label_smoothing: float = 0.0,
                        axis: int = -1) -> Tensor:
    """mean(−y·log p − (1 − y)·log(1 − p), axis=-1), from probabilities or logits."""
    y_true, y_pred = _pred_and_true(y_true, y_pred)
    if label_smoothing:
        y_true = M.add(M.multiply(y_true, 1.0 - label_smoothing), 0.5 * label_smoothing)
    if from_logits:  # max(x, 0) − x·y + log(1 + e^−|x|), TF's stable form
        per = M.add(M.subtract(M.relu(y_pred), M.multiply(y_pred, y_true)), N.softplus(M.negative(M.abs(y_pred))))
    else:
        p = M.minimum(M.maximum(y_pred, EPSILON), 1.0 - EPSILON)
        per = M.negative(M.add(M.multiply(y_true, M.log(p)),
                               M.multiply(M.subtract(1.0, y_true), M.log(M.subtract(1.0, p)))))
    return M.reduce_mean(per, axis=axis)


def huber(y_true: Any, y_pred: Any, delta: float = 1.0) -> Tensor:
    """½e² for |e| ≤ δ, δ(|e| − ½δ) beyond, averaged over the last axis."""
    y_true, y_pred = _pred_and_true(y_true, y_pred)
    err = M.abs(M.subtract(y_pred, y_true))
    quad = M.minimum(err, delta)
    return M.reduce_mean(M.add(M.multiply(0.5, M.square(quad)), M.multiply(delta, M.subtract(err, quad))), axis=-1)


class BinaryCrossentropy(LossFunctionWrapper):
    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0,
                 reduction: str = Reduction.SUM_OVER_BATCH_SIZE, name: str = "binary_crossentropy") -> None:
        super().__init__(binary_crossentropy, reduction=reduction, name=name, from_logits=from_logits,
                         label_smoothing=label_smoothing)


class Huber(LossFunctionWrapper):
    def __init__(self, delta: float = 1.0, reduction: str = Reduction.SUM_OVER_BATCH_SIZE,
                 name: str = "huber_loss") -> None:
        super().__init__(huber, reduction=reduction, name=name, delta=delta)


_FUNCTIONS: Dict[str, Callable[..., Any]] = {
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "binary_crossentropy": binary_crossentropy,
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error, "MSE": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error, "MAE": mean_absolute_error,
    "huber": huber, "huber_loss": huber,
}
_CLASSES: Dict[str, Callable[[], Loss]] = {
    cls.__name__: cls for cls in (SparseCategoricalCrossentropy, CategoricalCrossentropy, BinaryCrossentropy,
                                  MeanSquaredError, MeanAbsoluteError, Huber)}


def get(identifier: Any) -> Callable:
    """A loss callable from a name, a `Loss` class or instance, or a function."""
    if isinstance(identifier, str):
        found = _FUNCTIONS.get(identifier) or (_CLASSES[identifier]() if identifier in _CLASSES else None)
        if found is None:
            raise ValueError(f"loss: unknown loss {identifier!r}; expected one of "
                             f"{sorted(set(_FUNCTIONS) | set(_CLASSES))}, a jf.keras.losses.Loss or a function")
        return found
    if isinstance(identifier, type) and issubclass(identifier, Loss):
        return identifier()
    if callable(identifier):
        return identifier
    raise TypeError(f"loss: expected a name, a Loss or a function; got {identifier!r}")


def name_of(loss: Any) -> str:
    """The name Keras logs a loss under (`sparse_categorical_crossentropy`, ...)."""
    name: Any = getattr(loss, "name", None)  # duck-typed: a Loss's name, or absent on a plain function
    return name or getattr(loss, "__name__", type(loss).__name__)


__all__ = [*_runtime_all, "binary_crossentropy", "huber", "BinaryCrossentropy", "Huber", "get"]
