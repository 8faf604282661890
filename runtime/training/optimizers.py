"""`jf.optimizers`: SGD (with momentum) and Adam, updating variables with jitflow ops.

    optimizer = jf.optimizers.Adam(learning_rate=1e-3)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))

Updates are `Variable.assign*` ops, so inside a `jf.function` they are graph nodes and
run on every call. Slot variables (momentum, Adam's m and v) are created on the first
`apply_gradients` for a variable, keyed by the variable's identity: a `jf.function`
that traces twice on its first call (the second trace checks that no variables are
created) finds them already there. `iterations` is an int64 variable counting applied
steps. A float learning rate is kept in a variable too (as Keras does), so setting
`optimizer.learning_rate = 0.1` changes graphs that were already traced; a callable
is a schedule, called with `iterations` on every step.

Update rules (t = iterations + 1, η = learning rate), as in Keras:

- SGD: `v ← μ·v − η·g`; `w ← w + v` (nesterov: `w ← w + μ·v − η·g`); plain `w ← w − η·g`.
- Adam: `m ← m + (g − m)(1 − β₁)`; `v ← v + (g² − v)(1 − β₂)`;
  `w ← w − η·√(1 − β₂ᵗ)/(1 − β₁ᵗ) · m / (√v + ε)` (amsgrad: `v̂ ← max(v̂, v)` in place of v).
"""
from __future__ import annotations

import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.autodiff.tape import GradientTape
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.state.variables import Variable

# Called as hook(optimizer, variable, slot_name, slot) when a slot is created (checkpoints
# use it to restore slots saved before the optimizer made them).
_slot_hooks: List[Callable[..., None]] = []
# Set by a distribution strategy (runtime/distribute): called as hook(optimizer, pairs, apply)
# by `apply_gradients`; inside `strategy.run` it all-reduces the gradients across replicas
# and calls `apply(pairs)` once per variable copy, as TF's optimizers do; elsewhere it
# simply returns `apply(pairs)`.
cross_replica_hook: Optional[Callable[..., Any]] = None


