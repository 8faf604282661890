"""A model's `config.json` entry (Sequential, Functional, subclassed) and its rebuilding.

Functional models list their layers in Keras's operation order (`functional_order`); the
same order names the layers' groups in `model.weights.h5`, so TF's Keras, which
recomputes it from the config, finds each layer's weights where jitflow wrote them.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jitflow.runtime.keras.functional_order import operations
from jitflow.runtime.keras.layers.functional_node import Input, KerasTensor, flatten
from jitflow.runtime.keras.saving import serialization as S
from jitflow.runtime.keras.sequential import Sequential
from jitflow.runtime.keras.training import Model


def _input_names(model: Any) -> Dict[int, str]:
    """Each input KerasTensor's layer name (its own name, else `input_layer`, `input_layer_1`, ...)."""
    names: Dict[int, str] = {}
    n = 0
    for t in flatten(model._functional[0]):
        if t.name:
            names[id(t)] = t.name
        else:
            names[id(t)] = "input_layer" if n == 0 else f"input_layer_{n}"
            n += 1
    return names


def _input_layer(name: str, dims: Any, dtype: str) -> Dict[str, Any]:
    return {"module": "keras.layers", "class_name": "InputLayer",
            "config": {"batch_shape": list(dims), "dtype": dtype, "sparse": False, "ragged": False, "name": name,
                       "optional": False}, "registered_name": None}


# -- writing --------------------------------------------------------------------------------------------
def model_config(model: Any) -> Dict[str, Any]:
    if isinstance(model, Sequential) and type(model) is Sequential:
        return _sequential_config(model)
    if model._functional is not None and type(model).__name__ in ("Model", "Functional"):
        return _functional_config(model)
    return _subclassed_config(model)


def _sequential_config(model: Any) -> Dict[str, Any]:
    layers = []
    shape = model._input_dims_declared or (model._layers[0]._batch_input_shape if model._layers else None)
    if shape is None and model._layers and model._layers[0]._input_dims not in (None, "multiple"):
        shape = model._layers[0]._input_dims
    if shape is not None:
        layers.append(_input_layer("input_layer", shape, model.dtype.name))
    layers += [S.serialize_layer(layer) for layer in model.layers]
    config: Dict[str, Any] = {"name": model.name, "trainable": model.trainable,
                              "dtype": S._dtype_policy(model.dtype.name), "layers": layers}
    out: Dict[str, Any] = {"module": "keras", "class_name": "Sequential", "config": config, "registered_name": None}
    if shape is not None:
        config["build_input_shape"] = list(shape)
        out["build_config"] = {"input_shape": list(shape)}
    return out


def _tensor_ref(t: KerasTensor, where: Dict[int, Tuple[str, int, int]]) -> Dict[str, Any]:
    return {"class_name": "__keras_tensor__",
            "config": {"shape": list(t._dims), "dtype": t.dtype.name, "keras_history": list(where[id(t)])}}


def _functional_config(model: Any) -> Dict[str, Any]:
    inputs, outputs, nodes = model._functional
    in_names = _input_names(model)
    where: Dict[int, Tuple[str, int, int]] = {id(t): (in_names[id(t)], 0, 0) for t in flatten(inputs)}
    calls: Dict[int, int] = {}
    node_index: Dict[int, int] = {}
    for node in nodes:   # each layer's calls, numbered in the order the graph makes them
        node_index[id(node)] = calls.get(id(node.layer), 0)
        calls[id(node.layer)] = node_index[id(node)] + 1
        for i, t in enumerate(flatten(node.outputs)):
            where[id(t)] = (node.layer.name, node_index[id(node)], i)
    entries = []
    for op in operations(model):
        if isinstance(op, KerasTensor):
            entry = _input_layer(in_names[id(op)], op._dims, op.dtype.name)
            entry.update(name=in_names[id(op)], inbound_nodes=[])
        else:
            entry = S.serialize_layer(op)
            inbound = []
            for node in (n for n in nodes if n.layer is op):
                args = node.inputs
                ref = [_tensor_ref(t, where) for t in args] if isinstance(args, (list, tuple)) else \
                    _tensor_ref(args, where)
                inbound.append({"args": [ref, *node.args], "kwargs": dict(node.kwargs)})
            entry.update(name=op.name, inbound_nodes=inbound)
        entries.append(entry)

    def refs(struct: Any) -> Any:
        if isinstance(struct, dict):
            return {k: list(where[id(v)]) for k, v in struct.items()}
        if isinstance(struct, (list, tuple)):
            return [list(where[id(v)]) for v in struct]
        return [list(where[id(struct)])]

    config = {"name": model.name, "trainable": model.trainable, "layers": entries,
              "input_layers": refs(inputs), "output_layers": refs(outputs)}
    return {"module": "keras.src.models.functional", "class_name": "Functional", "config": config,
            "registered_name": "Functional", "build_config": {"input_shape": None}}


