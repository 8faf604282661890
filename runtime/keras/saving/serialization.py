"""Keras 3's object configs: `{"module", "class_name", "config", "registered_name"}`.

A `.keras` file describes every layer, initializer, loss and optimizer by such a dict.
`serialize` writes them for jitflow objects so that TF's Keras rebuilds the same model;
`deserialize` reads them (written by jitflow or by Keras) back into jitflow objects.

Keras configs carry arguments jitflow's classes do not take (regularizers, constraints,
`data_format`, quantization, ...). When such an argument holds Keras's default (None,
False, `"channels_last"`, one group) it is dropped; any other value is refused with an
error naming the layer, the argument and the value, so a model is never loaded as
something else than what was saved.

Custom classes are found in `custom_objects` or in the registry that
`register_keras_serializable` fills (`"package>Name"`, Keras's registered name).
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Mapping, Optional

from jitflow.runtime.keras import initializers as _init
from jitflow.runtime.keras import layers as _layers
from jitflow.runtime.keras import losses as _losses
from jitflow.runtime.keras import metrics as _metrics
from jitflow.runtime.keras import optimizers as _optimizers

_REGISTERED: Dict[str, type] = {}

# Keras arguments jitflow does not take, and the values that mean "not used" (dropped on load).
_BENIGN: Dict[str, Optional[tuple]] = {
    "data_format": ("channels_last", None), "groups": (1,), "synchronized": (False,), "renorm": (False,),
    "renorm_momentum": None, "renorm_clipping": (None,), "sparse": (False,), "ragged": (False,),
    "optional": (False,), "mask_zero": (False,), "lora_rank": (None,), "lora_alpha": (None,),
    "quantization_config": (None,), "input_length": (None,), "threshold": (0, 0.0), "ignore_class": (None,),
    "input_axes": (None,), "output_axes": (None,), "seed": (None,), "dtype": None, "autocast": (True,),
}


def register_keras_serializable(package: str = "Custom", name: Optional[str] = None) -> Callable[[type], type]:
    """Register a class so that `load_model` finds it by its registered name `package>Name`.

    >>> @register_keras_serializable(package="demo")
    ... class Twice(jf.keras.layers.Layer):
    ...     def call(self, x):
    ...         return x * 2
    >>> get_registered_name(Twice)
    'demo>Twice'
    """
    def decorate(cls: type) -> type:
        key = f"{package}>{name or cls.__name__}"
        _REGISTERED[key] = cls
        cls._registered_name = key  # type: ignore[attr-defined]  # read by get_registered_name
        return cls
    return decorate


def get_registered_name(obj: Any) -> str:
    """The name a class is saved under: `package>Name` when registered, else its class name.

    >>> get_registered_name(jf.keras.layers.Dense)
    'Dense'
    """
    cls = obj if isinstance(obj, type) else type(obj)
    return cls.__dict__.get("_registered_name") or cls.__name__


def get_registered_object(name: str, custom_objects: Optional[Dict[str, Any]] = None) -> Optional[Any]:
    """The class registered (or passed in `custom_objects`) under `name`, or None.

    >>> get_registered_object("Dense", {"Dense": jf.keras.layers.Dense}) is jf.keras.layers.Dense
    True
    """
    if custom_objects and name in custom_objects:
        return custom_objects[name]
    return _REGISTERED.get(name)


# -- writing --------------------------------------------------------------------------------------------
def _dtype_policy(name: str) -> Dict[str, Any]:
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name}, "registered_name": None}


def serialize_initializer(init: Any) -> Any:
    if isinstance(init, str):
        return init
    config = init.get_config() if hasattr(init, "get_config") else {}
    return {"module": "keras.initializers", "class_name": type(init).__name__, "config": config,
            "registered_name": None}


def layer_config(layer: Any) -> Dict[str, Any]:
    """A layer's `get_config()` in Keras's spelling (dtype policy, initializer dicts)."""
    config = dict(layer.get_config())
    config.pop("batch_input_shape", None)   # the model's InputLayer carries the input shape
    if isinstance(config.get("dtype"), str):
        config["dtype"] = _dtype_policy(config["dtype"])
    for key, value in list(config.items()):
        if key.endswith("_initializer") and isinstance(value, dict) and "class_name" in value:
            config[key] = {"module": "keras.initializers", "class_name": value["class_name"],
                           "config": value.get("config", {}), "registered_name": None}
        elif isinstance(value, tuple):
            config[key] = list(value)
    return config


def serialize_layer(layer: Any) -> Dict[str, Any]:
    registered = get_registered_name(layer)
    builtin = getattr(_layers, type(layer).__name__, None) is type(layer)
    out: Dict[str, Any] = {"module": "keras.layers" if builtin else type(layer).__module__,
                           "class_name": type(layer).__name__, "config": layer_config(layer),
                           "registered_name": None if builtin else registered}
    dims = getattr(layer, "_input_dims", None)
    if layer.built and dims is not None and dims != "multiple":
        out["build_config"] = {"input_shape": _listify(dims)}
    return out


def serialize_loss(loss: Any) -> Any:
    if loss is None or isinstance(loss, str):
        return loss
    if isinstance(loss, (list, tuple)):
        return [serialize_loss(x) for x in loss]
    if isinstance(loss, dict):
        return {k: serialize_loss(v) for k, v in loss.items()}
    if isinstance(loss, _losses.Loss):
        config = dict(loss.get_config())
        if type(loss).__name__ in ("SparseCategoricalCrossentropy",):
            config.setdefault("ignore_class", None)
        return {"module": "keras.losses", "class_name": type(loss).__name__, "config": config,
                "registered_name": None}
    return getattr(loss, "__name__", str(loss))   # a loss function: Keras saves it by name


def serialize_metrics(metrics: Any) -> Any:
    if metrics is None or isinstance(metrics, str):
        return metrics
    if isinstance(metrics, (list, tuple)):
        return [serialize_metrics(m) for m in metrics]
    if isinstance(metrics, dict):
        return {k: serialize_metrics(v) for k, v in metrics.items()}
    if isinstance(metrics, type):
        return metrics.__name__
    if type(metrics) is _metrics.MeanMetricWrapper:   # a wrapped function: Keras saves it by name
        return getattr(metrics._fn, "__name__", metrics.name)
    if isinstance(metrics, _metrics.Metric):
        return {"module": "keras.metrics", "class_name": type(metrics).__name__, "config": metrics.get_config(),
                "registered_name": None}
    return getattr(metrics, "__name__", str(metrics))   # a metric function


def serialize_optimizer(opt: Any) -> Dict[str, Any]:
    config = dict(opt.get_config())
    lr: Any = config.get("learning_rate")
    if hasattr(lr, "get_config"):
        config["learning_rate"] = {"module": "keras.optimizers.schedules", "class_name": type(lr).__name__,
                                   "config": lr.get_config(), "registered_name": None}
    return {"module": "keras.optimizers", "class_name": type(opt).__name__, "config": config,
            "registered_name": None}


def _listify(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return [_listify(v) for v in x]
    return x


# -- reading --------------------------------------------------------------------------------------------
def _plain(value: Any) -> Any:
    """A serialized dtype policy or initializer as what jitflow's constructors take."""
    if isinstance(value, dict) and "class_name" in value:
        if value["class_name"] in ("DTypePolicy", "Policy"):
            return value.get("config", {}).get("name", "float32")
        if value.get("module") == "keras.initializers" or value["class_name"] in _init.__all__:
            cls = getattr(_init, value["class_name"], None)
            if cls is None:
                raise ValueError(f"initializer: unknown Keras initializer {value['class_name']!r}; jitflow has "
                                 f"{[n for n in _init.__all__ if n[:1].isupper()]}")
            return construct(cls, value.get("config") or {}, f"initializer {value['class_name']}")
    return value


