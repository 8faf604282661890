"""Python operators on tensors and variables map to registry ops (`a + b` → AddV2)."""
from __future__ import annotations

from typing import Any

from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import array_ops, math_ops


def _reflected(fn):
    return lambda self, other: fn(other, self)


_BINARY = {
    "add": math_ops.add, "sub": math_ops.subtract, "mul": math_ops.multiply,
    "truediv": math_ops.divide, "floordiv": math_ops.floordiv, "mod": math_ops.mod,
    "pow": math_ops.pow, "matmul": math_ops.matmul,
    "and": math_ops.logical_and, "or": math_ops.logical_or,
}
_COMPARE = {
    "lt": math_ops.less, "le": math_ops.less_equal, "gt": math_ops.greater,
    "ge": math_ops.greater_equal, "eq": math_ops.equal, "ne": math_ops.not_equal,
}


def _equality(fn):
    def compare(self, other):
        try:
            return fn(self, other)
        except (TypeError, ValueError):
            return NotImplemented  # Python then falls back to identity: t == None is False
    return compare


def install(cls: Any) -> None:  # a class that gains the operators (Tensor, Variable)
    for name, fn in _BINARY.items():
        setattr(cls, f"__{name}__", lambda self, other, fn=fn: fn(self, other))
        setattr(cls, f"__r{name}__", _reflected(fn))
    for name, fn in _COMPARE.items():
        if name in ("eq", "ne"):
            setattr(cls, f"__{name}__", _equality(fn))
        else:
            setattr(cls, f"__{name}__", lambda self, other, fn=fn: fn(self, other))
    cls.__neg__ = lambda self: math_ops.negative(self)
    cls.__abs__ = lambda self: math_ops.abs(self)
    cls.__invert__ = lambda self: math_ops.logical_not(self)
    cls.__pos__ = lambda self: self
    cls.__getitem__ = lambda self, item: array_ops.getitem(
        self if isinstance(self, Tensor) else self.read_value(), item)


install(Tensor)  # `jf.Variable` installs the same operators on itself (runtime.state)
