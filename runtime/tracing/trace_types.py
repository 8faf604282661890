"""Cache keys for `jf.function` arguments, and the differences between two keys.

A key is a hashable tree built in one pass over the arguments (which also collects the
tensors to feed): tensors and numpy arrays by (dtype, shape), Python primitives by type
and value, containers by structure, every other object by identity (held weakly).
Comparing a missed key with the cached ones yields the retrace reason, e.g.
`arg 'x': shape (2, 3) → (2, 6)`.
"""
from __future__ import annotations

import abc

import weakref
from dataclasses import dataclass
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.shapes import format_dims, relax
from jitflow.runtime.core.nest import CompositeTensor, TypeSpec
from jitflow.runtime.core.tensor import EagerTensor, SymbolicTensor, Tensor, TensorSpec
from jitflow.runtime.core.shapes import is_compatible

TENSOR, PRIM, LIST, TUPLE, NAMEDTUPLE, DICT, OBJECT = "T", "P", "L", "U", "N", "D", "O"
# A composite tensor with a type spec (a SparseTensor): keyed by its spec, components fed.
COMPOSITE = "C"
_PRIMITIVES = (bool, int, float, str, bytes, type(None))


class ObjectRef:
    """Identity of an argument object, held weakly when the object allows it."""

    __slots__ = ("_id", "_ref", "_strong", "type_name", "__weakref__")

    def __init__(self, obj: Any) -> None:
        self._id = id(obj)
        self.type_name = type(obj).__name__
        try:
            self._ref: Optional[weakref.ref] = weakref.ref(obj)
            self._strong = None
        except TypeError:
            self._ref = None
            self._strong = obj  # not weak-referenceable: keep it alive so the id stays unique

    def get(self) -> Any:
        return self._strong if self._ref is None else self._ref()

    @property
    def alive(self) -> bool:
        return self._ref is None or self._ref() is not None

    def __hash__(self) -> int:
        return self._id

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ObjectRef) and other._id == self._id and self.alive and other.alive

    def describe(self) -> str:
        return f"<{self.type_name} at {self._id:#x}>"


class TraceType(abc.ABC):
    """How `jf.function` keys a Python object it traces with (TF's `tf.types.experimental.TraceType`).

    An argument whose class defines `__tf_tracing_type__(self, context)` is keyed by the
    TraceType it returns instead of by identity: two objects whose trace types are equal
    (`__eq__`, `__hash__`) share one trace.

    >>> class Fruit(TraceType):
    ...     def __init__(self, kind): self.kind = kind
    ...     def is_subtype_of(self, other): return self == other
    ...     def most_specific_common_supertype(self, others): return self if all(self == o for o in others) else None
    ...     def placeholder_value(self, placeholder_context=None): return self.kind
    ...     def __eq__(self, other): return isinstance(other, Fruit) and other.kind == self.kind
    ...     def __hash__(self): return hash(self.kind)
    >>> Fruit("apple") == Fruit("apple")
    True
    """

    @abc.abstractmethod
    def is_subtype_of(self, other: "TraceType") -> bool:
        """Whether a trace for `other` also serves values of this type."""

    @abc.abstractmethod
    def most_specific_common_supertype(self, others: Any) -> Any:
        """The narrowest type covering this one and `others` (None if there is none)."""

    @abc.abstractmethod
    def placeholder_value(self, placeholder_context: Any = None) -> Any:
        """The value the Python function sees while tracing."""

    @abc.abstractmethod
    def __eq__(self, other: Any) -> bool:
        ...

    @abc.abstractmethod
    def __hash__(self) -> int:
        ...


class TraceTypeRef:
    """An OBJECT key for an argument with `__tf_tracing_type__`: equal when the types are."""

    __slots__ = ("trace_type", "value", "type_name")

    def __init__(self, trace_type: Any, value: Any) -> None:
        self.trace_type = trace_type
        self.value = value
        self.type_name = type(value).__name__

    def get(self) -> Any:
        return self.value

    alive = True

    def __hash__(self) -> int:
        return hash(self.trace_type)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TraceTypeRef) and other.trace_type == self.trace_type

    def describe(self) -> str:
        return f"<{self.type_name} of trace type {short_repr(self.trace_type)}>"


