"""`jf.Variable`: mutable state shared between eager code and traced functions.

A variable holds a numpy array that is *replaced* on assignment, never written in
place, so a tensor read earlier keeps its value (TF's copy-on-write semantics). In a
graph a variable is a captured resource: `ReadVariableOp` reads it and
`AssignAddVariableOp` & co. update it each time the graph runs.

With a GPU visible a new variable lives on it (or on the device of the enclosing
`jf.device` scope), as in TF: it then holds a device array, and its ops run there.
"""
from __future__ import annotations

import threading
from typing import Any, Optional, cast

import numpy as np

from jitflow.runtime.core import context, devices
from jitflow.runtime.state import variable_options as _variable_options
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import FailedPreconditionError, InvalidArgumentError
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor, to_numpy
from jitflow.runtime.ops import array_ops, operators, registry
from jitflow.runtime.core import tensor as _tensor
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.shapes import TensorShape, format_dims, is_compatible
from jitflow.runtime.core.tensor import (CPU0, EagerTensor, SymbolicTensor, Tensor, TensorRef, host_array,
                                         numpy_text, readonly_array)
from jitflow.runtime.ops.registry import KERNELS, kernel_attrs
from jitflow.runtime.execution import placement

_creation_hooks: list = []  # called with each new variable (jf.function enforces its rule)


def _read_infer(specs, attrs):
    return [(attrs["_shape"], attrs["dtype"])]


def _read_kernel(var, dtype):
    mirrors = var._mirrors
    value = var._value if mirrors is None else mirrors.read(var)
    if value is None:
        raise FailedPreconditionError(
            f"variable {var.name} is read before it was initialised: it is initialised from a "
            "function argument on the first run of the function that created it")
    return value


def _assign_infer(specs, attrs):
    dims, dtype = specs[1]
    if dtype is not attrs["dtype"]:
        raise TypeError(f"cannot assign a value of dtype {dtype.name} to a variable of dtype "
                        f"{attrs['dtype'].name}; use jf.cast")
    if not is_compatible(attrs["_shape"], dims):
        raise InvalidArgumentError(f"cannot assign a value of shape {format_dims(dims)} to a variable "
                                   f"of shape {format_dims(attrs['_shape'])}")
    return []


def _initialize_kernel(var, value, dtype):
    if var._value is None:
        var._value = np.asarray(value, dtype=dtype.as_numpy_dtype)


def _assign_kernel(var, value, dtype):
    var._replace(np.asarray(value, dtype=dtype.as_numpy_dtype))


def _assign_add_kernel(var, value, dtype):
    var._replace(np.asarray(var._value + value, dtype=dtype.as_numpy_dtype))


def _assign_sub_kernel(var, value, dtype):
    var._replace(np.asarray(var._value - value, dtype=dtype.as_numpy_dtype))


register("ReadVariableOp", _read_infer, cpu=_read_kernel, public_name="Variable.read_value")
register("AssignVariableOp", _assign_infer, cpu=_assign_kernel, public_name="Variable.assign",
         stateful=True)
register("InitializeVariableOp", _assign_infer, cpu=_initialize_kernel,
         public_name="Variable.__init__", stateful=True)
register("AssignAddVariableOp", _assign_infer, cpu=_assign_add_kernel,
         public_name="Variable.assign_add", stateful=True)
register("AssignSubVariableOp", _assign_infer, cpu=_assign_sub_kernel,
         public_name="Variable.assign_sub", stateful=True)


def _slice_assign_infer(specs, attrs):
    dims, dtype = specs[1]
    if dtype is not attrs["dtype"]:
        raise TypeError(f"cannot assign a value of dtype {dtype.name} to a slice of a variable of dtype "
                        f"{attrs['dtype'].name}; use jf.cast")
    (target,), = [s[0] for s in array_ops._slice_infer([(attrs["_shape"], dtype)], {"index": attrs["index"]})],
    if target is not None and dims is not None and not is_compatible(target, dims):
        try:
            known = [tuple(1 if d is None else d for d in s) for s in (dims, target)]
            np.broadcast_shapes(*known)
        except ValueError:
            raise InvalidArgumentError(f"cannot assign a value of shape {format_dims(dims)} to a slice of "
                                       f"shape {format_dims(target)}") from None
    return []