def _subclassed_config(model: Any) -> Dict[str, Any]:
    config = model.get_config()   # the base config (name, trainable, dtype) unless the class adds its arguments
    out = {"module": type(model).__module__, "class_name": type(model).__name__, "config": config,
           "registered_name": S.get_registered_name(model)}
    dims = model._input_dims
    if dims not in (None, "multiple"):
        out["build_config"] = {"input_shape": S._listify(dims)}
    return out


# -- reading --------------------------------------------------------------------------------------------
def from_config(entry: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    """A model rebuilt (and built) from its `config.json` entry."""
    name = entry.get("class_name")
    if name == "Sequential":
        model = _sequential_from_config(entry["config"], custom_objects)
    elif name in ("Functional", "Model") and "layers" in entry.get("config", {}) \
            and "input_layers" in entry.get("config", {}):
        model = _functional_from_config(entry["config"], custom_objects)
    else:
        model = _subclassed_from_config(entry, custom_objects)
    build = (entry.get("build_config") or {}).get("input_shape")
    if build and not model.built or (build and not model._call_count):
        model.build(_shape_tuple(build))
    return model


def _shape_tuple(shape: Any) -> Any:
    return tuple(None if d is None else int(d) for d in shape)


def _sequential_from_config(config: Dict[str, Any], custom_objects: Any) -> Any:
    model = Sequential(name=config.get("name"))
    for entry in config.get("layers", []):
        if entry.get("class_name") == "InputLayer":
            c = entry["config"]
            model.add(Input(batch_shape=_shape_tuple(c.get("batch_shape") or c.get("batch_input_shape")),
                            dtype=S._plain(c.get("dtype")) or None, name=c.get("name")))
        else:
            model.add(S.deserialize_layer(entry, custom_objects))
    if not model.built and config.get("build_input_shape"):
        model.build(_shape_tuple(config["build_input_shape"]))
    return model


def _functional_from_config(config: Dict[str, Any], custom_objects: Any) -> Any:
    made: Dict[Tuple[str, int], List[KerasTensor]] = {}

    def tensor(ref: Any) -> Any:
        if isinstance(ref, dict) and ref.get("class_name") == "__keras_tensor__":
            layer, node, index = ref["config"]["keras_history"]
            return made[(layer, node)][index]
        if isinstance(ref, list):
            return [tensor(r) for r in ref]
        if isinstance(ref, dict):
            return {k: tensor(v) for k, v in ref.items()}
        return ref

    for entry in config["layers"]:
        c = entry["config"]
        if entry.get("class_name") == "InputLayer":
            name = entry.get("name") or c.get("name")
            made[(name, 0)] = [Input(batch_shape=_shape_tuple(c.get("batch_shape") or c.get("batch_input_shape")),
                                     dtype=S._plain(c.get("dtype")) or None, name=name)]
            continue
        layer = S.deserialize_layer(entry, custom_objects)
        for i, node in enumerate(entry.get("inbound_nodes", [])):
            args = [tensor(a) for a in node.get("args", [])]
            kwargs = {k: tensor(v) for k, v in (node.get("kwargs") or {}).items()}
            out = layer(*args, **kwargs)
            made[(layer.name, i)] = flatten(out)

    def refs(struct: Any) -> Any:
        if isinstance(struct, dict):
            return {k: made[(v[0], v[1])][v[2]] for k, v in struct.items()}
        if struct and isinstance(struct[0], (list, tuple)):
            return [made[(v[0], v[1])][v[2]] for v in struct]
        return made[(struct[0], struct[1])][struct[2]]

    ins, outs = refs(config["input_layers"]), refs(config["output_layers"])
    if isinstance(ins, list) and len(ins) == 1:
        ins = ins[0]
    if isinstance(outs, list) and len(outs) == 1:
        outs = outs[0]
    return Model(inputs=ins, outputs=outs, name=config.get("name"))


def _subclassed_from_config(entry: Dict[str, Any], custom_objects: Any) -> Any:
    cls = S._layer_class(entry, custom_objects)
    config = dict(entry.get("config") or {})
    try:
        return cls.from_config(config)
    except TypeError:
        if set(config) <= {"name", "trainable", "dtype", "batch_input_shape"}:   # an __init__ without arguments
            return cls()
        raise


def zeros_like_shape(shape: Any, dtype: Any) -> np.ndarray:
    return np.zeros([1 if d is None else d for d in shape], dtype)


__all__: List[str] = []
