"""The compiled tier: runs of numba-compilable nodes become one `njit` function each.

A concrete function starts on the per-op interpreter (`executor.Plan`). After it has
been called `COMPILE_AFTER_CALLS` times (or at once with `jit_compile=True`) its graph
is partitioned into *segments*: maximal runs of nodes whose op has a lowering below
and whose shapes are fully known. Each segment becomes one generated function of
numpy expressions compiled with `numba.njit` — numba fuses chains of elementwise
expressions into single loops, matmul goes to BLAS through `np.dot`. Nodes that numba
cannot run (variables, strings, print, py_function, control flow, summaries) stay
Python steps between segments, so results never depend on the tier.

Generated sources are files in the cache directory (`JITFLOW_CACHE_DIR`, default
`~/.cache/jitflow`), named by a hash of the source and the numba/jitflow versions, and
compiled with `cache=True`: a new process that traces the same function loads machine
code instead of compiling. A broken cache entry is deleted and rebuilt.

Profiling always uses the interpreter's timed plan (per-op timings need per-op
boundaries); the tracer documents this.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .executor import Plan, _needed_nodes
from .graph import Graph, Node
from .tensor import SymbolicTensor

COMPILE_AFTER_CALLS = 3
DEFAULT_POLICY = os.environ.get("JITFLOW_TIER", "auto")  # "auto", "interpreter" or "compiled"
VERSION = "2"
_lock = threading.Lock()


class CompileError(Exception):
    """A graph (or one of its ops) could not be compiled; carries the node."""

    def __init__(self, message: str, node: Optional[Node] = None) -> None:
        super().__init__(message)
        self.node = node


def cache_dir() -> str:
    return os.environ.get("JITFLOW_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "jitflow")


# -- lowering rules: op -> (node, argument expressions) -> numpy expression ----------------
def _np(dtype: Any) -> str:
    return f"np.{dtype.as_numpy_dtype.name}"


def _infix(symbol: str) -> Callable:
    return lambda node, a: f"({a[0]} {symbol} {a[1]})"


def _call(fn: str) -> Callable:
    return lambda node, a: f"{fn}({', '.join(a)})"


def _reduce(kind: str) -> Callable:
    """Reductions call the interpreter's 2-D kernels (same accumulation, same result)."""
    def lower(node: Node, a: List[str]) -> str:
        x = node.inputs[0]
        integer = x._dtype.is_integer
        rank = len(x._dims)
        axis = node.attrs["axis"]
        base = "sum" if kind == "mean" else kind
        if axis is None or len(axis) == rank:
            expr = f"_K.{'i' if integer and base in ('sum', 'prod') else ''}{base}_all({a[0]})"
            count = int(np.prod(x._dims, dtype=np.int64))
        else:
            expr = f"_K.{'i' if integer else ''}{base}_axis({a[0]}, {axis[0]})"
            count = x._dims[axis[0]]
        if kind == "mean":
            expr = (f"{_np(x._dtype)}(np.trunc({expr} / {max(count, 1)}))" if integer and not node.outputs[0]._dims
                    else f"({expr} / {_np(x._dtype)}({count}))")
        dims = tuple(node.outputs[0]._dims)
        if dims and (axis is None or len(axis) == rank):
            expr = f"np.full({dims}, {expr})"  # keepdims of a full reduction: a scalar in every slot
        elif dims:
            expr = f"np.reshape({expr}, {dims})"
        return expr
    return lower


def _reshape(node: Node, a: List[str]) -> str:
    dims = tuple(node.outputs[0]._dims)
    if not dims:
        return f"{a[0]}.reshape(1)[0]" if node.inputs[0]._dims else a[0]
    return f"np.ascontiguousarray({a[0]}).reshape({dims})"


def _matmul(node: Node, a: List[str]) -> str:
    x = f"np.ascontiguousarray({a[0]}.T)" if node.attrs["transpose_a"] else a[0]
    y = f"np.ascontiguousarray({a[1]}.T)" if node.attrs["transpose_b"] else a[1]
    return f"np.dot({x}, {y})"


def _cast(node: Node, a: List[str]) -> str:
    dt = node.attrs["DstT"]
    if not node.outputs[0]._dims:
        return f"{_np(dt)}({a[0]})"
    return f"{a[0]}.astype({_np(dt)})"


