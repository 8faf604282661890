"""Keras layers (TF's `tf.keras.layers`)."""
from __future__ import annotations

from .base import InputSpec, Layer
from .conv import *  # noqa: F401,F403
from .conv import __all__ as _conv_all
from .core import *  # noqa: F401,F403
from .core import __all__ as _core_all
from .functional_node import Input, KerasTensor
from .normalization import BatchNormalization

__all__ = ["Layer", "InputSpec", "Input", "KerasTensor", "BatchNormalization", *_core_all, *_conv_all]
