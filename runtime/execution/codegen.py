"""Source of one compiled segment: fused element loops plus numpy statements.

A segment's nodes are emitted in order, as three kinds of code:

* elementwise nodes of one output shape share a *fused loop*: each computes one element
  into a local variable (`e5 = np.float32(_K.mul_(a0_f[i], e3))`), so a chain of 150 ops
  is one pass over the data with no temporaries. They call the interpreter's own scalar
  functions (`compiler_kernels.SCALAR`), compiled as its ufuncs are, so every element is
  bit-identical to the interpreter's. Broadcast inputs are indexed in a two-level loop
  (`row` inputs by the inner index, `column` inputs by the outer), scalars hoisted;
* full reductions (sum, mean, prod) of a loop's values join that loop as accumulators,
  with the interpreter's float64 (int64) accumulator and its element order, so they too
  are identical. Such loops stay sequential;
* every other op is one numpy statement from `LOWERINGS` (matmul through BLAS, the
  interpreter's 2-D reduction and softmax kernels).

A loop is written out ("closed") when something outside it needs one of its values or at
the end of the segment; only values used outside it are stored to arrays. A loop over at
least `PARALLEL_MIN_ELEMENTS` elements without reductions runs with `prange` (and the
segment compiles with `parallel=True`) when at least `PARALLEL_MIN_CPUS` CPUs are usable:
elements are independent, so threads change nothing. Measured on 2 cores, threads only
hurt: `tanh(a*b+c)` over 2**24 floats took 13 ms in one thread (memory-bound) and 16-18
ms in two, and in a segment that also calls BLAS, numba's spinning OpenMP threads and
OpenBLAS's took the MLP train step from 0.5 ms to 8 ms; so never next to BLAS either.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from jitflow.runtime.core.graph import Node
from jitflow.runtime.ops import complex_ops, math_ops
from jitflow.runtime.core.shapes import known_dims
from jitflow.runtime.core.tensor import SymbolicTensor

PARALLEL_MIN_ELEMENTS = 1 << 20
PARALLEL_MIN_CPUS = 4  # on 2 cores one thread already saturates memory: 13 ms serial, 16-18 ms in parallel
# Arrays a loop stores of at least this many bytes are allocated by the caller with numpy
# and passed in: numpy asks the kernel for huge pages, numba's allocator does not, and
# first-touch page faults on a fresh 64 MiB buffer cost more than the loop itself.
CALLER_ALLOCATED_BYTES = 1 << 20
Key = Tuple[int, int]


def key(t: SymbolicTensor) -> Key:
    return (id(t.node), t.index)


def np_type(dtype: Any) -> str:
    name = getattr(dtype, "as_numpy_dtype", dtype)
    return f"np.{np.dtype(name).name}"


def literal(value: np.ndarray) -> str:
    """A size-1 constant as a typed numba literal (`np.float32(0.5)`)."""
    item = np.asarray(value).reshape(()).item()
    if value.dtype == np.bool_:
        return "True" if item else "False"
    return f"np.{value.dtype.name}({item!r})"


# -- lowering rules ---------------------------------------------------------------------------------
# Elementwise ops get element expressions as arguments; the others get array (or scalar) names.
def _scalar_fn(name: str) -> Callable[[Node, List[str]], str]:
    return lambda node, a: f"_K.{name}({', '.join(a)})"


ELEMENTWISE_FUNCTIONS: Dict[str, str] = {
    **{row[0]: row[-2].__name__ for row in list(math_ops._BINARY) + list(math_ops._UNARY)},
    **complex_ops.ELEMENTWISE_FUNCTIONS}
# For complex inputs, the scalar functions the interpreter's ufuncs use instead (cmath, not math).
COMPLEX_FUNCTIONS: Dict[str, str] = {op: fn.__name__ for op, fn in math_ops.COMPLEX_SCALAR.items()}


def _reduce(kind: str) -> Callable:
    """Reductions call the interpreter's 2-D kernels (same accumulation, same result)."""
    def lower(node: Node, a: List[str]) -> str:
        x = node.inputs[0]
        integer = x._dtype.is_integer
        rank = len(known_dims(x._dims))
        axis = node.attrs["axis"]
        base = "sum" if kind == "mean" else kind
        if axis is None or len(axis) == rank:
            expr = f"_K.{'i' if integer and base in ('sum', 'prod') else ''}{base}_all({a[0]})"
            count = int(np.prod(known_dims(x._dims), dtype=np.int64))
        else:
            expr = f"_K.{'i' if integer else ''}{base}_axis({a[0]}, {axis[0]})"
            count = known_dims(x._dims)[axis[0]]
        if kind == "mean" and integer:  # the interpreter divides in float64, truncates, casts back
            expr = (f"np.trunc({expr} / {max(count, 1)}).astype({np_type(x._dtype)})" if expr.startswith("_K.isum_axis")
                    else f"{np_type(x._dtype)}(np.trunc({expr} / {max(count, 1)}))")
        elif kind == "mean":
            expr = f"({expr} / {np_type(x._dtype)}({count}))"
        dims = tuple(known_dims(node.outputs[0]._dims))
        if dims and (axis is None or len(axis) == rank):
            expr = f"np.full({dims}, {expr})"  # keepdims of a full reduction: a scalar in every slot
        elif dims:
            expr = f"np.reshape({expr}, {dims})"
        return expr
    return lower


