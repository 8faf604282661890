"""The per-op interpreter: a graph lowered to one straight-line Python function.

Instead of looping over nodes and dispatching, the plan generates source like

    def run(a, b):
        v2 = k2(a, b)        # mul
        v3 = k3(v2, c0)      # add
        return (v3,)

with each `k` a kernel already specialised for its dtypes (a numba ufunc loop, a bound
njit wrapper), constants bound as globals, identities elided and unused stateless
nodes pruned. Per-op cost is then just the kernel call. A second, timed variant
(generated on first use) records each node's start/end for the tracer.
Nodes run in creation order, which keeps the program order of stateful ops.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

from .graph import Graph, Node
from .ops.registry import bind_kernel
from .tensor import SymbolicTensor

_ALIASING_OPS = ("Identity", "StopGradient")


def _needed_nodes(graph: Graph, outputs: Sequence[SymbolicTensor]) -> List[Node]:
    """Nodes that produce an output or have side effects, plus what they depend on."""
    keep = set()
    stack = [t.node for t in outputs] + [n for n in graph.nodes if n.op.stateful]
    while stack:
        node = stack.pop()
        if id(node) in keep:
            continue
        keep.add(id(node))
        stack.extend(t.node for t in node.inputs)
        stack.extend(node.control_inputs)
    return [n for n in graph.nodes if id(n) in keep]


class Plan:
    """A runnable form of `graph`: `plan(*feeds)` returns the output values as a tuple.

    `feeds` are the argument placeholders' values followed by the captured inputs'.
    """

    def __init__(self, graph: Graph, feeds: Sequence[SymbolicTensor],
                 outputs: Sequence[SymbolicTensor], backend: str = "cpu") -> None:
        self.graph = graph
        self.backend = backend
        self.feeds = list(feeds)
        self.outputs = list(outputs)
        self.nodes = _needed_nodes(graph, outputs)
        self._timed: Callable | None = None
        self._source, self._env, self._line_nodes = self._generate(timed=False)
        self.run = self._compile(self._source, self._env)

    # -- code generation ------------------------------------------------------------
    def _generate(self, timed: bool) -> Tuple[str, Dict[str, Any], Dict[int, Node]]:
        env: Dict[str, Any] = {}
        expr: Dict[Tuple[int, int], str] = {}
        params = []
        for i, t in enumerate(self.feeds):
            name = f"f{i}"
            expr[(id(t.node), t.index)] = name
            params.append(name)
        lines = [f"def run({', '.join(('_rec', '_clock') + tuple(params) if timed else params)}):"]
        line_nodes: Dict[int, Node] = {}
        for j, node in enumerate(self.nodes):
            op = node.op.tf_op
            if op == "Placeholder":
                if (id(node), 0) not in expr:
                    raise ValueError(f"placeholder {node.name} is not fed by this plan")
                continue
            if op == "Const":
                env[f"c{j}"] = node.attrs["value"]
                expr[(id(node), 0)] = f"c{j}"
                continue
            args = [expr[(id(t.node), t.index)] for t in node.inputs]
            if op in _ALIASING_OPS and not timed:
                expr[(id(node), 0)] = args[0]
                continue
            env[f"k{j}"] = bind_kernel(node.op, self.backend, node.attrs, [t._dtype for t in node.inputs])
            outs = [f"v{j}_{k}" for k in range(len(node.outputs))]
            for k, name in enumerate(outs):
                expr[(id(node), k)] = name
            call = f"k{j}({', '.join(args)})"
            if not outs:
                target = ""
            elif len(outs) == 1:
                target = f"{outs[0]} = "
            else:
                target = f"{', '.join(outs)}, = "
            if timed:
                lines.append("    _t = _clock()")
            line_nodes[len(lines) + 1] = node
            lines.append(f"    {target}{call}  # {node.name}")
            if timed:
                result = outs[0] if len(outs) == 1 else f"({', '.join(outs)},)" if outs else "None"
                lines.append(f"    _rec(({j}, _t, _clock(), {result}))")
        results = [expr[(id(t.node), t.index)] for t in self.outputs]
        lines.append(f"    return ({', '.join(results)}{',' if results else ''})")
        return "\n".join(lines) + "\n", env, line_nodes

    def _compile(self, source: str, env: Dict[str, Any]) -> Callable:
        code = compile(source, f"<jitflow graph {self.graph.name}>", "exec")
        namespace = dict(env)
        exec(code, namespace)  # noqa: S102 - source is generated above from the graph
        return namespace["run"]

    def __call__(self, *feeds: Any) -> tuple:
        try:
            return self.run(*feeds)
        except Exception as exc:
            self._annotate(exc)
            raise

    def run_timed(self, feeds: Sequence[Any]) -> Tuple[tuple, List[tuple]]:
        """Run and return (outputs, [(node, start_ns, end_ns, value), ...])."""
        if self._timed is None:
            source, env, _ = self._generate(timed=True)
            self._timed = self._compile(source, env)
        records: List[tuple] = []
        try:
            outputs = self._timed(records.append, time.perf_counter_ns, *feeds)
        except Exception as exc:
            self._annotate(exc)
            raise
        return outputs, [(self.nodes[j], t0, t1, value) for j, t0, t1, value in records]

    def _annotate(self, exc: BaseException) -> None:
        """Name the graph node whose kernel raised, from the generated code's line."""
        tb = exc.__traceback__
        node = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename.startswith("<jitflow graph"):
                node = self._line_nodes.get(tb.tb_lineno)
            tb = tb.tb_next
        if node is not None and hasattr(exc, "add_note"):
            exc.add_note(f"  while running node {node.name!r} ({node.op.tf_op}) of graph {self.graph.name!r}")

    @property
    def source(self) -> str:
        """The generated Python source (useful when debugging a plan)."""
        return self._source