def _slice_assign_kernel(var, value, *dynamic, index, dtype):
    key = array_ops._slice_kernel(None, *dynamic, index=index, _key_only=True)
    current = host_array(var._value)
    updated = np.array(current, copy=True)
    try:
        updated[key] = value
    except ValueError as e:
        raise InvalidArgumentError(f"cannot assign a value of shape {np.shape(value)} to the slice "
                                   f"{key} of variable {var.name}: {e}") from None
    var._replace(placement.place_value(updated, var._device_name) if devices.active else updated)


register("ResourceStridedSliceAssign", _slice_assign_infer, cpu=_slice_assign_kernel,
         public_name="Variable.__getitem__(...).assign", stateful=True)


def _evaluate_outside_graph(t: SymbolicTensor, depth: int = 0):
    """The value of `t` if it depends on no function input (TF lifts such initialisers).

    Lets `jf.Variable(jf.zeros([3]))` or `jf.Variable(jf.random.normal([2, 2]))` work inside
    a function's first trace: the initialiser runs once, eagerly.
    """
    node = t.node
    if node.op.tf_op in ("Placeholder",) or depth > 64:
        return None
    args = []
    for inp in node.inputs:
        value = _evaluate_outside_graph(inp, depth + 1)
        if value is None:
            return None
        args.append(value)
    result = KERNELS["cpu"][node.op.tf_op](*args, **kernel_attrs(node.attrs))
    if len(node.outputs) > 1:
        result = result[t.index]
    return np.asarray(result, dtype=t._dtype.as_numpy_dtype)