def _reshape(node: Node, a: List[str]) -> str:
    dims = tuple(known_dims(node.outputs[0]._dims))
    if not dims:
        return f"{a[0]}.reshape(1)[0]" if node.inputs[0]._dims else a[0]
    return f"np.ascontiguousarray({a[0]}).reshape({dims})"


def _matmul(node: Node, a: List[str]) -> str:
    # A transposed operand is passed as its F-ordered view (BLAS takes it as a flag), exactly
    # as the interpreter's kernel does: copying it to C order would cost a strided pass and
    # could sum in another order than the interpreter.
    x = f"{a[0]}.T" if node.attrs["transpose_a"] else a[0]
    y = f"{a[1]}.T" if node.attrs["transpose_b"] else a[1]
    return f"np.dot({x}, {y})"


def _cast(node: Node, a: List[str]) -> str:
    dt = node.attrs["DstT"]
    if not node.outputs[0]._dims:
        return f"{np_type(dt)}({a[0]})"
    return f"{a[0]}.astype({np_type(dt)})"


def _const_like(value: int) -> Callable[[Node, List[str]], str]:
    return lambda node, a: f"{np_type(node.outputs[0]._dtype)}({value})"


LOWERINGS: Dict[str, Callable[[Node, List[str]], str]] = {
    **{op: _scalar_fn(fn) for op, fn in ELEMENTWISE_FUNCTIONS.items()},
    "Identity": lambda n, a: a[0], "StopGradient": lambda n, a: a[0],
    "SelectV2": lambda n, a: f"({a[1]} if {a[0]} else {a[2]})",
    # value + bias along the last dimension: the interpreter's kernel is numpy's `+`, the same add_
    "BiasAdd": lambda n, a: f"_K.add_({a[0]}, {a[1]})",
    "OnesLike": _const_like(1), "ZerosLike": _const_like(0),
    "Sum": _reduce("sum"), "Mean": _reduce("mean"), "Prod": _reduce("prod"),
    "Max": _reduce("max"), "Min": _reduce("min"),
    "MatMul": _matmul, "Reshape": _reshape, "ExpandDims": _reshape, "Squeeze": _reshape, "Cast": _cast,
    "Softmax": lambda n, a: f"_K.softmax({a[0]})", "LogSoftmax": lambda n, a: f"_K.log_softmax({a[0]})",
}
ELEMENTWISE = set(ELEMENTWISE_FUNCTIONS) | {"Identity", "StopGradient", "SelectV2", "OnesLike", "ZerosLike", "BiasAdd"}
_NO_DATA_INPUTS = {"OnesLike", "ZerosLike"}  # only their input's (static) shape matters
_FUSABLE_REDUCTIONS = {"Sum": ("0", "+="), "Mean": ("0", "+="), "Prod": ("1", "*=")}


