"""Symbolic inputs of the functional API: `Input(shape)` and the nodes layers add on them.

`Input(shape=(28, 28, 1))` is a `KerasTensor`: a shape (batch unknown) and a dtype, no
values. Calling a layer on KerasTensors computes nothing for the user: the layer is
built and run once on a batch of one zero example (which gives the output shape), and
a `Node` records (layer, inputs, call arguments) on the outputs, which are KerasTensors
again. `Model(inputs, outputs)` walks these nodes back from the outputs and replays them
in order on real tensors.
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.shapes import TensorShape, format_dims


class Node:
    """One layer call in a functional graph."""

    __slots__ = ("layer", "inputs", "args", "kwargs", "outputs")

    def __init__(self, layer: Any, inputs: Any, args: tuple, kwargs: dict, outputs: Any) -> None:
        self.layer, self.inputs, self.args, self.kwargs, self.outputs = layer, inputs, args, kwargs, outputs


class KerasTensor:
    """A symbolic value of the functional API: shape (batch first, unknown) and dtype."""

    def __init__(self, dims: Sequence[Optional[int]], dtype: Any = _dt.float32, node: Optional[Node] = None,
                 name: Optional[str] = None) -> None:
        self._dims = tuple(dims)
        self._dtype = _dt.as_dtype(dtype)
        self.node = node
        self.name = name

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._dims)

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def ndim(self) -> int:
        return len(self._dims)

    def example(self) -> np.ndarray:
        """A batch of one zero example of this shape (what shape inference runs on)."""
        return np.zeros((1,) + tuple(1 if d is None else d for d in self._dims[1:]), self._dtype.as_numpy_dtype)

    def __repr__(self) -> str:
        return f"<KerasTensor shape={format_dims(self._dims)} dtype={self._dtype.name}" + (
            f" name={self.name!r}>" if self.name else ">")


def Input(shape: Optional[Sequence[Optional[int]]] = None, batch_size: Optional[int] = None,
          name: Optional[str] = None, dtype: Any = None, batch_shape: Optional[Sequence[Optional[int]]] = None
          ) -> KerasTensor:  # noqa: N802 - Keras's name
    """A symbolic input of a functional model (TF's `tf.keras.Input`).

    >>> x = Input(shape=(4,)); x.shape
    TensorShape([None, 4])
    """
    if batch_shape is None:
        if shape is None:
            raise ValueError("Input: pass shape= (without the batch dimension) or batch_shape=")
        batch_shape = (batch_size,) + tuple(shape)
    return KerasTensor(batch_shape, dtype or _dt.float32, name=name)


def _map(fn, x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return type(x)(_map(fn, v) for v in x)
    if isinstance(x, dict):
        return {k: _map(fn, v) for k, v in x.items()}
    return fn(x)


def symbolic_call(layer: Any, inputs: Any, args: tuple, kwargs: dict) -> Any:
    """Record `layer(inputs)` as a node; its outputs are KerasTensors of the inferred shapes."""
    concrete = _map(lambda t: t.example() if isinstance(t, KerasTensor) else t, inputs)
    kwargs = {k: v for k, v in kwargs.items() if k != "training"}
    out = layer(concrete, *args, **kwargs)
    node = Node(layer, inputs, args, kwargs, None)
    node.outputs = _map(lambda t: KerasTensor((None,) + tuple(t.shape.as_list()[1:]), t.dtype, node), out)
    return node.outputs


def flatten(x: Any) -> List[Any]:
    if isinstance(x, (list, tuple)):
        return [y for v in x for y in flatten(v)]
    if isinstance(x, dict):
        return [y for k in sorted(x) for y in flatten(x[k])]
    return [x]


def topological_nodes(inputs: Sequence[KerasTensor], outputs: Sequence[KerasTensor]) -> List[Node]:
    """The nodes between `inputs` and `outputs`, each after the nodes it depends on."""
    order: List[Node] = []
    seen = set()
    input_ids = {id(t) for t in inputs}

    def visit(t: KerasTensor) -> None:
        if id(t) in input_ids:
            return
        if t.node is None:
            raise ValueError(f"Model: output depends on {t!r}, which is not one of the model's inputs; pass every "
                             "jf.keras.Input the outputs are computed from as `inputs`")
        if id(t.node) in seen:
            return
        seen.add(id(t.node))
        for parent in flatten(t.node.inputs):
            if isinstance(parent, KerasTensor):
                visit(parent)
        order.append(t.node)

    for t in outputs:
        visit(t)
    return order


def replay(nodes: List[Node], inputs: Sequence[KerasTensor], values: Sequence[Any], outputs: Any,
           training: Any = None) -> Any:
    """Run the recorded layer calls on real tensors."""
    env = {id(k): v for k, v in zip(inputs, values)}
    for node in nodes:
        x = _map(lambda t: env[id(t)] if isinstance(t, KerasTensor) else t, node.inputs)
        kw = dict(node.kwargs)
        if training is not None:
            kw["training"] = training
        out = node.layer(x, *node.args, **kw)
        for k, v in zip(flatten(node.outputs), flatten(out)):
            env[id(k)] = v
    return _map(lambda t: env[id(t)], outputs)


__all__ = ["Input", "KerasTensor", "Node"]
