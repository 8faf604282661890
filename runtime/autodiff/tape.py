"""`jf.GradientTape`: reverse-mode autodiff by recording ops, eagerly or while tracing.

While a tape is recording, `registry.apply` reports every op whose inputs the tape
watches; `gradient()` walks those records backwards calling each op's gradient
function, which is written with jitflow ops. So the backward pass runs eagerly in
eager code, and becomes graph nodes (under a `gradients/` scope) inside a
`jf.function`, where it is compiled with the forward pass. A tape that records while
another computes gradients records the backward ops too: that is how second
derivatives work (seed 003).
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Sequence

from jitflow.runtime.core import context
from jitflow.runtime.core.nest import flatten, pack
from jitflow.runtime.ops import registry
from jitflow.runtime.ops.array_ops import ones_like, zeros_like
from jitflow.runtime.ops.math_ops import add
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor
from jitflow.runtime.core.tensor import Tensor

# The gradient registry lives with the op registry, below this stage, so ops modules can
# register the gradients of their own ops; re-exported here as the autodiff API.
GRADIENTS = registry.GRADIENTS
NOT_DIFFERENTIABLE = registry.NOT_DIFFERENTIABLE
gradient = registry.gradient
not_differentiable = registry.not_differentiable


class Record:
    """One recorded op: inputs (tensors or variables), outputs, attrs."""

    __slots__ = ("op", "inputs", "outputs", "attrs")

    def __init__(self, op: str, inputs: Sequence[Any], outputs: Sequence[Tensor], attrs: Dict[str, Any]) -> None:
        self.op = op
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = attrs

    def output(self, i: int = 0) -> Tensor:
        return self.outputs[i]


class _State(threading.local):
    def __init__(self) -> None:
        self.tapes: List["GradientTape"] = []


_state = _State()
active = False  # fast check in registry.apply: is any tape recording in any thread?
# Tapes open in all threads: the flag above must stay up while any thread records (replicas
# of a distribution strategy record concurrently), not follow the thread that exits last.
_open = 0
_open_lock = threading.Lock()


def _refresh(delta: int = 0) -> None:
    global active, _open
    with _open_lock:
        _open += delta
        active = _open > 0
        registry.tape_active = active


def record(op: str, inputs: Sequence[Any], outputs: Sequence[Tensor], attrs: Dict[str, Any]) -> None:
    """Called by `apply` for every op while tapes are active."""
    for tape in _state.tapes:
        if tape._recording:
            tape._record(op, inputs, outputs, attrs)


registry.tape_hook = record


class GradientTape:
    """Records operations for automatic differentiation (TF's `tf.GradientTape`).

    >>> x = jf.Variable(3.0)
    >>> with jf.GradientTape() as tape:
    ...     y = x * x
    >>> tape.gradient(y, x).numpy()
    np.float32(6.0)
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._records: List[Record] = []
        self._watched: Dict[int, Any] = {}      # id → watched tensor/variable (kept alive)
        self._variables: Dict[int, Any] = {}    # id(variable) → variable
        self._recording = False
        self._used = False

    def __enter__(self) -> "GradientTape":
        self._recording = True
        _state.tapes.append(self)
        _refresh(1)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._recording = False
        if self in _state.tapes:
            _state.tapes.remove(self)
            _refresh(-1)

    def watch(self, tensor: Any) -> None:
        """Track `tensor` (or every tensor/variable in a nested structure)."""
        for t in flatten(tensor):
            if isinstance(t, TensorConvertible):
                owner = _resource(t)
                self._variables[id(owner)] = t  # listed as given (TF lists an UnreadVariable as such)
                self._watched[id(owner)] = owner
            elif isinstance(t, Tensor):
                if not (t.dtype.is_floating or t.dtype.is_complex):
                    continue  # integers carry no gradient, as in TF
                self._watched[id(t)] = t
            else:
                raise TypeError(f"watch: expected tensors or variables; got {type(t).__name__}")

    def watched_variables(self) -> tuple:
        return tuple(self._variables.values())

    def stop_recording(self):
        """A context in which operations are not recorded."""
        tape = self

        class _Pause:
            def __enter__(self_inner) -> None:
                tape._recording = False

            def __exit__(self_inner, *exc: Any) -> None:
                tape._recording = True
        return _Pause()

    def reset(self) -> None:
        self._records.clear()
        self._watched.clear()
        self._variables.clear()

    def _record(self, op: str, inputs: Sequence[Any], outputs: Sequence[Tensor], attrs: Dict[str, Any]) -> None:
        watched = self._watched
        if op == "ReadVariableOp":
            var = inputs[0]
            owner = _resource(var)
            if owner is not var:  # read through an UnreadVariable: never auto-watched (as TF)
                inputs = [owner]
            elif id(var) not in watched and self._watch_accessed and getattr(var, "trainable", False):
                self._variables[id(var)] = var
                watched[id(var)] = var
        elif op in _ASSIGN_OPS:  # assigning a trainable variable under a tape watches it, as TF's
            var = _resource(inputs[0])
            if id(var) not in watched and self._watch_accessed and getattr(var, "trainable", False):
                self._variables[id(var)] = var
                watched[id(var)] = var
        if op in NOT_DIFFERENTIABLE:
            return
        if not any(id(t) in watched for t in inputs):
            return
        self._records.append(Record(op, inputs, outputs, attrs))
        for out in outputs:
            if out._dtype.is_floating or out._dtype.is_complex:
                watched[id(out)] = out

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: str = "none") -> Any:
        """d(sum of target)/d(sources), structured like `sources` (None where unconnected)."""
        unconnected_gradients = getattr(unconnected_gradients, "value", unconnected_gradients)
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of "
                               "gradients; create it with GradientTape(persistent=True) to call gradient() "
                               "more than once.")
        self._used = True
        # A variable target stays itself (not a fresh read), so d v / d v = 1 as in TF.
        targets = list(flatten(target))
        flat_sources = flatten(sources)
        seeds = flatten(output_gradients) if output_gradients is not None else [None] * len(targets)
        paused = self._recording
        self._recording = False
        try:
            listen = gradient_listener
            listener = listen(flat_sources) if listen is not None else None
            with context.name_scope("gradients"):
                grads = _backprop(self._records, targets, seeds, flat_sources, listener)
            if listener is not None:
                listener.done(grads)
        finally:
            self._recording = paused
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"unconnected_gradients: expected jf.UnconnectedGradients.NONE or .ZERO; "
                             f"got {unconnected_gradients!r}")
        if unconnected_gradients == "zero":
            grads = [zeros_like(convert_to_tensor(s)) if g is None else g for g, s in zip(grads, flat_sources)]
        return pack(sources, grads)

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: str = "none",
                 parallel_iterations=None, experimental_use_pfor: bool = True) -> Any:
        """d target[i...] / d source[j...] for every element pair: shape target.shape + source.shape.

        >>> x = jf.Variable([1.0, 2.0])
        >>> with jf.GradientTape() as tape:
        ...     y = x * x
        >>> tape.jacobian(y, x).numpy()
        array([[2., 0.],
               [0., 4.]], dtype=float32)
        """
        return jacobian_impl(self, target, sources, getattr(unconnected_gradients, "value", unconnected_gradients))

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: str = "none",
                       parallel_iterations=None, experimental_use_pfor: bool = True) -> Any:
        """Per-example jacobians: target [b, ...] and source [b, ...] give [b, target..., source...].

        >>> x = jf.Variable([[1.0, 2.0]])
        >>> with jf.GradientTape() as tape:
        ...     y = x * x
        >>> tape.batch_jacobian(y, x).numpy()
        array([[[2., 0.],
                [0., 4.]]], dtype=float32)
        """
        return batch_jacobian_impl(self, target, source, getattr(unconnected_gradients, "value", unconnected_gradients))