def is_elementwise(node: Node) -> bool:
    op = node.op.tf_op
    if op == "Cast":  # exact conversions only: float <- anything, int <- int or bool
        src, dst = node.inputs[0]._dtype, node.attrs["DstT"]
        return dst.is_floating or (dst.is_integer and not src.is_floating) or (dst.is_complex and not src.is_complex)
    return op in ELEMENTWISE


def element_expression(node: Node, args: List[str]) -> str:
    """The expression for one element of `node`'s output, cast to its dtype as a ufunc would."""
    op = node.op.tf_op
    if op == "Cast":
        return f"{np_type(node.attrs['DstT'])}({args[0]})"
    if op in COMPLEX_FUNCTIONS and node.inputs[0]._dtype.is_complex:
        expr = f"_K.{COMPLEX_FUNCTIONS[op]}({', '.join(args)})"
    else:
        expr = LOWERINGS[op](node, [] if op in _NO_DATA_INPUTS else args)
    if op in ("Identity", "StopGradient"):
        return expr
    return f"{np_type(node.outputs[0]._dtype)}({expr})"


def fusable_reduction(node: Node) -> bool:
    if node.op.tf_op not in _FUSABLE_REDUCTIONS:
        return False
    x = node.inputs[0]
    axis = node.attrs["axis"]
    dims = x._dims
    return dims is not None and len(dims) > 0 and (axis is None or len(axis) == len(dims))


# -- fused loops ------------------------------------------------------------------------------------
class Loop:
    """Elementwise nodes of one output shape and the full reductions of their values."""

    def __init__(self, number: int, shape: Tuple[int, ...]) -> None:
        self.number = number
        self.shape = shape
        self.size = int(np.prod(shape, dtype=np.int64))
        self.body: List[Tuple[Node, str]] = []          # (node, element expression) in order
        self.values: Dict[Key, str] = {}                # tensor computed here -> element variable
        self.external: Dict[Key, Tuple[str, Tuple[int, ...]]] = {}  # input -> (name, shape)
        self.reductions: Dict[int, str] = {}            # id(reduction node) -> accumulator

    def read(self, t: SymbolicTensor, name: str) -> str:
        """A placeholder (`_x0_1_`) for one element of an input the loop does not compute."""
        k = key(t)
        if k not in self.external:
            self.external[k] = (name, tuple(known_dims(t._dims)))
        return f"_x{self.number}_{list(self.external).index(k)}_"


