"""The graph IR: a list of nodes in creation (= topological and program) order.

A `Node` is one op application: scoped unique name, op definition, input tensors,
control inputs, attrs and output tensors. `print(graph)` shows one line per node.
Running nodes in creation order keeps Python program order for stateful ops, which is
what TF's automatic control dependencies guarantee.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.shapes import format_dims
from jitflow.runtime.core.tensor import EagerTensor, SymbolicTensor, Tensor

if TYPE_CHECKING:
    from jitflow.runtime.ops.registry import OpDef
    from jitflow.runtime.state.variables import Variable

# Eager tensors up to this many elements are folded into the graph as constants when
# captured (TF does the same); larger ones are fed as captured inputs at call time.
EAGER_CONST_THRESHOLD = 128

class hooks:
    """Ops the graph itself adds, defined by `runtime.ops.constant_op` (a stage above) when it loads."""

    placeholder_op: Any = None                     # OPS["Placeholder"]
    graph_constant: Callable[..., SymbolicTensor]  # (numpy value, dtype) -> a Const node's output


_VALID_NAME = re.compile(r"[^A-Za-z0-9_.\-/>]")


class Node:
    """One op in a graph. `outputs[i]` is the SymbolicTensor `name:i`."""

    __slots__ = ("graph", "name", "op", "inputs", "control_inputs", "attrs", "outputs", "device")

    def __init__(self, graph: "Graph", name: str, op: "OpDef", inputs: List[SymbolicTensor],
                 attrs: Dict[str, Any], device: str = "") -> None:
        self.graph = graph
        self.name = name
        self.op = op
        self.inputs = inputs
        self.control_inputs: List[Node] = []
        self.attrs = attrs
        self.outputs: List[SymbolicTensor] = []
        self.device = device

    @property
    def type(self) -> str:
        """The TensorFlow op type (`AddV2`), as `tf.Operation.type` says."""
        return self.op.tf_op

    def __repr__(self) -> str:
        ins = ", ".join(t.name for t in self.inputs)
        if self.control_inputs:
            ins += (", " if ins else "") + ", ".join("^" + n.name for n in self.control_inputs)
        outs = ", ".join(f"{format_dims(t._dims)} {t._dtype.name}" for t in self.outputs) or "()"
        return f"{self.name} = {self.op.tf_op}({ins}) -> {outs}"


# Filled in by `jitflow.tracer.graph_def` (a part above the runtime): Graph -> GraphDef proto.
GRAPH_DEF_BUILDER: Optional[Callable[["Graph"], Any]] = None


class Graph:
    """A function graph under construction or finished.

    Holds the placeholders for arguments (`inputs`), the captured outer values
    (`captures`: eager tensors, variables or tensors of an enclosing graph, each fed
    through a placeholder), and the nodes.

    >>> @jf.function
    ... def f(x):
    ...     return jf.tanh(x)
    >>> graph = f.get_concrete_function(jf.TensorSpec([2], jf.float32)).graph
    >>> [n.op.tf_op for n in graph.get_operations()]
    ['Placeholder', 'Tanh']
    """

    def __init__(self, name: str, outer: Optional["Graph"] = None) -> None:
        self.name = name
        self.outer = outer
        self.nodes: List[Node] = []
        self.inputs: List[SymbolicTensor] = []
        self.outputs: List[SymbolicTensor] = []
        # id(outer value) -> (outer value, placeholder); insertion-ordered.
        self.captures: Dict[int, Tuple[Any, SymbolicTensor]] = {}
        self.scope = ""
        self.variables_created: List["Variable"] = []
        self._names: Dict[str, int] = {}
        self._folded: set = set()  # capture keys turned into Const nodes

    # -- naming ---------------------------------------------------------------------
    def unique_name(self, name: str, mark_used: bool = True) -> str:
        """`add`, then `add_1`, `add_2`... (case-insensitive, like TF)."""
        key = name.lower()
        count = self._names.get(key, 0)
        if mark_used:
            self._names[key] = count + 1
        if count == 0:
            return name
        base = name
        while True:
            candidate = f"{base}_{count}"
            ckey = candidate.lower()
            if ckey not in self._names:
                if mark_used:
                    self._names[ckey] = 1
                return candidate
            count += 1

    def scope_for(self, name: Optional[str]) -> str:
        """The scope string `name_scope(name)` opens here (see `context.name_scope`)."""
        if not name:
            return ""
        if name.endswith("/"):
            return name
        return self.unique_name(self.scope + _VALID_NAME.sub("_", name)) + "/"

    # -- building -------------------------------------------------------------------
    def as_default(self):
        """Make this graph current: ops called in the block add nodes here."""
        return context.graph_scope(self)

    def add_node(self, op: "OpDef", inputs: List[SymbolicTensor], attrs: Dict[str, Any],
                 out_specs, name: Optional[str] = None) -> Node:
        base = _VALID_NAME.sub("_", name or op.default_name)
        node = Node(self, self.unique_name(self.scope + base), op, inputs, attrs)
        node.outputs = [SymbolicTensor(node, i, dims, dtype) for i, (dims, dtype) in enumerate(out_specs)]
        self.nodes.append(node)
        return node

    def add_placeholder(self, dims, dtype: _dt.DType, name: str) -> SymbolicTensor:
        saved, self.scope = self.scope, ""
        try:
            node = self.add_node(hooks.placeholder_op, [], {"dtype": dtype, "shape": dims},
                                 [(dims, dtype)], name=name)
        finally:
            self.scope = saved
        return node.outputs[0]

    def capture(self, value: Any) -> SymbolicTensor:
        """A tensor of this graph standing for `value`, an outer tensor or variable."""
        if getattr(type(value), "_captured_as_resource", False):
            value = value._shared_resource  # an UnreadVariable is its variable's resource
        key = id(value)
        found = self.captures.get(key)
        if found is not None:
            return found[1]
        if isinstance(value, EagerTensor) and value._value.size <= EAGER_CONST_THRESHOLD:
            with context.graph_scope(self):
                const = hooks.graph_constant(value._host(), value._dtype)
            # Keep `value` alive so its id is not reused while this entry exists.
            self.captures[key] = (value, const)
            self._folded.add(key)
            return const
        if getattr(type(value), "_captured_as_resource", False):  # a jf.Variable
            name = value.name.split(":")[0].replace("/", "_").lower() + "_resource"
            placeholder = self.add_placeholder((), _dt.resource, name)
            placeholder.node.attrs["_variable"] = value
        elif isinstance(value, Tensor):
            placeholder = self.add_placeholder(value._dims, value._dtype, "capture")
        else:
            raise TypeError(f"Cannot capture {type(value).__name__} into graph {self.name!r}")
        self.captures[key] = (value, placeholder)
        return placeholder

    def captured_inputs(self) -> List[Tuple[Any, SymbolicTensor]]:
        """The (outer value, placeholder) pairs fed at call time (folded constants excluded)."""
        return [pair for key, pair in self.captures.items() if key not in self._folded]

    def as_graph_def(self, add_shapes: bool = False) -> Any:
        """This graph as a TensorFlow `GraphDef` proto (built by the tracer, which fills in
        `GRAPH_DEF_BUILDER` when `jitflow` is imported).

        >>> import jitflow as jf
        >>> cf = jf.function(lambda x: x * 2.0).get_concrete_function(jf.TensorSpec([], jf.float32))
        >>> [n.op for n in cf.graph.as_graph_def().node]
        ['Placeholder', 'Const', 'Mul']
        """
        if GRAPH_DEF_BUILDER is None:
            raise RuntimeError("as_graph_def needs jitflow's tracer: import jitflow (not only jitflow.runtime)")
        return GRAPH_DEF_BUILDER(self)

    def get_operations(self) -> List[Node]:
        return list(self.nodes)

    def get_operation_by_name(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node named {name!r} in graph {self.name!r}")

    def __str__(self) -> str:
        lines = [f"graph {self.name}("
                 + ", ".join(f"{t.name}: {format_dims(t._dims)} {t._dtype.name}" for t in self.inputs) + ")"]
        lines += ["  " + repr(node) for node in self.nodes]
        lines.append("  return " + ", ".join(t.name for t in self.outputs))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<jf.Graph {self.name!r} with {len(self.nodes)} nodes>"