# Filled in by `distribute` (which sits above this stage): called by `gradient()` with the
# flat sources, it returns None or a listener whose `ready(i, grad)` is called as soon as
# the gradient of source i is final (the backward pass has passed the source's first use),
# and `done(grads)` at the end. A multi-worker strategy starts all-reducing gradients there,
# while the rest of the backward pass runs.
gradient_listener: Any = None

# Filled in by `autodiff.jacobians` (they need array ops beyond what the tape imports).
jacobian_impl: Any = None
batch_jacobian_impl: Any = None


def _accumulate(grads: Dict[int, Any], key: int, value: Any) -> None:
    current = grads.get(key)
    grads[key] = value if current is None else add(current, value)


_ASSIGN_OPS = frozenset({"AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"})


def _resource(value: Any) -> Any:
    """A variable's own object for an `UnreadVariable` (`v.assign(...)`'s result) reading it."""
    return value._shared_resource if getattr(type(value), "_captured_as_resource", False) else value


def _first_uses(records: List[Record], sources: List[Any]) -> Dict[int, List[int]]:
    """record index → the sources first read by that record (their gradients are final once
    the backward walk has processed it); sources never read come under -1."""
    wanted = {id(s): i for i, s in enumerate(sources)}
    first: Dict[int, List[int]] = {}
    for index, rec in enumerate(records):
        for inp in rec.inputs:
            position = wanted.pop(id(inp), None)
            if position is not None:
                first.setdefault(index, []).append(position)
        if not wanted:
            break
    if wanted:
        first[-1] = sorted(wanted.values())
    return first


def _backprop(records: List[Record], targets: List[Tensor], seeds: List[Any], sources: List[Any],
              listener: Any = None) -> List[Any]:
    grads: Dict[int, Any] = {}
    targets = [_resource(t) for t in targets]
    sources = [_resource(s) for s in sources]
    first_uses = _first_uses(records, sources) if listener is not None else {}
    for target, seed in zip(targets, seeds):
        like = convert_to_tensor(target) if isinstance(target, TensorConvertible) else target
        g = ones_like(like) if seed is None else convert_to_tensor(seed, dtype=like.dtype)
        _accumulate(grads, id(target), g)
    # Records are in creation order, which is topological: walk them backwards once.
    for index in range(len(records) - 1, -1, -1):
        rec = records[index]
        out_grads = [grads.get(id(o)) for o in rec.outputs]
        if all(g is None for g in out_grads):
            for position in first_uses.get(index, ()):
                listener.ready(position, grads.get(id(sources[position])))
            continue
        fn = GRADIENTS.get(rec.op)
        if fn is None:
            raise LookupError(f"no gradient is registered for op {rec.op}; it cannot be differentiated "
                              "(wrap it in jf.stop_gradient if no gradient should flow through it)")
        if len(rec.outputs) == 1:
            in_grads = fn(rec, out_grads[0])
        else:
            in_grads = fn(rec, out_grads)
        for inp, g in zip(rec.inputs, in_grads):
            if g is not None:
                _accumulate(grads, id(inp), g)
        for position in first_uses.get(index, ()):
            listener.ready(position, grads.get(id(sources[position])))
    for position in first_uses.get(-1, ()):
        listener.ready(position, grads.get(id(sources[position])))
    return [grads.get(id(s)) for s in sources]