class Variable(TensorConvertible):
    """A mutable tensor (TF's `tf.Variable`).

    >>> v = Variable(1.0)
    >>> _ = v.assign_add(2.0)
    >>> v.numpy()
    np.float32(3.0)
    """

    _captured_as_resource = True  # graphs capture a variable as a resource placeholder
    _uid_lock = threading.Lock()
    _device_name = CPU0
    _mirrors: Any = None   # state.mirrors.Mirrors: copies on other devices (MirroredStrategy over GPUs)
    _version = 0           # bumped by every update, so stale mirror copies are refreshed
    # A host ndarray, a device array (duck-typed like one), or None until the graph assigns a
    # pending symbolic initial value.
    _value: Any

    def __new__(cls, *args: Any, **kwargs: Any) -> "Variable":
        # `jf.Variable(...)` makes a ResourceVariable, as `tf.Variable(...)` does in TF 2.
        return object.__new__(ResourceVariable if cls is Variable else cls)

    def __init__(self, initial_value: Any = None, trainable: bool = True, validate_shape: bool = True,
                 caching_device: Any = None, name: Optional[str] = None, variable_def: Any = None,
                 dtype: Any = None, import_scope: Any = None, constraint: Any = None,
                 synchronization: Any = None, aggregation: Any = None, shape: Any = None,
                 experimental_enable_variable_lifting: bool = True) -> None:
        self._synchronization = _variable_options.check_synchronization(synchronization)
        self._aggregation = _variable_options.check_aggregation(aggregation)
        if constraint is not None and not callable(constraint):
            raise ValueError(f"constraint: expected a callable (value -> projected value) or None; got {constraint!r}")
        self._constraint = constraint
        if variable_def is not None:
            raise ValueError("variable_def: building a variable from a VariableDef proto is TF 1 graph "
                             "API; pass initial_value instead")
        if initial_value is None:
            raise ValueError("initial_value: a jf.Variable needs an initial value")
        if callable(initial_value) and not isinstance(initial_value, (Tensor, TensorConvertible)):
            initial_value = initial_value()
        scope = context.current_scope()
        pending = None  # a symbolic initial value the graph assigns on its first run
        if isinstance(initial_value, SymbolicTensor) and _evaluate_outside_graph(initial_value) is None:
            pending = initial_value
            if dtype is not None and _dt.as_dtype(dtype) is not pending._dtype:
                pending = cast(SymbolicTensor, apply("Cast", [pending], {"DstT": _dt.as_dtype(dtype),
                                                                           "SrcT": pending._dtype})[0])  # traced
            dims = pending._dims
            if dims is None or any(d is None for d in dims):
                raise ValueError(f"initial_value: {initial_value.name} has shape {format_dims(dims)}; "
                                 "a variable initialised from a function argument needs a fully known shape")
            value_dtype, value_shape, value = pending._dtype, dims, None
        else:
            with context.init_scope():
                value = self._initial_array(initial_value, dtype)
            value_dtype = _dt.string if value.dtype == object else _dt.as_dtype(value.dtype)
            value_shape = value.shape
        self._dtype = _dt.as_dtype(dtype) if dtype is not None else value_dtype
        if shape is None and not validate_shape:
            shape = TensorShape(None)
        self._shape = value_shape if shape is None else TensorShape(shape).dims
        if not is_compatible(self._shape, value_shape):
            raise ValueError(f"shape: initial value has shape {format_dims(value_shape)}, "
                             f"incompatible with shape={format_dims(self._shape)}")
        if devices.active:  # a GPU may be visible: live where TF would put the variable
            self._device_name = placement.variable_device(self._dtype)
            value = placement.place_value(value, self._device_name)
        self._value = value
        self._trainable = bool(trainable)
        base = name if name is not None else "Variable"
        if not isinstance(base, str):
            raise TypeError(f"name: expected a str; got {name!r}")
        self._name = f"{scope}{base}:0"
        for hook in _creation_hooks:
            hook(self)
        if pending is not None:
            apply("InitializeVariableOp", [self, pending], {"dtype": self._dtype, "_shape": self._shape})

    @staticmethod
    def _initial_array(initial_value: Any, dtype: Any) -> np.ndarray:
        dt = _dt.as_dtype(dtype) if dtype is not None else None
        if isinstance(initial_value, Variable):
            initial_value = host_array(initial_value._value)
        if isinstance(initial_value, SymbolicTensor):
            folded = _evaluate_outside_graph(initial_value)
            if folded is not None:
                return folded if dt is None else folded.astype(dt.as_numpy_dtype)
            raise ValueError(
                f"initial_value: {initial_value.name} is a symbolic tensor of a jf.function trace. "
                "A variable created inside a function must be initialised from constants or values "
                "computed outside it; create it before the function, or in __init__ of a jf.Module.")
        if isinstance(initial_value, EagerTensor):
            arr = initial_value._host()
            if dt is not None and dt is not initial_value._dtype:
                arr = arr.astype(dt.as_numpy_dtype)
            return arr
        return to_numpy(initial_value, dt)

    # -- properties ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._shape)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def device(self) -> str:
        return self._device_name

    @property
    def ndim(self) -> Optional[int]:
        return len(self._shape) if self._shape is not None else None

    @property
    def _dims(self):
        return self._shape

    def _replace(self, value: np.ndarray) -> None:
        if not is_compatible(self._shape, value.shape):
            raise InvalidArgumentError(f"cannot assign a value of shape {format_dims(value.shape)} to "
                                       f"variable {self._name} of shape {format_dims(self._shape)}")
        self._value = value
        self._version += 1

    # -- reading ------------------------------------------------------------------------
    def numpy(self):
        value = self._value
        if value is None:
            _read_kernel(self, self._dtype)
        if value.__class__ is not np.ndarray:  # on a GPU: the copy back is fresh already
            value = host_array(value)
            return value[()] if value.ndim == 0 else value
        return value[()] if value.ndim == 0 else value.copy()

    def read_value(self) -> Tensor:
        if context._state.graph is None and not registry.tape_active:
            mirrors = self._mirrors
            if mirrors is not None:  # a copy per device: the one on this thread's device
                device = mirrors.device_for_read(self)
                return EagerTensor(mirrors.value_on(self, device), self._dtype, device)
            return EagerTensor(_read_kernel(self, self._dtype), self._dtype, self._device_name)
        return apply("ReadVariableOp", [self], {"dtype": self._dtype, "_shape": self._shape},
                     name="ReadVariableOp")[0]

    value = read_value

    def _as_tensor(self, dtype: Optional[_dt.DType] = None) -> Tensor:
        if dtype is not None and dtype is not self._dtype:
            raise TypeError(f"Variable {self._name} has dtype {self._dtype.name}, not {dtype.name}")
        return self.read_value()

    def __array__(self, dtype=None, copy=None):
        value = self._value
        if value is None:
            _read_kernel(self, self._dtype)
        return readonly_array(host_array(value), dtype, copy)  # writing to it must not change the variable

    # -- writing ------------------------------------------------------------------------
    def _update(self, op: str, value: Any, read_value: bool):
        """Run the update; return what TF returns.

        With `read_value` (the default), an `UnreadVariable`: a handle on this variable that
        reads it when used, not now (TF's `_UnreadVariable`). Without it, None eagerly, and
        in a trace the update's graph node (TF returns the `Operation`).
        """
        v = convert_to_tensor(value, dtype_hint=self._dtype)
        graph = context._state.graph
        apply(op, [self, v], {"dtype": self._dtype, "_shape": self._shape}, name=op)
        if read_value:
            return _UnreadVariable(self, in_graph=graph is not None)
        if graph is not None and graph.nodes and graph.nodes[-1].op.tf_op == op:
            return graph.nodes[-1]
        return None

    def assign(self, value: Any, use_locking: bool = False, name: Optional[str] = None,
               read_value: bool = True):
        return self._update("AssignVariableOp", value, read_value)

    def assign_add(self, delta: Any, use_locking: bool = False, name: Optional[str] = None,
                   read_value: bool = True):
        return self._update("AssignAddVariableOp", delta, read_value)

    def assign_sub(self, delta: Any, use_locking: bool = False, name: Optional[str] = None,
                   read_value: bool = True):
        return self._update("AssignSubVariableOp", delta, read_value)

    @property
    def aggregation(self):
        """How replicas' updates combine (`jf.VariableAggregation`); one replica here."""
        return self._aggregation

    @property
    def synchronization(self):
        """When replicas synchronise (`jf.VariableSynchronization`); one replica here."""
        return self._synchronization

    @property
    def constraint(self):
        """The projection an optimizer applies after each update (None: none)."""
        return self._constraint

    # -- display ------------------------------------------------------------------------
    def __repr__(self) -> str:
        value = self._value
        if value is None:
            return (f"<jf.Variable '{self._name}' shape={format_dims(self._shape)} "
                    f"dtype={self._dtype.name}, (uninitialised)>")
        return (f"<jf.Variable '{self._name}' shape={format_dims(value.shape)} "
                f"dtype={self._dtype.name}, numpy={numpy_text(host_array(value), is_repr=True)}>")

    def __str__(self) -> str:
        return repr(self)

    def __hash__(self) -> int:
        return id(self)

    def __bool__(self) -> bool:
        return bool(host_array(self._value))

    def __len__(self) -> int:
        value = self._value
        if value.__class__ is np.ndarray or value.ndim == 0:
            return len(value)
        return value.shape[0]

    def __int__(self) -> int:
        return int(host_array(self._value))

    def __float__(self) -> float:
        return float(host_array(self._value))

    def __index__(self) -> int:
        return int(host_array(self._value))

    def ref(self) -> TensorRef:
        """A hashable reference, `.deref()` giving the variable back (TF's `Variable.ref()`).

        >>> v = Variable(1.0)
        >>> {v.ref(): "one"}[v.ref()], v.ref().deref() is v
        ('one', True)
        """
        return TensorRef(self)  # type: ignore[arg-type]

    experimental_ref = ref

    @property
    def initial_value(self) -> Any:
        """Not available when executing eagerly, as in TF 2 (it is a TF 1 graph-mode property)."""
        raise RuntimeError("This property is not supported when eager execution is enabled.")

    @property
    def _shared_resource(self) -> "Variable":
        """The variable owning the state (an `UnreadVariable` answers the one it reads)."""
        return self


