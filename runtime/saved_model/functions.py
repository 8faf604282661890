"""Traced graphs <-> the `FunctionDef`s of a SavedModel's function library.

Export: each concrete function becomes a FunctionDef whose inputs are the function's tensor
arguments, then one DT_RESOURCE argument per captured variable (its "bound input"), and
whose nodes keep their scoped names, TF op types and attrs (`attrs.py`). Eager tensors a
function captured become `Const` nodes. Branches and loop bodies (`If`, `While`) and called
functions become FunctionDefs of their own, referenced by `func` attrs.

Import ("replay"): a FunctionDef is re-executed op by op through the op registry inside a
fresh `jf.function` trace, so a loaded function is an ordinary jitflow function (retracing
rules, interpreter and compiled tiers, GradientTape). `If`/`While` replay through `jf.cond`/
`jf.while_loop`, and calls are inlined. An op jitflow does not implement fails the load,
naming the op and the node.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from .. import control_flow
from ..graph import Graph
from ..shapes import TensorShape
from ..ops import registry
from ..tensor import SymbolicTensor
from ..variables import Variable
from . import attrs as _attrs
from . import tf_ops
from .protos import function_pb2
from .structure import shape_proto

_SUBGRAPH_ATTRS = {"If": ("then_branch", "else_branch"), "While": ("cond", "body"),
                   "StatelessIf": ("then_branch", "else_branch"), "StatelessWhile": ("cond", "body"),
                   "StatefulPartitionedCall": ("f",), "PartitionedCall": ("f",)}
_SANITIZE = re.compile(r"[^A-Za-z0-9_]")


class UnsupportedOpError(ValueError):
    """A saved function uses an op jitflow does not implement."""


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
        key = (id(graph), top_level, tuple(id(t) for t in inputs), tuple(id(t) for t in outputs))
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
    from .. import dtypes
    return dtypes.resource


def _control_flow_export(self: "Exporter", node: Any, input_refs: List[str], name: str):
    """`If`/`While` in TensorFlow's calling convention (jitflow's keeps each sub-graph's captures apart)."""
    from .protos import node_def_pb2
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


