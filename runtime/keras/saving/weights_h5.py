"""Weights in Keras 3's HDF5 layout (`model.weights.h5`, also `save_weights("x.weights.h5")`).

Keras walks the model and writes each object's own variables as datasets `0`, `1`, ...
in a `vars` group (attribute `name`: the object's name):

    vars                                  the model's own (none)
    layers/<snake_case class>[_i]/vars    each layer of a Sequential / Functional model, in
                                          `model.layers` order (Functional: its inputs too)
    <attribute>/vars                      a sub-layer held by an attribute (subclassed
    <attribute>/<snake_case class>[_i]/   models, custom layers); lists of layers
    optimizer/vars                        iterations, learning rate, then the slots of each
                                          trainable variable (Adam: m, v; SGD: momentum)

Paths come from classes and attribute names, never from layer names (those differ between
two instances of one model), so a file loads into any model of the same structure.
Reading checks every shape first and assigns nothing if one differs.
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Iterator, List, Tuple

import numpy as np

from jitflow.runtime.keras.backend import to_snake_case
from jitflow.runtime.keras.layers.base import Layer
from jitflow.runtime.keras.layers.functional_node import KerasTensor
from jitflow.runtime.keras.saving.model_config import operations

_SKIP = {"_layers", "_functional", "_input_struct", "optimizer", "history", "_compile_loss", "_compile_metrics",
         "_loss_tracker", "_train_function", "_test_function", "_predict_function", "compiled_loss"}


def _unique(name: str, used: Dict[str, int]) -> str:
    n = used.get(name, 0)
    used[name] = n + 1
    return name if n == 0 else f"{name}_{n}"


def _own(layer: Any) -> List[Any]:
    return list(layer._trainable_weights) + list(layer._non_trainable_weights)


def _children(obj: Any) -> Iterator[Tuple[str, Any]]:
    """(attribute, value) for attributes holding layers or lists of them: public first, then private."""
    names = sorted(vars(obj), key=lambda n: ("~" + n) if n.startswith("_") else n)
    for name in names:
        if name in _SKIP or name.startswith("__"):
            continue
        value = vars(obj)[name]
        if _is_layer(value) or (isinstance(value, (list, tuple, dict)) and any(
                _is_layer(v) for v in (value.values() if isinstance(value, dict) else value))):
            yield name, value


def _is_layer(x: Any) -> bool:
    return isinstance(x, Layer) and x._tracked_as_layer


def walk(model: Any) -> List[Tuple[str, Any, List[Any]]]:
    """(group path, object, variables) for every object with state, in Keras's order."""
    out: List[Tuple[str, Any, List[Any]]] = []
    seen = set()

    def visit(obj: Any, path: str) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, KerasTensor):   # a functional model's input: an InputLayer without weights
            out.append((path, obj, []))
            return
        out.append((path, obj, _own(obj)))
        if getattr(obj, "_functional", None) is not None:
            container(operations(obj), _join(path, "layers"))
        elif _is_sequential(obj):
            container(obj.layers, _join(path, "layers"))
        for attr, value in _children(obj):
            if _is_layer(value):
                visit(value, _join(path, attr))
            else:
                container(value.values() if isinstance(value, dict) else value, _join(path, attr))

    def container(items: Any, path: str) -> None:
        used: Dict[str, int] = {}
        for item in items:
            if isinstance(item, KerasTensor):
                visit(item, _join(path, _unique("input_layer", used)))
            elif _is_layer(item):
                visit(item, _join(path, _unique(to_snake_case(type(item).__name__), used)))

    visit(model, "")
    return out


def _is_sequential(obj: Any) -> bool:
    return type(obj).__name__ == "Sequential" or any(c.__name__ == "Sequential" for c in type(obj).__mro__)


def _join(a: str, b: str) -> str:
    return f"{a}/{b}" if a else b


