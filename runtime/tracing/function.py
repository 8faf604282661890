"""`jf.function`: trace a Python function into graphs, one per input signature.

The state machine is TF's:
  call → key from the arguments → cached ConcreteFunction? run it : trace, cache, run.
Keys and retrace reasons come from `trace_types`; every trace publishes a
`TraceRecord`. Variables may be created only during the first trace: a function that
creates variables is traced a second time with creation forbidden (as TF does), which
is what makes the `if self.v is None:` pattern work and `inner_var` fail (seed 000).
"""
from __future__ import annotations

import bisect
import functools
import inspect
import itertools
import os
import sys
import threading
import time
import types
import warnings
import weakref
from collections import Counter, deque
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, cast

import numpy as np

from jitflow.runtime.autodiff import tape as autodiff
from jitflow.runtime.execution import config as _config
from jitflow.runtime.tracing import autograph, autograph_ops, trace_types
from jitflow.runtime.tracing import function_type as _function_type
from jitflow.runtime.execution import compiler, direct_call, numpy_tier
from jitflow.runtime.core import context, instrument
from jitflow.runtime.tracing import trace_records as _records
from jitflow.runtime.core import traceback_filter as _tb
from jitflow.runtime.state import variables as _variables
from jitflow.runtime.core.errors import InputSignatureError
from jitflow.runtime.execution.executor import Plan
from jitflow.runtime.core.graph import Graph
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor, to_numpy
from jitflow.runtime.ops import registry
from jitflow.runtime.ops.registry import _wrap, apply, register
from jitflow.runtime.core.shapes import format_dims, is_compatible
from jitflow.runtime.core.tensor import EagerTensor, SymbolicTensor, Tensor, TensorSpec
from jitflow.runtime.core.nest import CompositeTensor, TypeSpec
from jitflow.runtime.tracing.trace_types import (COMPOSITE, TENSOR, ArgChange, closest, key_to_spec, make_key,
                                                 matches, relax_key)
from jitflow.runtime.tracing.trace_types import describe
from jitflow.runtime.ops.array_ops import identity
from jitflow.runtime.ops.constant_op import constant

RETRACE_WARNING_TRACES = 5
RETRACE_WARNING_WINDOW = 10
_SETTLED = ("compiled", "never", "failed")  # tiers that will not change by themselves

_function_ids = itertools.count(1)
_concrete_ids = itertools.count(1)
_code_traces: Counter = Counter()     # code object -> Function objects that traced it
_code_warned: set = set()

# Frames in the runtime itself (and its generated code) are skipped when finding the user's call site.
_PACKAGE_DIRS = (os.path.dirname(os.path.abspath(__file__)) + os.sep, "<jitflow")


# -- variable-creation policy during traces ------------------------------------------
class _TraceFrame:
    __slots__ = ("function", "allow_variables", "created")

    def __init__(self, function: "Function", allow_variables: bool) -> None:
        self.function = function
        self.allow_variables = allow_variables
        self.created: List[Any] = []


_frames = threading.local()


def _frame_stack() -> List[_TraceFrame]:
    stack = getattr(_frames, "stack", None)
    if stack is None:
        stack = _frames.stack = []
    return stack


def _on_variable_created(var: Any) -> None:
    stack = _frame_stack()
    if not stack:
        return
    for frame in stack:
        if not frame.allow_variables:
            raise ValueError(
                f"jf.function {frame.function._name!r} created the variable {var.name} on a trace "
                "after its first one. A jf.function may create variables only on its first call "
                "(like tf.function), because later calls reuse graphs instead of running Python. "
                "Create the variable outside the function (e.g. in a jf.Module's __init__), or "
                "guard the creation: `if self.v is None: self.v = jf.Variable(...)`.")
    for frame in stack:
        frame.created.append(var)


_variables._creation_hooks.append(_on_variable_created)


