"""Activation functions by name (TF's `tf.keras.activations`), built on jitflow ops.

    >>> get("relu")(jf.constant([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops import nn_conv_ops as N


def linear(x: Any) -> Any:
    """The identity (Keras's default: no activation)."""
    return x


def relu(x: Any, alpha: float = 0.0, max_value: Optional[float] = None) -> Any:
    """max(x, 0); with `alpha`, a leaky slope below zero; with `max_value`, capped."""
    out = N.leaky_relu(x, alpha) if alpha else M.relu(x)
    return M.minimum(out, max_value) if max_value is not None else out


def softmax(x: Any, axis: int = -1) -> Any:
    return M.softmax(x, axis=axis)


def sigmoid(x: Any) -> Any:
    return M.sigmoid(x)


def tanh(x: Any) -> Any:
    return M.tanh(x)


def softplus(x: Any) -> Any:
    return N.softplus(x)


def elu(x: Any, alpha: float = 1.0) -> Any:
    out = N.elu(x)
    return out if alpha == 1.0 else M.add(M.relu(x), M.multiply(alpha, M.minimum(out, 0.0)))


def leaky_relu(x: Any, alpha: float = 0.2) -> Any:
    return N.leaky_relu(x, alpha)


def log_softmax(x: Any, axis: int = -1) -> Any:
    return M.log_softmax(x, axis=axis)


def exponential(x: Any) -> Any:
    return M.exp(x)


_BY_NAME = {fn.__name__: fn for fn in (linear, relu, softmax, sigmoid, tanh, softplus, elu, leaky_relu,
                                        log_softmax, exponential)}


def get(identifier: Any) -> Callable:
    """An activation from a name, a callable, or None (linear)."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        fn = _BY_NAME.get(identifier)
        if fn is None:
            raise ValueError(f"activation: unknown activation {identifier!r}; expected one of {sorted(_BY_NAME)} "
                             "or a callable")
        return fn
    if callable(identifier):
        return identifier
    raise TypeError(f"activation: expected a name or a callable; got {identifier!r}")


def serialize(fn: Callable) -> Any:
    return getattr(fn, "__name__", repr(fn))


__all__ = [*sorted(_BY_NAME), "get", "serialize"]
