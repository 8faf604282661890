"""`Model.summary()`: Keras's table of layers, output shapes and parameter counts.

    Model: "sequential"
    _________________________________________________________________
     Layer (type)                Output Shape              Param #
    =================================================================
     dense (Dense)               (None, 4)                 44
    ...
    Total params: 57
    Trainable params: 57
    Non-trainable params: 0
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

import numpy as np


def _shape_text(dims: Any) -> str:
    if dims is None or dims == "multiple":
        return "multiple" if dims == "multiple" else "?"
    if dims and isinstance(dims[0], tuple):
        return "[" + ", ".join(_shape_text(d) for d in dims) + "]"
    return "(" + ", ".join("None" if d is None else str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


def _count(weights: List[Any]) -> int:
    return int(sum(int(np.prod(w.shape.as_list())) for w in weights))


def summary_lines(model: Any, line_length: Optional[int] = None) -> List[str]:
    if not model.built:
        raise ValueError(f'Model "{model.name}": this model has not yet been built. Build the model first by calling '
                         "build(input_shape), calling it on data, or giving the first layer an input_shape")
    width = line_length or 65
    cols = [int(width * p) for p in (0.45, 0.85, 1.0)]

    def row(fields: List[str]) -> str:
        line = ""
        for text, stop in zip(fields, cols):
            line = (line + " " + text)[:stop].ljust(stop)
        return line.rstrip()

    lines = [f'Model: "{model.name}"', "_" * width, row(["Layer (type)", "Output Shape", "Param #"]), "=" * width]
    layers = model.layers
    for i, layer in enumerate(layers):
        params = layer.count_params() if layer.built else 0
        lines.append(row([f"{layer.name} ({type(layer).__name__})", _shape_text(layer._output_dims), str(params)]))
        lines.append("" if i < len(layers) - 1 else "=" * width)
    if not layers:
        lines.append("=" * width)
    trainable = _count(model.trainable_weights)
    non_trainable = _count(model.non_trainable_weights)
    lines += [f"Total params: {trainable + non_trainable:,}", f"Trainable params: {trainable:,}",
              f"Non-trainable params: {non_trainable:,}", "_" * width]
    return lines


def print_summary(model: Any, line_length: Optional[int] = None, print_fn: Optional[Callable] = None) -> None:
    out = print_fn or print
    for line in summary_lines(model, line_length):
        out(line)
