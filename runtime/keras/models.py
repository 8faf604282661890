"""Models (TF's `tf.keras.models`): `Model`, `Sequential`."""
from __future__ import annotations

from jitflow.runtime.keras.sequential import Sequential
from jitflow.runtime.keras.training import Model

__all__ = ["Model", "Sequential"]
