"""`ConcreteFunction.function_type` and the printed signatures, in TF's format.

TF 2 describes a traced function by a `FunctionType`: an `inspect.Signature` whose
parameters carry their type constraint (a `TensorSpec`, or `Literal[value]` for a Python
value) and whose return annotation is the output's type. `print(concrete_function)` and
`Function.pretty_printed_concrete_signatures()` print it as an "Input Parameters / Output
Type / Captures" block; jitflow prints the same block (with `jf.` dtypes).
"""
from __future__ import annotations

import inspect
from typing import Any, List

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.tensor import Tensor, TensorSpec


class Literal:
    """The type of a Python value baked into a trace: prints as `Literal[2]`."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Literal[{self.value!r}]"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Literal) and type(other.value) is type(self.value) and other.value == self.value

    def __hash__(self) -> int:
        return hash((type(self.value), repr(self.value)))


class OutputType:
    """A printable description of a structured output (`Dict[['y', TensorSpec(...)]]`)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


class FunctionType(inspect.Signature):
    """The input parameters (with type constraints) and output type of a traced function.

    >>> import jitflow as jf
    >>> cf = jf.function(lambda x: x).get_concrete_function(jf.TensorSpec([2], jf.float32))
    >>> list(cf.function_type.parameters)
    ['x']
    """

    def __repr__(self) -> str:
        return str(self)


def type_of(value: Any) -> Any:
    """The type constraint of one argument value or spec."""
    if isinstance(value, TensorSpec):
        return TensorSpec(value.shape, value.dtype)
    if isinstance(value, Tensor):
        return TensorSpec(value.shape, value.dtype)
    if isinstance(value, (list, tuple)):
        inner = ", ".join(repr(type_of(v)) for v in value)
        return OutputType(f"{'List' if isinstance(value, list) else 'Tuple'}[{inner}]")
    if isinstance(value, dict):
        inner = ", ".join(f"[{k!r}, {type_of(v)!r}]" for k, v in value.items())
        return OutputType(f"Dict[{inner}]")
    if getattr(value, "_captured_as_resource", False):
        return TensorSpec([], _dt.resource)
    if value is None:
        return OutputType("None")
    return Literal(value)


def function_type(cf: Any) -> FunctionType:
    args, kwargs = cf.structured_input_signature
    params: List[inspect.Parameter] = []
    values = list(args) + list(kwargs.values())
    for param, value in zip(cf.function._params, values):
        kind = param.kind if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY,
                                             param.POSITIONAL_ONLY) else param.POSITIONAL_OR_KEYWORD
        params.append(inspect.Parameter(param.name, kind, annotation=type_of(value)))
    return FunctionType(params, return_annotation=type_of(cf.structured_outputs))


def verbose_signature(cf: Any) -> str:
    """TF's `pretty_printed_signature(verbose=True)`: the Input Parameters / Output / Captures block."""
    ft = function_type(cf)
    lines = ["Input Parameters:"]
    for p in ft.parameters.values():
        lines.append(f"  {p.name} ({p.kind.name}): {p.annotation!r}")
    lines.append("Output Type:")
    lines.append(f"  {ft.return_annotation!r}")
    lines.append("Captures:")
    captures = cf.captured_inputs
    if not captures:
        lines.append("  None")
    for value in captures:
        lines.append(f"  {id(value)}: {type_of(value)!r}")
    return "\n".join(lines)


def short_signature(cf: Any) -> str:
    """TF's `pretty_printed_signature(verbose=False)`: `(a: TensorSpec(...)) -> TensorSpec(...)`."""
    ft = function_type(cf)
    params = ", ".join(f"{p.name}: {p.annotation!r}" for p in ft.parameters.values())
    return f"({params}) -> {ft.return_annotation!r}"
