"""The direct call path of `jf.function`: a settled concrete function called with eager tensors.

A compiled graph of a few ops runs in a few hundred nanoseconds, so the Python around it
decides what a call costs. The general path (`Function._call_general`) binds arguments,
builds a nested cache key with `make_key`, looks for relaxed keys, counts calls for
tier-up, collects feeds and packs outputs: about 1.5 µs. Most training code calls a
function with the same few positional tensors again and again, and for that case all of
this collapses to: check the arguments are eager tensors, look up `(dtype, shape, ...)`
in one dict, run.

`Function.__call__` comes from `FunctionBase`: the C type in `_direct.c` when it was
built, else `PythonFunctionBase` plus a `__call__` generated per arity (`function_class`)
that does the same in Python. Each entry of a function's `_direct` table is made by
`table_entry` from one concrete function's plan (`Plan.entry`): the plan's code with the
captured values bound in and the outputs wrapped. A concrete function gets an entry only
once its tier is settled (compiled, or never compiling) and only from the general path,
after that path has chosen it for exactly these argument types, so both paths always run
the same graph. Anything unusual (keyword arguments, non-tensor arguments, a trace in
progress, a GradientTape recording, profiling on) goes to the general path.
"""
from __future__ import annotations

import functools
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import context, instrument
from jitflow.runtime.ops import registry
from jitflow.runtime.ops.registry import _wrap
from jitflow.runtime.core.tensor import CPU0, EagerTensor, SymbolicTensor

_C_ABI_VERSION = 2  # what runtime/execution/_direct.c must report; a stale build is not used


class PythonFunctionBase:
    """The base of `Function` without the C accelerator: the same fields as C's
    `FunctionBase`; the direct path itself comes from `function_class`."""

    _direct: Dict[Any, Any]
    _direct_arity: int
    _call_count: int
    _call_general: Callable[..., Any]  # defined by `Function`, the subclass

    def __new__(cls, *args: Any, **kwargs: Any) -> "PythonFunctionBase":
        self = super().__new__(cls)
        self._direct = {}          # settled concrete functions' runners by (dtype, shape, ...)
        self._direct_arity = -1    # positional parameters the direct path serves; -1: off
        self._call_count = 0
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self._call_count += 1
        return self._call_general(*args, **kwargs)


def _load_accelerator() -> Optional[type]:
    """C's FunctionBase, unless it is absent, stale, or JITFLOW_DIRECT=python asks for the
    Python path (the tests run both)."""
    if os.environ.get("JITFLOW_DIRECT", "").lower() == "python":
        return None
    try:
        import jitflow.runtime.execution._direct as _direct  # lazy: an optional C extension, absent without a compiler
    except ImportError:
        return None
    if getattr(_direct, "ABI_VERSION", None) != _C_ABI_VERSION:
        return None
    _direct.configure(EagerTensor, vars(context), vars(registry), vars(instrument), np.ndarray, CPU0)
    return _direct.FunctionBase


_accelerated_base = _load_accelerator()
ACCELERATED = _accelerated_base is not None
FunctionBase: type = _accelerated_base or PythonFunctionBase


def _compile(source: str, name: str, env: Dict[str, Any]) -> Callable:
    code = compile(source, f"<jitflow direct call: {name}>", "exec")
    exec(code, env)
    return env[name]


_classes: Dict[Tuple[type, int], type] = {}
_NOT_GIVEN = object()  # default of the generated positional parameters


def enable(function: Any, arity: int) -> None:
    """Turn the direct path on for `function` (a Function of `arity` positional parameters)."""
    function._direct_arity = arity
    if not ACCELERATED:
        function.__class__ = function_class(type(function), arity)


