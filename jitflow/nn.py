"""`jf.nn`: neural-network ops (TensorFlow's `tf.nn`).

    >>> import jitflow as jf
    >>> jf.nn.relu(jf.constant([-1.0, 2.0])).numpy()
    array([0., 2.], dtype=float32)
"""
from jitflow.runtime.ops import nn_conv_ops as _conv
from jitflow.runtime.ops.math_ops import log_softmax, relu, sigmoid, softmax, tanh
from jitflow.runtime.ops.nn_conv_ops import *  # noqa: F401,F403 - conv, pooling, bias, activations
from jitflow.runtime.ops.nn_ops import (softmax_cross_entropy_with_logits,
                                        sparse_softmax_cross_entropy_with_logits)

from jitflow.runtime.ops.math_extra_ops import softsign
from jitflow.runtime.ops.nn_extra_ops import dropout, l2_loss
from jitflow.runtime.ops.math_composite_ops import embedding_lookup
from jitflow.runtime.ops.nn_activation_ops import (gelu, l2_normalize, relu6, selu, sigmoid_cross_entropy_with_logits,
                                                   silu, swish)

__all__ = ["embedding_lookup", "gelu", "l2_normalize", "relu6", "selu", "sigmoid_cross_entropy_with_logits", "silu",
           "swish",
           "dropout", "l2_loss", "softsign", "relu", "softmax", "log_softmax", "sigmoid", "tanh",
           "softmax_cross_entropy_with_logits", "sparse_softmax_cross_entropy_with_logits", *_conv.__all__]