LOWERINGS: Dict[str, Callable[[Node, List[str]], str]] = {
    "AddV2": _infix("+"), "Sub": _infix("-"), "Mul": _infix("*"), "RealDiv": _infix("/"),
    "Maximum": _call("np.maximum"), "Minimum": _call("np.minimum"), "Pow": _call("_K.power"),
    "Equal": _infix("=="), "NotEqual": _infix("!="), "Less": _infix("<"), "LessEqual": _infix("<="),
    "Greater": _infix(">"), "GreaterEqual": _infix(">="),
    "LogicalAnd": _call("np.logical_and"), "LogicalOr": _call("np.logical_or"),
    "LogicalNot": _call("np.logical_not"), "Neg": lambda n, a: f"(-{a[0]})", "Abs": _call("np.abs"),
    "Exp": _call("_K.exp"), "Log": _call("_K.log"), "Sqrt": _call("_K.sqrt"),
    "Square": lambda n, a: f"({a[0]} * {a[0]})", "Tanh": _call("_K.tanh"),
    "Sigmoid": _call("_K.sigmoid"), "Sin": _call("_K.sin"), "Cos": _call("_K.cos"), "Relu": _call("_K.relu"),
    "Sum": _reduce("sum"), "Mean": _reduce("mean"), "Prod": _reduce("prod"),
    "Max": _reduce("max"), "Min": _reduce("min"),
    "MatMul": _matmul, "Reshape": _reshape, "ExpandDims": _reshape, "Squeeze": _reshape,
    "Identity": lambda n, a: a[0], "StopGradient": lambda n, a: a[0], "Cast": _cast,
    "Softmax": lambda n, a: f"_K.softmax({a[0]})", "LogSoftmax": lambda n, a: f"_K.log_softmax({a[0]})",
}
_INT_WRAP = {"AddV2", "Sub", "Mul", "Maximum", "Minimum", "Neg", "Abs", "Square"}
_COMPILABLE_DTYPES = {"float32", "float64", "int32", "int64", "bool"}


def compilable(node: Node) -> Optional[str]:
    """None if `node` can be lowered, else the reason it cannot."""
    op = node.op.tf_op
    if op == "Const":
        value = node.attrs["value"]
        return None if value.dtype.name in _COMPILABLE_DTYPES else "constant of dtype " + value.dtype.name
    if op not in LOWERINGS:
        return f"op {op} has no lowering"
    for t in list(node.inputs) + list(node.outputs):
        if t._dims is None or any(d is None for d in t._dims):
            return f"{t.name} has a partially unknown shape"
        if t._dtype.name not in _COMPILABLE_DTYPES:
            return f"{t.name} has dtype {t._dtype.name}"
    if op in ("Max", "Min") and node.attrs["axis"] is not None and len(node.attrs["axis"]) != len(node.inputs[0]._dims):
        return "max/min over some axes"
    if op in ("Sum", "Mean", "Prod", "Max", "Min"):
        partial = node.attrs["axis"] is not None and len(node.attrs["axis"]) != len(node.inputs[0]._dims)
        if partial and (op not in ("Sum", "Mean") or len(node.inputs[0]._dims) != 2):
            return f"{op} over some axes of a rank-{len(node.inputs[0]._dims)} tensor"
        if not node.inputs[0]._dims:
            return "reduction of a scalar"
    if op == "MatMul" and not node.inputs[0]._dtype.is_floating:
        return "integer matmul"
    if op in ("Softmax", "LogSoftmax") and (len(node.inputs[0]._dims) != 2 or node.attrs["axis"] not in (-1, 1)):
        return "softmax that is not over the last axis of a matrix"
    return None


# -- segments ----------------------------------------------------------------------------
class Segment:
    """A run of compilable nodes: external inputs in, tensors used outside out."""

    def __init__(self, index: int, nodes: List[Node]) -> None:
        self.index = index
        self.nodes = nodes
        self.inputs: List[SymbolicTensor] = []
        self.outputs: List[SymbolicTensor] = []
        self.consts: List[Node] = []
        self.fn: Any = None

    @property
    def name(self) -> str:
        return f"segment_{self.index}"


def _key(t: SymbolicTensor) -> Tuple[int, int]:
    return (id(t.node), t.index)


