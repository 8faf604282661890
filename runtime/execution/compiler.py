"""The compiled tier: runs of numba-compilable nodes become one `njit` function each.

A concrete function starts on the per-op interpreter (`executor.Plan`). After it has
been called `COMPILE_AFTER_CALLS` times (or at once with `jit_compile=True`) its graph
is compiled:

* `static_values`: constants, sizes and shapes of known shapes, and pure ops of those
  are computed once (by the interpreter's own kernels) and become literals;
* `schedule`: the other nodes are ordered into Python steps (ops numba cannot run:
  variables, strings, print, py_function, control flow, summaries — they keep their
  relative order, so side effects keep program order) and groups of compilable nodes,
  each placed as early as its inputs allow. A Python step splits a group only if the
  group needs its result;
* each group becomes a *segment*, one generated `njit` function (`compiler_codegen`):
  elementwise chains fused into single loops that call the interpreter's scalar
  functions, full reductions fused into them with the interpreter's accumulation
  order, matmul through BLAS as the interpreter does it. Results are bit-identical to
  the interpreter's, so they never depend on which tier ran;
* `_Glue` writes the plan's Python function: Python steps as in the interpreter and one
  call per segment (whose dispatcher is frozen to the one signature it was compiled for).

Generated sources are files in the cache directory (`JITFLOW_CACHE_DIR`, default
`~/.cache/jitflow`), named by a hash of the source, the numba/jitflow versions and the
kernel sources, and compiled with `cache=True`: a new process that traces the same
function loads machine code instead of compiling. A broken cache entry is deleted and
rebuilt.

While tracing, the compiled plan runs a timed variant of its glue: one clock reading
around each segment call and each Python step. A segment is then one timed event that
names the ops it fused (`Segment.fused`); the tracer attributes its time to those ops
(see `jitflow.tracer.attribution`). Exact per-op timing is the interpreter's timed plan,
used when `instrument.exact_ops` is set.
"""
from __future__ import annotations

import atexit
import hashlib
import heapq
import importlib.util
import os
import shutil
import sys
import threading
import tempfile
import time
import warnings
from collections import deque
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.execution.codegen import LOWERINGS, segment_source
from jitflow.runtime.execution.executor import CompileError, Plan, _needed_nodes  # noqa: F401 - CompileError re-exported
from jitflow.runtime.core import lazyjit
from jitflow.runtime.core.graph import Graph, Node
from jitflow.runtime.core.shapes import known_dims
from jitflow.runtime.core.tensor import SymbolicTensor
from jitflow.runtime.ops.registry import bind_kernel
from jitflow.runtime.core import numba_cache

COMPILE_AFTER_CALLS = 3
DEFAULT_POLICY = os.environ.get("JITFLOW_TIER", "auto")  # "auto", "interpreter" or "compiled"
VERSION = "3"
_lock = threading.Lock()


_private_dir: Optional[str] = None


