"""`jf.losses`: Keras-style losses, functions and classes (`tf.keras.losses`).

    >>> import jitflow as jf
    >>> jf.losses.MeanSquaredError()([1.0, 2.0], [1.0, 4.0]).numpy()
    np.float32(2.0)
"""
from jitflow.runtime.training import losses as _losses
from jitflow.runtime.training.losses import *  # noqa: F401,F403 - the losses module's own __all__

__all__ = list(_losses.__all__)
