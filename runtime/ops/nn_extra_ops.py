"""`tf.nn.dropout` and `tf.nn.l2_loss`, composed of primitives (gradients come for free)."""
from __future__ import annotations

import numbers

from jitflow.runtime.core.context import name_scope
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops import random_ops as R
from jitflow.runtime.ops.constant_op import convert_to_tensor


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    """Zero each value with probability `rate` and scale the rest by 1 / (1 - rate).

    >>> dropout([1.0, 1.0], rate=0.0).numpy()
    array([1., 1.], dtype=float32)
    """
    with name_scope(name or "dropout"):
        x = convert_to_tensor(x)
        if not x.dtype.is_floating:
            raise ValueError(f"x: dropout needs a floating-point tensor; got dtype {x.dtype.name}")
        if isinstance(rate, numbers.Real) and not isinstance(rate, bool):
            if not 0 <= rate < 1:
                raise ValueError(f"rate: expected a float in [0, 1); got {rate}")
            if rate == 0:
                return A.identity(x)
        elif not isinstance(rate, Tensor):
            raise TypeError(f"rate: expected a float in [0, 1) or a scalar tensor; got {rate!r}")
        shape = x._dims if noise_shape is None else A._check_dims(noise_shape)
        if shape is None or any(d is None for d in shape):
            raise InvalidArgumentError("x: dropout needs a fully known shape (or pass noise_shape)")
        rate_t = convert_to_tensor(rate, dtype=x.dtype)
        keep = M.greater_equal(R.uniform(shape, dtype=x.dtype, seed=seed), rate_t)
        one = convert_to_tensor(1.0, dtype=x.dtype)
        scale = M.divide(one, M.subtract(one, rate_t))
        return M.multiply(M.multiply(x, scale), A.cast(keep, x.dtype))


def l2_loss(t, name=None):
    """sum(t²) / 2, as a scalar.

    >>> l2_loss([1.0, 2.0]).numpy()
    np.float32(2.5)
    """
    with name_scope(name or "L2Loss"):
        t = convert_to_tensor(t)
        if not t.dtype.is_floating:
            raise TypeError(f"t: l2_loss needs a floating-point tensor; got dtype {t.dtype.name}")
        return M.divide(M.reduce_sum(M.square(t)), convert_to_tensor(2.0, dtype=t.dtype))


__all__ = ["dropout", "l2_loss"]
