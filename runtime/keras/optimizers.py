"""Optimizers (TF's `tf.keras.optimizers`): the runtime's SGD and Adam plus AdamW, RMSprop,
Adagrad, learning-rate schedules and `get`.

Update rules, as in Keras (t = iterations + 1, η = learning rate, g = gradient):

- AdamW: Adam's update, then `w ← w − η·λ·w` (decoupled weight decay λ).
- RMSprop: `a ← ρa + (1 − ρ)g²`; with momentum μ: `m ← μm + η·g/√(a + ε)`, `w ← w − m`;
  otherwise `w ← w − η·g/√(a + ε)` (centered: a − ḡ² in place of a, with ḡ ← ρḡ + (1 − ρ)g).
- Adagrad: `a ← a + g²` (from `initial_accumulator_value`); `w ← w − η·g/√(a + ε)`.

A schedule is a `LearningRateSchedule` given as `learning_rate`; the optimizer calls it
with `iterations` on every step (inside the compiled train step: graph ops).

    >>> opt = get("adam"); opt.get_config()["learning_rate"]
    0.001
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Sequence, cast

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.training.optimizers import SGD, Adam, Optimizer


# -- schedules -----------------------------------------------------------------------------------------
class LearningRateSchedule:
    """A learning rate as a function of the step (`iterations`)."""

    def __call__(self, step: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def get_config(self) -> Dict[str, Any]:
        return dict(self.__dict__)

    @staticmethod
    def _step(step: Any):
        step = convert_to_tensor(step.read_value() if hasattr(step, "read_value") else step)
        return A.cast(step, _dt.float32)


class ExponentialDecay(LearningRateSchedule):
    """`initial · rate^(step / decay_steps)` (floored exponent with `staircase=True`)."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float, staircase: bool = False,
                 name: str = "ExponentialDecay") -> None:
        if decay_steps <= 0:
            raise ValueError(f"decay_steps: must be positive; got {decay_steps}")
        self.initial_learning_rate, self.decay_steps = float(initial_learning_rate), int(decay_steps)
        self.decay_rate, self.staircase, self.name = float(decay_rate), bool(staircase), name

    def __call__(self, step):
        p = M.divide(self._step(step), float(self.decay_steps))
        if self.staircase:
            p = M.subtract(p, M.mod(p, 1.0))
        return M.multiply(self.initial_learning_rate, M.pow(convert_to_tensor(self.decay_rate), p))


class CosineDecay(LearningRateSchedule):
    """`initial · ((1 − α)·½(1 + cos(π·min(step, decay_steps)/decay_steps)) + α)`."""

    def __init__(self, initial_learning_rate: float, decay_steps: int, alpha: float = 0.0,
                 name: str = "CosineDecay") -> None:
        if decay_steps <= 0:
            raise ValueError(f"decay_steps: must be positive; got {decay_steps}")
        self.initial_learning_rate, self.decay_steps, self.alpha, self.name = (
            float(initial_learning_rate), int(decay_steps), float(alpha), name)

    def __call__(self, step):
        frac = M.divide(M.minimum(self._step(step), float(self.decay_steps)), float(self.decay_steps))
        cosine = M.multiply(0.5, M.add(1.0, M.cos(M.multiply(math.pi, frac))))
        return M.multiply(self.initial_learning_rate, M.add(M.multiply(1.0 - self.alpha, cosine), self.alpha))


class PiecewiseConstantDecay(LearningRateSchedule):
    """`values[i]` while `boundaries[i-1] < step <= boundaries[i]`."""

    def __init__(self, boundaries: Sequence[int], values: Sequence[float], name: str = "PiecewiseConstant") -> None:
        if len(values) != len(boundaries) + 1:
            raise ValueError(f"values: expected {len(boundaries) + 1} values for {len(boundaries)} boundaries; "
                             f"got {len(values)}")
        self.boundaries, self.values, self.name = [float(b) for b in boundaries], [float(v) for v in values], name

    def __call__(self, step):
        s = self._step(step)
        out = convert_to_tensor(self.values[-1])
        for b, v in reversed(list(zip(self.boundaries, self.values[:-1]))):
            out = A.where(M.less_equal(s, b), convert_to_tensor(v), out)
        return out