operators.install(Variable)
# `__eq__` is elementwise, so Variables keep identity hashing explicitly.
Variable.__hash__ = lambda self: id(self)  # type: ignore[method-assign]


def _getitem(self: Variable, item: Any) -> Tensor:
    """`v[item]`: the slice's value, a tensor that also has `.assign(...)` (TF's sliced assign)."""
    out = array_ops.getitem(self.read_value(), item)
    out._slice_of = (self._shared_resource, item)
    return out


def _assign_slice(variable: Variable, item: Any, value: Any, read_value: bool) -> Any:
    """`v[item].assign(value)`: TF's ResourceStridedSliceAssign; returns what `v.assign` returns."""
    spec, dynamic = array_ops._index_spec(item)
    v = convert_to_tensor(value, dtype_hint=variable._dtype)
    graph = context._state.graph
    apply("ResourceStridedSliceAssign", [variable, v] + dynamic,
          {"index": spec, "dtype": variable._dtype, "_shape": variable._shape}, name="StridedSliceAssign")
    if read_value:
        return _UnreadVariable(variable, in_graph=graph is not None)
    if graph is not None and graph.nodes and graph.nodes[-1].op.tf_op == "ResourceStridedSliceAssign":
        return graph.nodes[-1]
    return None


# after `operators.install(Variable)`, which gives every tensor-like class the plain read-then-index
Variable.__getitem__ = _getitem  # type: ignore[method-assign,assignment,misc]
_tensor.SLICE_ASSIGN = _assign_slice