def optimizer_variables(model: Any) -> List[Any]:
    """Keras's optimizer variable order: iterations, learning rate (unless a schedule), slots."""
    opt = model.optimizer
    values: List[Any] = [opt.iterations]
    if hasattr(opt._learning_rate, "assign"):   # a schedule is no variable
        values.append(opt._learning_rate)
    for var in model.trainable_variables:
        entry = opt._slots.get(id(var))
        if entry is not None:
            values.extend(entry[1][name] for name in opt._slot_names)
    return values


def _value(v: Any) -> np.ndarray:
    if hasattr(v, "numpy"):
        return np.asarray(v.numpy())
    return np.asarray(v, np.float32)


def save_weights(model: Any, filepath: str, include_optimizer: bool = True) -> None:
    """Write the model's weights (and its optimizer's) to `filepath` in Keras's HDF5 layout."""
    import h5py
    directory = os.path.dirname(os.path.abspath(filepath))
    fd, tmp = tempfile.mkstemp(suffix=".h5.tmp", dir=directory)
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            for path, obj, variables in walk(model):
                group = f.create_group(_join(path, "vars"))
                group.attrs["name"] = getattr(obj, "name", None) or type(obj).__name__.lower()
                for i, var in enumerate(variables):
                    group.create_dataset(str(i), data=_value(var))
            if include_optimizer and getattr(model, "optimizer", None) is not None:
                group = f.create_group("optimizer/vars")
                group.attrs["name"] = getattr(model.optimizer, "_name", None) or type(model.optimizer).__name__.lower()
                for i, var in enumerate(optimizer_variables(model)):
                    group.create_dataset(str(i), data=_value(var))
        os.replace(tmp, filepath)   # a crash never leaves a half-written file under the real name
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def load_weights(model: Any, filepath: str, load_optimizer: bool = True) -> List[str]:
    """Assign the weights in `filepath` to `model` (shapes checked before anything is assigned);
    returns warnings (an optimizer whose state does not match is skipped, as in Keras)."""
    import h5py
    warnings: List[str] = []
    with h5py.File(filepath, "r") as f:
        plan: List[Tuple[Any, np.ndarray]] = []
        for path, obj, variables in walk(model):
            key = _join(path, "vars")
            if not variables:
                continue
            if key not in f:
                raise ValueError(f"load_weights: {filepath} has no weights for layer \"{obj.name}\" (expected the "
                                 f"group {key!r}); the file holds {sorted(_groups(f))}")
            group = f[key]
            if len(group) != len(variables):
                raise ValueError(f'load_weights: layer "{obj.name}" expects {len(variables)} variables but '
                                 f"{filepath} has {len(group)} at {key!r}")
            for i, var in enumerate(variables):
                value = np.asarray(group[str(i)])
                want = tuple(var.shape.as_list())
                if value.shape != want:
                    raise ValueError(f'load_weights: layer "{obj.name}" weight {var.name} has shape {want} but '
                                     f"{filepath} holds shape {value.shape} at {key}/{i}")
                plan.append((var, value))
        for var, value in plan:
            var.assign(value.astype(var.dtype.as_numpy_dtype))
        if load_optimizer and getattr(model, "optimizer", None) is not None and "optimizer/vars" in f:
            group = f["optimizer/vars"]
            if len(group) > 2 and hasattr(model, "_build_optimizer"):
                model._build_optimizer()   # create the slots the file has values for
            mine = optimizer_variables(model)
            if len(group) != len(mine):
                warnings.append(f"Skipping variable loading for optimizer '{model.optimizer._name}', because it "
                                f"has {len(mine)} variables whereas the saved optimizer has {len(group)} variables.")
            else:
                for i, var in enumerate(mine):
                    value = np.asarray(group[str(i)])
                    if hasattr(var, "assign"):
                        var.assign(value.astype(var.dtype.as_numpy_dtype))
    return warnings


def _groups(f: Any) -> List[str]:
    names: List[str] = []
    f.visit(lambda n: names.append(n) if n.endswith("/vars") or n == "vars" else None)
    return names


__all__: List[str] = []