def cache_dir() -> str:
    """Where compiled segments live: JITFLOW_CACHE_DIR, else ~/.cache/jitflow; where that cannot
    be written (no writable home), a private temporary directory for this process, with one
    warning (the segments then compile again in the next process)."""
    global _private_dir
    wanted = os.environ.get("JITFLOW_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "jitflow")
    if _private_dir is not None and not os.environ.get("JITFLOW_CACHE_DIR"):
        return _private_dir
    try:
        os.makedirs(wanted, exist_ok=True)
        if os.access(wanted, os.W_OK | os.X_OK):
            return wanted
    except OSError:
        pass
    with _lock:
        if _private_dir is None:
            _private_dir = tempfile.mkdtemp(prefix="jitflow-cache-")
            atexit.register(shutil.rmtree, _private_dir, True)
            warnings.warn(f"cannot write the compiled-function cache {wanted!r}; using {_private_dir!r} "
                          "for this process only (set JITFLOW_CACHE_DIR to a writable directory)",
                          numba_cache.NumbaCacheWarning, stacklevel=2)
    return _private_dir


# -- what can be compiled ------------------------------------------------------------------------
_COMPILABLE_DTYPES = {"float32", "float64", "int32", "int64", "bool", "complex64", "complex128"}
_ALIASES = ("Identity", "StopGradient")
# Pure ops evaluated once, when the plan is built, if all their inputs are static (the
# interpreter's own kernel computes the value, so it is the value the interpreter gets).
_FOLDABLE = {"Range", "Fill", "Cast", "Reshape", "ExpandDims", "Squeeze", "Identity", "AddV2", "Sub", "Mul",
             "RealDiv", "Maximum", "Minimum", "Neg", "FloorDiv"}


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
    x_dims = known_dims(node.inputs[0]._dims) if node.inputs else ()  # known: checked just above
    if op in ("Max", "Min") and node.attrs["axis"] is not None and len(node.attrs["axis"]) != len(x_dims):
        return "max/min over some axes"
    if op in ("Sum", "Mean", "Prod", "Max", "Min"):
        partial = node.attrs["axis"] is not None and len(node.attrs["axis"]) != len(x_dims)
        if partial and (op not in ("Sum", "Mean") or len(x_dims) != 2):
            return f"{op} over some axes of a rank-{len(x_dims)} tensor"
        if not x_dims:
            return "reduction of a scalar"
    if op in ("FloorDiv", "FloorMod") and node.inputs[1]._dtype.is_integer:
        return "integer floordiv/mod (the interpreter's kernel checks for division by zero)"
    if op == "MatMul" and not (node.inputs[0]._dtype.is_floating or node.inputs[0]._dtype.is_complex):
        return "integer matmul"
    if op == "Cast" and node.inputs[0]._dtype.is_complex and not node.attrs["DstT"].is_complex:
        return "cast from complex to real (the interpreter's numpy cast drops the imaginary part)"
    if op in ("Softmax", "LogSoftmax") and (len(x_dims) != 2 or node.attrs["axis"] not in (-1, 1)):
        return "softmax that is not over the last axis of a matrix"
    return None


def static_values(nodes: Sequence[Node]) -> Dict[int, np.ndarray]:
    """Values known when the plan is built: constants, sizes/shapes of known shapes, and
    pure ops of those (id(node) -> value). Compiled code uses them as literals."""
    static: Dict[int, np.ndarray] = {}
    for node in nodes:
        op = node.op.tf_op
        out = node.outputs[0] if len(node.outputs) == 1 else None
        if out is None or out._dtype.name not in _COMPILABLE_DTYPES:
            continue
        dims = node.inputs[0]._dims if node.inputs else None
        known = dims is not None and all(d is not None for d in dims)
        value = None
        if op == "Const":
            value = node.attrs["value"]
        elif op == "Size" and known and dims is not None:
            value = np.array(int(np.prod(known_dims(dims), dtype=np.int64)), out._dtype.as_numpy_dtype)
        elif op == "Shape" and known:
            value = np.array(dims, out._dtype.as_numpy_dtype)
        elif op in _FOLDABLE and node.inputs and all(id(t.node) in static for t in node.inputs):
            try:
                kernel = bind_kernel(node.op, "cpu", node.attrs, [t._dtype for t in node.inputs])
                value = kernel(*[static[id(t.node)] for t in node.inputs])
            except Exception:  # leave it to run (and raise) at call time
                value = None
        if value is not None:
            value = np.asarray(value)
            if value.dtype == out._dtype.as_numpy_dtype and value.shape == tuple(out._dims or ()):
                static[id(node)] = value
    return static


# -- segments ----------------------------------------------------------------------------
class _FusionOp:
    tf_op = "Fusion"
    public_name = "fusion"


_FUSION_OP = _FusionOp()


class Segment:
    """A run of compilable nodes: external inputs in, tensors used outside out."""

    def __init__(self, index: int, nodes: List[Node]) -> None:
        self.index = index
        self.nodes = nodes
        self.inputs: List[SymbolicTensor] = []
        self.outputs: List[SymbolicTensor] = []
        self.consts: List[Node] = []       # array constants, passed as arguments
        self.parallel = False
        self.allocations: List[Tuple[Tuple[int, ...], Any]] = []  # output arrays the caller makes
        self.fn: Any = None
        self.loaded = False                # machine code came from numba's disk cache

    @property
    def name(self) -> str:
        return f"segment_{self.index}"

    # What a timed run's record needs of its "node" (see executor.Plan.run_timed): a
    # segment is recorded as one event that names the nodes it fused.
    op = _FUSION_OP
    device = None

    @property
    def fused(self) -> List[Node]:
        return self.nodes


def _key(t: SymbolicTensor) -> Tuple[int, int]:
    return (id(t.node), t.index)


def schedule(nodes: List[Node], static: Dict[int, np.ndarray]) -> List[Any]:
    """Execution order: Python nodes and lists of compilable ones (future segments).

    Python nodes keep their relative order (so stateful ones keep program order), and
    each starts as soon as its inputs exist. Compilable nodes are pure: each joins the
    current group as soon as its inputs exist, so a Python node in the middle of a chain
    (a variable read, a print) no longer splits it unless the chain needs its result.
    Constants and static values are not scheduled: they are known up front.
    """
    order = {id(n): i for i, n in enumerate(nodes)}
    missing: Dict[int, int] = {}
    users: Dict[int, List[Node]] = {}
    for n in nodes:
        deps = {id(t.node) for t in n.inputs if id(t.node) in order and id(t.node) not in static}
        deps |= {id(c) for c in n.control_inputs if id(c) in order and id(c) not in static}
        missing[id(n)] = len(deps)
        for d in deps:
            users.setdefault(d, []).append(n)
    python = deque(n for n in nodes if id(n) not in static and compilable(n) is not None)
    ready = [(order[id(n)], n) for n in nodes
             if id(n) not in static and compilable(n) is None and missing[id(n)] == 0]
    heapq.heapify(ready)

    def finish(node: Node) -> None:
        for u in users.get(id(node), []):
            missing[id(u)] -= 1
            if missing[id(u)] == 0 and compilable(u) is None:
                heapq.heappush(ready, (order[id(u)], u))
    steps: List[Any] = []
    group: List[Node] = []
    while True:
        while ready:
            _, n = heapq.heappop(ready)
            group.append(n)
            finish(n)
        if not python:
            break
        if missing[id(python[0])]:
            raise CompileError(f"cannot schedule {python[0].name}: its inputs never become ready", python[0])
        if group:
            steps.append(group)
            group = []
        while python and not missing[id(python[0])]:
            n = python.popleft()
            steps.append(n)
            finish(n)
    if group:
        steps.append(group)
    return steps


def partition(nodes: List[Node], outputs: Sequence[SymbolicTensor],
              static: Optional[Dict[int, np.ndarray]] = None) -> List[Any]:
    """The plan's steps: Nodes (Python) and Segments (compiled), in execution order."""
    static = static_values(nodes) if static is None else static
    result: List[Any] = [n for n in nodes if id(n) in static]  # constants: bound, never run
    count = 0
    for step in schedule(nodes, static):
        if isinstance(step, list) and not all(n.op.tf_op in _ALIASES for n in step):
            result.append(Segment(count, step))
            count += 1
        elif isinstance(step, list):
            result.extend(step)  # nothing to compute: leave to the interpreter
        else:
            result.append(step)
    _wire(result, outputs, static)
    return result


def _wire(steps: List[Any], outputs: Sequence[SymbolicTensor], static: Dict[int, np.ndarray]) -> None:
    """Each segment's inputs, array constants and outputs (tensors used outside it)."""
    owner: Dict[int, Segment] = {id(n): s for s in steps if isinstance(s, Segment) for n in s.nodes}
    used_outside: set = {_key(t) for t in outputs}
    for step in steps:
        if not isinstance(step, Segment) and id(step) in static:
            continue  # computed once at build time: it reads nothing when the plan runs
        for n in (step.nodes if isinstance(step, Segment) else [step]):
            for t in n.inputs:
                if owner.get(id(t.node)) is not owner.get(id(n)):
                    used_outside.add(_key(t))
    for seg in (s for s in steps if isinstance(s, Segment)):
        seen = set()
        for n in seg.nodes:
            for t in n.inputs:
                if _key(t) in seen or owner.get(id(t.node)) is seg:
                    continue
                seen.add(_key(t))
                value = static.get(id(t.node))
                if value is None:
                    seg.inputs.append(t)
                elif value.size != 1:
                    seg.consts.append(t.node)
            seg.outputs.extend(t for t in n.outputs if _key(t) in used_outside)


_HEADER = '''"""Generated by jitflow.runtime.execution.compiler; safe to delete (it is rebuilt on demand)."""
import numpy as np
from numba import njit, prange

from jitflow.runtime.execution import compiler_kernels as _K

'''


def _kernels_fingerprint() -> str:
    """A hash of the kernel sources that generated code calls into. numba checks only the
    generated file when it loads a cached segment, so a change to a scalar function (say,
    `tanh_`) must change the file's name, or a stale segment would disagree with the
    interpreter."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        h = hashlib.sha256()
        for module in ("jitflow.runtime.ops.cpu_kernels", "jitflow.runtime.execution.compiler_kernels",
                       "jitflow.runtime.execution.codegen"):
            spec = importlib.util.find_spec(module)
            assert spec is not None and spec.origin is not None  # jitflow's own source files
            with open(spec.origin, "rb") as f:  # read, not imported
                h.update(f.read())
        _FINGERPRINT = h.hexdigest()[:16]
    return _FINGERPRINT


_FINGERPRINT: Optional[str] = None


def _module_for(source: str) -> Any:
    numba = lazyjit.numba()
    digest = hashlib.sha256(f"{VERSION}|{numba.__version__}|{_kernels_fingerprint()}|{source}".encode()
                            ).hexdigest()[:20]
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
            assert spec is not None and spec.loader is not None  # a .py path: a source loader
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


def _numba_signature(seg: Segment, static: Dict[int, np.ndarray]) -> tuple:
    numba = lazyjit.numba()
    types = []
    for t in seg.inputs:
        dt = numba.from_dtype(t._dtype.as_numpy_dtype)
        types.append(dt if not t._dims else numba.types.Array(dt, len(t._dims), "C"))
    for n in seg.consts:
        value = static[id(n)]
        types.append(numba.types.Array(numba.from_dtype(value.dtype), value.ndim, "C"))
    for shape, dtype in seg.allocations:
        types.append(numba.types.Array(numba.from_dtype(dtype), len(shape), "C"))
    return tuple(types)


def _segment_module(segments: List[Segment], static: Dict[int, np.ndarray]) -> str:
    """The module's source. Each function is preceded by its argument types: the source of
    a float32 and a float64 graph can be the same text, and each needs its own dispatcher
    (frozen to one signature, see `_compile_segment`), hence its own module."""
    parts = []
    for seg in segments:
        source, seg.parallel, seg.allocations = segment_source(seg.name, seg.nodes, seg.inputs, seg.outputs,
                                                               static, seg.consts)
        cache = numba_cache.usable(os.path.join(cache_dir(), "segment.py"))
        flags = f'cache={cache}, nogil=True, error_model="numpy"' + (", parallel=True" if seg.parallel else "")
        types = ", ".join(str(t) for t in _numba_signature(seg, static))
        parts.append(f"# argument types: {types}\n@njit({flags})\n{source}")
    return _HEADER + "\n\n".join(parts)


def _compile_segment(seg: Segment, module: Any, static: Dict[int, np.ndarray]) -> None:
    """Compile (or load from numba's cache) the one signature the plan calls, then freeze
    the dispatcher: a Python float or int from another segment then converts to the
    declared float32/int32 instead of compiling a float64 variant."""
    seg.fn = getattr(module, seg.name)
    sig = _numba_signature(seg, static)
    if sig in seg.fn.overloads:  # another plan with this very source compiled it already
        return
    try:
        seg.fn.compile(sig)
        seg.loaded = bool(seg.fn.stats.cache_hits.get(sig))
    except Exception:
        # Most likely a stale or corrupt cached object: drop numba's cache files for this
        # module and compile from source once more.
        _discard(module.__file__, keep_source=True)
        try:
            seg.fn.compile(sig)
        except Exception as e:
            raise CompileError(f"numba could not compile {seg.name} (nodes "
                               f"{', '.join(n.name for n in seg.nodes[:4])}...): {e}", seg.nodes[0]) from e
    seg.fn.disable_compile()


class CompiledPlan(Plan):
    """A Plan whose compilable runs of nodes are numba functions (see module docstring)."""

    def __init__(self, graph: Graph, feeds: Sequence[SymbolicTensor], outputs: Sequence[SymbolicTensor]) -> None:
        start = time.perf_counter()
        nodes = _needed_nodes(graph, outputs)
        self.static = static_values(nodes)
        self.steps = partition(nodes, outputs, self.static)
        segments = [s for s in self.steps if isinstance(s, Segment)]
        if not segments:
            raise CompileError("no node of this graph can be compiled")
        self.module_source = _segment_module(segments, self.static)
        with _lock:
            module = _module_for(self.module_source)
            for seg in segments:
                _compile_segment(seg, module, self.static)
        self.compile_seconds = time.perf_counter() - start
        self.segments = segments
        self.loaded_from_cache = all(seg.loaded for seg in segments)
        super().__init__(graph, feeds, outputs)
        self._record_nodes = self.steps  # timed records index steps: Python nodes and segments
        # The timed glue now, with the compile (a few ms next to numba's seconds): the first
        # profiled call of a compiled function then costs what every later one costs.
        self._timed = self._compile(*self._generate(timed=True)[:2])

    def _generate(self, timed: bool):
        return _Glue(self, timed).generate()


class _Glue:
    """Writes the plan's Python function: Python steps as in the interpreter, segment calls.

    A segment is called with the values as they are; numba checks the argument types. If a
    Python step handed it something else (a 0-d array for a scalar, a non-contiguous or
    differently typed array), numba raises TypeError before running anything and the call
    is retried once with converted arguments (`_retry`), so the common path pays nothing.
    Scalars coming out of a segment are Python floats/ints; they are turned back into
    numpy scalars of their dtype before a Python step sees them.
    """

    def __init__(self, plan: CompiledPlan, timed: bool = False) -> None:
        self.plan = plan
        self.timed = timed  # clock readings around each step, recorded by `_rec` (executor.Plan.run_timed)
        self.env: Dict[str, Any] = {"_scalar": _scalar, "_retry": _retry, "_plock": _parallel_lock,
                                    "_asarray": np.asarray}
        self.expr: Dict[Tuple[int, int], str] = {}
        self.from_segment: set = set()       # tensors whose value is a Python scalar
        self.lines: List[str] = []
        self.line_nodes: Dict[int, Node] = {}
        self.params = []
        for i, t in enumerate(plan.feeds):
            self.expr[_key(t)] = f"f{i}"
            self.params.append(f"f{i}")

    def generate(self):
        for j, step in enumerate(self.plan.steps):
            if isinstance(step, Segment):
                self.segment(j, step)
            else:
                self.node(j, step)
        results = [self.output_value(t) for t in self.plan.outputs]
        self.lines.append(f"    return ({', '.join(results)}{',' if results else ''})")
        params = ["_rec", "_clock"] + self.params if self.timed else self.params
        source = "\n".join([f"def run({', '.join(params)}):"] + self.lines) + "\n"
        return source, self.env, self.line_nodes

    def segment(self, j: int, seg: Segment) -> None:
        self.env[f"s{j}"] = seg.fn
        args, kinds = [], []
        for t in seg.inputs:
            a = self.expr[_key(t)]
            scalar = not t._dims
            args.append(a if not scalar or _key(t) in self.from_segment else f"_scalar({a})")
            kinds.append(None if scalar else t._dtype.as_numpy_dtype)
        for n in seg.consts:
            value = np.ascontiguousarray(self.plan.static[id(n)])
            self.env[f"k{j}_{len(args)}"] = value
            args.append(f"k{j}_{len(args)}")
            kinds.append(value.dtype)
        for m, (shape, dtype) in enumerate(seg.allocations):
            self.env[f"_buffer{j}_{m}"] = _OutputBuffer(shape, dtype)
            args.append(f"_buffer{j}_{m}.take()")
            kinds.append(dtype)
        self.env[f"t{j}"] = tuple(kinds)
        outs = [f"v{j}_{k}" for k in range(len(seg.outputs))]
        for t, name in zip(seg.outputs, outs):
            self.expr[_key(t)] = name
            if not t._dims:
                self.from_segment.add(_key(t))
        target = outs[0] if len(outs) == 1 else f"{', '.join(outs)}," if outs else "_"
        indent = "    "
        if seg.parallel:  # numba's workqueue threading layer must not be entered twice at once
            self.lines.append("    with _plock:")
            indent = "        "
        if self.timed:
            self.lines.append(f"{indent}_t = _clock()")
        self.lines.append(f"{indent}try:")
        self.line_nodes[len(self.lines) + 1] = seg.nodes[0]
        self.lines.append(f"{indent}    {target} = s{j}({', '.join(args)})  # {seg.name}")
        self.lines.append(f"{indent}except TypeError:")
        self.line_nodes[len(self.lines) + 1] = seg.nodes[0]
        self.lines.append(f"{indent}    {target} = _retry(s{j}, t{j}, ({', '.join(args)}{',' if args else ''}))")
        if self.timed:
            result = outs[0] if len(outs) == 1 else f"({', '.join(outs)},)" if outs else "None"
            self.lines.append(f"{indent}_rec(({j}, _t, _clock(), {result}))")

    def node(self, j: int, node: Node) -> None:
        op = node.op.tf_op
        if op == "Placeholder":
            return
        value = self.plan.static.get(id(node))
        if value is not None or op == "Const":  # (a string constant is not static, still bound)
            self.env[f"c{j}"] = node.attrs["value"] if op == "Const" else value
            self.expr[(id(node), 0)] = f"c{j}"
            return
        args = [self.python_value(t) for t in node.inputs]
        if op in ("Identity", "StopGradient"):
            self.expr[(id(node), 0)] = args[0]
            return
        self.env[f"k{j}"] = bind_kernel(node.op, self.plan.backend, node.attrs, [t._dtype for t in node.inputs])
        outs = [f"v{j}_{k}" for k in range(len(node.outputs))]
        for k, name in enumerate(outs):
            self.expr[(id(node), k)] = name
        target = "" if not outs else f"{outs[0]} = " if len(outs) == 1 else f"{', '.join(outs)}, = "
        if self.timed:
            self.lines.append("    _t = _clock()")
        self.line_nodes[len(self.lines) + 2] = node
        self.lines.append(f"    {target}k{j}({', '.join(args)})  # {node.name}")
        if self.timed:
            result = outs[0] if len(outs) == 1 else f"({', '.join(outs)},)" if outs else "None"
            self.lines.append(f"    _rec(({j}, _t, _clock(), {result}))")

    def output_value(self, t: SymbolicTensor) -> str:
        """`t` as a plan output: a segment's scalar becomes a 0-d array, as the interpreter
        returns reductions (and `_wrap` takes an ndarray as it is)."""
        k = _key(t)
        if k not in self.from_segment:
            return self.expr[k]
        self.env[f"_dtype_{t._dtype.name}"] = np.dtype(t._dtype.as_numpy_dtype)
        return f"_asarray({self.expr[k]}, _dtype_{t._dtype.name})"

    def python_value(self, t: SymbolicTensor) -> str:
        """`t` for a Python step: a segment's scalar becomes a numpy scalar of its dtype."""
        k = _key(t)
        if k not in self.from_segment:
            return self.expr[k]
        name = f"_np_{t._dtype.name}"
        self.env[name] = np.dtype(t._dtype.as_numpy_dtype).type
        converted = f"{self.expr[k]}_np"
        self.lines.append(f"    {converted} = {name}({self.expr[k]})")
        self.expr[k] = converted
        self.from_segment.discard(k)
        return converted


_parallel_lock = threading.Lock()


class _OutputBuffer:
    """A big array that a segment writes into, handed out again once nobody else holds it.

    A fresh 64 MiB numpy array costs a page-faulting zeroing pass of its own: 12 ms
    instead of 8 ms for tanh(a*b+c) over 2**24 floats. When the array of the previous call
    is referenced only from here (the caller dropped the tensor; numba's views of it hold a
    reference too), writing into it again changes nothing anyone can see. The lock keeps
    two threads from taking the same free array.
    """

    __slots__ = ("shape", "dtype", "array", "lock")
    array: Optional[np.ndarray]

    def __init__(self, shape: Tuple[int, ...], dtype: Any) -> None:
        self.shape, self.dtype, self.array = shape, dtype, None
        self.lock = threading.Lock()

    def take(self) -> np.ndarray:
        with self.lock:
            if self.array is None or sys.getrefcount(self.array) != _UNSHARED:
                self.array = np.empty(self.shape, self.dtype)
            return self.array


def _unshared_refcount() -> int:
    """What `sys.getrefcount(self.array)` says when only the attribute holds the array
    (measured, not assumed: CPython versions count the call's own references differently)."""
    probe = _OutputBuffer((1,), np.float32)
    probe.array = np.empty(1)
    return sys.getrefcount(probe.array)


_UNSHARED = _unshared_refcount()


def _scalar(value: Any) -> Any:
    return value[()] if isinstance(value, np.ndarray) else value


def _retry(fn: Any, kinds: Tuple[Any, ...], args: tuple) -> tuple:
    """Call a segment again with arguments converted to what it was compiled for: scalars
    for 0-d arrays, C-contiguous writable arrays of the declared dtype (numba types a
    read-only array differently; segments never write to their inputs, a copy is safe)."""
    fixed = []
    for kind, a in zip(kinds, args):
        if kind is None:
            fixed.append(_scalar(a))
            continue
        a = np.ascontiguousarray(a, dtype=kind)
        fixed.append(a if a.flags.writeable else a.copy())
    return fn(*fixed)


def compile_plan(graph: Graph, feeds: Sequence[SymbolicTensor], outputs: Sequence[SymbolicTensor]) -> CompiledPlan:
    return CompiledPlan(graph, feeds, outputs)