def function_class(base: type, arity: int) -> type:
    """Without the accelerator: a subclass of `base` (jf's Function) whose `__call__` takes
    the direct path for functions of `arity` positional parameters.

    The parameters are spelled out (`_jf_arg0_=_NOT_GIVEN, ...`), not `*args`, so the check
    and the key need no tuple unpacking; anything else goes to `base._call_general`.
    """
    cls = _classes.get((base, arity))
    if cls is None:
        params = [f"_jf_arg{i}_" for i in range(arity)]
        values = [f"x{i}" for i in range(arity)]
        checks = [f"{a}.__class__ is _ET" for a in params]
        checks += ["not rest", "not kwargs", "not _context.scopes_open", "not _registry.tape_active",
                   "not _instrument.enabled"]
        key = "".join(f"{a}._dtype, {x}.shape, " for a, x in zip(params, values))
        lines = [
            f"def __call__(self, {''.join(f'{a}=_NOT_GIVEN, ' for a in params)}*rest, **kwargs):",
            "    self._call_count += 1",
            f"    if {' and '.join(checks)}:",
        ]
        lines += [f"        {x} = {a}._value" for a, x in zip(params, values)]
        lines += [
            f"        run = self._direct.get(({key}))",
            "        if run is not None:",
            f"            return run({', '.join(values)})",
            f"    given = [a for a in ({''.join(f'{a}, ' for a in params)}) if a is not _NOT_GIVEN]",
            "    return self._call_general(*given, *rest, **kwargs)",
        ]
        env = {"_NOT_GIVEN": _NOT_GIVEN, "_context": context, "_registry": registry,
               "_instrument": instrument, "_ET": EagerTensor}
        call = _compile("\n".join(lines) + "\n", "__call__", env)
        call.__doc__ = base.__call__.__doc__
        cls = _classes[(base, arity)] = type(base.__name__, (base,), {
            "__call__": call, "__module__": base.__module__, "__qualname__": base.__qualname__,
            "__doc__": base.__doc__})
    return cls


def table_key(values: Sequence[Any]) -> Optional[Tuple]:
    """The `_direct` table's key for these argument values, or None unless all are eager tensors."""
    key: List[Any] = []
    for v in values:
        if v.__class__ is not EagerTensor:
            return None
        key += (v._dtype, v._value.shape)
    return tuple(key)


def table_entry(cf: Any) -> Any:
    """What the direct path's table holds for `cf`: a function of the argument arrays that
    runs `cf`'s current plan and returns what `cf` returns, or with the accelerator and one
    output `(function, dtype)`, the function leaving a host array for C to wrap. None when
    `cf` cannot be run this way (it captured a symbolic tensor)."""
    captured: List[Any] = []
    for value in cf._captured_values:
        if value.__class__ is EagerTensor:
            captured.append(value._value)
        elif isinstance(value, SymbolicTensor):
            return None  # the general path raises the error that explains it
        else:
            captured.append(value)  # a Variable, fed as a resource
    plan = cf._fast or cf._plan
    if cf._single:
        dtype = cf._out_dtypes[0]
        env: Dict[str, Any] = {"_nd": np.ndarray, "_ET": EagerTensor, "_wrap": _wrap, "_dtype": dtype}
        epilogue = [
            "    if _out.__class__ is _nd:",
            "        return _out" if ACCELERATED else "        return _ET(_out, _dtype)",
            "    return _wrap(_out, _dtype)",
        ]
    else:
        env = {"_pack": cf._pack, "_template": cf._template}
        outs = "(_out,)" if len(cf.outputs) == 1 else "_outs"
        epilogue = [f"    return _pack(_template, {outs})"]
    run = plan.entry(len(cf.inputs), captured, epilogue, env)
    if run is None:  # a placed (GPU) plan: call it as the general path does
        return functools.partial(_run_plan, plan, captured, cf)
    run.plan = plan  # which tier it runs, for tests and debugging
    return (run, dtype) if cf._single and ACCELERATED else run


def _run_plan(plan: Any, captured: List[Any], cf: Any, *feeds: Any) -> Any:
    outs = plan(*feeds, *captured)
    return cf._pack(cf._template, outs)