def partition(nodes: List[Node], outputs: Sequence[SymbolicTensor]) -> List[Any]:
    """The plan's steps: Nodes (Python) and Segments (compiled), in execution order."""
    steps: List[Any] = []
    current: List[Node] = []
    for node in nodes:
        if node.op.tf_op != "Placeholder" and compilable(node) is None:
            current.append(node)
            continue
        if current:
            steps.append(current)
            current = []
        steps.append(node)
    if current:
        steps.append(current)
    used_after: Dict[Tuple[int, int], bool] = {_key(t): True for t in outputs}
    result: List[Any] = []
    for i, step in enumerate(steps):
        if isinstance(step, list):
            if all(n.op.tf_op in ("Const", "Identity", "StopGradient") for n in step):
                result.extend(step)  # nothing to compute: leave to the interpreter
                continue
            result.append(Segment(len([s for s in result if isinstance(s, Segment)]), step))
        else:
            result.append(step)
    # Wire inputs/outputs: a tensor crosses a boundary when producer and consumer differ.
    owner: Dict[int, Segment] = {}
    for step in result:
        if isinstance(step, Segment):
            for n in step.nodes:
                owner[id(n)] = step
    consumers: Dict[Tuple[int, int], List[Any]] = {}
    for step in result:
        for n in (step.nodes if isinstance(step, Segment) else [step]):
            for t in n.inputs:
                consumers.setdefault(_key(t), []).append(owner.get(id(n), n))
    for step in result:
        if not isinstance(step, Segment):
            continue
        seen = set()
        for n in step.nodes:
            if n.op.tf_op == "Const" and n.attrs["value"].size > 1:
                step.consts.append(n)
            for t in n.inputs:
                if owner.get(id(t.node)) is not step and _key(t) not in seen:
                    seen.add(_key(t))
                    step.inputs.append(t)
            for t in n.outputs:
                users = consumers.get(_key(t), [])
                if used_after.get(_key(t)) or any(u is not step for u in users):
                    step.outputs.append(t)
    return result


def _literal(value: np.ndarray) -> str:
    item = value.reshape(()).item() if value.size == 1 else None
    name = value.dtype.name
    if name == "bool":
        return "True" if item else "False"
    return f"np.{name}({item!r})"


def segment_source(seg: Segment) -> str:
    names: Dict[Tuple[int, int], str] = {}
    params = []
    for i, t in enumerate(seg.inputs):
        names[_key(t)] = f"a{i}"
        params.append(f"a{i}")
    for j, n in enumerate(seg.consts):
        names[(id(n), 0)] = f"c{j}"
        params.append(f"c{j}")
    lines = [f"@njit(cache=True, nogil=True)", f"def {seg.name}({', '.join(params)}):"]
    for k, node in enumerate(seg.nodes):
        op = node.op.tf_op
        if op == "Const":
            if (id(node), 0) not in names:
                value = node.attrs["value"]
                names[(id(node), 0)] = _literal(value)
            continue
        args = [names[_key(t)] for t in node.inputs]
        expr = LOWERINGS[op](node, args)
        out = node.outputs[0]
        if out._dtype.is_integer and op in _INT_WRAP:
            expr = (f"{_np(out._dtype)}({expr})" if not out._dims else f"({expr}).astype({_np(out._dtype)})")
        var = f"v{k}"
        lines.append(f"    {var} = {expr}  # {node.name}")
        names[(id(node), 0)] = var
    outs = [names[_key(t)] for t in seg.outputs]
    lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    return "\n".join(lines) + "\n"


_HEADER = '''"""Generated by jitflow.runtime.compiler; safe to delete (it is rebuilt on demand)."""
import numpy as np
from numba import njit

from jitflow.runtime import compiler_kernels as _K

'''


def _module_for(source: str) -> Any:
    import numba
    digest = hashlib.sha256(f"{VERSION}|{numba.__version__}|{source}".encode()).hexdigest()[:20]
    directory = cache_dir()
    path = os.path.join(directory, f"jf_{digest}.py")
    name = f"jitflow_compiled_{digest}"
    for attempt in range(2):
        try:
            os.makedirs(directory, exist_ok=True)
            if not os.path.exists(path) or open(path, encoding="utf-8").read() != source:
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w", encoding="utf-8") as f:
                    f.write(source)
                os.replace(tmp, path)
            if name in sys.modules:
                return sys.modules[name]
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # numba's cache looks the module up by name
            spec.loader.exec_module(module)
            return module
        except Exception:  # a corrupt entry: discard it and rebuild once
            sys.modules.pop(name, None)
            _discard(path)
            if attempt:
                raise
    raise AssertionError("unreachable")


def _discard(path: str, keep_source: bool = False) -> None:
    if not keep_source:
        try:
            os.remove(path)
        except OSError:
            pass
    cache = os.path.join(os.path.dirname(path), "__pycache__")
    stem = os.path.splitext(os.path.basename(path))[0]
    if os.path.isdir(cache):
        for entry in os.listdir(cache):
            if entry.startswith(stem):
                try:
                    os.remove(os.path.join(cache, entry))
                except OSError:
                    pass