# -- import -------------------------------------------------------------------------------------
class Library:
    """The FunctionDefs of a SavedModel by name, replayable into the current trace."""

    def __init__(self, library: "function_pb2.FunctionDefLibrary") -> None:
        self.functions = {f.signature.name: f for f in library.function}

    def check_supported(self, name: str, seen: Optional[set] = None) -> None:
        """Raise UnsupportedOpError for the first op (depth first) jitflow cannot run."""
        seen = set() if seen is None else seen
        if name in seen:
            return
        seen.add(name)
        fdef = self._get(name)
        for nd in fdef.node_def:
            if nd.op in _SUBGRAPH_ATTRS:
                for key in _SUBGRAPH_ATTRS[nd.op]:
                    if key in nd.attr:
                        self.check_supported(nd.attr[key].func.name, seen)
            elif not _supported(nd):
                raise UnsupportedOpError(
                    f"cannot load function {name!r}: its node {nd.name!r} uses the op {nd.op!r}, which jitflow "
                    "does not implement")

    def _get(self, name: str) -> "function_pb2.FunctionDef":
        fdef = self.functions.get(name)
        if fdef is None:
            raise ValueError(f"the SavedModel's function library has no function {name!r}")
        return fdef

    def replay(self, name: str, inputs: Sequence[Any]) -> List[Any]:
        """Run function `name` on `inputs` (tensors; Variables for resource args) op by op."""
        fdef = self._get(name)
        args = fdef.signature.input_arg
        if len(inputs) != len(args):
            raise ValueError(f"function {name!r} takes {len(args)} inputs; got {len(inputs)}")
        env: Dict[str, List[Any]] = {}
        consts: Dict[str, Any] = {}
        argmap = {a.name: value for a, value in zip(args, inputs)}

        def resolve(ref: str) -> Any:
            if ref in argmap:
                return argmap[ref]
            parts = ref.split(":")
            node = parts[0]
            index = int(parts[-1]) if len(parts) > 1 else 0
            if node not in env:
                raise ValueError(f"function {name!r}: input {ref!r} refers to a node that is not defined before it")
            return env[node][index]

        for nd in _topological(fdef):
            if nd.op in _SKIPPED:
                env[nd.name] = []
                continue
            data_refs = [r for r in nd.input if not r.startswith("^")]
            inputs_ = [resolve(r) for r in data_refs]

            def const(i: int, data_refs=data_refs, nd=nd) -> Any:
                node = data_refs[i].split(":")[0]
                if node not in consts:
                    raise UnsupportedOpError(f"cannot load function {name!r}: input {i} of {nd.name!r} ({nd.op}) "
                                             "must be a constant for jitflow (it is computed at run time)")
                return consts[node]
            env[nd.name] = self._run_node(name, nd, inputs_, const)
            if nd.op == "Const":
                consts[nd.name] = _attrs.tensor_value(nd.attr["value"].tensor)
        return [resolve(fdef.ret[a.name]) for a in fdef.signature.output_arg]

    def _run_node(self, fname: str, nd, inputs: List[Any], const: Callable[[int], Any]) -> List[Any]:
        native = tf_ops.NATIVE in nd.attr
        if nd.op in ("StatefulPartitionedCall", "PartitionedCall"):
            return self.replay(nd.attr["f"].func.name, inputs)
        attrs = _attrs.decode_all({k: v for k, v in nd.attr.items()
                                   if k not in ("_output_shapes", tf_ops.NATIVE)
                                   and k not in _SUBGRAPH_ATTRS.get(nd.op, ())
                                   and (native or not k.startswith("_"))})  # TF's "_" attrs: metadata
        if not native and nd.op in ("If", "StatelessIf"):  # TF: both branches take every input
            then_name, else_name = nd.attr["then_branch"].func.name, nd.attr["else_branch"].func.name
            rest = inputs[1:]
            return list(control_flow.cond(inputs[0], lambda: self.replay(then_name, rest),
                                          lambda: self.replay(else_name, rest), name=nd.name))
        if not native and nd.op in ("While", "StatelessWhile"):  # TF: every input is a loop variable
            cond_name, body_name = nd.attr["cond"].func.name, nd.attr["body"].func.name
            # Variables (resource handles) ride along unchanged: captured, not looped over.
            moving = [i for i, v in enumerate(inputs) if not isinstance(v, Variable)]

            def full(vs):
                merged = list(inputs)
                for i, v in zip(moving, vs):
                    merged[i] = v
                return merged
            outs = control_flow.while_loop(
                lambda *vs: self.replay(cond_name, full(vs))[0],
                lambda *vs: [self.replay(body_name, full(vs))[i] for i in moving],
                [inputs[i] for i in moving], name=nd.name)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            return full(outs)
        if nd.op == "StringFormat":
            return [tf_ops.FormattedString(inputs, attrs.get("template", "%s"), attrs.get("placeholder", "{}"),
                                           int(attrs.get("summarize", 3)))]
        if not native and nd.op in tf_ops.IMPORTS:
            op, inputs, attrs = tf_ops.IMPORTS[nd.op](inputs, attrs, const)
            return list(registry.apply(op, inputs, attrs, name=nd.name.rsplit("/", 1)[-1]))
        if nd.op == "If":
            n_then = attrs["n_then"]
            then_caps, else_caps = inputs[1:1 + n_then], inputs[1 + n_then:]
            then_name, else_name = nd.attr["then_branch"].func.name, nd.attr["else_branch"].func.name
            outs = control_flow.cond(inputs[0], lambda: self.replay(then_name, then_caps),
                                     lambda: self.replay(else_name, else_caps), name=nd.name)
            return list(outs)
        if nd.op == "While":
            n_vars, n_cond = attrs["n_vars"], attrs["n_cond"]
            loop_vars, cond_caps = list(inputs[:n_vars]), inputs[n_vars:n_vars + n_cond]
            body_caps = inputs[n_vars + n_cond:]
            cond_name, body_name = nd.attr["cond"].func.name, nd.attr["body"].func.name
            invariants = [TensorShape(None if s.unknown_rank else [None if d.size < 0 else d.size for d in s.dim])
                          for s in nd.attr["_output_shapes"].list.shape] or None
            outs = control_flow.while_loop(
                lambda *vs: self.replay(cond_name, list(vs) + list(cond_caps))[0],
                lambda *vs: self.replay(body_name, list(vs) + list(body_caps)),
                loop_vars, shape_invariants=invariants, maximum_iterations=attrs.get("maximum_iterations"),
                name=nd.name)
            return list(outs) if isinstance(outs, (list, tuple)) else [outs]
        if nd.op in ("StatefulPartitionedCall", "PartitionedCall"):
            return self.replay(nd.attr["f"].func.name, inputs)
        if nd.op not in registry.OPS:
            raise UnsupportedOpError(f"cannot load function {fname!r}: its node {nd.name!r} uses the op "
                                     f"{nd.op!r}, which jitflow does not implement")
        return list(registry.apply(nd.op, inputs, attrs, name=nd.name.rsplit("/", 1)[-1]))


_SKIPPED = {"NoOp"}


def _ordered(node: Any) -> bool:
    """Ops whose order is observable: side effects, and anything reading or writing a variable."""
    return node.op.stateful or any(t._dtype.name == "resource" for t in node.inputs)


def _supported(nd) -> bool:
    if nd.op in _SKIPPED or nd.op in tf_ops.TF_ONLY:
        return True
    if tf_ops.NATIVE in nd.attr:
        return nd.op in registry.OPS
    return nd.op in tf_ops.IMPORTS


def _topological(fdef) -> List[Any]:
    """Nodes in an order where every input comes first (jitflow writes them so; TF need not)."""
    by_name = {nd.name: nd for nd in fdef.node_def}
    order, state = [], {}

    def visit(nd) -> None:
        stack = [(nd, False)]
        while stack:
            current, done = stack.pop()
            if done:
                state[current.name] = 2
                order.append(current)
                continue
            if state.get(current.name):
                continue
            state[current.name] = 1
            stack.append((current, True))
            for ref in reversed(list(current.input)):
                dep = by_name.get(ref.lstrip("^").split(":")[0])
                if dep is not None and not state.get(dep.name):
                    stack.append((dep, False))
    for nd in fdef.node_def:
        if not state.get(nd.name):
            visit(nd)
    return order