class Optimizer:
    """Base class: subclasses name their slots and implement `_coefficients(lr, t)` (per-step
    scalars, computed once per dtype) and `_update(grad, var, coefficients, slots)`.

    >>> isinstance(jf.optimizers.SGD(), jf.optimizers.Optimizer)
    True
    """

    _slot_names: Tuple[str, ...] = ()

    def __init__(self, name: str, learning_rate: Any) -> None:
        self._name = name
        self._slots: Dict[int, Tuple[Variable, Dict[str, Variable]]] = {}  # id(var) → (var, slots)
        with context.init_scope(), context.name_scope(name):
            self._iterations = Variable(0, dtype=_dt.int64, trainable=False, name="iter")
            self._learning_rate = self._make_learning_rate(learning_rate)

    # -- hyperparameters ---------------------------------------------------------------------
    @staticmethod
    def _make_learning_rate(value: Any) -> Any:
        if isinstance(value, Variable) or callable(value):
            return value
        if isinstance(value, Tensor):
            value = value.numpy()
        return Variable(float(value), dtype=_dt.float32, trainable=False, name="learning_rate")

    @property
    def name(self) -> str:
        return self._name

    @property
    def iterations(self) -> Variable:
        """The number of steps applied so far (an int64 variable)."""
        return self._iterations

    @property
    def learning_rate(self) -> Any:
        """The learning rate now: the variable holding it, or the schedule's current value."""
        lr = self._learning_rate
        if isinstance(lr, Variable):
            return lr
        return convert_to_tensor(lr(self._iterations), dtype_hint=_dt.float32)

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if isinstance(self._learning_rate, Variable) and not isinstance(value, Variable) and not callable(value):
            self._learning_rate.assign(float(value))
            return
        with context.init_scope(), context.name_scope(self._name):
            self._learning_rate = self._make_learning_rate(value)

    def _current_lr(self, dtype: _dt.DType) -> Tensor:
        lr = self._learning_rate
        value = lr.read_value() if isinstance(lr, Variable) else convert_to_tensor(lr(self._iterations),
                                                                                  dtype_hint=dtype)
        return value if value.dtype is dtype else A.cast(value, dtype)

    # -- slots -------------------------------------------------------------------------------
    def get_slot(self, var: Variable, slot_name: str) -> Variable:
        """The slot variable `slot_name` ('momentum', 'm', 'v', ...) of `var`."""
        entry = self._slots.get(id(var))
        if entry is None or entry[0] is not var:
            raise KeyError(f"{self._name} has no slots for {var.name} yet; they are created by the first "
                           "apply_gradients that updates it")
        return entry[1][slot_name]

    def get_slot_names(self) -> List[str]:
        return list(self._slot_names)

    def _slots_for(self, var: Variable) -> Dict[str, Variable]:
        entry = self._slots.get(id(var))
        if entry is not None and entry[0] is var:
            return entry[1]
        slots: Dict[str, Variable] = {}
        base = var.name.split(":")[0]
        with context.init_scope(), context.name_scope(None):
            for slot in self._slot_names:
                slots[slot] = Variable(A.zeros(var.shape.as_list(), var.dtype), trainable=False,
                                       name=f"{base}/{self._name}/{slot}")
        self._slots[id(var)] = (var, slots)
        for slot_name, slot_var in slots.items():
            for hook in _slot_hooks:
                hook(self, var, slot_name, slot_var)
        return slots

    def variables(self) -> List[Variable]:
        """iterations, the learning-rate variable (if any), then every slot variable."""
        out = [self._iterations]
        if isinstance(self._learning_rate, Variable):
            out.append(self._learning_rate)
        for _, slots in self._slots.values():
            out.extend(slots[name] for name in self._slot_names)
        return out

    # -- applying gradients ------------------------------------------------------------------
    def apply_gradients(self, grads_and_vars: Iterable[Tuple[Any, Variable]], name: Optional[str] = None) -> Variable:
        """Update each variable from its gradient; pairs whose gradient is None are skipped.

        Returns `iterations` (incremented once).
        """
        pairs = list(grads_and_vars)
        for pair in pairs:
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise TypeError(f"grads_and_vars: expected (gradient, variable) pairs; got {pair!r}")
        for _, var in pairs:
            if not isinstance(var, Variable):
                raise TypeError(f"grads_and_vars: expected a jf.Variable to update; got {type(var).__name__}")
        missing = [var.name for g, var in pairs if g is None]
        pairs = [(g, var) for g, var in pairs if g is not None]
        if not pairs:
            raise ValueError(f"No gradients provided for any variable: {missing}")
        if missing:
            warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the loss; "
                          "they are not updated.", stacklevel=2)
        hook = cross_replica_hook
        if hook is not None:
            return hook(self, pairs, lambda reduced: self._apply_pairs(reduced, name))
        return self._apply_pairs(pairs, name)

    def _apply_pairs(self, pairs: List[Tuple[Any, Variable]], name: Optional[str]) -> Variable:
        with context.name_scope(name or self._name):
            step = M.add(self._iterations.read_value(), 1)
            per_dtype: Dict[_dt.DType, Dict[str, Tensor]] = {}  # step coefficients, once per dtype
            for g, var in pairs:
                g = convert_to_tensor(g, dtype_hint=var.dtype)
                if g.dtype is not var.dtype:
                    raise TypeError(f"the gradient for {var.name} has dtype {g.dtype.name} but the variable "
                                    f"has dtype {var.dtype.name}")
                if var.dtype not in per_dtype:
                    per_dtype[var.dtype] = self._coefficients(self._current_lr(var.dtype), A.cast(step, var.dtype))
                self._update(g, var, per_dtype[var.dtype], self._slots_for(var))
            self._iterations.assign_add(convert_to_tensor(1, _dt.int64), read_value=False)
        return self._iterations

    def minimize(self, loss: Any, var_list: Any, tape: Optional[GradientTape] = None) -> Variable:
        """Compute gradients of `loss` (a callable, or a tensor recorded on `tape`) and apply them."""
        if tape is None:
            if not callable(loss):
                raise ValueError("loss: pass a callable returning the loss, or the loss tensor together "
                                 "with the GradientTape that recorded it (tape=...)")
            with GradientTape() as tape:
                if callable(var_list):
                    var_list = var_list()
                tape.watch(list(var_list))
                loss = loss()
        if callable(var_list):
            var_list = var_list()
        var_list = list(var_list)
        grads = tape.gradient(loss, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def _coefficients(self, lr: Tensor, t: Tensor) -> Dict[str, Tensor]:
        """Scalars shared by every variable's update this step (t = iterations + 1)."""
        return {"lr": lr}

    def _update(self, grad: Tensor, var: Variable, coefficients: Dict[str, Tensor],
                slots: Dict[str, Variable]) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def get_config(self) -> Dict[str, Any]:
        lr = self._learning_rate
        return {"name": self._name, "learning_rate": float(lr.numpy()) if isinstance(lr, Variable) else lr}

    # -- checkpoints: what a jf.train.Checkpoint saves -----------------------------------------
    def _checkpoint_children(self) -> Dict[str, Any]:
        children: Dict[str, Any] = {"iter": self._iterations}
        if isinstance(self._learning_rate, Variable):
            children["learning_rate"] = self._learning_rate
        return children

    def _checkpoint_slots(self) -> List[Tuple[Variable, str, Variable]]:
        return [(var, name, slots[name]) for var, slots in self._slots.values() for name in self._slot_names]

    def __repr__(self) -> str:
        return f"<jf.optimizers.{type(self).__name__} {self.get_config()}>"


class SGD(Optimizer):
    """Gradient descent, optionally with (Nesterov) momentum.

    >>> v = jf.Variable(1.0)
    >>> opt = jf.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    >>> _ = opt.apply_gradients([(jf.constant(1.0), v)])
    >>> round(float(v.numpy()), 4)
    0.9
    """

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 name: str = "SGD") -> None:
        if not 0.0 <= float(momentum) <= 1.0:
            raise ValueError(f"momentum: must be in [0, 1]; got {momentum}")
        self.momentum = float(momentum)
        self.nesterov = bool(nesterov)
        self._slot_names = ("momentum",) if self.momentum else ()
        super().__init__(name, learning_rate)

    def _update(self, grad, var, coefficients, slots) -> None:
        step = M.multiply(coefficients["lr"], grad)
        if not self.momentum:
            var.assign_sub(step, read_value=False)
            return
        velocity = slots["momentum"]
        new_v = M.subtract(M.multiply(self.momentum, velocity.read_value()), step)
        velocity.assign(new_v, read_value=False)
        if self.nesterov:
            var.assign_add(M.subtract(M.multiply(self.momentum, new_v), step), read_value=False)
        else:
            var.assign_add(new_v, read_value=False)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    """Adam (Kingma & Ba), with Keras's epsilon placement (ε added to √v).

    >>> v = jf.Variable(1.0)
    >>> _ = jf.optimizers.Adam(learning_rate=0.1).apply_gradients([(jf.constant(1.0), v)])
    >>> round(float(v.numpy()), 4)
    0.9
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str = "Adam") -> None:
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)
        self.amsgrad = bool(amsgrad)
        self._slot_names = ("m", "v", "vhat") if self.amsgrad else ("m", "v")
        super().__init__(name, learning_rate)

    def _coefficients(self, lr, t):
        b1, b2 = self.beta_1, self.beta_2
        return {"alpha": M.divide(M.multiply(lr, M.sqrt(M.subtract(1.0, M.pow(b2, t)))),
                                  M.subtract(1.0, M.pow(b1, t)))}

    def _update(self, grad, var, coefficients, slots) -> None:
        b1, b2, alpha = self.beta_1, self.beta_2, coefficients["alpha"]
        m, v = slots["m"], slots["v"]
        m_old, v_old = m.read_value(), v.read_value()
        new_m = M.add(m_old, M.multiply(M.subtract(grad, m_old), 1.0 - b1))
        new_v = M.add(v_old, M.multiply(M.subtract(M.square(grad), v_old), 1.0 - b2))
        m.assign(new_m, read_value=False)
        v.assign(new_v, read_value=False)
        if self.amsgrad:
            new_v = M.maximum(slots["vhat"].read_value(), new_v)
            slots["vhat"].assign(new_v, read_value=False)
        var.assign_sub(M.divide(M.multiply(alpha, new_m), M.add(M.sqrt(new_v), self.epsilon)), read_value=False)

    def get_config(self) -> Dict[str, Any]:
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2, "epsilon": self.epsilon,
                "amsgrad": self.amsgrad}


__all__ = ["Optimizer", "SGD", "Adam"]