class SegmentWriter:
    """Writes the njit function for one segment (see the module docstring)."""

    def __init__(self, name: str, nodes: Sequence[Node], inputs: Sequence[SymbolicTensor],
                 outputs: Sequence[SymbolicTensor], constants: Dict[int, np.ndarray],
                 const_params: Sequence[Node]) -> None:
        self.name = name
        self.nodes = list(nodes)
        self.index = {id(n): k for k, n in enumerate(self.nodes)}
        self.outputs = list(outputs)
        self.constants = constants
        self.names: Dict[Key, str] = {}
        self.params: List[str] = []
        for i, t in enumerate(inputs):
            self.names[key(t)] = f"a{i}"
            self.params.append(f"a{i}")
        for j, n in enumerate(const_params):
            self.names[(id(n), 0)] = f"c{j}"
            self.params.append(f"c{j}")
        self.alias: Dict[Key, SymbolicTensor] = {}
        for n in self.nodes:
            if n.op.tf_op in ("Identity", "StopGradient"):
                self.alias[key(n.outputs[0])] = self.resolve(n.inputs[0])
        self.users: Dict[Key, List[Node]] = {}  # an alias's users count as its source's
        for n in self.nodes:
            if key(n.outputs[0]) in self.alias:
                continue
            for t in n.inputs:
                self.users.setdefault(key(self.resolve(t)), []).append(n)
        self.output_keys = {key(self.resolve(t)) for t in outputs}
        self.lines: List[str] = []
        self.open: Dict[Tuple[int, ...], Loop] = {}
        self.owner: Dict[Key, Loop] = {}
        self.loops = 0
        self.parallel = False
        self.uses_blas = any(n.op.tf_op == "MatMul" for n in self.nodes)
        self.allocations: List[Tuple[Tuple[int, ...], Any]] = []  # (shape, numpy dtype) passed in

    def resolve(self, t: SymbolicTensor) -> SymbolicTensor:
        """The tensor an Identity/StopGradient output stands for (the same value)."""
        return self.alias.get(key(t), t)

    # -- values -------------------------------------------------------------------------------
    def value(self, t: SymbolicTensor) -> str:
        """The name of `t` outside any loop (closing the loop that computes it, if open)."""
        t = self.resolve(t)
        k = key(t)
        loop = self.owner.get(k)
        if loop is not None:
            self.close(loop)
        if k not in self.names:
            value = self.constants.get(id(t.node))
            if value is None or value.size != 1:
                raise KeyError(f"{t.name} is not available in {self.name}")
            self.names[k] = literal(value)
        return self.names[k]

    def element(self, loop: Loop, t: SymbolicTensor) -> str:
        """The expression for one element of `t` inside `loop`."""
        t = self.resolve(t)
        k = key(t)
        if k in loop.values:
            return loop.values[k]
        value = self.constants.get(id(t.node))
        if not t._dims or (value is not None and value.size == 1):
            return self.value(t)
        return loop.read(t, self.value(t))

    # -- nodes --------------------------------------------------------------------------------
    def write(self) -> str:
        for node in self.nodes:
            self.node(node)
        for loop in list(self.open.values()):
            self.close(loop)
        outs = [self.value(t) for t in self.outputs]
        header = [f"def {self.name}({', '.join(self.params)}):"]
        result = outs[0] if len(outs) == 1 else f"({', '.join(outs)})"  # one value: no tuple to box
        body = self.lines + [f"    return {result}"]
        return "\n".join(header + body) + "\n"

    def node(self, node: Node) -> None:
        if id(node) in self.constants or key(node.outputs[0]) in self.alias:
            return
        out = node.outputs[0]
        if is_elementwise(node) and out._dims:
            self.join(node, tuple(known_dims(out._dims)))
        elif fusable_reduction(node):
            self.reduce(node, tuple(known_dims(node.inputs[0]._dims)))
        else:
            data = [] if node.op.tf_op in _NO_DATA_INPUTS else node.inputs
            args = [self.value(t) for t in data]
            expr = element_expression(node, args) if is_elementwise(node) else LOWERINGS[node.op.tf_op](node, args)
            k = self.index[id(node)]
            self.lines.append(f"    v{k} = {expr}  # {node.name}")
            self.names[key(out)] = f"v{k}"

    def loop_for(self, shape: Tuple[int, ...]) -> Loop:
        loop = self.open.get(shape)
        if loop is None:
            loop = self.open[shape] = Loop(self.loops, shape)
            self.loops += 1
        return loop

    def _elements(self, shape: Tuple[int, ...], inputs: Sequence[SymbolicTensor]) -> Tuple[Loop, List[str]]:
        """The open loop of `shape` and the inputs' element expressions in it. Reading an
        input may close that very loop (a node using a reduction of its own loop): then
        the node starts the next loop of that shape."""
        loop = self.loop_for(shape)
        args = [self.element(loop, t) for t in inputs]
        if self.open.get(shape) is not loop:
            loop = self.loop_for(shape)
            args = [self.element(loop, t) for t in inputs]
        return loop, args

    def join(self, node: Node, shape: Tuple[int, ...]) -> None:
        inputs = [] if node.op.tf_op in _NO_DATA_INPUTS else node.inputs
        loop, args = self._elements(shape, inputs)
        k = self.index[id(node)]
        loop.body.append((node, element_expression(node, args)))
        loop.values[key(node.outputs[0])] = f"e{k}"
        self.owner[key(node.outputs[0])] = loop

    def reduce(self, node: Node, shape: Tuple[int, ...]) -> None:
        loop, (arg,) = self._elements(shape, node.inputs)
        loop.reductions[id(node)] = f"acc{self.index[id(node)]}"
        loop.body.append((node, arg))
        self.owner[key(node.outputs[0])] = loop

    # -- writing a loop out -------------------------------------------------------------------
    def close(self, loop: Loop) -> None:
        if self.open.get(loop.shape) is loop:
            del self.open[loop.shape]
        for k in [k for k, owner in self.owner.items() if owner is loop]:
            del self.owner[k]
        self.lines.extend(LoopWriter(self, loop).lines())

    def allocate(self, k: int, shape: Tuple[int, ...], dtype: Any) -> List[str]:
        """Lines that give `v{k}` a fresh array: numba's np.empty, or a caller's for big ones."""
        np_dtype = np.dtype(dtype.as_numpy_dtype)
        if int(np.prod(shape, dtype=np.int64)) * np_dtype.itemsize < CALLER_ALLOCATED_BYTES:
            return [f"    v{k} = np.empty({shape}, {np_type(dtype)})"]
        self.params.append(f"o{k}")
        self.allocations.append((shape, np_dtype))
        return [f"    v{k} = o{k}"]

    def stored(self, loop: Loop) -> List[Node]:
        """Elementwise members whose values are needed after the loop (stored to arrays)."""
        members = {id(n) for n, _ in loop.body}

        def needed(n: Node) -> bool:
            k = key(n.outputs[0])
            return k in self.output_keys or any(id(u) not in members for u in self.users.get(k, []))
        return [n for n, _ in loop.body if id(n) not in loop.reductions and needed(n)]