def _numba_signature(seg: Segment) -> tuple:
    import numba
    types = []
    for t in seg.inputs:
        dt = numba.from_dtype(t._dtype.as_numpy_dtype)
        types.append(dt if not t._dims else numba.types.Array(dt, len(t._dims), "C"))
    for n in seg.consts:
        value = n.attrs["value"]
        types.append(numba.types.Array(numba.from_dtype(value.dtype), value.ndim, "C"))
    return tuple(types)


class CompiledPlan(Plan):
    """A Plan whose compilable runs of nodes are numba functions (see module docstring)."""

    def __init__(self, graph: Graph, feeds: Sequence[SymbolicTensor], outputs: Sequence[SymbolicTensor]) -> None:
        start = time.perf_counter()
        nodes = _needed_nodes(graph, outputs)
        self.steps = partition(nodes, outputs)
        segments = [s for s in self.steps if isinstance(s, Segment)]
        if not segments:
            raise CompileError("no node of this graph can be compiled")
        source = _HEADER + "\n\n".join(segment_source(s) for s in segments)
        self.module_source = source
        with _lock:
            module = _module_for(source)
            for seg in segments:
                seg.fn = getattr(module, seg.name)
                sig = _numba_signature(seg)
                try:
                    seg.fn.compile(sig)
                except Exception:
                    # Most likely a stale or corrupt cached object: drop numba's cache files
                    # for this module and compile from source once more.
                    _discard(module.__file__, keep_source=True)
                    try:
                        seg.fn.compile(sig)
                    except Exception as e:
                        raise CompileError(f"numba could not compile {seg.name} (nodes "
                                           f"{', '.join(n.name for n in seg.nodes[:4])}...): {e}",
                                           seg.nodes[0]) from e
        self.compile_seconds = time.perf_counter() - start
        self.segments = segments
        super().__init__(graph, feeds, outputs)

    def _generate(self, timed: bool):
        if timed:  # per-op timings come from the interpreter
            return super()._generate(timed)
        env: Dict[str, Any] = {}
        expr: Dict[Tuple[int, int], str] = {}
        params = []
        for i, t in enumerate(self.feeds):
            expr[_key(t)] = f"f{i}"
            params.append(f"f{i}")
        lines = [f"def run({', '.join(params)}):"]
        line_nodes: Dict[int, Node] = {}
        from .ops.registry import bind_kernel
        for j, step in enumerate(self.steps):
            if isinstance(step, Segment):
                env[f"s{j}"] = step.fn
                args = []
                for t in step.inputs:
                    a = expr[_key(t)]
                    args.append(f"_scalar({a})" if not t._dims else f"_array({a})")
                for n in step.consts:
                    env[f"k{j}_{id(n)}"] = np.ascontiguousarray(n.attrs["value"])
                    args.append(f"k{j}_{id(n)}")
                outs = [f"v{j}_{k}" for k in range(len(step.outputs))]
                for t, name in zip(step.outputs, outs):
                    expr[_key(t)] = name
                line_nodes[len(lines) + 1] = step.nodes[0]
                lines.append(f"    {', '.join(outs)}, = s{j}({', '.join(args)})  # {step.name}")
                continue
            node = step
            op = node.op.tf_op
            if op == "Placeholder":
                continue
            if op == "Const":
                env[f"c{j}"] = node.attrs["value"]
                expr[(id(node), 0)] = f"c{j}"
                continue
            args = [expr[_key(t)] for t in node.inputs]
            if op in ("Identity", "StopGradient"):
                expr[(id(node), 0)] = args[0]
                continue
            env[f"k{j}"] = bind_kernel(node.op, self.backend, node.attrs, [t._dtype for t in node.inputs])
            outs = [f"v{j}_{k}" for k in range(len(node.outputs))]
            for k, name in enumerate(outs):
                expr[(id(node), k)] = name
            target = "" if not outs else f"{outs[0]} = " if len(outs) == 1 else f"{', '.join(outs)}, = "
            line_nodes[len(lines) + 1] = node
            lines.append(f"    {target}k{j}({', '.join(args)})  # {node.name}")
        results = [expr[_key(t)] for t in self.outputs]
        lines.append(f"    return ({', '.join(results)}{',' if results else ''})")
        env["_scalar"] = _scalar
        env["_array"] = np.ascontiguousarray
        return "\n".join(lines) + "\n", env, line_nodes


def _scalar(value: Any) -> Any:
    return value[()] if isinstance(value, np.ndarray) else value


def compile_plan(graph: Graph, feeds: Sequence[SymbolicTensor], outputs: Sequence[SymbolicTensor]) -> CompiledPlan:
    return CompiledPlan(graph, feeds, outputs)

