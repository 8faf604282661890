"""`Layer`: a `jf.Module` with lazy building, weights, a training flag and input checks.

A layer's life (as in Keras): `__init__` stores configuration; the first `__call__`
runs `build(input_shape)` (which creates weights with `add_weight`) and then `call`;
later calls check the input against what `build` saw (`input_spec`) and raise an error
that names the layer and both shapes. Calls run inside a name scope of the layer's
name, so a traced `Sequential` shows `sequential/conv2d/Conv2D`; weights are named by
the layer (`conv2d/kernel:0`) wherever they are created (they are lifted out of traces).

Sub-layers assigned as attributes are tracked in assignment order (`layers`), which
is the order of `weights`; setting `trainable = False` freezes a layer and its
sub-layers (their weights move to `non_trainable_weights`).

Calling a layer on a symbolic `Input` (`KerasTensor`) does not compute: it records a
node of the functional graph that `Model(inputs, outputs)` replays.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.tracing.autograph_ops import converted_call
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.state.module import Module
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.core.shapes import TensorShape, format_dims
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.keras import backend
from jitflow.runtime.keras import initializers as _init
from jitflow.runtime.keras.layers.functional_node import KerasTensor, symbolic_call

_WRAPPED = "when calling layer"


@functools.lru_cache(maxsize=None)
def _accepts(cls: type[Layer], argument: str) -> bool:
    """Whether `cls.call` takes `argument` (Keras passes `training`/`mask` only then)."""
    params = inspect.signature(cls.call).parameters
    return argument in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class InputSpec:
    """What a built layer accepts: a rank (`ndim`/`min_ndim`) and fixed sizes of some axes."""

    def __init__(self, ndim: Optional[int] = None, min_ndim: Optional[int] = None,
                 axes: Optional[Dict[int, int]] = None) -> None:
        self.ndim, self.min_ndim, self.axes = ndim, min_ndim, dict(axes or {})

    def check(self, layer: "Layer", dims: Optional[Tuple]) -> None:
        if dims is None:
            return
        where = f'Input 0 of layer "{layer.name}" ({type(layer).__name__}) is incompatible with the layer'
        if self.ndim is not None and len(dims) != self.ndim:
            raise ValueError(f"{where}: expected ndim={self.ndim}, found ndim={len(dims)}. Full shape received: "
                             f"{format_dims(dims)}")
        if self.min_ndim is not None and len(dims) < self.min_ndim:
            raise ValueError(f"{where}: expected min_ndim={self.min_ndim}, found ndim={len(dims)}. Full shape "
                             f"received: {format_dims(dims)}")
        for axis, size in self.axes.items():
            got = dims[axis] if -len(dims) <= axis < len(dims) else None
            if got is not None and got != size:
                raise ValueError(f"{where}: expected axis {axis} of input shape to have value {size}, but "
                                 f"received input with shape {format_dims(dims)}")


def _dims_of(x: Any) -> Optional[Tuple]:
    dims = getattr(x, "_dims", None)
    if dims is None and hasattr(x, "shape"):
        dims = tuple(x.shape)
    return None if dims is None else tuple(dims)


def _first(inputs: Any) -> Any:
    while isinstance(inputs, (list, tuple)) and inputs:
        inputs = inputs[0]
    return inputs


def _shape_of(inputs: Any) -> Any:
    if isinstance(inputs, (list, tuple)):
        return [_shape_of(x) for x in inputs]
    return TensorShape(_dims_of(inputs))


def _to_tensors(inputs: Any, dtype: _dt.DType) -> Any:
    if isinstance(inputs, (list, tuple)):
        return type(inputs)(_to_tensors(x, dtype) for x in inputs)
    if isinstance(inputs, dict):
        return {k: _to_tensors(v, dtype) for k, v in inputs.items()}
    if isinstance(inputs, Tensor) or isinstance(inputs, Variable):
        return inputs
    if isinstance(inputs, np.ndarray) and inputs.dtype.kind == "f" and dtype.is_floating:
        return convert_to_tensor(inputs.astype(dtype.as_numpy_dtype, copy=False))
    return convert_to_tensor(inputs)


class _LayerScope(context.name_scope):
    """A layer's name scope; calling it gives the layer's name (`model.name_scope()` in TF 2's Keras)."""

    def __init__(self, scope: str, layer_name: str) -> None:
        super().__init__(scope)
        self._layer_name = layer_name

    def __call__(self) -> str:
        return self._layer_name


class Layer(Module):
    """Base class of layers (TF's `tf.keras.layers.Layer`; a `jf.Module`).

    >>> class Linear(Layer):
    ...     def __init__(self, units=2):
    ...         super().__init__()
    ...         self.units = units
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight("w", shape=(input_shape[-1], self.units))
    ...     def call(self, inputs):
    ...         return jf.matmul(inputs, self.w)
    >>> Linear()(jf.ones([1, 3])).shape
    TensorShape([1, 2])
    """

    _tracked_as_layer = True   # metrics are Layers too, but not part of a model's `layers`

    _layers: List["Layer"]  # the layers it holds as attributes, in order (set without __setattr__'s tracking)

    def __init__(self, trainable: bool = True, name: Optional[str] = None, dtype: Any = None,
                 input_shape: Optional[Sequence[Optional[int]]] = None,
                 batch_input_shape: Optional[Sequence[Optional[int]]] = None,
                 batch_size: Optional[int] = None, input_dim: Optional[int] = None, **kwargs: Any) -> None:
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) {sorted(kwargs)}")
        base = backend.to_snake_case(type(self).__name__)
        super().__init__(name=name if name is not None else backend.unique_name(base))
        object.__setattr__(self, "_layers", [])
        self._trainable = bool(trainable)
        self.built = False
        self._trainable_weights: List[Variable] = []
        self._non_trainable_weights: List[Variable] = []
        self._losses: List[Any] = []
        self._dtype = _dt.as_dtype(dtype) if dtype is not None else _dt.float32
        self.input_spec: Optional[InputSpec] = None
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size,) + tuple(input_shape)
        self._batch_input_shape = tuple(batch_input_shape) if batch_input_shape is not None else None
        self._output_dims: Any = None   # what the layer returned, batch as None ("multiple" if it varied)
        self._input_dims: Any = None
        self._call_count = 0

    # -- tracking -------------------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        layers = self.__dict__.get("_layers")
        if layers is not None and not name.startswith("_"):
            for v in (value if isinstance(value, (list, tuple)) else [value]):
                if isinstance(v, Layer) and v._tracked_as_layer and v is not self and all(v is not l for l in layers):
                    layers.append(v)
        super().__setattr__(name, value)

    @property
    def name_scope(self) -> _LayerScope:
        """`with layer.name_scope:` puts ops under the layer; `layer.name_scope()` is its name."""
        return _LayerScope(self._scope_name, self.name)

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def trainable(self) -> bool:
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)
        for layer in self._layers:
            layer.trainable = value

    @property
    def weights(self) -> List[Variable]:
        """Every weight, layer by layer (each layer's own in creation order, then its sub-layers'),
        Keras 3's order, which `get_weights`/`set_weights` follow."""
        return _unique(self._trainable_weights + self._non_trainable_weights
                       + [w for l in self._layers for w in l.weights])

    @property
    def trainable_weights(self) -> List[Variable]:
        if not self._trainable:
            return []
        return _unique(self._trainable_weights + [w for l in self._layers for w in l.trainable_weights])

    @property
    def non_trainable_weights(self) -> List[Variable]:
        if not self._trainable:
            return self.weights
        return _unique(self._non_trainable_weights + [w for l in self._layers for w in l.non_trainable_weights])

    # `jf.Module`'s views follow Keras's (trainable flag, creation order).
    @property
    def variables(self) -> Tuple[Variable, ...]:
        return tuple(self.weights)

    @property
    def trainable_variables(self) -> Tuple[Variable, ...]:
        return tuple(self.trainable_weights)

    @property
    def non_trainable_variables(self) -> Tuple[Variable, ...]:
        return tuple(self.non_trainable_weights)

    @property
    def losses(self) -> List[Any]:
        """Losses added with `add_loss` during the last call (this layer and its sub-layers)."""
        return list(self._losses) + [loss for l in self._layers for loss in l.losses]

    def add_loss(self, loss: Any) -> None:
        self._losses.append(loss)

    def count_params(self) -> int:
        """The number of scalars in all weights (the layer must be built)."""
        if not self.built:
            raise ValueError(f'You tried to call count_params on layer "{self.name}", but the layer isn\'t built. '
                             "Build it first (call it on data, or call build(input_shape)).")
        return int(sum(int(np.prod(w.shape.as_list())) for w in self.weights))

    def get_weights(self) -> List[np.ndarray]:
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights: Sequence[Any]) -> None:
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f'Layer "{self.name}" expects {len(mine)} weight arrays, but set_weights received '
                             f"{len(weights)}")
        for var, value in zip(mine, weights):
            value = np.asarray(value)
            if tuple(value.shape) != tuple(var.shape.as_list()):
                raise ValueError(f'Layer "{self.name}" weight {var.name} has shape {tuple(var.shape.as_list())} '
                                 f"but set_weights received shape {value.shape}")
        for var, value in zip(mine, weights):
            var.assign(np.asarray(value, dtype=var.dtype.as_numpy_dtype))

    # -- weights --------------------------------------------------------------------------------------
    def add_weight(self, name: Optional[str] = None, shape: Sequence[int] = (), dtype: Any = None,
                   initializer: Any = None, regularizer: Any = None, trainable: bool = True,
                   constraint: Any = None, **kwargs: Any) -> Variable:
        """Create a weight of this layer, named `<layer>/<name>:0`, outside any trace."""
        dtype = _dt.as_dtype(dtype) if dtype is not None else self._dtype
        if initializer is None:
            initializer = "glorot_uniform" if dtype.is_floating else "zeros"
        init = _init.get(initializer)
        shape = tuple(int(d) for d in shape)
        with context.init_scope(), context.name_scope(self._scope_name):
            value = init(list(shape), dtype=dtype)
            var = Variable(value, trainable=trainable, name=name or "Variable", dtype=dtype)
        (self._trainable_weights if trainable else self._non_trainable_weights).append(var)
        if regularizer is not None:
            self._regularizers = getattr(self, "_regularizers", []) + [(regularizer, var)]
        return var

    # -- building and calling -------------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Create the weights for inputs of `input_shape`; the base class has none."""
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The computation; the base layer returns its inputs."""
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for `input_shape`, found by tracing `call` on a batch of one."""
        dims = (1,) + tuple(TensorShape(input_shape).as_list()[1:])
        out = self(np.zeros(dims, self._dtype.as_numpy_dtype))
        return TensorShape((None,) + tuple(out.shape.as_list()[1:]))

    def _maybe_build(self, inputs: Any) -> None:
        if self.built:
            return
        shape = _shape_of(inputs)
        try:
            self.build(shape)
        except Exception:
            self._trainable_weights.clear()   # nothing half-built is left behind
            self._non_trainable_weights.clear()
            raise
        self.built = True

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if any(isinstance(x, KerasTensor) for x in _flat(inputs)):
            return symbolic_call(self, inputs, args, kwargs)
        for key in ("training", "mask"):
            if key in kwargs and not _accepts(type(self), key):  # type: ignore[arg-type]  # classes hash by identity
                kwargs.pop(key)
        inputs = _to_tensors(inputs, self._dtype)
        self._losses = []
        with context.name_scope(self.name):
            try:
                self._maybe_build(inputs)
                if self.input_spec is not None and not isinstance(inputs, (list, tuple)):
                    self.input_spec.check(self, _dims_of(inputs))
                if context.current_graph() is not None:  # tracing: user control flow becomes graph ops
                    outputs = converted_call(self.call, (inputs,) + args, kwargs)
                else:
                    outputs = self.call(inputs, *args, **kwargs)
            except (ValueError, TypeError, InvalidArgumentError) as e:
                if _WRAPPED in str(e) or "is incompatible with the layer" in str(e):
                    raise
                try:  # the same type, so `except` clauses still match; a custom constructor may refuse
                    wrapped = type(e)(f'Exception encountered {_WRAPPED} "{self.name}" ({type(self).__name__}) '
                                      f"on inputs of shape {_describe(inputs)}: {e}")
                except Exception:
                    raise e from None
                raise wrapped from e
        self._record_shapes(inputs, outputs)
        return outputs

    def _record_shapes(self, inputs: Any, outputs: Any) -> None:
        def batchless(x):
            if isinstance(x, (list, tuple)):
                return tuple(batchless(v) for v in x)
            dims = _dims_of(x)
            return None if dims is None else ((None,) + tuple(dims[1:]) if dims else ())
        out, inp = batchless(outputs), batchless(inputs)
        self._output_dims = out if self._call_count == 0 or self._output_dims == out else "multiple"
        self._input_dims = inp if self._call_count == 0 or self._input_dims == inp else "multiple"
        self._call_count += 1

    @property
    def output_shape(self) -> Any:
        if self._output_dims is None:
            raise AttributeError(f'The layer "{self.name}" has never been called and thus has no defined output shape')
        return self._output_dims

    # -- configuration --------------------------------------------------------------------------------
    def get_config(self) -> Dict[str, Any]:
        """The arguments that recreate this layer (`type(layer).from_config(config)`)."""
        config = {"name": self.name, "trainable": self._trainable, "dtype": self._dtype.name}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        return config

    @classmethod
    def from_config(cls, config: Dict[str, Any]) -> "Layer":
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} name={self.name!r} built={self.built}>"


def _unique(items: List[Any]) -> List[Any]:
    seen, out = set(), []
    for item in items:
        if id(item) not in seen:
            seen.add(id(item))
            out.append(item)
    return out


def _flat(x: Any) -> List[Any]:
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in _flat(v)]
    if isinstance(x, dict):
        return [y for v in x.values() for y in _flat(v)]
    return [x]


def _describe(inputs: Any) -> str:
    if isinstance(inputs, (list, tuple)):
        return "[" + ", ".join(_describe(x) for x in inputs) + "]"
    return format_dims(_dims_of(inputs))


__all__ = ["Layer", "InputSpec"]
