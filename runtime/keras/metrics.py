"""Metrics (TF's `tf.keras.metrics`): stateful accumulators of `update_state` / `result` / `reset_state`.

A metric's state is a few non-trainable variables (`total`, `count`), so `update_state`
inside `fit`'s compiled train step is a couple of `assign_add` nodes and the running
value is read with `result()`. As in Keras, `metric(y_true, y_pred)` updates and
returns the result.

    >>> m = SparseCategoricalAccuracy()
    >>> float(m([1, 0], [[0.1, 0.9], [0.2, 0.8]]))
    0.5
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.keras.backend import to_snake_case
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.keras import losses as _losses
from jitflow.runtime.keras.layers.base import Layer


def _divide_no_nan(x: Tensor, y: Tensor) -> Tensor:
    safe = M.maximum(y, np.finfo(np.float32).tiny) if y.dtype.is_floating else y
    return A.where(M.equal(y, 0), A.zeros_like(x), M.divide(x, A.cast(safe, x.dtype)))


class Metric(Layer):
    """Base class: subclasses create state with `add_weight` and define `update_state` and `result`.

    >>> class Count(Metric):
    ...     def __init__(self, name="count"):
    ...         super().__init__(name=name)
    ...         self.n = self.add_weight(name="n", dtype=jf.int32)
    ...     def update_state(self, y_true, y_pred, sample_weight=None):
    ...         self.n.assign_add(jf.shape(y_true)[0])
    ...     def result(self):
    ...         return self.n.read_value()
    """

    _tracked_as_layer = False

    def __init__(self, name: Optional[str] = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name if name is not None else to_snake_case(type(self).__name__), dtype=dtype, **kwargs)
        self.built = True
        if not self._dtype.is_floating and not self._dtype.is_integer:
            raise TypeError(f'metric "{self.name}": dtype must be numeric; got {self._dtype.name}')

    def add_weight(self, name: Optional[str] = None, shape: Sequence[int] = (), dtype: Any = None,
                   initializer: Any = "zeros", regularizer: Any = None, trainable: bool = False,
                   constraint: Any = None, **kwargs: Any) -> Variable:
        """A state variable of the metric: never trainable, as Keras's (`trainable` is ignored)."""
        kwargs.pop("aggregation", None)
        kwargs.pop("synchronization", None)
        return super().add_weight(name=name, shape=shape, dtype=dtype, initializer=initializer,
                                  regularizer=regularizer, trainable=False, constraint=constraint, **kwargs)

    def update_state(self, *args: Any, **kwargs: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError(f"{type(self).__name__} must define update_state")

    def result(self) -> Tensor:  # pragma: no cover - interface
        raise NotImplementedError(f"{type(self).__name__} must define result")

    def reset_state(self) -> None:
        """Set every state variable back to zero."""
        with context.init_scope():
            for v in self.variables:
                v.assign(np.zeros(v.shape.as_list(), v.dtype.as_numpy_dtype))

    reset_states = reset_state

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self) -> Dict[str, Any]:
        return {"name": self.name, "dtype": self._dtype.name}