def _benign(allowed: Optional[tuple], value: Any) -> bool:
    return allowed is None or value in allowed or value == list(allowed)


def construct(cls: Callable[..., Any], config: Dict[str, Any], where: str) -> Any:
    """`cls(**config)`, keeping the arguments `cls` takes and dropping Keras-only ones at their defaults."""
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    layer_args = set(inspect.signature(_layers.Layer.__init__).parameters) - {"self", "kwargs"} \
        if isinstance(cls, type) and issubclass(cls, _layers.Layer) else set()
    kwargs = {}
    for key, value in config.items():
        value = _plain(value)
        if key in params or key in layer_args:
            kwargs[key] = value
        elif key in _BENIGN and _benign(_BENIGN[key], value):
            continue
        elif value is None or value is False:
            continue
        elif takes_any and not layer_args:
            kwargs[key] = value
        else:
            raise ValueError(f"{where}: the saved config sets {key}={value!r}, which jitflow's "
                             f"{getattr(cls, '__name__', cls)} does not support")
    return cls(**kwargs)


def _layer_class(entry: Dict[str, Any], custom_objects: Optional[Dict[str, Any]]) -> Any:
    name = entry.get("class_name")
    for key in (entry.get("registered_name"), name):
        if key:
            found = get_registered_object(key, custom_objects)
            if found is not None:
                return found  # type: ignore[no-any-return]  # a class from the registry
    builtin = getattr(_layers, str(name), None)
    if isinstance(builtin, type) and issubclass(builtin, _layers.Layer) and builtin is not _layers.Layer:
        return builtin
    raise ValueError(f"Could not locate class {name!r} (registered as {entry.get('registered_name')!r}). Make sure "
                     "custom classes are passed in custom_objects= or decorated with "
                     "@jf.keras.saving.register_keras_serializable(); jitflow's built-in layers are "
                     f"{sorted(n for n in _layers.__all__ if n[:1].isupper())}")


