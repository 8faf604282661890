"""Saving and loading models in Keras 3's formats (TF's `keras.saving`).

- `model.save("m.keras")` / `load_model("m.keras")`: the `.keras` zip (config.json,
  metadata.json, model.weights.h5), readable by TF's Keras and written by it;
- `model.save_weights("w.weights.h5")` / `model.load_weights(...)`: the weights alone, in
  the same HDF5 layout;
- `register_keras_serializable` makes custom layers and models loadable by name.
"""
from __future__ import annotations

from jitflow.runtime.keras import training as _training
from jitflow.runtime.keras.saving import model_config as _model_config
from jitflow.runtime.keras.saving import weights_h5 as _weights_h5
from jitflow.runtime.keras.saving.keras_file import load_model, save_model
from jitflow.runtime.keras.saving.serialization import (get_registered_name, get_registered_object,
                                                        register_keras_serializable)

_training.SAVING_HOOKS.update(save_model=save_model, save_weights=_weights_h5.save_weights,
                              load_weights=_weights_h5.load_weights, model_config=_model_config.model_config,
                              from_config=_model_config.from_config)

__all__ = ["load_model", "save_model", "register_keras_serializable", "get_registered_name",
           "get_registered_object"]
