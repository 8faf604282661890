"""Tensors: eager (a numpy array) and symbolic (an output of a graph node), plus TensorSpec.

Both kinds share `Tensor`, whose Python operators are installed by `ops.operators` so that
`a + b` builds the same `AddV2` op as `jf.add(a, b)`, eagerly or in a trace.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.shapes import Dims, TensorShape, format_dims, is_compatible, merge, normalize

if TYPE_CHECKING:
    from jitflow.runtime.core.graph import Node

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"

# Set by the op registry (`runtime.ops`, a stage above): unstacks a tensor held in device
# memory with the `Unpack` op on its device, for `iter(t)`.
unstack_on_device: Callable[["EagerTensor"], Any] = lambda t: iter(())


# Filled in by `runtime.state.variables`: (variable, index, value, read_value) -> what
# `v[index].assign(value)` returns. `_slice_of` (unset on most tensors) names the slice.
SLICE_ASSIGN: Optional[Callable[[Any, Any, Any, bool], Any]] = None


class Tensor:
    """Base class of eager and symbolic tensors (`isinstance(x, jf.Tensor)`).

    >>> t = jf.constant([[1, 2], [3, 4]])
    >>> isinstance(t, jf.Tensor), t.shape, t.dtype.name
    (True, TensorShape([2, 2]), 'int32')
    """

    __slots__ = ()
    # numpy must defer to our operators: `np_array + tensor` → Tensor.__radd__.
    __array_priority__ = 100
    # Declared for the type checker; every subclass holds them in its own slots.
    _dtype: _dt.DType
    _dims: Dims
    _slice_of: Any   # (variable, index) on `v[index]`'s result; unset elsewhere

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._dims)

    def get_shape(self) -> TensorShape:
        return self.shape

    @property
    def ndim(self) -> Optional[int]:
        dims = self._dims
        return None if dims is None else len(dims)

    @property
    def assign(self) -> Callable[..., Any]:
        """Only on a slice of a variable (`v[1:].assign(...)`): write `value` into that slice of
        the variable, as TF's sliced-variable assign; other tensors have no `assign`."""
        source = getattr(self, "_slice_of", None)
        if source is None or SLICE_ASSIGN is None:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute 'assign'")
        variable, item = source
        return lambda val, name=None: SLICE_ASSIGN(variable, item, val, True)  # type: ignore[misc]  # TF's signature

    def __hash__(self):
        raise TypeError("Tensor is unhashable (== compares elementwise). "
                        "Use tensor.ref() as a dict key or set member instead.")

    def ref(self) -> "TensorRef":
        """A hashable reference to this tensor (TF's `Tensor.ref()`)."""
        return TensorRef(self)

    if TYPE_CHECKING:
        def numpy(self) -> Any: ...  # each subclass's (a symbolic tensor's raises AttributeError, as TF's)

        # installed by `runtime.ops.operators`, with the other operators (the ops sit above the core)
        def __getitem__(self, item: Any) -> "Tensor": ...


class TensorRef:
    """Hashable by identity; `.deref()` returns the tensor."""

    __slots__ = ("_tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self._tensor = tensor

    def deref(self) -> Tensor:
        return self._tensor

    def __hash__(self) -> int:
        return id(self._tensor)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TensorRef) and other._tensor is self._tensor


