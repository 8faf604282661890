"""Models (TF's `tf.keras.models`): `Model`, `Sequential`, `load_model`, `save_model`."""
from __future__ import annotations

from jitflow.runtime.keras.saving import load_model, save_model
from jitflow.runtime.keras.sequential import Sequential
from jitflow.runtime.keras.training import Model

__all__ = ["Model", "Sequential", "load_model", "save_model"]