def make_key(value: Any, leaves: List[Any]) -> Any:
    """The cache-key tree of `value`; appends tensor-like leaves (fed at call time)."""
    cls = value.__class__
    if cls is EagerTensor:  # the hot case: read the shape straight off the array
        leaves.append(value)
        return (TENSOR, value._dtype, value._value.shape)
    if cls is SymbolicTensor:
        leaves.append(value)
        return (TENSOR, value._dtype, value._dims)
    if cls in _PRIMITIVES:
        return (PRIM, cls, value)
    if cls is np.ndarray or isinstance(value, np.generic):
        arr = np.asarray(value)
        dtype = _dt.string if arr.dtype.kind in "OUS" else _dt.as_dtype(arr.dtype)
        leaves.append(value)
        return (TENSOR, dtype, arr.shape)
    if cls is TensorSpec:
        leaves.append(value)
        return (TENSOR, value._dtype, value._dims)
    if cls is list:
        return (LIST, tuple(make_key(v, leaves) for v in value))
    if cls is tuple:
        return (TUPLE, tuple(make_key(v, leaves) for v in value))
    if cls is dict:
        keys = sorted(value, key=repr)
        return (DICT, tuple(keys), tuple(make_key(value[k], leaves) for k in keys))
    if isinstance(value, tuple) and hasattr(cls, "_fields"):
        return (NAMEDTUPLE, cls, tuple(make_key(v, leaves) for v in value))
    if isinstance(value, Tensor):
        leaves.append(value)
        return (TENSOR, value._dtype, value._dims)
    if isinstance(value, CompositeTensor) and value._type_spec is not None:
        leaves.extend(value._components())
        return (COMPOSITE, value._type_spec)
    if isinstance(value, TypeSpec):  # a SparseTensorSpec in an input_signature
        leaves.extend(value._component_specs())
        return (COMPOSITE, value)
    tracing_type = getattr(value, "__tf_tracing_type__", None)
    if tracing_type is not None:
        return (OBJECT, TraceTypeRef(tracing_type(None), value))
    return (OBJECT, ObjectRef(value))


def matches(spec_key: Any, key: Any) -> bool:
    """True when every tensor in `key` fits the (possibly relaxed) shape in `spec_key`."""
    if spec_key[0] != key[0]:
        return False
    tag = spec_key[0]
    if tag == TENSOR:
        return spec_key[1] is key[1] and is_compatible(spec_key[2], key[2])
    if tag in (LIST, TUPLE):
        return len(spec_key[1]) == len(key[1]) and all(map(matches, spec_key[1], key[1]))
    if tag == NAMEDTUPLE:
        return spec_key[1] is key[1] and len(spec_key[2]) == len(key[2]) and all(map(matches, spec_key[2], key[2]))
    if tag == DICT:
        return spec_key[1] == key[1] and all(map(matches, spec_key[2], key[2]))
    if tag == "ARGS":
        return len(spec_key[1]) == len(key[1]) and all(map(matches, spec_key[1], key[1]))
    if tag == COMPOSITE:
        return spec_key[1].is_compatible_with(key[1])
    return spec_key == key


def relax_key(old: Any, new: Any) -> Any:
    """A key general enough for both: differing tensor dims become None (reduce_retracing)."""
    if old[0] != new[0]:
        return new
    tag = old[0]
    if tag == TENSOR:
        if old[1] is not new[1]:
            return new
        return (TENSOR, new[1], relax(old[2], new[2]))
    if tag in (LIST, TUPLE, "ARGS") and len(old[1]) == len(new[1]):
        return (tag, tuple(relax_key(a, b) for a, b in zip(old[1], new[1])))
    if tag == NAMEDTUPLE and old[1] is new[1] and len(old[2]) == len(new[2]):
        return (tag, new[1], tuple(relax_key(a, b) for a, b in zip(old[2], new[2])))
    if tag == DICT and old[1] == new[1]:
        return (tag, new[1], tuple(relax_key(a, b) for a, b in zip(old[2], new[2])))
    if tag == COMPOSITE:
        relaxed = old[1].most_specific_common_supertype([new[1]])
        return new if relaxed is None else (tag, relaxed)
    return new


@dataclass(frozen=True)
class ArgChange:
    """One difference between a new call's key and the closest cached key."""

    path: str          # "arg 'x'", "arg 'pair'[0]", "arg 'cfg'['lr']"
    kind: str          # "dtype", "shape", "value", "type", "object", "structure"
    old: str
    new: str
    detail: str = ""   # for "value": the Python type, e.g. "Python int"

    def __str__(self) -> str:
        if self.kind == "object":
            return f"{self.path}: new object {self.new}"
        if self.kind in ("dtype", "shape"):
            return f"{self.path}: {self.kind} {self.old} → {self.new}"
        if self.kind == "value":
            return f"{self.path}: {self.detail} {self.old} → {self.new}"
        return f"{self.path}: {self.old} → {self.new}"

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind, "old": self.old, "new": self.new,
                "detail": self.detail, "text": str(self)}


# Records must stay small whatever the arguments are: a Python value is shown by at most
# VALUE_CHARS characters, and one argument contributes at most MAX_CHANGES changes.
VALUE_CHARS = 120
MAX_CHANGES = 8
# A retrace's reason is diffed against at most this many recent traces, so its cost does not
# grow with the number of earlier traces.
CLOSEST_WINDOW = 16


