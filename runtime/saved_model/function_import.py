"""SavedModel `FunctionDef`s -> ops replayed into the current `jf.function` trace.

A FunctionDef is re-executed op by op through the op registry inside a fresh trace, so a
loaded function is an ordinary jitflow function (retracing rules, interpreter and compiled
tiers, GradientTape). Nodes in TensorFlow's form go through `tf_ops.IMPORTS`; nodes in
jitflow's form (`_jf_native`) through their saved attrs. `If`/`While` replay through
`jf.cond`/`jf.while_loop` (in either calling convention), and calls are inlined. An op
jitflow does not implement fails the load, naming the op and the node.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from jitflow.runtime.tracing import control_flow
from jitflow.runtime.ops import registry
from jitflow.runtime.core.shapes import TensorShape
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.saved_model import attrs as _attrs
from jitflow.runtime.saved_model import tf_ops
from jitflow.runtime.saved_model.attrs import SUBGRAPH_ATTRS as _SUBGRAPH_ATTRS
from jitflow.runtime.saved_model.protos import function_pb2

class UnsupportedOpError(ValueError):
    """A saved function uses an op jitflow does not implement; the message names the node and op.

    >>> issubclass(jf.saved_model.UnsupportedOpError, ValueError)
    True
    """


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
        if not native and (nd.op in tf_ops.COMPOSITES or nd.op in tf_ops.IMPORTS):
            try:
                if nd.op in tf_ops.COMPOSITES:
                    return list(tf_ops.COMPOSITES[nd.op](inputs, attrs, const, nd.name.rsplit("/", 1)[-1]))
                op, inputs, attrs = tf_ops.IMPORTS[nd.op](inputs, attrs, const)
            except UnsupportedOpError:
                raise
            except KeyError as e:  # TF's NodeDef lacks an attr its OpDef requires
                raise UnsupportedOpError(f"cannot load function {fname!r}: its node {nd.name!r} ({nd.op}) has no "
                                         f"attr {e.args[0]!r}") from None
            except ValueError as e:  # a form jitflow does not run (NCHW, EXPLICIT padding, ...)
                raise UnsupportedOpError(f"cannot load function {fname!r}: its node {nd.name!r}: {e}") from None
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


def _supported(nd) -> bool:
    if nd.op in _SKIPPED or nd.op in tf_ops.TF_ONLY:
        return True
    if tf_ops.NATIVE in nd.attr:
        return nd.op in registry.OPS
    return nd.op in tf_ops.IMPORTS or nd.op in tf_ops.COMPOSITES


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