# -- helpers -----------------------------------------------------------------------------
class _Out:
    """Marks the place of graph output `index` inside the structured outputs."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class _CompositeOut:
    """A composite result (a SparseTensor): its spec and the places of its components."""

    __slots__ = ("spec", "parts")

    def __init__(self, spec: Any, parts: List[Any]) -> None:
        self.spec = spec
        self.parts = parts


def _call_site() -> str:
    frame: Optional[types.FrameType] = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRS):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"


def _source_of(fn: Callable) -> str:
    fn = inspect.unwrap(getattr(fn, "__func__", fn))
    code = getattr(fn, "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{code.co_filename}:{code.co_firstlineno}"


def _feed_value(leaf: Any) -> Any:
    """The array fed to a placeholder for an argument leaf."""
    if leaf.__class__ is EagerTensor:
        return leaf._value
    if isinstance(leaf, np.ndarray):
        # Copy, as TF converts numpy arguments to tensors: outputs must not alias the caller's array.
        return leaf.copy() if leaf.dtype.kind not in "US" else to_numpy(leaf)
    if isinstance(leaf, np.generic):
        return np.asarray(leaf)
    if isinstance(leaf, SymbolicTensor):
        raise TypeError(f"{leaf.name} is a symbolic tensor of another trace and cannot be fed eagerly")
    raise TypeError(f"cannot feed {type(leaf).__name__} to a graph")


def _capture_value(value: Any) -> Any:
    if value.__class__ is EagerTensor:
        return value._value
    if isinstance(value, SymbolicTensor):
        raise TypeError(f"this function captured {value.name} from an enclosing trace; call it inside "
                        "that trace, not eagerly")
    return value  # a Variable, fed as a resource


# -- ConcreteFunction ----------------------------------------------------------------------
class ConcreteFunction:
    """One traced graph for one input signature; callable with tensors.

    `graph` is the traced Graph; `structured_input_signature` is `(args, kwargs)` of
    TensorSpecs and Python values; `structured_outputs` mirrors what the Python function
    returned, with symbolic tensors.

    >>> @jf.function
    ... def double(x):
    ...     return x * 2
    >>> cf = double.get_concrete_function(jf.TensorSpec([None], jf.float32))
    >>> cf(jf.constant([1.0, 2.0])).numpy()
    array([2., 4.], dtype=float32)
    """

    def __init__(self, graph: Graph, function: "Function", key: Tuple, placeholders: List[SymbolicTensor],
                 output_template: Any, structured_outputs: Any) -> None:
        self.graph = graph
        self.function = function
        self._key = key
        self.name = f"__inference_{function._name}_{next(_concrete_ids)}"
        self.inputs = list(placeholders)
        self._captures = graph.captured_inputs()
        self._captured_values = [value for value, _ in self._captures]
        self._template = output_template
        self.structured_outputs = structured_outputs
        self.outputs = list(graph.outputs)
        self._out_dtypes = [t._dtype for t in graph.outputs]
        self._single = isinstance(output_template, _Out)
        self._interpreter: Optional[Plan] = None  # built on first use (see `_plan`)
        self._numpy_plan: Optional[Plan] = None  # the interpreter on numpy kernels while numba loads
        self._numpy_tried = False
        self._fast: Optional[Plan] = None   # the compiled tier, once ready
        self._compile_state = "pending"    # pending → compiling → compiled | failed | never
        self._compile_done = threading.Event()  # set when a compile (background or not) has finished
        self.compile_seconds: Optional[float] = None
        self._param_names = function._param_names
        self._param_keys = key[1]
        self.calls = 0

    # -- signature ----------------------------------------------------------------
    @property
    def structured_input_signature(self) -> Tuple[tuple, dict]:
        args, kwargs = [], {}
        for param, sub in zip(self.function._params, self._param_keys):
            spec = key_to_spec(sub, param.name)
            if param.kind == param.KEYWORD_ONLY:
                kwargs[param.name] = spec
            elif param.kind == param.VAR_POSITIONAL:
                args.extend(spec)
            elif param.kind == param.VAR_KEYWORD:
                kwargs.update(spec)
            else:
                args.append(spec)
        return tuple(args), kwargs

    @property
    def captured_inputs(self) -> list:
        return list(self._captured_values)

    @property
    def variables(self) -> tuple:
        return tuple(v for v in self._captured_values if isinstance(v, _variables.Variable))

    trainable_variables = property(lambda self: tuple(v for v in self.variables if v.trainable))

    def pretty_printed_signature(self, verbose: bool = True) -> str:
        """TF's format: the Input Parameters / Output Type / Captures block (verbose), or
        `(x: TensorSpec(...)) -> TensorSpec(...)`."""
        return _function_type.verbose_signature(self) if verbose else _function_type.short_signature(self)

    @property
    def function_type(self) -> "_function_type.FunctionType":
        """Parameters with their type constraints, and the output type (TF's `FunctionType`)."""
        return _function_type.function_type(self)

    @property
    def inference_fn(self) -> "ConcreteFunction":
        """The function that runs the forward graph (TF's AtomicFunction); here, this one."""
        return self

    def __str__(self) -> str:
        return "ConcreteFunction " + self.pretty_printed_signature(verbose=True)

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.pretty_printed_signature(verbose=False)} at {id(self):#X}>"

    # -- calling --------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self._call_flat(self._bind_call(args, kwargs))
        except Exception as e:
            raise _tb.filtered(e)  # noqa: B904 -- re-raises `e` itself (traceback trimmed)

    def _bind_call(self, args: tuple, kwargs: dict) -> List[Any]:
        """Match a direct call against the traced signature; only tensor arguments are passed."""
        tensor_params = [(name, sub) for name, sub in zip(self._param_names, self._param_keys)
                         if _has_tensors(sub)]
        expected = ", ".join(name for name, _ in tensor_params) or "no arguments"
        if len(args) > len(tensor_params):
            raise InputSignatureError(f"{self.function._name}: this concrete function takes {len(tensor_params)} "
                            f"tensor argument(s) ({expected}) but {len(args)} positional were given")
        given: Dict[str, Any] = {}
        for (name, _), value in zip(tensor_params, args):
            given[name] = value
        for name, value in kwargs.items():
            if name in given:
                raise InputSignatureError(f"{self.function._name}: got multiple values for argument {name!r}")
            if name not in dict(tensor_params):
                raise InputSignatureError(f"{self.function._name}: unexpected keyword argument {name!r}; this "
                                f"concrete function takes {expected}")
            given[name] = value
        leaves: List[Any] = []
        for name, sub in tensor_params:
            if name not in given:
                raise InputSignatureError(f"{self.function._name}: missing tensor argument {name!r} "
                                f"(this concrete function takes {expected})")
            _match_structure(sub, given[name], f"argument {name!r}", self.function._name, leaves)
        return leaves

    def _call_flat(self, leaves: Sequence[Any]) -> Any:
        if registry.tape_active and autodiff._state.tapes:
            # Under a GradientTape, run the graph op by op so the tape sees every op.
            inputs = [leaf if isinstance(leaf, Tensor) else convert_to_tensor(leaf) for leaf in leaves]
            inlined = inline_graph(self.graph, self.inputs + [ph for _, ph in self._captures],
                                   inputs + self._captured_values, self.outputs)
            return self._pack_symbolic(self._template, inlined)
        if context._state.graph is not None:
            return self._call_in_graph(leaves)
        self.calls += 1
        if self._compile_state == "pending":
            self._tier_up()
        feeds = [leaf._value if leaf.__class__ is EagerTensor else _feed_value(leaf) for leaf in leaves]
        if self._captured_values:
            feeds.extend(_capture_value(v) for v in self._captured_values)
        if instrument.enabled:  # timed on the tier that runs (see instrument.exact_ops)
            start = time.perf_counter_ns()
            outs, timings = (self._plan if instrument.exact_ops or self._fast is None else self._fast).run_timed(feeds)
            sink = instrument.sink()
            if sink is not None:
                sink.graph_run(self, timings, start, time.perf_counter_ns(), threading.get_ident())
        else:
            plan = self._fast or self._plan
            try:
                outs = plan.run(*feeds)
            except Exception as exc:
                plan._annotate(exc)
                raise
        if self._single:
            return _wrap(outs[0], self._out_dtypes[0])
        return self._pack(self._template, outs)

    @property
    def _plan(self) -> Plan:
        """The per-op interpreter plan, built on first use: a function compiled up front
        (or loaded from the disk cache) never pays for building it unless it is profiled.

        In a process that has not loaded numba yet, the first plan runs on numpy kernels with
        the numba kernels' exact results (`numpy_tier`), and the numba plan replaces it as
        soon as a background thread has loaded numba and the kernels (`_kernels_ready`)."""
        plan = self._interpreter
        if plan is None:
            plan = self._numpy_plan
            if plan is None and not self._numpy_tried:
                self._numpy_tried = True
                plan = self._numpy_plan = numpy_tier.first_plan(
                    self.graph, self.inputs + [ph for _, ph in self._captures], self.graph.outputs,
                    self._kernels_ready)
            if plan is None:
                plan = self._interpreter = Plan(self.graph, self.inputs + [ph for _, ph in self._captures],
                                                self.graph.outputs)
        return plan

    def _kernels_ready(self, plan: Plan) -> None:
        """The numba-kernel interpreter plan, from `numpy_tier`'s loader thread: used from the next call."""
        self._interpreter = plan
        self._numpy_plan = None
        self.function._direct.clear()  # runners bound to the numpy plan are rebuilt on the next call

    # -- tiers: interpreter first, compiled when it pays off ----------------------------
    def _tier_up(self) -> None:
        mode = self.function._jit_compile
        if mode is None:
            policy = compiler.DEFAULT_POLICY
            mode = True if policy == "compiled" else False if policy == "interpreter" else None
        if mode is False:
            self._compile_state = "never"
        elif mode is True:
            self._compile_state = "compiling"
            self._compile()
        elif self.calls >= compiler.COMPILE_AFTER_CALLS:
            self._compile_state = "compiling"
            self._compile_done.clear()
            threading.Thread(target=self._compile, name=f"jitflow-compile-{self.name}", daemon=True).start()

    def compile(self) -> Optional[Plan]:
        """Compile now (normally automatic); returns the compiled plan, or None if it failed.
        A compile already running in the background is waited for, not repeated."""
        if self._compile_state == "compiling" and not self._compile_done.is_set():
            self._compile_done.wait()
        if self._compile_state not in ("compiled", "failed"):
            self._compile_state = "compiling"
            self._compile_done.clear()
            self._compile()
        return self._fast

    def _compile(self) -> None:
        try:
            self._compile_plan()
        finally:
            self._compile_done.set()

    def _compile_plan(self) -> None:
        start = time.perf_counter_ns()
        try:
            plan = compiler.compile_plan(self.graph, self.inputs + [ph for _, ph in self._captures],
                                         self.graph.outputs)
        except Exception as e:  # never let compilation break a working function
            self._compile_state = "failed"
            if instrument.enabled:
                instrument.runtime_event("jitflow.compile", start, time.perf_counter_ns(), function=self.name,
                                         result="failed", error=str(e)[:200])
            if not isinstance(e, compiler.CompileError) or "no node" not in str(e):
                node = getattr(e, "node", None)
                where = f" at node {node.name!r} ({node.op.tf_op})" if node is not None else ""
                warnings.warn(f"jf.function {self.function._qualname}: compiling the graph failed{where}; "
                              f"it keeps running on the interpreter. ({e})", CompileWarning,
                              stacklevel=_tb.user_stacklevel())
            return
        self.compile_seconds = plan.compile_seconds
        _records.registry.compiled(self.name, plan.compile_seconds)
        self._fast = plan
        self._compile_state = "compiled"
        if instrument.enabled:  # compiled, or loaded from the disk cache: its own event, never an op's
            end = time.perf_counter_ns()
            instrument.runtime_event("jitflow.cache_load" if plan.loaded_from_cache else "jitflow.compile", start,
                                     end, function=self.name, segments=len(plan.segments),
                                     fused_ops=sum(len(s.nodes) for s in plan.segments))
            instrument.runtime_event("jitflow.tier_up", end, end, function=self.name, tier="compiled",
                                     after_calls=self.calls)
        self.function._direct.clear()  # runners bound to the interpreter plan are rebuilt on the next call

    @property
    def tier(self) -> str:
        """"compiled" when the numba tier is running this function, else "interpreter"."""
        return "compiled" if self._fast is not None else "interpreter"

    def _pack(self, template: Any, outs: Sequence[Any]) -> Any:
        if isinstance(template, _Out):
            return _wrap(outs[template.index], self._out_dtypes[template.index])
        if isinstance(template, _CompositeOut):
            return template.spec._from_components([self._pack(t, outs) for t in template.parts])
        if isinstance(template, list):
            return [self._pack(t, outs) for t in template]
        if isinstance(template, tuple):
            packed = [self._pack(t, outs) for t in template]
            return type(template)(*packed) if hasattr(template, "_fields") else tuple(packed)
        if isinstance(template, dict):
            return {k: self._pack(v, outs) for k, v in template.items()}
        return template

    def _call_in_graph(self, leaves: Sequence[Any]) -> Any:
        inputs = [leaf if isinstance(leaf, Tensor) else convert_to_tensor(leaf) for leaf in leaves]
        inputs += self._captured_values
        outs = apply("StatefulPartitionedCall", inputs, {"f": self}, name="StatefulPartitionedCall")
        return self._pack_symbolic(self._template, outs)

    def _pack_symbolic(self, template: Any, outs: List[Tensor]) -> Any:
        if isinstance(template, _Out):
            return outs[template.index]
        if isinstance(template, _CompositeOut):
            return template.spec._from_components([self._pack_symbolic(t, outs) for t in template.parts])
        if isinstance(template, list):
            return [self._pack_symbolic(t, outs) for t in template]
        if isinstance(template, tuple):
            packed = [self._pack_symbolic(t, outs) for t in template]
            return type(template)(*packed) if hasattr(template, "_fields") else tuple(packed)
        if isinstance(template, dict):
            return {k: self._pack_symbolic(v, outs) for k, v in template.items()}
        return template


def _has_tensors(key: Any) -> bool:
    tag = key[0]
    if tag == TENSOR:
        return True
    if tag in ("L", "U"):
        return any(_has_tensors(k) for k in key[1])
    if tag == "N":
        return any(_has_tensors(k) for k in key[2])
    if tag == "D":
        return any(_has_tensors(k) for k in key[2])
    return tag == COMPOSITE


def _match_structure(key: Any, value: Any, path: str, fname: str, leaves: List[Any]) -> None:
    """Validate `value` against the key tree; append converted tensor leaves."""
    tag = key[0]
    if tag == TENSOR:
        leaves.append(_conform(value, TensorSpec(key[2], key[1]), path, fname))
    elif tag in ("L", "U"):
        if not isinstance(value, (list, tuple)) or len(value) != len(key[1]):
            raise InputSignatureError(f"{fname}: {path} expected a sequence of {len(key[1])}; got {value!r}")
        for i, (k, v) in enumerate(zip(key[1], value)):
            _match_structure(k, v, f"{path}[{i}]", fname, leaves)
    elif tag == "N":
        for name, k, v in zip(key[1]._fields, key[2], value):
            _match_structure(k, v, f"{path}.{name}", fname, leaves)
    elif tag == "D":
        if not isinstance(value, dict) or sorted(value, key=repr) != list(key[1]):
            raise InputSignatureError(f"{fname}: {path} expected a dict with keys {list(key[1])}; got {value!r}")
        for k, sub in zip(key[1], key[2]):
            _match_structure(sub, value[k], f"{path}[{k!r}]", fname, leaves)
    elif tag == COMPOSITE:
        spec = key[1]
        given = getattr(value, "_type_spec", None)
        if given is None or not spec.is_compatible_with(given):
            raise InputSignatureError(f"{fname}: {path} expected a value of {spec!r}; got {value!r}")
        for i, (part, part_spec) in enumerate(zip(value._components(), spec._component_specs())):
            leaves.append(_conform(part, part_spec, f"{path} component {i}", fname))


def _describe_value(value: Any) -> str:
    if isinstance(value, TensorConvertible):  # a variable: its value's dtype and shape
        value = value._as_tensor()
    if isinstance(value, Tensor):
        return f"a tensor of dtype {value.dtype.name} and shape {format_dims(value._dims)}"
    if isinstance(value, np.ndarray):
        return f"a numpy array of dtype {value.dtype} and shape {format_dims(value.shape)}"
    return f"{type(value).__name__} {value!r}"


def _conform(value: Any, spec: TensorSpec, path: str, fname: str) -> Any:
    """`value` as a tensor matching `spec`, or an InputSignatureError naming both sides."""
    if isinstance(value, TensorConvertible):
        value = value._as_tensor()
    if not isinstance(value, Tensor):
        try:
            value = convert_to_tensor(value, dtype_hint=spec._dtype)
        except (TypeError, ValueError) as e:
            raise InputSignatureError(f"{fname}: {path} expected {spec!r}; got {_describe_value(value)} "
                                      f"that cannot be converted ({e})") from None
    if value._dtype is not spec._dtype or not is_compatible(spec._dims, value._dims):
        what = "dtype" if value._dtype is not spec._dtype else "shape"
        raise InputSignatureError(
            f"{fname}: {path} expected {spec!r}; got {_describe_value(value)} (the {what} does not "
            f"match). Convert the argument (e.g. jf.cast) or trace another concrete function.")
    return value


# -- Function ----------------------------------------------------------------------------
_eager_mode = _config.eager_mode  # jf.config.run_functions_eagerly


class Function(direct_call.FunctionBase):
    """A polymorphic traced function: holds one ConcreteFunction per input signature.

    Create with `@jf.function` / `jf.function(fn, input_signature=...)`.

    >>> @jf.function
    ... def f(x):
    ...     return x + 1
    >>> f(jf.constant(1)).numpy()
    np.int32(2)
    >>> len(f.list_concrete_functions())
    1
    """

    def __init__(self, python_function: Callable, name: Optional[str] = None,
                 input_signature: Optional[Sequence[Any]] = None, autograph: bool = True,
                 jit_compile: Optional[bool] = None, reduce_retracing: bool = False,
                 _bound_to: Any = None) -> None:
        if not callable(python_function):
            raise TypeError(f"jf.function: expected a callable; got {type(python_function).__name__}")
        functools.update_wrapper(self, python_function)
        self._python_function = python_function
        self._name = name if name else getattr(python_function, "__name__", type(python_function).__name__)
        self._qualname = getattr(inspect.unwrap(getattr(python_function, "__func__", python_function)),
                                 "__qualname__", self._name)
        self._autograph = autograph
        self._jit_compile = jit_compile
        self._reduce_retracing = reduce_retracing
        self._bound_to = _bound_to
        sig = inspect.signature(python_function)
        self._signature = sig
        self._params = list(sig.parameters.values())
        self._param_names = [p.name for p in self._params]
        self._simple = all(p.kind == p.POSITIONAL_OR_KEYWORD for p in self._params)
        self._n_params = len(self._params)
        self._input_signature = self._check_signature(input_signature)
        self._cache: Dict[Tuple, ConcreteFunction] = {}
        # The direct path (see direct_call): FunctionBase holds `_direct`, the settled
        # concrete functions' runners by argument (dtype, shape)s, `_direct_arity` (-1: off)
        # and `_call_count`.
        if self._simple and self._input_signature is None:
            direct_call.enable(self, self._n_params)
        self._relaxed: List[Tuple[Tuple, ConcreteFunction]] = []
        self._concretes: List[ConcreteFunction] = []
        self._signature_cf: Optional[ConcreteFunction] = None
        self._first_trace_done = False
        self._lock = threading.RLock()
        self._instances: "weakref.WeakKeyDictionary[Any, Function]" = weakref.WeakKeyDictionary()
        self._instances_by_id: Dict[int, Tuple[Any, Function]] = {}
        self._id = next(_function_ids)
        self.tracing_count = 0
        self._trace_calls: deque = deque(maxlen=RETRACE_WARNING_WINDOW)
        self._warned = False
        _eager_mode.functions.add(self)

    def _check_signature(self, input_signature: Optional[Sequence[Any]]):
        if input_signature is None:
            return None
        if not isinstance(input_signature, (list, tuple)):
            raise TypeError(f"input_signature: expected a list or tuple of jf.TensorSpec; got "
                            f"{type(input_signature).__name__}")
        flat: List[TensorSpec] = []

        def walk(spec: Any) -> None:
            if isinstance(spec, TensorSpec):
                flat.append(spec)
            elif isinstance(spec, TypeSpec):  # a composite's spec (jf.SparseTensorSpec)
                flat.extend(spec._component_specs())
            elif isinstance(spec, (list, tuple)):
                for s in spec:
                    walk(s)
            elif isinstance(spec, dict):
                for s in spec.values():
                    walk(s)
            else:
                raise TypeError(f"input_signature: every entry must be a jf.TensorSpec or jf.SparseTensorSpec "
                                f"(or a nested list/tuple/dict of them); got {spec!r}")
        walk(list(input_signature))
        positional = [p for p in self._params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(input_signature) > len(positional) and not any(
                p.kind == p.VAR_POSITIONAL for p in self._params):
            raise TypeError(f"input_signature: {self._name} takes {len(positional)} positional "
                            f"argument(s) but the signature has {len(input_signature)} entries")
        return tuple(input_signature)

    # -- descriptor: one trace cache per instance ---------------------------------------------
    def __get__(self, instance: Any, owner: Any = None) -> "Function":
        if instance is None:
            return self
        try:
            bound = self._instances.get(instance)
        except TypeError:  # unhashable or not weak-referenceable instance
            entry = self._instances_by_id.get(id(instance))
            bound = entry[1] if entry is not None and entry[0] is instance else None
            if bound is None:
                bound = self._bind_to(instance)
                self._instances_by_id[id(instance)] = (instance, bound)
            return bound
        if bound is None:
            bound = self._bind_to(instance)
            try:
                self._instances[instance] = bound
            except TypeError:
                self._instances_by_id[id(instance)] = (instance, bound)
        return bound

    def _bind_to(self, instance: Any) -> "Function":
        method = types.MethodType(self._python_function, instance)
        bound = Function(method, name=self._name, input_signature=self._input_signature,
                         autograph=self._autograph, jit_compile=self._jit_compile,
                         reduce_retracing=self._reduce_retracing, _bound_to=instance)
        bound._qualname = self._qualname
        return bound

    # -- public API -----------------------------------------------------------------------
    @property
    def python_function(self) -> Callable:
        return self._python_function

    @property
    def input_signature(self):
        return self._input_signature

    @property
    def function_id(self) -> int:
        return self._id

    def experimental_get_tracing_count(self) -> int:
        return self.tracing_count

    def list_concrete_functions(self) -> List[ConcreteFunction]:
        """Every concrete function traced so far, oldest first."""
        with self._lock:
            return list(self._concretes)

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The concrete function for these arguments (TensorSpecs allowed), tracing if needed."""
        try:
            return self._get_concrete_unfiltered(*args, **kwargs)
        except Exception as e:
            raise _tb.filtered(e)  # noqa: B904 -- re-raises `e` itself (traceback trimmed)

    def _get_concrete_unfiltered(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        if self._input_signature is not None:
            if args or kwargs:
                self._bind_signature(args, kwargs)  # validates
            return self._signature_function(reason=_records.SIGNATURE)
        values = self._bind(args, kwargs)
        leaves: List[Any] = []
        key = ("ARGS", tuple([make_key(v, leaves) for v in values]))
        with self._lock:
            cf = self._cache.get(key) or self._find_relaxed(key)
            if cf is None:
                cf = self._trace_new(key, values, leaves, serve=False)
        return cf

    # Calling: FunctionBase.__call__ counts the call and takes the direct path when it can,
    # else calls `_call_general`.
    def _call_general(self, *args: Any, **kwargs: Any) -> Any:
        """A call the direct path did not take; errors keep only the user's frames (traceback_filter)."""
        try:
            return self._call_unfiltered(*args, **kwargs)
        except Exception as e:
            raise _tb.filtered(e)  # noqa: B904 -- re-raises `e` itself (traceback trimmed)

    def _call_unfiltered(self, *args: Any, **kwargs: Any) -> Any:
        """Bind, key, find or trace, run."""
        cf: Optional[ConcreteFunction]
        if _eager_mode.on:  # jf.config.run_functions_eagerly(True): plain Python, for debugging
            return self._python_function(*args, **kwargs)
        if self._input_signature is not None:
            leaves = self._bind_signature(args, kwargs)
            cf = self._signature_cf or self._signature_function(_records.FIRST_CALL)
            return cf._call_flat(leaves)
        if self._simple and not kwargs and len(args) == self._n_params:
            values = args
        else:
            values = self._bind(args, kwargs)
        leaves = []
        key = ("ARGS", tuple([make_key(v, leaves) for v in values]))
        cf = self._cache.get(key)
        if cf is None:
            with self._lock:
                cf = self._cache.get(key) or self._find_relaxed(key)
                if cf is None:
                    served = self._trace_new(key, values, leaves, serve=True)
                    if isinstance(served, _Served):
                        return served.result
                    cf = served
        result = cf._call_flat(leaves)
        # (the direct path is unused while tracing)
        if self._direct_arity >= 0 and cf._compile_state in _SETTLED and not instrument.enabled:
            self._enable_direct(values, cf)
        return result

    def _enable_direct(self, values: tuple, cf: ConcreteFunction) -> None:
        """Let later calls with these argument types go straight to `cf` (see direct_call)."""
        if _eager_mode.on:
            return
        key = direct_call.table_key(values)
        if key is not None and key not in self._direct:
            on_numpy = cf._numpy_plan is not None and cf._fast is None
            entry = direct_call.table_entry(cf)
            if entry is not None:
                self._direct[key] = entry
                if on_numpy and cf._numpy_plan is None:  # numba's plan arrived meanwhile (`_kernels_ready`)
                    self._direct.clear()

    def __repr__(self) -> str:
        return f"<jf.Function {self._qualname} ({self.tracing_count} traces)>"

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        """Every traced signature in TF's printed format, separated by blank lines.

        >>> import jitflow as jf
        >>> f = jf.function(lambda x: x)
        >>> _ = f(jf.constant(1.0))
        >>> print(f.pretty_printed_concrete_signatures())  # doctest: +NORMALIZE_WHITESPACE
        Input Parameters:
          x (POSITIONAL_OR_KEYWORD): TensorSpec(shape=(), dtype=jf.float32, name=None)
        Output Type:
          TensorSpec(shape=(), dtype=jf.float32, name=None)
        Captures:
          None
        """
        with self._lock:
            concretes = list(self._concretes)
        return "\n\n".join(cf.pretty_printed_signature(verbose) for cf in concretes)

    # -- binding --------------------------------------------------------------------------
    def _bind(self, args: tuple, kwargs: dict) -> tuple:
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self._name}(): {e}") from None
        bound.apply_defaults()
        return tuple(bound.arguments[name] for name in self._param_names)

    def _bind_signature(self, args: tuple, kwargs: dict) -> List[Any]:
        values = self._bind(args, kwargs)
        signature = self._input_signature
        leaves: List[Any] = []
        for i, (param, value) in enumerate(zip(self._params, values)):
            path = f"argument {param.name!r}"
            if i >= len(signature):
                if value is not param.default:
                    raise TypeError(f"{self._name}: {path} is not covered by input_signature "
                                    f"({len(signature)} entries); only the signature's arguments may "
                                    "be passed")
                continue
            _match_structure(make_key(signature[i], []), value, path, self._name, leaves)
        return leaves

    def _signature_function(self, reason: str) -> ConcreteFunction:
        with self._lock:
            if self._signature_cf is None:
                specs = list(self._input_signature)
                leaves: List[Any] = []
                values = tuple(specs[i] if i < len(specs) else p.default for i, p in enumerate(self._params))
                key = ("ARGS", tuple(make_key(v, leaves) for v in values))
                self._signature_cf = self._trace(key, values, leaves, reason, (), allow_variables=True)
                if self._signature_cf.graph.variables_created:
                    self._concretes.remove(self._signature_cf)
                    self._signature_cf = self._trace(key, values, leaves, _records.VARIABLE_LIFTING, (),
                                                     allow_variables=False)
                self._cache[key] = self._signature_cf
            return self._signature_cf

    # -- tracing ---------------------------------------------------------------------------
    def _find_relaxed(self, key: Tuple) -> Optional[ConcreteFunction]:
        for relaxed_key, cf in reversed(self._relaxed):
            if matches(relaxed_key, key):
                self._cache[key] = cf
                return cf
        return None

    def _trace_new(self, key: Tuple, values: tuple, leaves: List[Any], serve: bool):
        """Trace for a missed key, choosing the reason and the variable-creation rule."""
        changes: Tuple[ArgChange, ...] = ()
        recursive = any(frame.function is self for frame in _frame_stack())  # f calling itself by name
        if not self._concretes and not self._first_trace_done and not recursive:
            code = getattr(inspect.unwrap(self._python_function), "__code__", None)
            if self._bound_to is None and code is not None and _code_traces[code] > 0:
                reason = _records.NEW_FUNCTION_OBJECT
            else:
                reason = _records.FIRST_CALL
            if code is not None and self._bound_to is None:
                _code_traces[code] += 1
        else:
            reason = _records.RETRACE
            previous = [cf._key[1] for cf in self._concretes[-trace_types.CLOSEST_WINDOW:]]
            changes = tuple(closest(self._param_names, previous, key[1]) or ())
        trace_key = key
        if self._reduce_retracing and self._concretes:
            trace_key = relax_key(self._concretes[-1]._key, key)
        first = not self._first_trace_done
        cf = self._trace(trace_key, values, leaves, reason, changes, allow_variables=first)
        self._first_trace_done = True
        if first and cf.graph.variables_created:
            if any(v._value is None for v in cf.graph.variables_created):
                # An initial value depends on this call's arguments: run the creating graph once
                # (it initialises the variables); later calls trace again without creation.
                return _Served(cf._call_flat(leaves))
            self._concretes.remove(cf)   # the creating graph is never served: not a concrete function
            cf = self._trace(trace_key, values, leaves, _records.VARIABLE_LIFTING, (), allow_variables=False)
        self._cache[key] = cf
        if trace_key is not key:
            self._relaxed.append((trace_key, cf))
        self._maybe_warn()
        return cf

    def _trace(self, key: Tuple, values: tuple, leaves: List[Any], reason: str,
               changes: Tuple[ArgChange, ...], allow_variables: bool) -> ConcreteFunction:
        start = time.perf_counter()
        outer = context.current_graph()
        graph = Graph(self._name, outer=outer)
        frame = _TraceFrame(self, allow_variables)
        stack = _frame_stack()
        stack.append(frame)
        try:
            with graph.as_default():
                placeholders: List[SymbolicTensor] = []
                structured = [self._placeholders(graph, v, sub, p.name, placeholders)
                              for v, sub, p in zip(values, key[1], self._params)]
                args, kwargs = self._rebuild_call(structured)
                result = self._call_python(args, kwargs)
                template, outputs = self._collect_outputs(graph, result)
            graph.outputs = outputs
        finally:
            stack.pop()
        graph.variables_created = frame.created
        graph.inputs = list(placeholders)
        cf = ConcreteFunction(graph, self, key, placeholders, template, result)
        self._concretes.append(cf)
        self.tracing_count += 1
        self._trace_calls.append(self._call_count)
        elapsed = time.perf_counter() - start
        record = _records.TraceRecord(
            function=self._qualname, function_id=self._id, source=_source_of(self._python_function),
            call_site=_call_site(), key=self._describe_key(key), trace_number=self.tracing_count,
            trace_seconds=elapsed, reason_kind=reason, changes=changes,
            advice=_records.advice_for(changes, reason, self._qualname, self._reduce_retracing),
            graph_name=cf.name, num_nodes=len(graph.nodes), calls_so_far=self._call_count)
        _records.track_calls(self)
        _records.registry.publish(record)
        return cf

    def _call_python(self, args: list, kwargs: dict) -> Any:
        fn = self._python_function
        if self._autograph and autograph_ops._convertible(fn) is not None:
            try:
                fn = autograph.convert(fn)
            except autograph_ops.ConversionError as e:
                warnings.warn(f"AutoGraph could not convert {self._qualname}, so it runs as plain Python "
                              f"while tracing (tensor `if`/loops will fail): {e}", stacklevel=_tb.user_stacklevel())
        return fn(*args, **kwargs)

    def _describe_key(self, key: Tuple) -> str:
        parts = []
        for name, sub in zip(self._param_names, key[1]):
            parts.append(f"{name}={describe(sub)}")
        return ", ".join(parts)

    def _placeholders(self, graph: Graph, value: Any, key: Any, name: str, out: List[SymbolicTensor]) -> Any:
        tag = key[0]
        if tag == TENSOR:
            ph_name = value._name if isinstance(value, TensorSpec) and value._name else name
            ph = graph.add_placeholder(key[2], key[1], ph_name)
            out.append(ph)
            return ph
        if tag in ("L", "U"):
            items = [self._placeholders(graph, v, k, name, out) for v, k in zip(value, key[1])]
            return items if tag == "L" else tuple(items)
        if tag == "N":
            return key[1](*[self._placeholders(graph, v, k, name, out) for v, k in zip(value, key[2])])
        if tag == "D":
            return {k: self._placeholders(graph, value[k], sub, name, out) for k, sub in zip(key[1], key[2])}
        if tag == COMPOSITE:
            parts = []
            for i, spec in enumerate(key[1]._component_specs()):
                ph = graph.add_placeholder(spec._dims, spec._dtype, name if i == 0 else f"{name}_{i}")
                out.append(ph)
                parts.append(ph)
            return key[1]._from_components(parts)
        return value

    def _rebuild_call(self, values: List[Any]) -> Tuple[list, dict]:
        args: list = []
        kwargs: dict = {}
        for param, value in zip(self._params, values):
            if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                args.append(value)
            elif param.kind == param.VAR_POSITIONAL:
                args.extend(value)
            elif param.kind == param.KEYWORD_ONLY:
                kwargs[param.name] = value
            else:
                kwargs.update(value)
        return args, kwargs

    def _collect_outputs(self, graph: Graph, result: Any) -> Tuple[Any, List[SymbolicTensor]]:
        outputs: List[SymbolicTensor] = []

        def walk(value: Any) -> Any:
            if value is None:
                return None
            if isinstance(value, (Tensor, TensorConvertible)) or isinstance(value, (np.ndarray, np.generic)):
                tensor = convert_to_tensor(value)
                if not (isinstance(tensor, SymbolicTensor) and tensor.node.graph is graph):
                    tensor = identity(tensor)
                outputs.append(tensor)
                return _Out(len(outputs) - 1)
            if isinstance(value, (bool, int, float, str, bytes)):
                outputs.append(cast(SymbolicTensor, convert_to_tensor(value)))  # a constant of the graph
                return _Out(len(outputs) - 1)
            if isinstance(value, CompositeTensor) and value._type_spec is not None:
                return _CompositeOut(value._type_spec, [walk(c) for c in value._components()])
            if isinstance(value, list):
                return [walk(v) for v in value]
            if isinstance(value, tuple):
                items = [walk(v) for v in value]
                return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            raise TypeError(
                f"{self._name} returned {type(value).__name__} {value!r}; a jf.function may return "
                "tensors, variables, numpy arrays, Python numbers/strings, None, and lists, tuples "
                "or dicts of those.")
        return walk(result), outputs

    def _maybe_warn(self) -> None:
        code = getattr(inspect.unwrap(self._python_function), "__code__", None)
        if (code is not None and self._bound_to is None and _code_traces[code] >= RETRACE_WARNING_TRACES
                and code not in _code_warned):
            _code_warned.add(code)
            warnings.warn(
                f"{_code_traces[code]} separate jf.function objects have traced {self._qualname}: the "
                "function object is created again and again (e.g. jf.function(...) inside a loop), so "
                "no graph is ever reused. Define the jf.function once and call it repeatedly.",
                RetraceWarning, stacklevel=_tb.user_stacklevel())
            return
        if self._warned:
            return
        window_start = self._call_count - RETRACE_WARNING_WINDOW
        recent = len(self._trace_calls) - bisect.bisect_right(self._trace_calls, window_start)  # sorted
        if recent >= RETRACE_WARNING_TRACES:
            self._warned = True
            common = _most_common_change(self._id)
            advice = ""
            for record in reversed(_records.registry.records()):
                if record.function_id == self._id and record.advice:
                    advice = record.advice
                    break
            warnings.warn(
                f"jf.function {self._qualname} traced {recent} times in its last "
                f"{min(self._call_count, RETRACE_WARNING_WINDOW)} calls, which is expensive. Most "
                f"frequent reason: {common or 'unknown'}. {advice}", RetraceWarning, stacklevel=_tb.user_stacklevel())


class _Served:
    """A first call already answered by running the variable-creating graph."""

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        self.result = result


class RetraceWarning(UserWarning):
    """A jf.function retraces often; the message names the argument and the fix.

    >>> issubclass(jf.RetraceWarning, UserWarning)
    True
    """


class CompileWarning(UserWarning):
    """Compiling a graph failed; the function keeps running on the interpreter."""


def _most_common_change(function_id: int) -> Optional[str]:
    counts: Counter = Counter()
    example: Dict[tuple, str] = {}
    for record in _records.registry.records():
        if record.function_id != function_id:
            continue
        for change in record.changes:
            group = (change.path, change.kind)
            counts[group] += 1
            example[group] = str(change)
    if not counts:
        return None
    group, n = counts.most_common(1)[0]
    kind = {"value": "Python value changes", "shape": "shape changes", "dtype": "dtype changes",
            "object": "new object each call", "type": "type changes", "structure": "structure changes"}
    return f"{group[0]} ({kind.get(group[1], group[1])}, {n}x; latest: {example[group]})"


# -- inlining (how gradients flow through function calls and control flow) ----------------
def inline_graph(graph: Graph, feeds: Sequence[SymbolicTensor], values: Sequence[Any],
                 outputs: Sequence[SymbolicTensor]) -> List[Any]:
    """Replay `graph`'s nodes through `apply` on `values` (eagerly or into the current graph).

    Conditionals and loops whose predicates are concrete are unrolled into their branch
    and body graphs, so every primitive op is visible to gradient tapes.
    """
    env: Dict[Tuple[int, int], Any] = {}
    for ph, value in zip(feeds, values):
        env[(id(ph.node), 0)] = value
    for node in graph.nodes:
        op = node.op.tf_op
        if op == "Placeholder":
            continue
        args = [env[(id(t.node), t.index)] for t in node.inputs]
        if op == "Const":
            outs = [constant(node.attrs["value"], node.attrs["dtype"])]
        elif op == "If" and isinstance(args[0], EagerTensor):
            n_then = node.attrs["n_then"]
            branch, caps = ((node.attrs["then_branch"], args[1:1 + n_then]) if bool(args[0])
                            else (node.attrs["else_branch"], args[1 + n_then:]))
            outs = inline_graph(branch.graph, [ph for _, ph in branch.captures], caps, branch.outputs)
        elif op == "While" and all(isinstance(a, EagerTensor) for a in args[:node.attrs["n_vars"]]):
            outs = _inline_while(node, args)
        else:
            outs = apply(op, args, node.attrs)
        for i, value in enumerate(outs):
            env[(id(node), i)] = value
    return [env[(id(t.node), t.index)] for t in outputs]


def _inline_while(node: Any, args: List[Any]) -> List[Any]:
    n_vars, n_cond = node.attrs["n_vars"], node.attrs["n_cond"]
    cond, body = node.attrs["cond"], node.attrs["body"]
    values = list(args[:n_vars])
    cond_caps, body_caps = args[n_vars:n_vars + n_cond], args[n_vars + n_cond:]
    limit = node.attrs["maximum_iterations"]
    i = 0
    while limit is None or i < limit:
        (go,) = inline_graph(cond.graph, cond.inputs + [ph for _, ph in cond.captures],
                             values + list(cond_caps), cond.outputs)
        if not bool(go):
            break
        values = inline_graph(body.graph, body.inputs + [ph for _, ph in body.captures],
                              values + list(body_caps), body.outputs)
        i += 1
    return values


# -- the call op (a function called from a function) ----------------------------------------
def _call_infer(specs, attrs):
    f: ConcreteFunction = attrs["f"]
    return [(t._dims, t._dtype) for t in f.outputs]


def _call_kernel(*feeds, f):
    if instrument.enabled:  # a function called from a function: record its nodes too
        start = time.perf_counter_ns()
        outs, timings = (f._plan if instrument.exact_ops or f._fast is None else f._fast).run_timed(feeds)
        sink = instrument.sink()
        if sink is not None:
            sink.graph_run(f, timings, start, time.perf_counter_ns(), threading.get_ident())
    else:
        outs = (f._fast or f._plan)(*feeds)
    return outs[0] if len(outs) == 1 else outs


register("StatefulPartitionedCall", _call_infer, cpu=_call_kernel, public_name="function call",
         stateful=True)


# -- decorator ---------------------------------------------------------------------------
def function(func: Optional[Callable] = None, input_signature: Optional[Sequence[Any]] = None,
             autograph: bool = True, jit_compile: Optional[bool] = None, reduce_retracing: bool = False,
             experimental_relax_shapes: Optional[bool] = None, name: Optional[str] = None):
    """Compile a Python function into graphs (TF's `tf.function`).

    >>> @function
    ... def double(a):
    ...     return a + a
    >>> double(2).numpy()
    np.int32(4)
    """
    relax = reduce_retracing or bool(experimental_relax_shapes)

    def decorate(fn: Callable) -> Function:
        return Function(fn, name=name, input_signature=input_signature, autograph=autograph,
                        jit_compile=jit_compile, reduce_retracing=relax)
    if func is not None:
        return decorate(func)
    return decorate


__all__ = ["function", "Function", "ConcreteFunction", "RetraceWarning"]
