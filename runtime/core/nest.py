"""Nested structures of tensors: flatten them to a list and pack a list back into them.

Loop variables, branch outputs and GradientTape targets can be lists, tuples, named
tuples, dicts and `CompositeTensor`s (objects made of tensors, such as `jf.TensorArray`).
Dict entries are ordered by `repr` of their keys, so two structures with the same keys
flatten alike whatever their insertion order.
"""
from __future__ import annotations

from typing import Any, List, Sequence

from jitflow.runtime.core.tensor import Tensor


class CompositeTensor:
    """A Python object made of tensors that can be a loop variable or a branch output.

    `cond` and `while_loop` flatten it to `_components()` and rebuild it from new
    tensors with `_from_components(...)` (TF's CompositeTensor; `jf.TensorArray` is one).
    One that cannot list its components yet (`_needs_probe()`, e.g. a TensorArray whose
    element shape is only known after the first write) is completed by `_complete(like)`
    from the value the loop body returns for it, traced once beforehand.
    """

    def _components(self) -> List[Tensor]:  # pragma: no cover - interface
        raise NotImplementedError

    def _from_components(self, components: List[Tensor]) -> "CompositeTensor":  # pragma: no cover
        raise NotImplementedError

    def _component_invariants(self) -> List[Any]:
        """Shape invariants for the components when the caller gives none (None: keep the shape)."""
        return [None] * len(self._components())

    def _needs_probe(self) -> bool:
        return False

    # A composite that can be a `jf.function` argument or result returns its type spec here
    # (TF's `TypeSpec`): a hashable value with `_component_specs()` (TensorSpecs of the
    # components, e.g. a SparseTensor's indices/values/dense_shape) and
    # `_from_components(tensors)`. Functions key their cache on the spec, not on identity.
    # None (the default, TensorArray's case) keys the object by identity.
    _type_spec: Any = None

    def _complete(self, like: Any) -> "CompositeTensor":
        return self


class TypeSpec:
    """Base of the type specs of composite tensors (TF's `tf.TypeSpec`; `jf.SparseTensorSpec`).

    A spec is hashable and provides `_component_specs()` (TensorSpecs of the components),
    `_from_components(tensors)`, `is_compatible_with(other)` and
    `most_specific_common_supertype(others)`. `jf.function` keys composite arguments by it,
    and accepts it in an `input_signature`.
    """

    def _component_specs(self) -> List[Any]:
        raise NotImplementedError(f"{type(self).__name__} must define _component_specs() (a subclass's job)")

    def _from_components(self, tensors: Sequence[Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define _from_components() (a subclass's job)")


def flatten(structure: Any) -> List[Any]:
    if isinstance(structure, CompositeTensor):
        return list(structure._components())
    if isinstance(structure, (list, tuple)):
        out: List[Any] = []
        for item in structure:
            out.extend(flatten(item))
        return out
    if isinstance(structure, dict):
        out = []
        for k in sorted(structure, key=repr):
            out.extend(flatten(structure[k]))
        return out
    return [structure]


def pack(structure: Any, flat: List[Any]) -> Any:
    it = iter(flat)

    def rebuild(s: Any) -> Any:
        if isinstance(s, CompositeTensor):
            return s._from_components([next(it) for _ in s._components()])
        if isinstance(s, (list, tuple)):
            items = [rebuild(x) for x in s]
            if isinstance(s, list):
                return items
            return type(s)(*items) if hasattr(s, "_fields") else tuple(items)
        if isinstance(s, dict):
            return {k: rebuild(s[k]) for k in sorted(s, key=repr)}
        return next(it)
    return rebuild(structure)
