"""`jf.cond` and `jf.while_loop`: graph ops whose branches and bodies are sub-graphs.

Eagerly (or with a Python/eager predicate) they are plain Python `if` and `while`.
Inside a trace, each branch/body is traced once into its own `Graph` whose captures
feed values from the enclosing graph; the `If`/`While` node runs those graphs' plans.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.execution.executor import Plan
from jitflow.runtime.core.graph import Graph
from jitflow.runtime.core.nest import CompositeTensor, flatten, pack
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.shapes import format_dims, is_compatible, normalize, relax
from jitflow.runtime.core.tensor import SymbolicTensor, Tensor
from jitflow.runtime.ops.array_ops import identity


class SubGraph:
    """A traced branch or loop body: placeholders in, tensors out, plus captured values."""

    def __init__(self, graph: Graph, inputs: List[SymbolicTensor], outputs: List[SymbolicTensor]) -> None:
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        graph.inputs = list(inputs)
        graph.outputs = list(outputs)
        self.captures = graph.captured_inputs()
        self.captured_values = [value for value, _ in self.captures]
        self.plan = Plan(graph, inputs + [ph for _, ph in self.captures], outputs)

    @property
    def name(self) -> str:
        return self.graph.name


def trace_subgraph(fn: Callable, specs: Sequence[Tuple[Any, _dt.DType]], name: str,
                   input_names: Optional[Sequence[str]] = None) -> Tuple[Graph, List[SymbolicTensor], Any]:
    """Trace `fn(*placeholders)` into a new graph nested in the current one."""
    outer = context.current_graph()
    graph = Graph(f"{outer.name}_{name}" if outer is not None else name, outer=outer)
    with graph.as_default():
        placeholders = [graph.add_placeholder(dims, dtype, (input_names[i] if input_names else f"{name}_input"))
                        for i, (dims, dtype) in enumerate(specs)]
        result = fn(*placeholders)
    return graph, placeholders, result


def _is_symbolic(value: Any) -> bool:
    return isinstance(value, SymbolicTensor)


def _as_tensors(values: List[Any], hints: Optional[List[Any]] = None) -> List[Tensor]:
    out = []
    for i, v in enumerate(values):
        hint = None
        if hints is not None and isinstance(hints[i], (Tensor, TensorConvertible)):
            hint = hints[i].dtype
        out.append(convert_to_tensor(v, dtype_hint=hint))
    return out


# -- cond ----------------------------------------------------------------------------------
def _if_infer(specs, attrs):
    return [(t._dims, t._dtype) for t in attrs["_out_specs"]]


def _if_kernel(pred, *captured, then_branch, else_branch, n_then, **_export_attrs):
    if pred:
        outs = then_branch.plan(*captured[:n_then])
    else:
        outs = else_branch.plan(*captured[n_then:])
    return outs[0] if len(outs) == 1 else outs


register("If", _if_infer, cpu=_if_kernel, public_name="cond", default_name="cond", stateful=True)


def cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], name: Optional[str] = None,
         _output_names: Optional[Sequence[str]] = None) -> Any:
    """Run `true_fn()` if `pred` else `false_fn()`; inside a trace both become sub-graphs.

    Both branches must return the same structure with the same dtypes per element.

    >>> jf.cond(jf.constant(True), lambda: 1, lambda: 2)
    1
    """
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("true_fn and false_fn: jf.cond needs two callables")
    if isinstance(pred, TensorConvertible):
        pred = pred._as_tensor()
    if not _is_symbolic(pred) or context.current_graph() is None:
        if isinstance(pred, Tensor) and pred._dtype is not _dt.bool_:
            raise TypeError(f"pred: jf.cond needs a bool scalar; got dtype {pred._dtype.name}")
        return true_fn() if bool(pred) else false_fn()
    if pred._dtype is not _dt.bool_ or (pred._dims is not None and pred._dims != ()):
        raise TypeError(f"pred: jf.cond needs a bool scalar tensor; got {pred!r}")
    then_graph, _, then_result = trace_subgraph(lambda: true_fn(), [], "true")
    else_graph, _, else_result = trace_subgraph(lambda: false_fn(), [], "false")
    return build_if(pred, then_graph, then_result, else_graph, else_result, _output_names, name)


def build_if(pred: SymbolicTensor, then_graph: Graph, then_result: Any, else_graph: Graph, else_result: Any,
             output_names: Optional[Sequence[str]] = None, name: Optional[str] = None) -> Any:
    """The `If` node for two already-traced branches; returns outputs shaped like `then_result`."""
    then_flat, else_flat = flatten(then_result), flatten(else_result)
    names = list(output_names) if output_names else [f"output {i}" for i in range(len(then_flat))]
    if len(then_flat) != len(else_flat):
        raise ValueError(f"true_fn and false_fn must return the same structure; true_fn returned "
                         f"{len(then_flat)} values and false_fn {len(else_flat)}")
    with then_graph.as_default():
        then_t = _as_tensors(then_flat, else_flat)
    with else_graph.as_default():
        else_t = _as_tensors(else_flat, then_t)
    out_specs = []
    for i, (a, b) in enumerate(zip(then_t, else_t)):
        if a._dtype is not b._dtype:
            raise TypeError(f"{names[i]} has dtype {a._dtype.name} in the true branch but {b._dtype.name} "
                            "in the false branch; both branches must produce the same dtype (use jf.cast)")
        out_specs.append(_Spec(relax(a._dims, b._dims) if a._dims != b._dims else a._dims, a._dtype))
    then_sub = SubGraph(then_graph, [], _own(then_graph, then_t))
    else_sub = SubGraph(else_graph, [], _own(else_graph, else_t))
    outs = apply("If", [pred] + then_sub.captured_values + else_sub.captured_values,
                 {"then_branch": then_sub, "else_branch": else_sub, "n_then": len(then_sub.captured_values),
                  "_out_specs": out_specs, "Tout": tuple(s._dtype for s in out_specs)}, name=name or "cond")
    return pack(then_result, outs)


class _Spec:
    __slots__ = ("_dims", "_dtype")

    def __init__(self, dims: Any, dtype: _dt.DType) -> None:
        self._dims = dims
        self._dtype = dtype


def _own(graph: Graph, tensors: List[Tensor]) -> List[SymbolicTensor]:
    """Outputs of `graph`: tensors from elsewhere pass through an Identity node."""
    out = []
    with graph.as_default():
        for t in tensors:
            if not (isinstance(t, SymbolicTensor) and t.node.graph is graph):
                t = identity(t)
            out.append(t)
    return out


# -- while_loop -------------------------------------------------------------------------------
def _while_infer(specs, attrs):
    return [(t._dims, t._dtype) for t in attrs["_out_specs"]]


def _while_kernel(*args, cond, body, n_vars, n_cond, maximum_iterations, **_export_attrs):
    values = args[:n_vars]
    cond_caps = args[n_vars:n_vars + n_cond]
    body_caps = args[n_vars + n_cond:]
    run_cond, run_body = cond.plan, body.plan
    i = 0
    while (maximum_iterations is None or i < maximum_iterations) and run_cond(*values, *cond_caps)[0]:
        values = run_body(*values, *body_caps)
        i += 1
    return values[0] if n_vars == 1 else tuple(values)


register("While", _while_infer, cpu=_while_kernel, public_name="while_loop", default_name="while",
         stateful=True)


def while_loop(cond: Callable, body: Callable, loop_vars: Any, shape_invariants: Any = None,
               maximum_iterations: Optional[int] = None, name: Optional[str] = None,
               _names: Optional[Sequence[str]] = None) -> Any:
    """Repeat `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`; a graph loop when traced.

    Each loop variable keeps its dtype and shape across iterations; a shape that changes
    needs `shape_invariants` (or `Tensor.set_shape` in the body), as in TF.

    >>> jf.while_loop(lambda i: i < 5, lambda i: (i + 2,), [jf.constant(0)])
    [<jf.Tensor: shape=(), dtype=int32, numpy=6>]
    """
    if not callable(cond) or not callable(body):
        raise TypeError("cond and body: jf.while_loop needs two callables")
    single = not isinstance(loop_vars, (list, tuple))
    structure = [loop_vars] if single else loop_vars
    graph = context.current_graph()
    if graph is None:
        return _python_while(cond, body, structure, single, maximum_iterations)
    if any(c._needs_probe() for c in _composites(structure)):
        structure = _complete_composites(body, structure, single)
    flat = flatten(structure)
    names = list(_names) if _names else [f"loop_vars[{i}]" for i in range(len(flat))]
    tensors = _as_tensors(flat)
    invariants = flatten(shape_invariants) if shape_invariants is not None else _default_invariants(structure)
    if single and shape_invariants is not None:
        invariants = [shape_invariants]
    specs = []
    for t, inv in zip(tensors, invariants):
        dims = t._dims if inv is None else normalize(inv)
        if inv is not None and not is_compatible(dims, t._dims):
            raise ValueError(f"shape_invariants: {format_dims(dims)} is not compatible with the "
                             f"initial shape {format_dims(t._dims)}")
        specs.append((dims, t._dtype))

    def call_with(fn: Callable, placeholders: Sequence[SymbolicTensor]) -> Any:
        args = pack(structure, list(placeholders))
        return fn(*args)

    cond_graph, cond_ph, cond_result = trace_subgraph(lambda *ph: call_with(cond, ph), specs, "cond", None)
    with cond_graph.as_default():
        pred = convert_to_tensor(cond_result)
    if pred._dtype is not _dt.bool_:
        raise TypeError(f"cond: the loop condition must return a bool tensor; got dtype {pred._dtype.name}")
    body_graph, body_ph, body_result = trace_subgraph(lambda *ph: call_with(body, ph), specs, "body", None)
    body_flat = flatten([body_result] if single else body_result)
    if len(body_flat) != len(flat):
        raise ValueError(f"body: returned {len(body_flat)} values but the loop has {len(flat)} loop variables")
    with body_graph.as_default():
        body_t = _as_tensors(body_flat, tensors)
    for i, (out, (dims, dtype)) in enumerate(zip(body_t, specs)):
        if out._dtype is not dtype:
            raise TypeError(f"{names[i]} has dtype {dtype.name} before the loop but {out._dtype.name} after "
                            "one iteration; a loop variable must keep its dtype (use jf.cast)")
        out_dims = out._dims
        if not is_compatible(dims, out_dims) or (dims is not None and out_dims is None) or (
                dims is not None and out_dims is not None
                and any(d is not None and o is None for d, o in zip(dims, out_dims))):
            raise ValueError(
                f"{names[i]} has shape {format_dims(dims)} before the loop but {format_dims(out._dims)} "
                "after one iteration. A loop variable must keep its shape: call .set_shape(...) on it "
                "in the loop body, or pass shape_invariants to relax the shape (None for dimensions "
                "that change).")
    cond_sub = SubGraph(cond_graph, cond_ph, _own(cond_graph, [pred]))
    body_sub = SubGraph(body_graph, body_ph, _own(body_graph, body_t))
    out_specs = [_Spec(dims, dtype) for dims, dtype in specs]
    outs = apply("While", tensors + cond_sub.captured_values + body_sub.captured_values,
                 {"cond": cond_sub, "body": body_sub, "n_vars": len(tensors),
                  "n_cond": len(cond_sub.captured_values), "maximum_iterations": maximum_iterations,
                  "_out_specs": out_specs, "T": tuple(s._dtype for s in out_specs)},
                 name=name or "while")
    packed = pack(structure, outs)
    return packed[0] if single else packed


def _composites(structure: Any) -> List[CompositeTensor]:
    if isinstance(structure, CompositeTensor):
        return [structure]
    if isinstance(structure, (list, tuple)):
        return [c for s in structure for c in _composites(s)]
    if isinstance(structure, dict):
        return [c for k in sorted(structure, key=repr) for c in _composites(structure[k])]
    return []


def _default_invariants(structure: Any) -> List[Any]:
    if isinstance(structure, CompositeTensor):
        return list(structure._component_invariants())
    if isinstance(structure, (list, tuple)):
        return [inv for s in structure for inv in _default_invariants(s)]
    if isinstance(structure, dict):
        return [inv for k in sorted(structure, key=repr) for inv in _default_invariants(structure[k])]
    return [None]


def _complete_composites(body: Callable, structure: List[Any], single: bool) -> List[Any]:
    """Trace `body` once into a throwaway graph to learn what incomplete composites become."""
    _, _, result = trace_subgraph(lambda: body(*structure), [], "probe")
    result = [result] if single else list(result)

    def complete(before: Any, after: Any) -> Any:
        if isinstance(before, CompositeTensor):
            return before._complete(after) if before._needs_probe() else before
        if isinstance(before, (list, tuple)) and isinstance(after, (list, tuple)):
            items = [complete(b, a) for b, a in zip(before, after)]
            return items if isinstance(before, list) else tuple(items)
        if isinstance(before, dict) and isinstance(after, dict):
            return {k: complete(v, after.get(k)) for k, v in before.items()}
        return before
    if len(result) != len(structure):
        raise ValueError(f"body: returned {len(result)} values but the loop has {len(structure)} loop variables")
    return [complete(b, a) for b, a in zip(structure, result)]


def _python_while(cond: Callable, body: Callable, structure: List[Any], single: bool,
                  maximum_iterations: Optional[int]) -> Any:
    values = list(structure)
    i = 0
    while maximum_iterations is None or i < maximum_iterations:
        if not bool(cond(*values)):
            break
        result = body(*values)
        values = [result] if single else list(result)
        if len(values) != len(structure):
            raise ValueError(f"body: returned {len(values)} values but the loop has {len(structure)}")
        i += 1
    if single:
        return values[0]
    return tuple(values) if isinstance(structure, tuple) else values


__all__ = ["cond", "while_loop", "CompositeTensor", "SubGraph", "trace_subgraph"]
