"""Traced graphs -> the `FunctionDef`s of a SavedModel's function library.

Each concrete function becomes a FunctionDef whose inputs are the function's tensor
arguments, then one DT_RESOURCE argument per captured variable (its "bound input"), and
whose nodes keep their scoped names. Nodes are written in TensorFlow's own form where the op
has one (`tf_ops.py`) and in jitflow's otherwise (`attrs.py`, marked `_jf_native`). Eager
tensors a function captured become `Const` nodes; branches, loop bodies and called functions
become FunctionDefs of their own, referenced by `func` attrs; ops with side effects or on
variables are chained by control edges and listed as control outputs, since TensorFlow runs
a function by data flow, not in program order.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from jitflow.runtime.core.graph import Graph
from jitflow.runtime.core.tensor import SymbolicTensor
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.saved_model import attrs as _attrs
from jitflow.runtime.saved_model import tf_ops
from jitflow.runtime.saved_model.attrs import SUBGRAPH_ATTRS as _SUBGRAPH_ATTRS
from jitflow.runtime.saved_model.protos import function_pb2
from jitflow.runtime.saved_model.structure import shape_proto
from jitflow.runtime.core import dtypes
from jitflow.runtime.saved_model.protos import node_def_pb2

_SANITIZE = re.compile(r"[^A-Za-z0-9_]")


def _arg_name(name: str, used: set) -> str:
    base = _SANITIZE.sub("_", name).lower() or "arg"
    if not base[0].isalpha():
        base = "arg_" + base
    candidate, i = base, 1
    while candidate in used:
        candidate = f"{base}_{i}"
        i += 1
    used.add(candidate)
    return candidate


class Pad:
    """An argument a sub-graph does not use, there because TF's calling convention passes it
    (TF's `If` gives both branches every input; TF's `While` threads every capture through
    cond and body). As an output, it returns the argument unchanged."""

    def __init__(self, dtype: Any, dims: Any, label: str) -> None:
        self._dtype, self._dims, self.label = dtype, dims, label


class Exporter:
    """Collects the FunctionDefs of concrete functions (and their sub-graphs), each once."""

    def __init__(self) -> None:
        self.library = function_pb2.FunctionDefLibrary()
        self._names: Dict[tuple, str] = {}
        self._count = 0

    def _fresh(self, base: str) -> str:
        self._count += 1
        return f"{_SANITIZE.sub('_', base)}_{self._count}"

    def _control_flow(self, node: Any, input_refs: List[str], name: str):
        return _control_flow_export(self, node, input_refs, name)

    def add(self, graph: Graph, inputs: Sequence[SymbolicTensor], captures: Sequence[Tuple[Any, SymbolicTensor]],
            outputs: Sequence[SymbolicTensor], name: str, fresh: bool = False,
            top_level: bool = True, trailing: Sequence[Pad] = ()) -> Tuple[str, List[Variable]]:
        """Export `graph`; returns (its FunctionDef name, the variables bound to its resource args).

        A graph is exported once; `fresh=True` exports it again under a new name (a signature's
        own function). In a top-level function captured variables become bound resource
        arguments and captured eager tensors constants; in a sub-graph (branch, loop body,
        called function) every capture is an argument, fed by the calling node's inputs.
        """
        key: Any = (id(graph), top_level, tuple(id(t) for t in inputs), tuple(id(t) for t in outputs))
        if key in self._names and not fresh:
            return self._names[key], [v for v, _ in captures if isinstance(v, Variable)]
        fname = self._fresh(name)
        if not fresh:
            self._names[key] = fname
        fdef = function_pb2.FunctionDef()
        fdef.signature.name = fname
        used: set = set()
        refs: Dict[int, str] = {}
        bound: List[Variable] = []
        consts: List[Tuple[SymbolicTensor, Any]] = []
        for i, ph in enumerate(inputs):
            if isinstance(ph, Pad):
                arg = fdef.signature.input_arg.add(name=_arg_name(ph.label, used), type=ph._dtype.tf_enum)
                refs[id(ph)] = arg.name
                fdef.arg_attr[i].attr["_output_shapes"].list.shape.append(shape_proto(ph._dims))
                continue
            arg = fdef.signature.input_arg.add(name=_arg_name(ph.node.name, used), type=ph._dtype.tf_enum)
            refs[id(ph.node)] = arg.name
            fdef.arg_attr[i].attr["_output_shapes"].list.shape.append(shape_proto(ph._dims))
            fdef.arg_attr[i].attr["_user_specified_name"].s = ph.node.name.encode()
        for value, ph in captures:
            if isinstance(value, Variable) or not top_level:
                i = len(fdef.signature.input_arg)
                arg = fdef.signature.input_arg.add(name=_arg_name(ph.node.name, used), type=ph._dtype.tf_enum)
                refs[id(ph.node)] = arg.name
                fdef.arg_attr[i].attr["_output_shapes"].list.shape.append(shape_proto(ph._dims))
                if isinstance(value, Variable):
                    bound.append(value)
            else:
                consts.append((ph, value))
        for pad in trailing:
            i = len(fdef.signature.input_arg)
            arg = fdef.signature.input_arg.add(name=_arg_name(pad.label, used), type=pad._dtype.tf_enum)
            refs[id(pad)] = arg.name
            fdef.arg_attr[i].attr["_output_shapes"].list.shape.append(shape_proto(pad._dims))
        for ph, value in consts:  # a captured eager tensor is stored as a constant
            nd = fdef.node_def.add(name=ph.node.name, op="Const")
            nd.attr["dtype"].type = ph._dtype.tf_enum
            nd.attr["value"].tensor.CopyFrom(_attrs.tensor_proto(value._value if hasattr(value, "_value") else value,
                                                                 ph._dtype))
            refs[id(ph.node)] = f"{ph.node.name}:output:0"

        out_arg: Dict[int, str] = {}          # node id → the TF name of its outputs
        used_names = {n.name for n in graph.nodes}

        def unique(base: str) -> str:
            candidate, i = base, 1
            while candidate in used_names:
                candidate = f"{base}_{i}"
                i += 1
            used_names.add(candidate)
            return candidate

        def ref(t: Any) -> str:
            if isinstance(t, Pad):
                return refs[id(t)]
            if id(t.node) in refs and t.node.op.tf_op == "Placeholder":
                return refs[id(t.node)]
            return f"{t.node.name}:{out_arg.get(id(t.node), 'output')}:{t.index}"

        previous_ordered: Optional[str] = None  # TF runs by data flow: stateful ops are chained explicitly
        for node in graph.nodes:
            op = node.op.tf_op
            if op == "Placeholder":
                if id(node) not in refs:
                    raise ValueError(f"cannot save {name}: its placeholder {node.name!r} is neither an argument "
                                     "nor a captured value")
                continue
            input_refs = [ref(t) for t in node.inputs]
            if op in ("If", "While"):
                translated = self._control_flow(node, input_refs, name)
            else:
                translated = None if op in _SUBGRAPH_ATTRS else tf_ops.export(node, input_refs, unique)
            if translated is not None:  # TensorFlow's own form: TF loads it, and so does jitflow
                fdef.node_def.extend(translated)
                nd = fdef.node_def[-1]
                out_arg[id(node)] = tf_ops.output_name(op)
            else:
                nd = fdef.node_def.add(name=node.name, op=op)
                nd.input.extend(input_refs)
                skip = _SUBGRAPH_ATTRS.get(op, ())
                for key, proto in _attrs.encode_all(op, node.name, node.attrs, skip=skip).items():
                    nd.attr[key].CopyFrom(proto)
                for key in skip:
                    sub = node.attrs.get(key)
                    if sub is None:
                        continue
                    sub_inputs = list(getattr(sub, "inputs", []))
                    sub_captures = getattr(sub, "captures", None)
                    if sub_captures is None:  # a ConcreteFunction
                        sub_captures = sub._captures
                    sub_name, _ = self.add(sub.graph, sub_inputs, sub_captures, list(sub.graph.outputs),
                                           f"{name}_{key}", top_level=False)
                    nd.attr[key].func.name = sub_name
                if op in ("StatefulPartitionedCall", "PartitionedCall"):  # TF's call attrs
                    nd.attr["Tin"].list.type.extend(t._dtype.tf_enum for t in node.inputs)
                    nd.attr["Tout"].list.type.extend(t._dtype.tf_enum for t in node.outputs)
                    for key in ("config", "config_proto", "executor_type"):
                        nd.attr[key].s = b""
                else:
                    nd.attr[tf_ops.NATIVE].b = True
            nd.input.extend("^" + c.name for c in node.control_inputs)
            shaped = node.inputs if (op == "While" and translated is not None) else node.outputs  # TF: all loop vars
            nd.attr["_output_shapes"].list.shape.extend(shape_proto(t._dims) for t in shaped)
            if _ordered(node):
                if previous_ordered is not None:
                    nd.input.append("^" + previous_ordered)
                previous_ordered = nd.name
                if node.op.stateful or op.startswith("Assign"):
                    fdef.signature.control_output.append(nd.name)
                    fdef.control_ret[nd.name] = nd.name
        for i, t in enumerate(outputs):
            fdef.signature.output_arg.add(name=f"output_{i}", type=t._dtype.tf_enum)  # a Pad returns its arg
            fdef.ret[f"output_{i}"] = ref(t)
        self.library.function.append(fdef)
        return fname, bound


# -- TF's If and While ------------------------------------------------------------------------------------
def _sub_parts(sub: Any) -> Tuple[list, list, list]:
    return list(sub.inputs), list(sub.captures), list(sub.graph.outputs)


def _pads(tensors: Sequence[Any], label: str) -> List[Pad]:
    return [Pad(t._dtype if not isinstance(t, Variable) else _resource(), getattr(t, "_dims", ()), f"{label}_{i}")
            for i, t in enumerate(tensors)]


def _resource():
    return dtypes.resource


def _control_flow_export(self: "Exporter", node: Any, input_refs: List[str], name: str):
    """`If`/`While` in TensorFlow's calling convention (jitflow's keeps each sub-graph's captures apart)."""
    op, a = node.op.tf_op, node.attrs
    nd = node_def_pb2.NodeDef(name=node.name, op=op)
    nd.input.extend(input_refs)
    in_types = [t._dtype.tf_enum for t in node.inputs]
    if op == "If":
        then_sub, else_sub = a["then_branch"], a["else_branch"]
        n_then = a["n_then"]
        then_caps_outer, else_caps_outer = node.inputs[1:1 + n_then], node.inputs[1 + n_then:]
        then_in, then_caps, then_out = _sub_parts(then_sub)
        else_in, else_caps, else_out = _sub_parts(else_sub)
        then_name, _ = self.add(then_sub.graph, then_in, then_caps, then_out, f"{name}_then_branch", fresh=True,
                                top_level=False, trailing=_pads(else_caps_outer, "else_input"))
        else_name, _ = self.add(else_sub.graph, _pads(then_caps_outer, "then_input") + else_in, else_caps, else_out,
                                f"{name}_else_branch", fresh=True, top_level=False)
        nd.attr["Tcond"].type = node.inputs[0]._dtype.tf_enum
        nd.attr["Tin"].list.type.extend(in_types[1:])
        nd.attr["Tout"].list.type.extend(t._dtype.tf_enum for t in node.outputs)
        nd.attr["then_branch"].func.name = then_name
        nd.attr["else_branch"].func.name = else_name
    else:
        cond_sub, body_sub = a["cond"], a["body"]
        n_vars, n_cond = a["n_vars"], a["n_cond"]
        if a.get("maximum_iterations") is not None:
            return None
        cond_caps_outer, body_caps_outer = node.inputs[n_vars:n_vars + n_cond], node.inputs[n_vars + n_cond:]
        cond_in, cond_caps, cond_out = _sub_parts(cond_sub)
        body_in, body_caps, body_out = _sub_parts(body_sub)
        cond_name, _ = self.add(cond_sub.graph, cond_in, cond_caps, cond_out, f"{name}_cond", fresh=True,
                                top_level=False, trailing=_pads(body_caps_outer, "body_input"))
        cond_pads = _pads(cond_caps_outer, "cond_input")
        body_outputs = list(body_out) + cond_pads + [ph for _, ph in body_caps]  # captures pass through
        body_name, _ = self.add(body_sub.graph, body_in + cond_pads, body_caps, body_outputs, f"{name}_body",
                                fresh=True, top_level=False)
        nd.attr["T"].list.type.extend(in_types)
        nd.attr["cond"].func.name = cond_name
        nd.attr["body"].func.name = body_name
        nd.attr["parallel_iterations"].i = 10
        nd.attr["output_shapes"].list.shape.extend(shape_proto(t._dims) for t in node.inputs)
    return [nd]



def _ordered(node: Any) -> bool:
    """Ops whose order is observable: side effects, and anything reading or writing a variable."""
    return node.op.stateful or any(t._dtype.name == "resource" for t in node.inputs)


