"""Static shapes with unknown dimensions (`None`) and unknown rank, as in TF.

Internally a shape is a plain tuple of ints/None, or None for unknown rank: cheap to
hash and compare on the per-call path. `TensorShape` is the user-facing wrapper.
"""
from __future__ import annotations

from typing import Any, Iterable, List, Optional, Tuple, cast

Dims = Optional[Tuple[Optional[int], ...]]


class TensorShape:
    """A possibly partially-known shape: `TensorShape([2, None])`, `TensorShape(None)`.

    >>> s = jf.TensorShape([2, None])
    >>> s.rank, s.is_fully_defined()
    (2, False)
    """

    __slots__ = ("_dims",)

    def __init__(self, dims: Any) -> None:
        self._dims = normalize(dims)

    @property
    def dims(self) -> Dims:
        return self._dims

    @property
    def rank(self) -> Optional[int]:
        return None if self._dims is None else len(self._dims)

    ndims = rank

    def as_list(self) -> list:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> Optional[int]:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in cast(Tuple[int, ...], self._dims):  # fully defined: no None
            n *= d
        return n

    def is_compatible_with(self, other: Any) -> bool:
        return is_compatible(self._dims, normalize(other))

    def merge_with(self, other: Any) -> "TensorShape":
        return TensorShape(merge(self._dims, normalize(other)))

    def most_specific_compatible_shape(self, other: Any) -> "TensorShape":
        return TensorShape(relax(self._dims, normalize(other)))

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of a shape with unknown rank.")
        return len(self._dims)

    def __iter__(self):
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        return iter(self._dims)

    def __getitem__(self, key):
        if self._dims is None:
            if isinstance(key, slice):
                return TensorShape(None)
            return None
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        return self._dims[key]

    def __eq__(self, other: Any) -> bool:
        try:
            return self._dims == normalize(other)
        except (TypeError, ValueError):
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        return f"TensorShape({list(self._dims)})"

    def __str__(self) -> str:
        return format_dims(self._dims)


def normalize(dims: Any) -> Dims:
    """Accept TensorShape, None, ints, lists/tuples of ints/None; return a dims tuple."""
    if dims is None:
        return None
    if isinstance(dims, TensorShape):
        return dims._dims
    if isinstance(dims, int):
        dims = (dims,)
    try:
        items = tuple(dims)
    except TypeError:
        raise TypeError(f"shape: expected None, an int or a list of ints/None; got {dims!r}") from None
    out: List[Optional[int]] = []
    for d in items:
        if d is None or d == -1 and not isinstance(d, bool):
            out.append(None)
        elif hasattr(d, "__index__") and not isinstance(d, bool):
            d = int(d)
            if d < 0:
                raise ValueError(f"shape: dimensions must be >= 0 or None; got {d} in {list(items)}")
            out.append(d)
        else:
            raise TypeError(f"shape: dimensions must be ints or None; got {d!r} in {list(items)}")
    return tuple(out)


def known_dims(dims: Dims) -> Tuple[int, ...]:
    """`dims` where they are known to be fully defined (a tensor the compiler accepted, a
    shape checked before): typed as such, and asserted."""
    assert dims is not None and all(d is not None for d in dims), f"expected a fully known shape, got {dims}"
    return cast(Tuple[int, ...], dims)


def format_dims(dims: Dims) -> str:
    """TF's text form: `(2, 3)`, `(None, 3)`, `()`, `<unknown>`."""
    if dims is None:
        return "<unknown>"
    if len(dims) == 1:
        return f"({dims[0]},)"
    return "(" + ", ".join("None" if d is None else str(d) for d in dims) + ")"


def is_compatible(spec: Dims, actual: Dims) -> bool:
    """True when `actual` could be a value of `spec` (None matches anything)."""
    if spec is None or actual is None:
        return True
    if len(spec) != len(actual):
        return False
    for s, a in zip(spec, actual):
        if s is not None and a is not None and s != a:
            return False
    return True


def merge(a: Dims, b: Dims) -> Dims:
    if a is None:
        return b
    if b is None:
        return a
    if not is_compatible(a, b):
        raise ValueError(f"Shapes {format_dims(a)} and {format_dims(b)} are not compatible")
    return tuple(x if x is not None else y for x, y in zip(a, b))


def relax(a: Dims, b: Dims) -> Dims:
    """The most specific shape both `a` and `b` are instances of (reduce_retracing)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def broadcast(a: Dims, b: Dims) -> Dims:
    """Numpy broadcasting over partially-known shapes; raises ValueError on a mismatch."""
    if a is None or b is None:
        return None
    if a == b:
        return a
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + a
    b = (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1 or x == y:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        else:
            raise ValueError("not broadcastable")
    return tuple(out)


def num_elements(dims: Iterable[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n