class ResourceVariable(Variable):
    """The class of every `jf.Variable(...)` (TF 2's `ResourceVariable`); `isinstance(v, jf.Variable)`.

    >>> type(Variable(1.0)).__name__
    'ResourceVariable'
    """


class _UnreadVariable(Variable):
    """What `assign`, `assign_add` and `assign_sub` return: the variable, read when used.

    TF's `_UnreadVariable`: a variable-like handle sharing the assigned variable's state. It
    prints as `<jf.Variable 'UnreadVariable' ...>`, converts to a tensor holding the
    variable's value *at the time it is used* (a later assign shows), and can be assigned
    again (chained `.assign(...)` updates the original variable).

    >>> v = Variable(1.0)
    >>> r = v.assign(2.0)
    >>> r
    <jf.Variable 'UnreadVariable' shape=() dtype=float32, numpy=2.0>
    >>> _ = v.assign(5.0)
    >>> float(r + 1.0)
    6.0
    >>> _ = r.assign_add(1.0)
    >>> v.numpy()
    np.float32(6.0)
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> "_UnreadVariable":
        return object.__new__(cls)

    def __init__(self, parent: Variable, in_graph: bool = False) -> None:  # noqa: D107 - see class
        self._parent = parent._shared_resource
        self._in_graph = in_graph

    # Everything but the name is the assigned variable's: its state, dtype, shape, options.
    @property
    def _shared_resource(self) -> Variable:  # type: ignore[override]
        return self._parent

    @property  # type: ignore[override]
    def _value(self) -> Any:
        return self._parent._value

    @_value.setter
    def _value(self, value: Any) -> None:
        self._parent._value = value

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "_parent":
            raise AttributeError(attr)
        return getattr(self._parent, attr)

    @property
    def name(self) -> str:
        return "UnreadVariable"

    @property
    def device(self) -> str:
        return self._parent.device

    @property
    def _device_name(self) -> str:  # type: ignore[override]
        return self._parent._device_name

    def read_value(self) -> Tensor:
        # Read through this handle, not the variable: as TF's, such a read does not make a
        # tape watch the variable (it counts only where the variable is watched already).
        parent = self._parent
        if context._state.graph is None and not registry.tape_active:
            return EagerTensor(_read_kernel(parent, parent._dtype), parent._dtype, parent._device_name)
        return apply("ReadVariableOp", [self], {"dtype": parent._dtype, "_shape": parent._shape},
                     name="ReadVariableOp")[0]

    value = read_value

    def _update(self, op: str, value: Any, read_value: bool):
        return self._parent._update(op, value, read_value)

    def __repr__(self) -> str:
        if self._in_graph or context._state.graph is not None:
            return (f"<jf.Variable 'UnreadVariable' shape={format_dims(self._parent._shape)} "
                    f"dtype={self._parent._dtype.name}>")
        return self._parent.__repr__().replace(f"'{self._parent._name}'", "'UnreadVariable'", 1)
