"""What `graph()` / `add_graph()` accept, turned into serialized GraphDef bytes.

jitflow graphs, concrete functions and traced `jf.function`s (converted by the
tracer's GraphDef converter, so names, scopes and shapes match trace exports); a
`jf.Module` whose `__call__` is a `jf.function` (traced with `example_inputs`, like
PyTorch's `add_graph(model, input_to_model)`); a `GraphDef` proto (tensorboard's or
TensorFlow's), its serialized bytes, or an object with `as_graph_def()`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import DecodeError, Message
from tensorboard.compat.proto import graph_pb2

from jitflow.runtime.tracing.function import ConcreteFunction, Function
from jitflow.runtime.core.graph import Graph
from jitflow.tracer.graph_def import to_graph_def


def _graph_def_of(obj: Any, example_inputs: Any = None) -> bytes:
    """Serialized GraphDef for `obj`.

    `example_inputs` is PyTorch's `add_graph(model, input_to_model)`: inputs to
    trace `obj` with. Graph protos and bytes need no tracing, so passing inputs
    with them is an error rather than silently ignored.
    """
    jitflow_graph = _jitflow_graph(obj, example_inputs)
    if jitflow_graph is not None:
        return to_graph_def(jitflow_graph).SerializeToString()
    if hasattr(obj, "as_graph_def") and not isinstance(obj, (bytes, bytearray, memoryview, Message)):
        obj = obj.as_graph_def()
    if isinstance(obj, Message):
        if obj.DESCRIPTOR.full_name not in ("tensorboard.GraphDef", "tensorflow.GraphDef"):
            raise TypeError(f"expected a GraphDef proto, got a {obj.DESCRIPTOR.full_name} message")
        data = obj.SerializeToString()
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        data = bytes(obj)
        try:  # catch garbage here, not when TensorBoard fails to load it
            graph_pb2.GraphDef.FromString(data)
        except DecodeError as e:
            raise ValueError(f"graph bytes do not parse as a serialized GraphDef: {e}") from None
    else:
        raise TypeError("cannot write a graph from an object of type "
                        f"{type(obj).__module__}.{type(obj).__qualname__}; expected a GraphDef "
                        "proto, its serialized bytes, or an object with as_graph_def()")
    if example_inputs is not None:
        raise ValueError("input_to_model is only used for models that must be traced; "
                         "a GraphDef is written as it is, so pass input_to_model=None")
    return data


def _jitflow_graph(obj: Any, example_inputs: Any) -> Graph | None:
    """The jitflow Graph behind `obj`, tracing with `example_inputs` when needed."""
    if isinstance(obj, Graph):
        return obj
    if isinstance(obj, ConcreteFunction):
        return obj.graph
    function = obj if isinstance(obj, Function) else getattr(obj, "__call__", None)  # noqa: B004 -- the bound method itself, not a test
    if not isinstance(function, Function):
        return None
    if example_inputs is not None:
        inputs = example_inputs if isinstance(example_inputs, (list, tuple)) else (example_inputs,)
        return function.get_concrete_function(*inputs).graph
    traced = function.list_concrete_functions()
    if not traced:
        raise ValueError(f"{function!r} has not been traced yet: call it once, or pass example "
                         "inputs (add_graph(model, input_to_model)) so it can be traced")
    return traced[-1].graph
