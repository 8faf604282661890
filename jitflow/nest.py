"""`jf.nest`: nested structures of lists, tuples, named tuples and dicts (TF's `tf.nest`).

Leaves are everything else (tensors, numbers, strings, None). Dicts flatten in sorted key
order, as TF's do.

    >>> import jitflow as jf
    >>> jf.nest.flatten({"b": [1, 2], "a": 3})
    [3, 1, 2]
    >>> jf.nest.map_structure(lambda x: x * 10, (1, [2, 3]))
    (10, [20, 30])
"""
from __future__ import annotations

from typing import Any, Callable, List


def is_nested(seq: Any) -> bool:
    """True for a list, tuple (named tuples too) or dict (`tf.nest.is_nested`).

    >>> import jitflow as jf
    >>> jf.nest.is_nested([1]), jf.nest.is_nested("ab")
    (True, False)
    """
    return isinstance(seq, (list, tuple, dict))


def _children(s: Any) -> List[Any]:
    if isinstance(s, dict):
        return [s[k] for k in _sorted_keys(s)]
    return list(s)


def _sorted_keys(d: dict) -> List[Any]:
    try:
        return sorted(d)
    except TypeError as e:
        raise TypeError(f"nest only supports dicts with sortable keys; got keys {list(d)!r}") from e


def flatten(structure: Any, expand_composites: bool = False) -> List[Any]:
    """The leaves of `structure` in order, dict values by sorted key (`tf.nest.flatten`).

    >>> import jitflow as jf
    >>> jf.nest.flatten([(1, 2), {"y": 4, "x": 3}, None])
    [1, 2, 3, 4, None]
    """
    if not is_nested(structure):
        return [structure]
    out: List[Any] = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _rebuild(like: Any, items: List[Any]) -> Any:
    if isinstance(like, dict):
        keyed = dict(zip(_sorted_keys(like), items))
        return type(like)((k, keyed[k]) for k in like) if type(like) is not dict else {k: keyed[k] for k in like}
    if isinstance(like, tuple) and hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)


def pack_sequence_as(structure: Any, flat_sequence: Any, expand_composites: bool = False) -> Any:
    """`flat_sequence` put into the shape of `structure` (`tf.nest.pack_sequence_as`).

    >>> import jitflow as jf
    >>> jf.nest.pack_sequence_as({"a": 0, "b": (0, 0)}, [1, 2, 3])
    {'a': 1, 'b': (2, 3)}
    """
    flat = list(flat_sequence)
    expected = len(flatten(structure))
    if len(flat) != expected:
        raise ValueError(f"flat_sequence: the structure has {expected} leaves but {len(flat)} values were given")
    it = iter(flat)

    def build(s: Any) -> Any:
        if not is_nested(s):
            return next(it)
        return _rebuild(s, [build(c) for c in _children(s)])
    return build(structure)


def assert_same_structure(nest1: Any, nest2: Any, check_types: bool = True, expand_composites: bool = False) -> None:
    """Raise ValueError (TypeError for differing sequence types) unless both nest alike.

    >>> import jitflow as jf
    >>> jf.nest.assert_same_structure([1, (2, 3)], ["a", ("b", "c")])
    """
    def check(a: Any, b: Any, path: str) -> None:
        if is_nested(a) != is_nested(b):
            raise ValueError(f"The two structures don't have the same nested structure: at {path or 'the top'}, "
                             f"{a!r} vs {b!r}")
        if not is_nested(a):
            return
        if check_types and type(a) is not type(b):
            raise TypeError(f"The two structures don't have the same sequence type: {type(a).__name__} vs "
                            f"{type(b).__name__} at {path or 'the top'}")
        if isinstance(a, dict) and _sorted_keys(a) != _sorted_keys(b):
            raise ValueError(f"The two dictionaries don't have the same set of keys: {list(a)} vs {list(b)}")
        ca, cb = _children(a), _children(b)
        if len(ca) != len(cb):
            raise ValueError(f"The two structures don't have the same number of elements at {path or 'the top'}: "
                             f"{len(ca)} vs {len(cb)}")
        for k, (x, y) in enumerate(zip(ca, cb)):
            check(x, y, f"{path}[{k}]")
    check(nest1, nest2, "")


def map_structure(func: Callable, *structure: Any, check_types: bool = True, expand_composites: bool = False) -> Any:
    """`func` applied to the leaves of one or more structures of the same shape (`tf.nest.map_structure`).

    >>> import jitflow as jf
    >>> jf.nest.map_structure(lambda a, b: a + b, [1, {"k": 2}], [10, {"k": 20}])
    [11, {'k': 22}]
    """
    if not structure:
        raise ValueError("structure: map_structure needs at least one structure")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    leaves = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*args) for args in zip(*leaves)])


__all__ = ["flatten", "is_nested", "map_structure", "pack_sequence_as", "assert_same_structure"]
