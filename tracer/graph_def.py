"""jitflow graphs → TensorFlow `GraphDef` protos that TensorBoard's graph view reads.

Shared by the summary writer (`jf.summary.graph`) and the tracer (`trace_export`).
Nodes keep their scoped names (TensorBoard folds `demo_module/...` into a box), their
TF op types, `T`/`dtype` attrs and `_output_shapes` (shapes on edges). Sub-graphs of
function calls, `If` and `While` become `FunctionDef`s in the graph's library.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
from tensorboard.compat.proto import (attr_value_pb2, function_pb2, graph_pb2, node_def_pb2,
                                      tensor_pb2, tensor_shape_pb2, versions_pb2)

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core import graph as _graph_module
from jitflow.runtime.core.graph import Graph, Node
from jitflow.runtime.core.tensor import CPU0

# Constants larger than this are exported without their values (shape and dtype only),
# so a graph with big captured weights stays small.
MAX_CONST_ELEMENTS = 1024
# Attrs that hold sub-graphs, and where their graph lives on the attr value.
_FUNCTION_ATTRS = ("f", "then_branch", "else_branch", "cond", "body")


def shape_proto(dims: Any) -> tensor_shape_pb2.TensorShapeProto:
    if dims is None:
        return tensor_shape_pb2.TensorShapeProto(unknown_rank=True)
    return tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=-1 if d is None else int(d)) for d in dims])


def tensor_proto(value: np.ndarray, dtype: _dt.DType) -> tensor_pb2.TensorProto:
    """A TensorProto holding `value` (content omitted above MAX_CONST_ELEMENTS)."""
    proto = tensor_pb2.TensorProto(dtype=dtype.tf_enum, tensor_shape=shape_proto(value.shape))
    if value.size > MAX_CONST_ELEMENTS:
        return proto
    if dtype.is_string:
        proto.string_val.extend(bytes(v) for v in value.reshape(-1))
    else:
        proto.tensor_content = np.ascontiguousarray(value).tobytes()
    return proto


def attr_value(value: Any) -> Optional[attr_value_pb2.AttrValue]:
    """A Python attr as an AttrValue, or None for values TF attrs cannot express."""
    if isinstance(value, bool):
        return attr_value_pb2.AttrValue(b=value)
    if isinstance(value, (int, np.integer)):
        return attr_value_pb2.AttrValue(i=int(value))
    if isinstance(value, (float, np.floating)):
        return attr_value_pb2.AttrValue(f=float(value))
    if isinstance(value, str):
        return attr_value_pb2.AttrValue(s=value.encode("utf-8"))
    if isinstance(value, _dt.DType):
        return attr_value_pb2.AttrValue(type=value.tf_enum)
    if isinstance(value, (tuple, list)):
        items = list(value)
        if all(isinstance(v, _dt.DType) for v in items):
            return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(type=[v.tf_enum for v in items]))
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
            return attr_value_pb2.AttrValue(list=attr_value_pb2.AttrValue.ListValue(i=[int(v) for v in items]))
        if all(isinstance(v, (int, np.integer, type(None))) for v in items):
            return attr_value_pb2.AttrValue(
                list=attr_value_pb2.AttrValue.ListValue(i=[-1 if v is None else int(v) for v in items]))
    return None


def _input_name(tensor: Any) -> str:
    return tensor.node.name if tensor.index == 0 else f"{tensor.node.name}:{tensor.index}"


def _subgraphs(node: Node) -> Dict[str, Graph]:
    """attr name → sub-graph for call/If/While nodes."""
    found = {}
    for key in _FUNCTION_ATTRS:
        value = node.attrs.get(key)
        graph = getattr(value, "graph", None)
        if isinstance(graph, Graph):
            found[key] = graph
    return found


def node_def(node: Node, function_names: Dict[int, str], device: str = CPU0) -> node_def_pb2.NodeDef:
    nd = node_def_pb2.NodeDef(name=node.name, op=node.op.tf_op, device=node.device or device)
    nd.input.extend(_input_name(t) for t in node.inputs)
    nd.input.extend("^" + n.name for n in node.control_inputs)
    attrs = nd.attr
    op = node.op.tf_op
    if op == "Const":
        value = node.attrs["value"]
        attrs["dtype"].type = node.attrs["dtype"].tf_enum
        attrs["value"].tensor.CopyFrom(tensor_proto(np.asarray(value), node.attrs["dtype"]))
    elif op == "Placeholder":
        attrs["dtype"].type = node.attrs["dtype"].tf_enum
        attrs["shape"].shape.CopyFrom(shape_proto(node.attrs["shape"]))
        variable = node.attrs.get("_variable")
        if variable is not None:
            attrs["_variable_name"].s = variable.name.encode("utf-8")
    else:
        if node.inputs and "T" not in node.attrs:
            attrs["T"].type = node.inputs[-1 if op.startswith("Assign") else 0]._dtype.tf_enum
        for key, value in node.attrs.items():
            if key.startswith("_") or key in _FUNCTION_ATTRS or key == "value":
                continue
            proto = attr_value(value)
            if proto is not None:
                attrs[key].CopyFrom(proto)
        for key, graph in _subgraphs(node).items():
            attrs[key].func.name = function_names[id(graph)]
    if node.outputs:
        attrs["_output_shapes"].list.shape.extend(shape_proto(t._dims) for t in node.outputs)
    return nd


def _function_def(graph: Graph, name: str, function_names: Dict[int, str]) -> function_pb2.FunctionDef:
    """A sub-graph as a FunctionDef: placeholders become args, outputs become rets."""
    fdef = function_pb2.FunctionDef()
    fdef.signature.name = name
    inputs = [n for n in graph.nodes if n.op.tf_op == "Placeholder"]
    arg_names = {}
    for i, node in enumerate(inputs):
        arg = fdef.signature.input_arg.add(name=f"arg{i}_{node.name.replace('/', '_')}")
        arg.type = node.attrs["dtype"].tf_enum
        arg_names[id(node)] = arg.name
    for i, t in enumerate(graph.outputs):
        out = fdef.signature.output_arg.add(name=f"output_{i}")
        out.type = t._dtype.tf_enum

    def ref(t: Any) -> str:
        if id(t.node) in arg_names:
            return arg_names[id(t.node)]
        return f"{t.node.name}:output:{t.index}"
    for node in graph.nodes:
        if id(node) in arg_names:
            continue
        nd = node_def(node, function_names, device="")
        del nd.input[:]
        nd.input.extend(ref(t) for t in node.inputs)
        fdef.node_def.append(nd)
    for i, t in enumerate(graph.outputs):
        fdef.ret[f"output_{i}"] = ref(t)
    return fdef


def _collect_subgraphs(graph: Graph, names: Dict[int, str], order: List[Graph]) -> None:
    for node in graph.nodes:
        for key, sub in _subgraphs(node).items():
            if id(sub) in names:
                continue
            owner = node.attrs[key]
            names[id(sub)] = getattr(owner, "name", None) or f"{graph.name}_{node.name}_{key}".replace("/", "_")
            order.append(sub)
            _collect_subgraphs(sub, names, order)


def to_graph_def(graph: Graph, device: str = CPU0) -> graph_pb2.GraphDef:
    """The GraphDef of `graph`, with a function library for its nested sub-graphs."""
    names: Dict[int, str] = {}
    order: List[Graph] = []
    _collect_subgraphs(graph, names, order)
    gdef = graph_pb2.GraphDef(versions=versions_pb2.VersionDef(producer=1987, min_consumer=12))
    gdef.node.extend(node_def(n, names, device) for n in graph.nodes)
    for sub in order:
        gdef.library.function.append(_function_def(sub, names[id(sub)], names))
    return gdef


def graph_of(obj: Any) -> Graph:
    """The Graph behind a Graph, a ConcreteFunction, or a traced Function (its latest trace)."""
    if isinstance(obj, Graph):
        return obj
    graph = getattr(obj, "graph", None)
    if isinstance(graph, Graph):
        return graph
    concretes = getattr(obj, "list_concrete_functions", None)
    if callable(concretes):
        found = concretes()
        if not found:
            raise ValueError(f"{obj!r} has not been traced yet: call it once (or use "
                             "get_concrete_function) before exporting its graph")
        return found[-1].graph
    raise TypeError(f"expected a jf Graph, ConcreteFunction or Function; got {type(obj).__name__}")


_graph_module.GRAPH_DEF_BUILDER = to_graph_def  # Graph.as_graph_def() in the runtime