# -- more optimizers ---------------------------------------------------------------------------------------
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter)."""

    def __init__(self, learning_rate: Any = 0.001, weight_decay: float = 0.004, beta_1: float = 0.9,
                 beta_2: float = 0.999, epsilon: float = 1e-7, amsgrad: bool = False, name: str = "AdamW") -> None:
        self.weight_decay = float(weight_decay)
        super().__init__(learning_rate, beta_1, beta_2, epsilon, amsgrad, name)

    def _coefficients(self, lr, t):
        return {**super()._coefficients(lr, t), "decay": M.multiply(lr, self.weight_decay)}

    def _update(self, grad, var, coefficients, slots) -> None:
        var.assign_sub(M.multiply(coefficients["decay"], var.read_value()), read_value=False)
        super()._update(grad, var, coefficients, slots)

    def get_config(self):
        return {**super().get_config(), "weight_decay": self.weight_decay}


class RMSprop(Optimizer):
    """RMSprop (Hinton), Keras's variant (ε inside the square root)."""

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0, epsilon: float = 1e-7,
                 centered: bool = False, name: str = "RMSprop") -> None:
        self.rho, self.momentum, self.epsilon, self.centered = float(rho), float(momentum), float(epsilon), centered
        self._slot_names = ("rms",) + (("momentum",) if self.momentum else ()) + (("mg",) if centered else ())
        super().__init__(name, learning_rate)

    def _update(self, grad, var, coefficients, slots) -> None:
        lr, rho = coefficients["lr"], self.rho
        rms = M.add(M.multiply(rho, slots["rms"].read_value()), M.multiply(1.0 - rho, M.square(grad)))
        slots["rms"].assign(rms, read_value=False)
        denom = rms
        if self.centered:
            mg = M.add(M.multiply(rho, slots["mg"].read_value()), M.multiply(1.0 - rho, grad))
            slots["mg"].assign(mg, read_value=False)
            denom = M.subtract(rms, M.square(mg))
        step = M.divide(M.multiply(lr, grad), M.sqrt(M.add(denom, self.epsilon)))
        if self.momentum:
            m = M.add(M.multiply(self.momentum, slots["momentum"].read_value()), step)
            slots["momentum"].assign(m, read_value=False)
            step = m
        var.assign_sub(step, read_value=False)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum, "epsilon": self.epsilon,
                "centered": self.centered}


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.): per-weight rates shrinking with the sum of squared gradients."""

    _slot_names = ("accumulator",)

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1, epsilon: float = 1e-7,
                 name: str = "Adagrad") -> None:
        self.initial_accumulator_value, self.epsilon = float(initial_accumulator_value), float(epsilon)
        super().__init__(name, learning_rate)

    def _slots_for(self, var):
        fresh = self._slots.get(id(var)) is None
        slots = super()._slots_for(var)
        if fresh and self.initial_accumulator_value:
            with context.init_scope():  # once, eagerly: not a node of the train step
                slots["accumulator"].assign(A.fill(var.shape.as_list(), convert_to_tensor(
                    self.initial_accumulator_value, var.dtype)))
        return slots

    def _update(self, grad, var, coefficients, slots) -> None:
        acc = M.add(slots["accumulator"].read_value(), M.square(grad))
        slots["accumulator"].assign(acc, read_value=False)
        var.assign_sub(M.divide(M.multiply(coefficients["lr"], grad), M.sqrt(M.add(acc, self.epsilon))),
                       read_value=False)

    def get_config(self):
        return {**super().get_config(), "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}


_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier: Any) -> Optimizer:
    """An optimizer from a name (`"adam"`, case-insensitive), a class or an instance."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Optimizer):
        if identifier is Optimizer:
            raise ValueError("optimizer: the base class Optimizer cannot be made; pass a concrete optimizer such "
                             f"as jf.keras.optimizers.Adam or one of {sorted(_BY_NAME)}")
        return cast(Callable[[], Optimizer], identifier)()  # every concrete optimizer's arguments have defaults
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"optimizer: unknown optimizer {identifier!r}; expected one of {sorted(_BY_NAME)} or a "
                     "jf.keras.optimizers.Optimizer")


schedules = type("schedules", (), {"LearningRateSchedule": LearningRateSchedule, "ExponentialDecay": ExponentialDecay,
                                   "CosineDecay": CosineDecay, "PiecewiseConstantDecay": PiecewiseConstantDecay,
                                   "__doc__": "Learning-rate schedules (tf.keras.optimizers.schedules)."})

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "LearningRateSchedule", "ExponentialDecay",
           "CosineDecay", "PiecewiseConstantDecay", "schedules", "get"]