class LoopWriter:
    """Turns one `Loop` into source lines: set-up, the loop nest, the reductions' results."""

    def __init__(self, seg: SegmentWriter, loop: Loop) -> None:
        self.seg = seg
        self.loop = loop
        self.shape = loop.shape
        self.n = loop.size
        self.split = self._split()
        self.outer = int(np.prod(self.shape[:self.split], dtype=np.int64)) if self.split else 1
        self.inner = self.n // self.outer if self.outer else 0

    def _pattern(self, dims: Tuple[int, ...], split: int) -> str:
        """How an input of shape `dims` is indexed with the loop split at `split`."""
        full = (1,) * (len(self.shape) - len(dims)) + dims
        if int(np.prod(dims, dtype=np.int64)) == 1:
            return "scalar"
        if full == self.shape:
            return "full"
        if split and all(d == 1 for d in full[:split]) and full[split:] == self.shape[split:]:
            return "row"
        if split and full[:split] == self.shape[:split] and all(d == 1 for d in full[split:]):
            return "col"
        return "broadcast"  # materialised with np.broadcast_to

    def _split(self) -> int:
        """The outer/inner split (0: one flat loop) that indexes the most inputs directly."""
        dims = [d for _, d in self.loop.external.values()]
        best, best_bad = 0, sum(self._pattern(d, 0) == "broadcast" for d in dims)
        for split in range(1, len(self.shape)):
            bad = sum(self._pattern(d, split) == "broadcast" for d in dims)
            if bad < best_bad:
                best, best_bad = split, bad
        return best

    def lines(self) -> List[str]:
        loop, seg = self.loop, self.seg
        names = ", ".join(n.name for n, _ in loop.body[:3]) + (", ..." if len(loop.body) > 3 else "")
        out = [f"    # fused loop {loop.number} over {self.shape}: {names}"]
        readers: Dict[str, str] = {}
        for slot, (name, dims) in enumerate(loop.external.values()):
            setup, reader = self._input(f"_x{loop.number}_{slot}", name, self._pattern(dims, self.split))
            out.append(setup)
            readers[f"_x{loop.number}_{slot}_"] = reader
        stored = seg.stored(loop)
        for node in stored:
            out += seg.allocate(seg.index[id(node)], self.shape, node.outputs[0]._dtype)
            out.append(f"    v{seg.index[id(node)]}_f = v{seg.index[id(node)]}.reshape({self.n})")
        for node, _ in loop.body:
            if id(node) in loop.reductions:
                out.append(f"    {loop.reductions[id(node)]} = {_accumulator_start(node)}")
        out += self._nest(stored, readers)
        for node, _ in loop.body:
            k = seg.index[id(node)]
            if id(node) in loop.reductions:
                out.append(f"    v{k} = {_reduction_result(node, loop.reductions[id(node)])}  # {node.name}")
                seg.names[key(node.outputs[0])] = f"v{k}"
        for node in stored:
            seg.names[key(node.outputs[0])] = f"v{seg.index[id(node)]}"
        return out

    def _input(self, var: str, name: str, pattern: str) -> Tuple[str, str]:
        """(set-up line, element read) for one input."""
        if pattern == "scalar":
            return f"    {var}s = {name}.reshape(1)[0]", f"{var}s"
        if pattern == "row":
            return f"    {var}a = {name}.reshape({self.inner})", f"{var}a[j]"
        if pattern == "col":
            return f"    {var}a = {name}.reshape({self.outer})", f"{var}a[o]"
        if pattern == "broadcast":
            return (f"    {var}a = np.ascontiguousarray(np.broadcast_to({name}, {self.shape})).reshape({self.n})",
                    f"{var}a[i]")
        if len(self.shape) == 1:
            return f"    {var}a = {name}", f"{var}a[i]"
        return f"    {var}a = {name}.reshape({self.n})", f"{var}a[i]"

    def _nest(self, stored: List[Node], readers: Dict[str, str]) -> List[str]:
        loop = self.loop
        parallel = (self.n >= PARALLEL_MIN_ELEMENTS and _usable_cpus() >= PARALLEL_MIN_CPUS and not loop.reductions
                    and not self.seg.uses_blas and (self.outer > 1 or not self.split))
        self.seg.parallel |= parallel
        rng = "prange" if parallel else "range"
        if self.split:
            head = [f"    for o in {rng}({self.outer}):", f"        for j in range({self.inner}):",
                    f"            i = o * {self.inner} + j"]
            indent = " " * 12
        else:
            head = [f"    for i in {rng}({self.n}):"]
            indent = " " * 8
        body = []
        stored_ids = {id(n) for n in stored}
        for node, expr in loop.body:
            expr = _substitute(expr, readers)
            k = self.seg.index[id(node)]
            if id(node) in loop.reductions:
                op = _FUSABLE_REDUCTIONS[node.op.tf_op][1]
                body.append(f"{indent}{loop.reductions[id(node)]} {op} {expr}  # {node.name}")
                continue
            body.append(f"{indent}e{k} = {expr}  # {node.name}")
            if id(node) in stored_ids:
                body.append(f"{indent}v{k}_f[i] = e{k}")
        return head + body


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _accumulator_start(node: Node) -> str:
    """The interpreter's accumulator: float64 (`0.0`) for floats, int64 (`0`) for integers."""
    start = _FUSABLE_REDUCTIONS[node.op.tf_op][0]
    return start if node.inputs[0]._dtype.is_integer else start + ".0"


