"""How a compiled segment's measured time is attributed to the ops it fused.

A compiled segment is one numba function running many graph ops in fused loops: only the
segment as a whole has a start and an end. Profiles show it as one event (named after
the segment, with the fused ops' TF names in its `fused_ops` stat, as XLA's fusion events
carry their HLO ops), and op-level views (xprof's op statistics, TensorBoard's graph
coloured by compute time) need a time per op. The rule, the same in every exporter:

    an op's share of its segment's time = its cost / the segment's total cost
    cost = output elements x the op type's weight (`WEIGHTS`, default 1);
           MatMul / BatchMatMul: 2 x output elements x the contracted dimension;
           a reduction: the elements it reads.

Shares are laid out one after the other inside the segment's span in graph order, and
every such op event carries `estimated = 1` and `fusion = <segment>`, so a reader can
tell a measured op from an attributed one. Exact per-op times come from the interpreter
(`trace_on(..., exact_ops=True)` / `ProfilerOptions(exact_ops=True)`), at its cost.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

# Transcendentals cost several multiply-adds per element (rational approximations, libm).
WEIGHTS = {
    "Tanh": 8.0, "Sigmoid": 8.0, "Exp": 6.0, "Expm1": 6.0, "Log": 6.0, "Log1p": 6.0, "Sin": 8.0,
    "Cos": 8.0, "Tan": 10.0, "Pow": 10.0, "Sqrt": 2.0, "Rsqrt": 2.0, "Softplus": 10.0, "Elu": 6.0,
    "Selu": 6.0, "Erf": 10.0, "Softmax": 10.0, "LogSoftmax": 10.0, "RealDiv": 2.0, "Div": 2.0,
    "FloorDiv": 2.0, "FloorMod": 2.0,
}
_REDUCTIONS = {"Sum", "Mean", "Max", "Min", "Prod", "All", "Any", "ArgMax", "ArgMin"}
_MATMULS = {"MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3"}


def _elements(dims: Any) -> int:
    n = 1
    for d in dims or ():
        n *= d if isinstance(d, int) and d >= 0 else 1  # unknown sizes count as 1
    return n


def cost(node: Any) -> float:
    """The attribution weight of one graph node (see the module docstring)."""
    op = node.op.tf_op
    out = sum(_elements(getattr(t, "_dims", ())) for t in node.outputs) or 1
    if op in _MATMULS and node.inputs:
        a: tuple = getattr(node.inputs[0], "_dims", ()) or ()
        transposed = bool(node.attrs.get("transpose_a") or node.attrs.get("adj_x"))
        k = a[-2] if transposed and len(a) >= 2 else a[-1] if a else 1
        return 2.0 * out * (k if isinstance(k, int) and k > 0 else 1)
    if op in _REDUCTIONS and node.inputs:
        return float(max(out, _elements(getattr(node.inputs[0], "_dims", ()))))
    return out * WEIGHTS.get(op, 1.0)


def split(nodes: Sequence[Any], start_ns: int, end_ns: int) -> List[Tuple[Any, int, int]]:
    """(node, start_ns, end_ns) for each fused node: consecutive shares of [start, end]."""
    weights = [cost(n) for n in nodes]
    total = sum(weights) or 1.0
    span = max(0, end_ns - start_ns)
    out, acc = [], 0.0
    for node, w in zip(nodes, weights):
        s = start_ns + int(round(span * acc / total))
        acc += w
        out.append((node, s, start_ns + int(round(span * acc / total))))
    return out
