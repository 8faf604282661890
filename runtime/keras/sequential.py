"""`Sequential`: a model that is a plain stack of layers, each feeding the next."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.keras.layers.base import Layer
from jitflow.runtime.keras.layers.functional_node import KerasTensor
from jitflow.runtime.keras.training import _BUILD_BY_CALLING, Model


class Sequential(Model):
    """A linear stack of layers (TF's `tf.keras.Sequential`).

    With an `input_shape` on the first layer (or an `Input` first) the model is built at
    once and `summary()` works before training, as in Keras:

    >>> model = Sequential([jf.keras.layers.Dense(4, input_shape=(10,)), jf.keras.layers.Dense(1)])
    >>> model.count_params()
    49
    """

    _config_class_name = "Sequential"

    def __init__(self, layers: Optional[Sequence[Layer]] = None, name: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self._input_dims_declared: Optional[Tuple[Optional[int], ...]] = None
        for layer in layers or []:
            self.add(layer)

    def add(self, layer: Any) -> None:
        """Append a layer (an `Input` sets the model's input shape instead)."""
        if isinstance(layer, KerasTensor):
            self._input_dims_declared = layer._dims
            return
        if not isinstance(layer, Layer):
            raise TypeError(f'Sequential "{self.name}": the added layer must be an instance of jf.keras.layers.Layer; '
                            f"got {layer!r}")
        self._layers.append(layer)
        self._train_function = self._test_function = self._predict_function = None
        declared = self._input_dims_declared or (self._layers[0]._batch_input_shape if self._layers else None)
        if declared is not None:
            self.built = False
            self._call_count = 0
            self.build(declared)

    def pop(self) -> Layer:
        if not self._layers:
            raise TypeError(f'Sequential "{self.name}": there are no layers to pop')
        layer = self._layers.pop()
        self._train_function = self._test_function = self._predict_function = None
        return layer

    def call(self, inputs: Any, training: Any = None) -> Any:
        if not self._layers:
            raise ValueError(f'Sequential "{self.name}" has no layers; add some with add()')
        x = inputs
        for layer in self._layers:
            x = layer(x, training=training)
        return x

    def build(self, input_shape: Any = None) -> None:
        if input_shape is None:
            input_shape = self._input_dims_declared or self._layers[0]._batch_input_shape
        dims = [1 if d is None else d for d in (input_shape.as_list() if hasattr(input_shape, "as_list")
                                                else list(input_shape))]
        self(np.zeros(dims, self._dtype.as_numpy_dtype))


_BUILD_BY_CALLING.add(Sequential.build)
