"""More of `tf.nn`: relu6, gelu, silu/swish, selu, sigmoid cross-entropy, l2_normalize.

Composed of primitive ops as TF composes them (so gradients come for free).
"""
from __future__ import annotations

import math

from jitflow.runtime.core.context import name_scope
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_extra_ops as E
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import binary_operands, convert_to_tensor
from jitflow.runtime.ops.infer import check_kind


def _float(x, what: str = "features"):
    t = convert_to_tensor(x)
    check_kind(t.dtype, "f", what)
    return t


def _c(value, like):
    return convert_to_tensor(value, dtype=like.dtype)


def relu6(features, name=None):
    """min(max(x, 0), 6) (`tf.nn.relu6`).

    >>> jf.nn.relu6([-1.0, 3.0, 9.0]).numpy()
    array([0., 3., 6.], dtype=float32)
    """
    x = _float(features)
    with name_scope(name or "Relu6"):
        # Selects, not max/min: the gradient is 1 strictly inside (0, 6) and 0 at the ends, as TF's.
        inside = A.where(M.less(x, _c(6.0, x)), x, A.fill(A.shape(x), _c(6.0, x)))
        return A.where(M.greater(x, _c(0.0, x)), inside, A.zeros_like(x))


def gelu(features, approximate=False, name=None):
    """x · Φ(x), Φ the standard normal CDF; `approximate` uses TF's tanh formula (`tf.nn.gelu`).

    >>> jf.nn.gelu([-1.0, 0.0, 1.0]).numpy()
    array([-0.15865526,  0.        ,  0.8413447 ], dtype=float32)
    """
    x = _float(features)
    with name_scope(name or "Gelu"):
        if approximate:
            cubic = M.multiply(_c(0.044715, x), M.pow(x, _c(3.0, x)))
            inner = M.multiply(_c(math.sqrt(2.0 / math.pi), x), M.add(x, cubic))
            return M.multiply(M.multiply(_c(0.5, x), x), M.add(_c(1.0, x), M.tanh(inner)))
        return M.multiply(M.multiply(_c(0.5, x), x), E.erfc(M.multiply(x, _c(-math.sqrt(0.5), x))))  # TF's form


def silu(features, beta=1.0):
    """x · sigmoid(beta · x), also called swish (`tf.nn.silu`).

    >>> jf.nn.silu([0.0, 1.0]).numpy()
    array([0.       , 0.7310586], dtype=float32)
    """
    x = _float(features)
    with name_scope("silu"):
        return M.multiply(x, M.sigmoid(M.multiply(_c(beta, x), x)))


swish = silu


def selu(features, name=None):
    """scale · (x if x > 0 else alpha · (exp(x) - 1)), with TF's scale and alpha (`tf.nn.selu`).

    >>> jf.nn.selu([-1.0, 1.0]).numpy()
    array([-1.1113307,  1.050701 ], dtype=float32)
    """
    x = _float(features)
    alpha, scale = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
    with name_scope(name or "Selu"):
        negative = M.multiply(_c(alpha, x), E.expm1(M.minimum(x, _c(0.0, x))))
        return M.multiply(_c(scale, x), A.where(M.greater_equal(x, _c(0.0, x)), x, negative))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    """Elementwise logistic loss, computed stably: max(x, 0) - x·z + log(1 + exp(-|x|))
    (`tf.nn.sigmoid_cross_entropy_with_logits`).

    >>> jf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0], logits=[2.0, -1.0]).numpy()
    array([0.126928 , 0.3132617], dtype=float32)
    """
    if labels is None or logits is None:
        raise ValueError("labels, logits: both are required (pass them by name)")
    z, x = binary_operands(labels, logits)
    check_kind(x.dtype, "f", "logits")
    if not z.shape.is_compatible_with(x.shape):
        raise ValueError(f"logits and labels must have the same shape ({x.shape} vs {z.shape})")
    with name_scope(name or "logistic_loss"):
        # TF's selects (not max/abs), which also fix the gradient at logits == 0.
        nonnegative = M.greater_equal(x, A.zeros_like(x))
        relu_logits = A.where(nonnegative, x, A.zeros_like(x))
        neg_abs_logits = A.where(nonnegative, M.negative(x), x)
        return M.add(M.subtract(relu_logits, M.multiply(x, z)), E.log1p(M.exp(neg_abs_logits)))


def l2_normalize(x, axis=None, epsilon=1e-12, name=None):
    """x / sqrt(max(sum(x²), epsilon)) over `axis` (`tf.math.l2_normalize`, `tf.nn.l2_normalize`).

    >>> jf.math.l2_normalize([3.0, 4.0]).numpy()
    array([0.6, 0.8], dtype=float32)
    """
    t = _float(x, "x")
    with name_scope(name or "l2_normalize"):
        square_sum = M.reduce_sum(M.square(t), axis=axis, keepdims=True)
        return M.multiply(t, E.rsqrt(M.maximum(square_sum, _c(epsilon, t))))


__all__ = ["relu6", "gelu", "silu", "swish", "selu", "sigmoid_cross_entropy_with_logits", "l2_normalize"]