def short_repr(value: Any, limit: int = VALUE_CHARS) -> str:
    """repr(value), cut to `limit` characters with the full length noted."""
    if isinstance(value, (str, bytes)) and len(value) > 4 * limit:  # do not repr megabytes
        value = value[:limit + 1]
        return repr(value)[:limit] + f"... ({type(value).__name__} cut at {limit} characters)"
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def describe(key: Any) -> str:
    tag = key[0]
    if tag == TENSOR:
        return f"{key[1].name} tensor of shape {format_dims(key[2])}"
    if tag == PRIM:
        return f"Python {key[1].__name__} {short_repr(key[2])}"
    if tag == OBJECT:
        return key[1].describe()
    if tag == COMPOSITE:
        return repr(key[1])
    if tag == LIST:
        return f"list of {len(key[1])}"
    if tag == TUPLE:
        return f"tuple of {len(key[1])}"
    if tag == NAMEDTUPLE:
        return f"{key[1].__name__} of {len(key[2])}"
    if tag == DICT:
        return f"dict with keys {list(key[1])}"
    return repr(key)


def diff(old: Any, new: Any, path: str) -> List[ArgChange]:
    """Differences between two key trees, each with the argument path where it occurs."""
    if old == new:
        return []
    if old[0] != new[0]:
        return [ArgChange(path, "type", describe(old), describe(new))]
    tag = old[0]
    if tag == TENSOR:
        changes = []
        if old[1] is not new[1]:
            changes.append(ArgChange(path, "dtype", old[1].name, new[1].name))
        if old[2] != new[2]:
            changes.append(ArgChange(path, "shape", format_dims(old[2]), format_dims(new[2])))
        return changes
    if tag == PRIM:
        if old[1] is not new[1]:
            return [ArgChange(path, "type", describe(old), describe(new))]
        return [ArgChange(path, "value", short_repr(old[2]), short_repr(new[2]), f"Python {old[1].__name__}")]
    if tag == OBJECT:
        return [ArgChange(path, "object", describe(old), describe(new))]
    if tag == COMPOSITE:
        a, b = old[1], new[1]
        if type(a) is type(b) and a.dtype == b.dtype and a.shape != b.shape:
            return [ArgChange(path, "shape", format_dims(a._dims), format_dims(b._dims))]
        return [ArgChange(path, "type", describe(old), describe(new))]
    if tag in (LIST, TUPLE) and len(old[1]) == len(new[1]):
        out: List[ArgChange] = []
        differing = 0
        for i, (a, b) in enumerate(zip(old[1], new[1])):
            if a == b:
                continue
            differing += 1
            if len(out) < MAX_CHANGES:
                out += diff(a, b, f"{path}[{i}]")
        if differing > MAX_CHANGES:
            out = out[:MAX_CHANGES] + [ArgChange(path, "value", "...", "...",
                                                 f"{differing - MAX_CHANGES} more elements changed;")]
        return out
    if tag == NAMEDTUPLE and old[1] is new[1] and len(old[2]) == len(new[2]):
        out = []
        for name, a, b in zip(old[1]._fields, old[2], new[2]):
            out += diff(a, b, f"{path}.{name}")
        return out
    if tag == DICT and old[1] == new[1]:
        out = []
        for k, a, b in zip(old[1], old[2], new[2]):
            out += diff(a, b, f"{path}[{k!r}]")
        return out
    return [ArgChange(path, "structure", describe(old), describe(new))]


def diff_args(names: Sequence[str], old: Tuple, new: Tuple) -> List[ArgChange]:
    changes: List[ArgChange] = []
    for name, a, b in zip(names, old, new):
        changes += diff(a, b, f"arg {name!r}")[:MAX_CHANGES + 1]
    return changes


def closest(names: Sequence[str], candidates: Sequence[Tuple], new: Tuple) -> Optional[List[ArgChange]]:
    """The change list against the cached key that differs least (latest wins ties).

    Only the last CLOSEST_WINDOW candidates are compared, newest first, stopping at a
    single change (nothing differs less from a key that missed the cache)."""
    best: Optional[List[ArgChange]] = None
    for old in reversed(candidates[-CLOSEST_WINDOW:]):
        changes = diff_args(names, old, new)
        if best is None or len(changes) < len(best):
            best = changes
            if len(best) <= 1:
                break
    return best


def key_to_spec(key: Any, name: Optional[str] = None) -> Any:
    """Rebuild the structured signature (TensorSpecs and Python values) from a key."""
    tag = key[0]
    if tag == TENSOR:
        return TensorSpec(key[2], key[1], name)
    if tag == PRIM:
        return key[2]
    if tag == LIST:
        return [key_to_spec(k) for k in key[1]]
    if tag == TUPLE:
        return tuple(key_to_spec(k) for k in key[1])
    if tag == NAMEDTUPLE:
        return key[1](*[key_to_spec(k) for k in key[2]])
    if tag == DICT:
        return {k: key_to_spec(v) for k, v in zip(key[1], key[2])}
    if tag == OBJECT:
        return key[1].get()
    if tag == COMPOSITE:
        return key[1]
    return key
