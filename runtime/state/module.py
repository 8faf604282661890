"""`jf.Module`: a named container of variables and submodules (TF's `tf.Module`).

Attributes are discovered by walking the instance `__dict__` (sorted by attribute name,
as TF does), through lists, tuples and dicts, so `variables`, `trainable_variables` and
`submodules` need no registration.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterator, List, Optional, Tuple

from jitflow.runtime.core import context
from jitflow.runtime.core.context import name_scope
from jitflow.runtime.state.variables import Variable

# Called as hook(module, name, value) after every attribute assignment (checkpoints use it
# to restore variables that are created after `Checkpoint.restore`: restore-on-creation).
_setattr_hooks: List[Callable[[Any, str, Any], None]] = []

_CAMEL_1 = re.compile(r"(.)([A-Z][a-z0-9]+)")
_CAMEL_2 = re.compile(r"([a-z0-9])([A-Z])")
_VALID = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def camel_to_snake(name: str) -> str:
    """`DemoModule` → `demo_module`, `MLP2Layer` → `mlp2_layer`."""
    return _CAMEL_2.sub(r"\1_\2", _CAMEL_1.sub(r"\1_\2", name)).lower()


class Module:
    """Base class for models and layers.

    >>> class Dense(Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         with self.name_scope:
    ...             self.b = Variable(0.0, name="b")
    >>> Dense().variables
    (<jf.Variable 'dense/b:0' shape=() dtype=float32, numpy=0.0>,)
    """

    _TF_MODULE_IGNORED_PROPERTIES = frozenset(("_self_name_scope", "_name", "_scope_name"))

    def __init__(self, name: Optional[str] = None) -> None:
        if name is None:
            name = camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not _VALID.match(name):
            raise ValueError(f"name: {name!r} is not a valid module name; use letters, digits, '_', "
                             "'.' or '-', starting with a letter or '_'")
        self._name = name
        self._scope_name = context.current_scope() + name + "/"
        self._self_name_scope = name_scope(self._scope_name)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if _setattr_hooks:
            for hook in _setattr_hooks:
                hook(self, name, value)

    @property
    def name(self) -> str:
        return self._name

    @property
    def name_scope(self) -> name_scope:
        """A name scope (`.name == "dense/"`) that puts ops and variables under this module."""
        return self._self_name_scope

    @property
    def variables(self) -> Tuple[Variable, ...]:
        """All variables of this module and its submodules, each once."""
        return tuple(self._flatten(lambda v: isinstance(v, Variable)))

    @property
    def trainable_variables(self) -> Tuple[Variable, ...]:
        return tuple(self._flatten(lambda v: isinstance(v, Variable) and v.trainable))

    @property
    def non_trainable_variables(self) -> Tuple[Variable, ...]:
        return tuple(self._flatten(lambda v: isinstance(v, Variable) and not v.trainable))

    @property
    def submodules(self) -> Tuple["Module", ...]:
        """All modules below this one (not including it), outermost first."""
        return tuple(self._flatten(lambda v: isinstance(v, Module)))

    def _flatten(self, predicate: Callable[[Any], bool], recursive: bool = True) -> List[Any]:
        seen = {id(self)}
        found: List[Any] = []
        _flatten_module(self, predicate, recursive, seen, found)
        return found

    @classmethod
    def with_name_scope(cls, method: Callable) -> Callable:
        """Decorator: run `method` inside `self.name_scope`."""
        @functools.wraps(method)
        def wrapper(self, *args: Any, **kwargs: Any) -> Any:
            with self.name_scope:
                return method(self, *args, **kwargs)
        return wrapper

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} object at {id(self):#x}>"


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, Module) or isinstance(value, Variable):
        yield value
    elif isinstance(value, dict):
        for k in sorted(value, key=repr):
            yield from _leaves(value[k])
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)


def _flatten_module(module: Module, predicate: Callable[[Any], bool], recursive: bool, seen: set,
                    found: List[Any]) -> None:
    """TF's order: this module's matches by sorted attribute name, then each submodule's."""
    submodules: List[Module] = []
    for key in sorted(vars(module)):
        if key in Module._TF_MODULE_IGNORED_PROPERTIES:
            continue
        for leaf in _leaves(vars(module)[key]):
            if id(leaf) in seen:
                continue
            seen.add(id(leaf))
            if predicate(leaf):
                found.append(leaf)
            if recursive and isinstance(leaf, Module):
                submodules.append(leaf)
    for sub in submodules:
        _flatten_module(sub, predicate, recursive, seen, found)