class EagerTensor(Tensor):
    """A concrete tensor: an immutable array with a jitflow dtype and a device.

    On the CPU the array is numpy; on a GPU it is a numba device array, and everything
    that needs the value on the host (`numpy()`, `bool()`, printing) copies it back.
    """

    __slots__ = ("_value", "_dtype", "_device", "_slice_of")

    def __init__(self, value: np.ndarray, dtype: _dt.DType, device: str = CPU0) -> None:
        # runtime/execution/_direct.c builds host tensors without calling this: keep the two in step.
        self._value = value
        self._dtype = dtype
        self._device = device

    @property
    def _dims(self):
        value = self._value
        return value.shape if value.__class__ is np.ndarray else tuple(value.shape)

    @property
    def device(self) -> str:
        return self._device

    def _host(self) -> np.ndarray:
        """The value in host memory (a copy from the device for a GPU tensor)."""
        value = self._value
        return value if value.__class__ is np.ndarray else host_array(value)

    def numpy(self):
        """The value as numpy: a fresh, writable array (as TF), or a numpy scalar / `bytes` for rank 0."""
        value = self._value
        if value.__class__ is not np.ndarray:
            value = host_array(value)
            return value[()] if value.ndim == 0 else value  # already a fresh copy
        if value.ndim == 0:
            return value[()]
        return value.copy()

    def __array__(self, dtype=None, copy=None):
        return readonly_array(self._host(), dtype, copy)

    def __len__(self) -> int:
        if self._value.ndim == 0:
            raise TypeError("len() of a scalar jf.Tensor")
        return self._value.shape[0]

    def __iter__(self):
        if self._value.ndim == 0:
            raise TypeError("iteration over a scalar jf.Tensor")
        if self._value.__class__ is not np.ndarray:  # a device array: unstack on its device
            yield from unstack_on_device(self)
            return
        for i in range(self._value.shape[0]):
            yield EagerTensor(self._value[i], self._dtype, self._device)

    def __bool__(self) -> bool:
        return bool(self._host())

    def __int__(self) -> int:
        return int(self._host())

    def __float__(self) -> float:
        return float(self._host())

    def __index__(self) -> int:
        if not self._dtype.is_integer:
            raise TypeError(f"only integer tensors can be used as an index; got dtype {self._dtype.name}")
        return int(self._host())

    def __format__(self, spec: str) -> str:
        if spec and self._value.ndim == 0:
            return format(self._host()[()], spec)
        return str(self) if not spec else format(str(self), spec)

    def __str__(self) -> str:
        text = numpy_text(self._host(), is_repr=False)
        return f"jf.Tensor({text}, shape={format_dims(self._dims)}, dtype={self._dtype.name})"

    def __repr__(self) -> str:
        text = numpy_text(self._host(), is_repr=True)
        return f"<jf.Tensor: shape={format_dims(self._dims)}, dtype={self._dtype.name}, numpy={text}>"

    def __reduce__(self):
        return (constant_from_numpy, (self._host(), self._dtype.name))


# `runtime.execution.device_memory` (a stage above, importing numba.cuda) sets itself here
# when it loads; until then no value can be a device array.
device_memory: Any = None


def host_array(value: Any) -> Any:
    """`value` in host memory: a device array is copied back (waiting for it); anything else passes.

    Uses the device-memory module only once it has loaded (it registers itself in
    `device_memory` below): without a GPU in use there are no device arrays, and nothing
    here may import numba.cuda.
    """
    if value.__class__ is np.ndarray:
        return value
    dm = device_memory
    if dm is not None and dm.is_device_array(value):
        return dm.to_host(value)
    return value


def readonly_array(value: np.ndarray, dtype=None, copy=None) -> np.ndarray:
    """`np.asarray(tensor)` without a copy, but read-only: tensors are immutable, and other
    tensors (or a variable) may share `value`. `copy=True` or a new dtype gives a writable copy."""
    if dtype is not None and np.dtype(dtype) != value.dtype:
        return value.astype(dtype)
    if copy:
        return value.copy()
    view = value.view()
    view.flags.writeable = False
    return view


def numpy_text(value: np.ndarray, is_repr: bool) -> str:
    """TF's rule: numpy's repr/str of the value, on a new line when it spans lines."""
    if value.ndim == 0:
        item = value[()]
        text = repr(item) if isinstance(item, bytes) else str(item)
    else:
        text = repr(value) if is_repr else np.array2string(value)
    return "\n" + text if "\n" in text else text


def constant_from_numpy(value: np.ndarray, dtype_name: str) -> EagerTensor:
    return EagerTensor(value, _dt.as_dtype(dtype_name))


