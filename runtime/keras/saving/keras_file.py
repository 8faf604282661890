"""The `.keras` file: a zip of `metadata.json`, `config.json` and `model.weights.h5` (Keras 3).

`config.json` is the model's config (see `model_config`) plus `compile_config` (the
optimizer's config, the loss, loss weights and metrics given to `compile`); the weights
file is `weights_h5`'s layout. TF's `keras.models.load_model` reads what `save_model`
writes for Sequential and functional models of built-in layers, and `load_model` reads
files TF's Keras wrote for the layers jitflow has.

The zip is written to a temporary name next to the target and renamed, so an interrupted
save never leaves a truncated `.keras` file under the real name.
"""
from __future__ import annotations

import datetime
import json
import os
import tempfile
import warnings
import zipfile
from typing import Any, Dict, Optional

from jitflow.runtime.keras.saving import model_config as _mc
from jitflow.runtime.keras.saving import serialization as S
from jitflow.runtime.keras.saving import weights_h5 as _h5

KERAS_FORMAT_VERSION = "3.15.1"   # the Keras release whose `.keras` layout this follows
_CONFIG, _METADATA, _WEIGHTS = "config.json", "metadata.json", "model.weights.h5"


def _check_path(filepath: Any, who: str, suffix: str) -> str:
    path = os.fspath(filepath)
    if not str(path).endswith(suffix):
        raise ValueError(f"{who}: the filepath must end in {suffix!r} (Keras's format); got {path!r}")
    return str(path)


def compile_config(model: Any) -> Optional[Dict[str, Any]]:
    args = getattr(model, "_compile_args", None)
    if not getattr(model, "_is_compiled", False) or args is None:
        return None
    return {"optimizer": S.serialize_optimizer(model.optimizer), "loss": S.serialize_loss(args["loss"]),
            "loss_weights": args["loss_weights"], "metrics": S.serialize_metrics(args["metrics"]),
            "weighted_metrics": S.serialize_metrics(args["weighted_metrics"]),
            "run_eagerly": bool(getattr(model, "run_eagerly", False)), "steps_per_execution": 1,
            "jit_compile": bool(getattr(model, "_jit_compile", False))}


def save_model(model: Any, filepath: Any, include_optimizer: bool = True) -> None:
    """Write `model` as a `.keras` file (what `model.save(filepath)` does).

    >>> import os, tempfile
    >>> save_model(jf.keras.Sequential([jf.keras.Input((2,)), jf.keras.layers.Dense(1)]),
    ...            os.path.join(tempfile.mkdtemp(), "tiny.keras"))
    """
    path = _check_path(filepath, "save", ".keras")
    if not model.built:
        raise ValueError(f'save: model "{model.name}" is not built yet; call it on data, fit it, or call '
                         "build(input_shape) before saving")
    entry = _mc.model_config(model)
    compiled = compile_config(model)
    if compiled is not None:
        entry["compile_config"] = compiled
    metadata = {"keras_version": KERAS_FORMAT_VERSION, "saved_by": "jitflow",
                "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as scratch:
        weights = os.path.join(scratch, _WEIGHTS)
        _h5.save_weights(model, weights, include_optimizer=include_optimizer)
        tmp = os.path.join(scratch, "model.keras")
        with zipfile.ZipFile(tmp, "w") as z:
            z.writestr(_METADATA, json.dumps(metadata))
            z.writestr(_CONFIG, json.dumps(entry, default=_json_default))
            z.write(weights, _WEIGHTS, compress_type=zipfile.ZIP_STORED)
        os.replace(tmp, path)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "as_list"):
        return value.as_list()
    raise TypeError(f"save: a config value of type {type(value).__name__} cannot be written as JSON: {value!r}; "
                    "make get_config() return plain Python values")


def load_model(filepath: Any, custom_objects: Optional[Dict[str, Any]] = None, compile: bool = True,
               safe_mode: bool = True) -> Any:
    """Rebuild a model from a `.keras` file: its layers, weights and (with `compile=True`) its
    optimizer, loss and metrics (TF's `keras.models.load_model`).

    >>> import os, tempfile
    >>> model = jf.keras.Sequential([jf.keras.Input((3,)), jf.keras.layers.Dense(2)])
    >>> path = os.path.join(tempfile.mkdtemp(), "m.keras"); model.save(path)
    >>> np.allclose(load_model(path).predict(np.ones((1, 3)), verbose=0), model.predict(np.ones((1, 3)), verbose=0))
    True
    """
    path = os.fspath(filepath)
    if not zipfile.is_zipfile(path):
        raise ValueError(f"load_model: {path!r} is not a .keras file (a zip with config.json and "
                         "model.weights.h5); jitflow checkpoints load with model.load_weights")
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        missing = {_CONFIG, _WEIGHTS} - names
        if missing:
            raise ValueError(f"load_model: {path!r} lacks {sorted(missing)}; it holds {sorted(names)}")
        entry = json.loads(z.read(_CONFIG))
        with tempfile.TemporaryDirectory() as scratch:
            z.extract(_WEIGHTS, scratch)
            model = _mc.from_config(entry, custom_objects)
            compiled = entry.get("compile_config") if compile else None
            if compiled:
                model.compile(optimizer=S.deserialize_optimizer(compiled["optimizer"], custom_objects),
                              loss=S.deserialize_loss(compiled.get("loss"), custom_objects),
                              loss_weights=compiled.get("loss_weights"),
                              metrics=S.deserialize_metrics(compiled.get("metrics"), custom_objects),
                              weighted_metrics=S.deserialize_metrics(compiled.get("weighted_metrics"),
                                                                     custom_objects))
            for message in _h5.load_weights(model, os.path.join(scratch, _WEIGHTS), load_optimizer=bool(compiled)):
                warnings.warn(message, stacklevel=2)
    return model


__all__ = ["save_model", "load_model"]
