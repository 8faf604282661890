"""`jf.initializers`: callables `init(shape, dtype)` returning initial values (`tf.initializers`).

    >>> import jitflow as jf
    >>> jf.initializers.Zeros()([2]).numpy()
    array([0., 0.], dtype=float32)
"""
from jitflow.runtime.training import initializers as _initializers
from jitflow.runtime.training.initializers import *  # noqa: F401,F403 - the module's own __all__

__all__ = list(_initializers.__all__)