def _reduction_result(node: Node, acc: str) -> str:
    """The reduction's value from its accumulator, as the interpreter's kernel computes it."""
    x = node.inputs[0]
    t = np_type(x._dtype)
    expr = f"{t}({acc})"
    if node.op.tf_op == "Mean":
        count = int(np.prod(known_dims(x._dims), dtype=np.int64))
        expr = (f"{t}(np.trunc({expr} / {max(count, 1)}))" if x._dtype.is_integer
                else f"({expr} / {t}({count}))")
    dims = tuple(known_dims(node.outputs[0]._dims))
    return f"np.full({dims}, {expr})" if dims else expr


def _substitute(expr: str, readers: Dict[str, str]) -> str:
    """Replace input placeholders (`_x0_1_`: the trailing `_` keeps `_x0_1_` out of `_x0_11_`)."""
    for name, reader in readers.items():
        expr = expr.replace(name, reader)
    return expr


def segment_source(name: str, nodes: Sequence[Node], inputs: Sequence[SymbolicTensor],
                   outputs: Sequence[SymbolicTensor], constants: Dict[int, np.ndarray],
                   const_params: Sequence[Node]) -> Tuple[str, bool, List[Tuple[Tuple[int, ...], Any]]]:
    """(source of the function, whether it uses prange, arrays the caller allocates)."""
    writer = SegmentWriter(name, nodes, inputs, outputs, constants, const_params)
    source = writer.write()
    return source, writer.parallel, writer.allocations