class SymbolicTensor(Tensor):
    """The output of a node in a graph being traced; has a static shape, no value."""

    __slots__ = ("node", "index", "_dtype", "_dims", "_slice_of")

    def __init__(self, node: "Node", index: int, dims, dtype: _dt.DType) -> None:
        self.node = node
        self.index = index
        self._dims = dims
        self._dtype = dtype

    @property
    def name(self) -> str:
        return f"{self.node.name}:{self.index}"

    @property
    def op(self) -> "Node":
        return self.node

    @property
    def graph(self):
        return self.node.graph

    @property
    def device(self) -> str:
        return self.node.device

    def set_shape(self, shape: Any) -> None:
        """Refine the static shape (TF's `Tensor.set_shape`); must be compatible."""
        try:
            self._dims = merge(self._dims, normalize(shape))
        except ValueError:
            raise ValueError(f"set_shape: tensor {self.name} has shape {format_dims(self._dims)}, "
                             f"which is not compatible with {format_dims(normalize(shape))}") from None

    def numpy(self):
        # AttributeError, as TF (its graph tensors have no `numpy`): code written for TF catches it.
        raise AttributeError(f"{self.name} is a symbolic tensor of a jf.function trace and has no "
                             "value (no .numpy()). Use jf.print to see values at run time, or call "
                             ".numpy() on the function's result.")

    def __array__(self, dtype=None, copy=None):
        raise TypeError(f"Cannot convert the symbolic tensor {self.name} to a numpy array while "
                        "tracing. Use jitflow ops instead of numpy functions inside a jf.function.")

    def __bool__(self) -> bool:
        raise TypeError(f"Using the symbolic tensor {self.name} as a Python bool is not allowed "
                        "while tracing. Use jf.cond / jf.where, or let AutoGraph convert the `if`.")

    def __len__(self) -> int:
        if self._dims is None or not self._dims or self._dims[0] is None:
            raise TypeError(f"len() is not defined for {self.name} with shape "
                            f"{format_dims(self._dims)}; use jf.shape(x)[0]")
        return self._dims[0]

    def __iter__(self):
        if self._dims is None or not self._dims or self._dims[0] is None:
            raise TypeError(f"Cannot iterate over {self.name} with shape {format_dims(self._dims)} "
                            "in Python while tracing; use jf.range / a tensor loop instead.")
        for i in range(self._dims[0]):
            yield self[i]

    def __index__(self) -> int:
        raise TypeError(f"The symbolic tensor {self.name} cannot be used as a Python index while tracing.")

    def __int__(self) -> int:
        raise TypeError(f"Cannot convert the symbolic tensor {self.name} to a Python int while tracing: it "
                        "has no value yet. Keep it a tensor (jf.cast converts dtypes).")

    def __float__(self) -> float:
        raise TypeError(f"Cannot convert the symbolic tensor {self.name} to a Python float while tracing: "
                        "it has no value yet. Keep it a tensor (jf.cast converts dtypes).")

    def __str__(self) -> str:
        if self._dims is None:
            return f'Tensor("{self.name}", dtype={self._dtype.name})'
        return f'Tensor("{self.name}", shape={format_dims(self._dims)}, dtype={self._dtype.name})'

    def __repr__(self) -> str:
        return f"<jf.Tensor '{self.name}' shape={format_dims(self._dims)} dtype={self._dtype.name}>"


class TensorSpec:
    """Describes a tensor argument: `TensorSpec(shape=[None, 3], dtype=jf.float32, name="x")`.

    `shape=None` means any rank; `None` dimensions match any size.

    >>> spec = jf.TensorSpec(shape=[None, 3], dtype=jf.float32)
    >>> spec.is_compatible_with(jf.zeros([5, 3]))
    True
    """

    __slots__ = ("_dims", "_dtype", "_name")

    def __init__(self, shape: Any = None, dtype: Any = _dt.float32, name: Optional[str] = None) -> None:
        self._dims = normalize(shape)
        self._dtype = _dt.as_dtype(dtype)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"TensorSpec: name must be a str or None; got {name!r}")
        self._name = name

    @classmethod
    def from_tensor(cls, tensor: Tensor, name: Optional[str] = None) -> "TensorSpec":
        return cls(tensor._dims, tensor._dtype, name)

    @property
    def shape(self) -> TensorShape:
        return TensorShape(self._dims)

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def name(self) -> Optional[str]:
        return self._name

    def is_compatible_with(self, other: Any) -> bool:
        if isinstance(other, (Tensor, TensorSpec)):
            return other._dtype == self._dtype and is_compatible(self._dims, other._dims)
        return False

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, TensorSpec) and self._dims == other._dims
                and self._dtype == other._dtype and self._name == other._name)

    def __hash__(self) -> int:
        return hash((self._dims, self._dtype, self._name))

    def __repr__(self) -> str:
        shape = "<unknown>" if self._dims is None else format_dims(self._dims)
        return f"TensorSpec(shape={shape}, dtype={self._dtype!r}, name={self._name!r})"
