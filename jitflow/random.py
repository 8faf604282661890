"""`jf.random`: random tensors with TensorFlow's seeding rules (`tf.random`).

    >>> import jitflow as jf
    >>> jf.random.set_seed(1)
    >>> jf.random.normal([2, 3]).shape
    TensorShape([2, 3])
"""
from jitflow.runtime.ops.random_ops import normal, set_seed, uniform

__all__ = ["normal", "uniform", "set_seed"]
