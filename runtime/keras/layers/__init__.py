"""Keras layers (TF's `tf.keras.layers`)."""
from __future__ import annotations

from jitflow.runtime.keras.layers.base import InputSpec, Layer
from jitflow.runtime.keras.layers.conv import *  # noqa: F401,F403
from jitflow.runtime.keras.layers.conv import __all__ as _conv_all
from jitflow.runtime.keras.layers.core import *  # noqa: F401,F403
from jitflow.runtime.keras.layers.core import __all__ as _core_all
from jitflow.runtime.keras.layers.functional_node import Input, KerasTensor
from jitflow.runtime.keras.layers.normalization import BatchNormalization

__all__ = ["Layer", "InputSpec", "Input", "KerasTensor", "BatchNormalization", *_core_all, *_conv_all]