def deserialize_layer(entry: Dict[str, Any], custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    cls: Any = _layer_class(entry, custom_objects)   # a Layer class (or a user factory)
    config = dict(entry.get("config") or {})
    where = f'layer "{config.get("name", "?")}" ({entry.get("class_name")})'
    builtin = getattr(_layers, cls.__name__, None) is cls
    if builtin:   # Keras's arguments, translated
        return construct(cls, config, where)
    if "dtype" in config:
        config["dtype"] = _plain(config["dtype"])
    return cls.from_config(config)


def deserialize_loss(value: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return [deserialize_loss(v, custom_objects) for v in value]
    if isinstance(value, dict) and "class_name" not in value:
        return {k: deserialize_loss(v, custom_objects) for k, v in value.items()}
    name = value["class_name"]
    cls = get_registered_object(value.get("registered_name") or name, custom_objects) or getattr(_losses, name, None)
    if cls is None:
        raise ValueError(f"loss: unknown loss class {name!r} in the saved compile config; pass it in custom_objects=")
    config = dict(value.get("config") or {})
    return construct(cls, config, f"loss {name}")


def deserialize_metrics(value: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return [deserialize_metrics(v, custom_objects) for v in value]
    if isinstance(value, dict) and "class_name" not in value:
        return {k: deserialize_metrics(v, custom_objects) for k, v in value.items()}
    name = value["class_name"]
    cls = get_registered_object(value.get("registered_name") or name, custom_objects) or getattr(_metrics, name, None)
    if cls is None:
        raise ValueError(f"metrics: unknown metric class {name!r} in the saved compile config; pass it in "
                         "custom_objects=")
    return construct(cls, dict(value.get("config") or {}), f"metric {name}")


def deserialize_optimizer(value: Any, custom_objects: Optional[Dict[str, Any]] = None) -> Any:
    if isinstance(value, str):
        return _optimizers.get(value)
    name = value["class_name"]
    cls = get_registered_object(value.get("registered_name") or name, custom_objects) or getattr(_optimizers, name,
                                                                                                  None)
    if cls is None:
        raise ValueError(f"optimizer: unknown optimizer {name!r} in the saved compile config; jitflow has SGD, "
                         "Adam, AdamW, RMSprop, Adagrad")
    config = dict(value.get("config") or {})
    lr = config.get("learning_rate")
    if isinstance(lr, dict) and "class_name" in lr:
        sched = getattr(_optimizers, lr["class_name"], None)
        if sched is None:
            raise ValueError(f"optimizer: unknown learning-rate schedule {lr['class_name']!r}")
        config["learning_rate"] = construct(sched, dict(lr.get("config") or {}), f"schedule {lr['class_name']}")
    for key in ("weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "ema_overwrite_frequency",
                "loss_scale_factor", "gradient_accumulation_steps"):
        if config.get(key) is None:
            config.pop(key, None)
    if config.get("use_ema") is False:
        config.pop("use_ema")
        config.pop("ema_momentum", None)
    return construct(cls, config, f"optimizer {name}")


__all__ = ["register_keras_serializable", "get_registered_name", "get_registered_object"]