class Reduce(Metric):
    """`total` (and `count`) of weighted values; subclasses choose the result."""

    def __init__(self, name: Optional[str] = None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_weight("total", dtype=self._dtype)
        self.count = self.add_weight("count", dtype=self._dtype)

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        values = convert_to_tensor(values)
        if not (values.dtype.is_floating or values.dtype.is_integer or values.dtype.is_bool):
            raise TypeError(f'metric "{self.name}": values must be numeric; got dtype {values.dtype.name}')
        if values.dtype is not self._dtype:
            values = A.cast(values, self._dtype)
        if sample_weight is not None:
            w = convert_to_tensor(sample_weight)
            w = A.cast(w, self._dtype) if w.dtype is not self._dtype else w
            values = M.multiply(values, w)
            count = M.reduce_sum(M.add(A.zeros_like(values), w))
        else:
            count = A.cast(A.size(values), self._dtype)
        self.total.assign_add(M.reduce_sum(values), read_value=False)
        self.count.assign_add(count, read_value=False)


class Sum(Reduce):
    """The weighted sum of all values seen."""

    def result(self) -> Tensor:
        return self.total.read_value()


class Mean(Reduce):
    """The weighted mean of all values seen (0 before any)."""

    def result(self) -> Tensor:
        return _divide_no_nan(self.total.read_value(), self.count.read_value())


class MeanMetricWrapper(Mean):
    """The mean of `fn(y_true, y_pred, **kwargs)` over every example seen."""

    def __init__(self, fn: Callable, name: Optional[str] = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name or getattr(fn, "__name__", None), dtype=dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def update_state(self, y_true: Any, y_pred: Any,  # type: ignore[override]  # Keras's (y_true, y_pred) API
                     sample_weight: Any = None) -> None:
        y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
        for what, t in (("y_true", y_true), ("y_pred", y_pred)):
            if not (t.dtype.is_floating or t.dtype.is_integer or t.dtype.is_bool):
                raise TypeError(f'metric "{self.name}": {what} must be a numeric tensor; got dtype {t.dtype.name}')
        super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)


# -- per-example functions -------------------------------------------------------------------------------
def _matches(a: Tensor, b: Tensor) -> Tensor:
    if a.dtype is not b.dtype:
        b = A.cast(b, a.dtype)
    return A.cast(M.equal(a, b), _dt.float32)


def accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1 where y_pred == y_true."""
    return _matches(convert_to_tensor(y_true), convert_to_tensor(y_pred))


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1 where argmax(y_pred) equals the integer label."""
    y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
    if y_true.ndim is not None and y_pred.ndim is not None and y_true.ndim == y_pred.ndim and y_true._dims[-1] == 1:
        y_true = A.squeeze(y_true, [-1])
    return _matches(y_true, M.argmax(y_pred, axis=-1, output_type=_dt.int64))


def categorical_accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1 where argmax(y_pred) equals argmax(y_true) (one-hot labels)."""
    return _matches(M.argmax(y_true, axis=-1), M.argmax(y_pred, axis=-1))


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Tensor:
    """1 where (y_pred > threshold) equals y_true, averaged over the last axis."""
    y_pred = convert_to_tensor(y_pred)
    return M.reduce_mean(_matches(convert_to_tensor(y_true, dtype_hint=y_pred.dtype),
                                  A.cast(M.greater(y_pred, threshold), y_pred.dtype)), axis=-1)


class Accuracy(MeanMetricWrapper):
    def __init__(self, name: str = "accuracy", dtype: Any = None) -> None:
        super().__init__(accuracy, name, dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(sparse_categorical_accuracy, name, dtype)


class CategoricalAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(categorical_accuracy, name, dtype)


class BinaryAccuracy(MeanMetricWrapper):
    def __init__(self, name: str = "binary_accuracy", dtype: Any = None, threshold: float = 0.5) -> None:
        super().__init__(binary_accuracy, name, dtype, threshold=threshold)


class MeanSquaredError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_squared_error", dtype: Any = None) -> None:
        super().__init__(_losses.mean_squared_error, name, dtype)


class MeanAbsoluteError(MeanMetricWrapper):
    def __init__(self, name: str = "mean_absolute_error", dtype: Any = None) -> None:
        super().__init__(_losses.mean_absolute_error, name, dtype)


class AUC(Metric):
    """Area under the ROC curve (TF's `tf.keras.metrics.AUC`, `curve="ROC"`, trapezoidal rule).

    Counts true/false positives/negatives at `num_thresholds` thresholds
    (`[-ε, 1/(n-1), ..., (n-2)/(n-1), 1+ε]`, Keras's) for predictions in [0, 1].

    >>> m = AUC(); _ = m.update_state([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]); round(float(m.result()), 2)
    0.75
    """

    def __init__(self, num_thresholds: int = 200, name: str = "auc", dtype: Any = None,
                 from_logits: bool = False) -> None:
        super().__init__(name=name, dtype=dtype)
        if num_thresholds <= 1:
            raise ValueError(f'metric "{name}": num_thresholds must be > 1; got {num_thresholds}')
        eps = 1e-7
        inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        self.thresholds = np.array([-eps] + inner + [1.0 + eps], np.float32)
        self.from_logits = from_logits
        n = num_thresholds
        self.true_positives = self.add_weight("true_positives", (n,), dtype=_dt.float32)
        self.false_positives = self.add_weight("false_positives", (n,), dtype=_dt.float32)
        self.true_negatives = self.add_weight("true_negatives", (n,), dtype=_dt.float32)
        self.false_negatives = self.add_weight("false_negatives", (n,), dtype=_dt.float32)

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_pred = convert_to_tensor(y_pred)
        if not y_pred.dtype.is_floating:
            raise TypeError(f'metric "{self.name}": y_pred must be a floating-point tensor; got dtype '
                            f"{y_pred.dtype.name}")
        y_true = convert_to_tensor(y_true)
        if y_pred.dtype is not _dt.float32:
            y_pred = A.cast(y_pred, _dt.float32)
        if self.from_logits:
            y_pred = M.sigmoid(y_pred)
        pred = A.reshape(y_pred, [-1, 1])
        label = A.reshape(A.cast(y_true, _dt.float32), [-1, 1])
        above = A.cast(M.greater(pred, convert_to_tensor(self.thresholds[None, :])), _dt.float32)
        below = M.subtract(1.0, above)
        positive, negative = label, M.subtract(1.0, label)
        if sample_weight is not None:
            w = A.reshape(A.cast(convert_to_tensor(sample_weight), _dt.float32), [-1, 1])
            positive, negative = M.multiply(positive, w), M.multiply(negative, w)
        for var, counts in ((self.true_positives, M.multiply(above, positive)),
                            (self.false_positives, M.multiply(above, negative)),
                            (self.true_negatives, M.multiply(below, negative)),
                            (self.false_negatives, M.multiply(below, positive))):
            var.assign_add(M.reduce_sum(counts, axis=0), read_value=False)

    def result(self) -> Tensor:
        tp, fp = self.true_positives.read_value(), self.false_positives.read_value()
        tn, fn = self.true_negatives.read_value(), self.false_negatives.read_value()
        tpr = _divide_no_nan(tp, M.add(tp, fn))
        fpr = _divide_no_nan(fp, M.add(fp, tn))
        widths = M.subtract(fpr[:-1], fpr[1:])
        heights = M.multiply(M.add(tpr[:-1], tpr[1:]), 0.5)
        return M.reduce_sum(M.multiply(widths, heights))


_BY_NAME = {"accuracy": Accuracy, "auc": AUC, "sparse_categorical_accuracy": SparseCategoricalAccuracy,
            "categorical_accuracy": CategoricalAccuracy, "binary_accuracy": BinaryAccuracy,
            "mean_squared_error": MeanSquaredError, "mse": MeanSquaredError,
            "mean_absolute_error": MeanAbsoluteError, "mae": MeanAbsoluteError}


def get(identifier: Any, loss: Any = None) -> Metric:
    """A metric from a name, class, instance or function; `"accuracy"` follows the loss as in Keras."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Metric):
        return identifier()
    if identifier in ("accuracy", "acc"):
        loss_name = _losses.name_of(loss) if loss is not None else ""
        cls: Optional[Callable[..., Metric]]
        cls = (SparseCategoricalAccuracy if "sparse_categorical" in loss_name else
               CategoricalAccuracy if "categorical" in loss_name else
               BinaryAccuracy if "binary" in loss_name else Accuracy)
        return cls(name=identifier)
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier)
        if cls is None:
            raise ValueError(f"metrics: unknown metric {identifier!r}; expected one of {sorted(_BY_NAME)}, a "
                             "jf.keras.metrics.Metric or a function")
        return cls(name=identifier)
    if callable(identifier):
        return MeanMetricWrapper(identifier)
    raise TypeError(f"metrics: expected a name, a Metric or a function; got {identifier!r}")


__all__ = ["Metric", "Reduce", "Sum", "Mean", "MeanMetricWrapper", "Accuracy", "SparseCategoricalAccuracy",
           "CategoricalAccuracy", "BinaryAccuracy", "MeanSquaredError", "MeanAbsoluteError", "AUC", "accuracy",
           "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy", "get"]
