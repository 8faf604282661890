"""Initializers (TF's `tf.keras.initializers`): the runtime's, under Keras's names.

    >>> init = get("glorot_uniform")
    >>> init([3, 2]).shape
    TensorShape([3, 2])
"""
from __future__ import annotations

from jitflow.runtime.training.initializers import *  # noqa: F401,F403 - the public initializers
from jitflow.runtime.training.initializers import __all__ as _runtime_all
from jitflow.runtime.training.initializers import get  # noqa: F401

__all__ = list(_runtime_all)
