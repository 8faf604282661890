"""Models (TF's `tf.keras.models`): `Model`, `Sequential`."""
from __future__ import annotations

from .sequential import Sequential
from .training import Model

__all__ = ["Model", "Sequential"]
