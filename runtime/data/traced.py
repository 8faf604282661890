"""User functions of `map`/`filter` traced once into a concrete `jf.function`, as TF does.

The function is traced when the transformation is created (so errors show up at
`ds.map(f)`, not at the first element) with the input element's specs as its signature;
AutoGraph converts its Python control flow. Each element then runs the traced graph on
plain arrays: no Python of the user's runs per element (a `print` inside runs once, at
trace time, exactly as in TF). The graph runs safely from several threads at once.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from jitflow.runtime.core import instrument
from jitflow.runtime.tracing.autograph_ops import converted_call
from jitflow.runtime.tracing.function import function
from jitflow.runtime.ops import registry
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.core.tensor import EagerTensor, TensorSpec
from jitflow.runtime.data import structure as _s
from jitflow.runtime.sparse.sparse_tensor import SparseTensor


def _as_value(v: Any) -> Any:
    return v if isinstance(v, SparseTensor) else convert_to_tensor(v)


class TracedFunction:
    """`fn` over elements of `template`, as a concrete function of the flat leaves."""

    def __init__(self, fn: Callable, template: Any, what: str, *, unpack_tuples: bool = True) -> None:
        if not callable(fn):
            raise TypeError(f"{what}: expected a callable; got {type(fn).__name__}")
        if _s.has_datasets(template):
            raise TypeError(f"{what}: the elements are datasets (from window or group_by_window); use flat_map "
                            "or interleave, whose function receives the datasets in Python")
        self.what = what
        self.out_template: Any = None
        in_specs = [TensorSpec(s._dims, s._dtype) for s in _s.spec_leaves(template)]
        unpack = unpack_tuples and isinstance(template, tuple) and not hasattr(template, "_fields")

        def flat_fn(flat):
            args = _s.pack(template, list(flat))
            result = converted_call(fn, tuple(args) if unpack else (args,), {})
            converted = _s.map_structure(_as_value, result, lists_are_structure=True)
            tensors = _s.flatten(converted)
            if not tensors:
                raise ValueError(f"{what}: {getattr(fn, '__name__', fn)} returned no tensors")
            self.out_template = _s.map_structure(_s.spec_of, converted)
            return list(tensors)

        name = getattr(fn, "__name__", type(fn).__name__).replace("<lambda>", "lambda")
        flat_fn.__name__ = f"Dataset_{what}_{name}"
        self.function = function(flat_fn, input_signature=[in_specs], autograph=False)
        self.concrete = self.function.get_concrete_function()
        self.out_dtypes = [t._dtype for t in self.concrete.outputs]
        self._in_dtypes = [t._dtype for t in self.concrete.inputs]
        self._captures = [v._value if v.__class__ is EagerTensor else v for v in self.concrete.captured_inputs]

    def __call__(self, flat: Sequence[np.ndarray]) -> tuple:
        cf = self.concrete
        if cf._compile_state == "pending" or instrument.enabled or registry.tape_active:
            # The general path: counts calls (to tier up to the compiled plan) and reports
            # graph runs to a listening profiler.
            outs = cf._call_flat([EagerTensor(a, d) for a, d in zip(flat, self._in_dtypes)])
            return tuple(o._value if o.__class__ is EagerTensor else np.asarray(o._value) for o in outs)
        plan = cf._fast or cf._plan  # settled: run the plan on the arrays directly
        try:
            outs = plan.run(*flat, *self._captures)
        except Exception as exc:
            plan._annotate(exc)
            raise
        return tuple(o if o.__class__ is np.ndarray else np.asarray(o) for o in outs)


def fold(dataset: Any, initial_state: Any, reduce_func: Callable) -> Any:
    """`Dataset.reduce`: `state = reduce_func(state, element)` over all elements, traced once."""
    state_template, state, state_dtypes = _s.to_arrays(initial_state, "initial_state")
    fn = TracedFunction(reduce_func, (state_template, dataset._template), "reduce")
    out_specs = _s.spec_leaves(fn.out_template)
    if [s._dtype for s in out_specs] != state_dtypes:
        raise TypeError(f"reduce_func: must return the state's structure and dtypes "
                        f"{[d.name for d in state_dtypes]}; got {[s._dtype.name for s in out_specs]}")
    for spec, arr in zip(out_specs, state):
        if spec._dims != arr.shape:
            raise ValueError(f"reduce_func: the state changed shape from {list(arr.shape)} to {spec.shape}; "
                             "jitflow's reduce keeps the state's shape fixed")
    flat_state = tuple(state)
    for element in dataset._iter_flat():
        flat_state = fn(flat_state + tuple(element))
    return _s.to_tensors(state_template, flat_state, state_dtypes)
