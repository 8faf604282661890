"""`jf.saved_model.load`: a SavedModel (jitflow's or TensorFlow's) back as live objects.

The result is rebuilt from the object graph alone, without the Python class that was
saved (as TF's loader does): modules become `Loaded` objects with the saved attributes,
variables are created with the saved dtype/shape and restored from `variables/`, lists and
dicts of trackables come back as lists and dicts, and every saved function becomes a
`RestoredFunction` that dispatches on its arguments to one of its traced signatures, each
a `jf.function` replaying the saved FunctionDef. `.signatures` maps signature names to
functions that take keyword tensors and return a dict of named outputs.
"""
from __future__ import annotations

import inspect
import os
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from jitflow.runtime.training import checkpoint as _checkpoint
from jitflow.runtime.core import context
from jitflow.runtime.core.errors import DataLossError, NotFoundError
from jitflow.runtime.tracing.function import function as _jf_function
from jitflow.runtime.state.module import Module
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.core.tensor import Tensor, TensorSpec
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.training import tensor_bundle as _bundle
from jitflow.runtime.saved_model import structure as _structure
from jitflow.runtime.saved_model.function_import import Library
from jitflow.runtime.saved_model.protos import SavedModel
from jitflow.runtime.saved_model.saving import (SAVED_MODEL_FILENAME, SERVE_TAG,
                                                VARIABLES_DIRECTORY, VARIABLES_FILENAME)

MAX_SAVED_MODEL_BYTES = 2 << 30  # protobuf's own limit for one message


class Loaded(Module):
    """An object restored from a SavedModel (TF's `_UserObject`): attributes, variables, functions.

    >>> import tempfile
    >>> class Adder(jf.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.v = jf.Variable(1.0)
    ...     @jf.function(input_signature=[jf.TensorSpec([], jf.float32)])
    ...     def add(self, x):
    ...         return {"y": x + self.v}
    >>> path = tempfile.mkdtemp() + "/adder"
    >>> adder = Adder()
    >>> jf.saved_model.save(adder, path, signatures={"serving_default": adder.add})
    >>> loaded = jf.saved_model.load(path)
    >>> type(loaded).__name__, float(loaded.v.numpy())
    ('Loaded', 1.0)
    """

    def __init__(self) -> None:
        super().__init__(name="loaded")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fn = self.__dict__.get("__call__")
        if fn is None:
            raise TypeError("this loaded object is not callable: the saved object had no __call__ jf.function")
        return fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<jf.saved_model Loaded object at {id(self):#x}>"


class _Signatures(dict):
    """`loaded.signatures`: name → signature function (TF's `_SignatureMap`)."""


def read_saved_model(export_dir: str) -> "SavedModel":
    """Parse `export_dir/saved_model.pb`, with clear errors for a missing or damaged one."""
    export_dir = os.fspath(export_dir)
    if not os.path.isdir(export_dir):
        raise NotFoundError(f"export_dir: {export_dir!r} is not a directory (SavedModel not found)")
    path = os.path.join(export_dir, SAVED_MODEL_FILENAME)
    if not os.path.exists(path):
        raise NotFoundError(f"SavedModel file does not exist at: {export_dir}{os.sep}{{{SAVED_MODEL_FILENAME}}}")
    fd, size = _bundle.open_regular(path, export_dir, "SavedModel file")
    try:
        if size > MAX_SAVED_MODEL_BYTES:
            raise DataLossError(f"{path} is {size} bytes, more than a SavedModel can be")
        data = _bundle.pread_all(fd, size, 0)
    finally:
        os.close(fd)
    model = SavedModel()
    try:
        model.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError
        raise DataLossError(f"{path} is corrupt or truncated: cannot parse a SavedModel from it ({e})") from None
    if not model.meta_graphs:
        raise DataLossError(f"{path} holds no MetaGraphDef (an empty or truncated SavedModel)")
    return model


def meta_graph(model: "SavedModel", tags: Optional[Sequence[str]] = None):
    wanted = set([SERVE_TAG] if tags is None else ([tags] if isinstance(tags, str) else tags))
    for meta in model.meta_graphs:
        if set(meta.meta_info_def.tags) == wanted:
            return meta
    if tags is None and len(model.meta_graphs) == 1:
        return model.meta_graphs[0]
    available = [sorted(m.meta_info_def.tags) for m in model.meta_graphs]
    raise ValueError(f"tags: the SavedModel has no MetaGraph with tags {sorted(wanted)}; it has {available}")


# -- functions -------------------------------------------------------------------------------------------
def _matches(spec_tree: Any, value: Any, leaves: List[Any]) -> bool:
    """Whether `value` fits the saved signature `spec_tree`; collects its tensor leaves."""
    if isinstance(spec_tree, TensorSpec):
        try:
            t = value if isinstance(value, Tensor) else convert_to_tensor(
                value.read_value() if isinstance(value, Variable) else value, dtype=spec_tree.dtype)
        except (TypeError, ValueError):
            return False
        if t.dtype is not spec_tree.dtype or not spec_tree.shape.is_compatible_with(t.shape):
            return False
        leaves.append(t)
        return True
    if isinstance(spec_tree, dict):
        return (isinstance(value, dict) and set(value) == set(spec_tree)
                and all(_matches(spec_tree[k], value[k], leaves) for k in sorted(spec_tree)))
    if isinstance(spec_tree, (list, tuple)):
        return (isinstance(value, (list, tuple)) and len(value) == len(spec_tree)
                and all(_matches(s, v, leaves) for s, v in zip(spec_tree, value)))
    return spec_tree == value  # a Python value must equal the traced one


class RestoredConcreteFunction:
    """One saved concrete function: a `jf.function` over its flat tensor inputs.

    >>> import tempfile
    >>> class Adder(jf.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.v = jf.Variable(1.0)
    ...     @jf.function(input_signature=[jf.TensorSpec([], jf.float32)])
    ...     def add(self, x):
    ...         return {"y": x + self.v}
    >>> path = tempfile.mkdtemp() + "/adder"
    >>> adder = Adder()
    >>> jf.saved_model.save(adder, path, signatures={"serving_default": adder.add})
    >>> serving = jf.saved_model.load(path).signatures["serving_default"]
    >>> float(serving(x=jf.constant(2.0))["y"].numpy())
    3.0
    """

    def __init__(self, name: str, library: Library, saved, objects: List[Any], fn_name: str) -> None:
        self.name = name
        self.structured_input_signature = _structure.decode(saved.canonicalized_input_signature)
        if not (isinstance(self.structured_input_signature, tuple) and len(self.structured_input_signature) == 2):
            raise DataLossError(f"concrete function {name!r} has a malformed input signature")
        self.structured_outputs = _structure.decode(saved.output_signature)
        self._bound = []
        for node_id in saved.bound_inputs:
            if not 0 <= node_id < len(objects) or not isinstance(objects[node_id], Variable):
                raise DataLossError(f"concrete function {name!r} is bound to node {node_id}, which is not a variable")
            self._bound.append(objects[node_id])
        specs = [s for s in _structure.flatten(self.structured_input_signature) if isinstance(s, TensorSpec)]
        self._specs = specs
        outputs, library_, bound = self.structured_outputs, library, self._bound

        def replay(*tensors):
            outs = library_.replay(name, list(tensors) + list(bound))
            return _structure.pack(outputs, outs)
        params, used = [], set()
        for i, spec in enumerate(specs):
            base = "".join(c if c.isalnum() or c == "_" else "_" for c in (spec.name or f"arg_{i}"))
            if not base or base[0].isdigit() or base in used:
                base = f"arg_{i}"
            used.add(base)
            params.append(inspect.Parameter(base, inspect.Parameter.POSITIONAL_OR_KEYWORD))
        replay.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]  # inspect.signature reads it
        replay.__name__ = fn_name
        self._function = _jf_function(replay, input_signature=[TensorSpec(s.shape, s.dtype, name=p.name)
                                                                for s, p in zip(specs, params)],
                                      autograph=False)

    @property
    def variables(self) -> tuple:
        return tuple(self._bound)

    def _bind(self, args: tuple, kwargs: dict) -> Optional[List[Tensor]]:
        want_args, want_kwargs = self.structured_input_signature
        leaves: List[Tensor] = []
        if len(args) != len(want_args) or set(kwargs) != set(want_kwargs):
            return None
        if not all(_matches(s, v, leaves) for s, v in zip(want_args, args)):
            return None
        for k in sorted(want_kwargs):
            if not _matches(want_kwargs[k], kwargs[k], leaves):
                return None
        return leaves

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves = self._bind(args, kwargs)
        if leaves is None:
            raise TypeError(f"{self.name}: the arguments do not match its signature {self.pretty_printed_signature()}")
        return self._function(*leaves)

    def _call_flat(self, leaves: Sequence[Tensor]) -> Any:
        return self._function(*leaves)

    def pretty_printed_signature(self) -> str:
        args, kwargs = self.structured_input_signature
        parts = [repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()]
        return f"({', '.join(parts)})"

    def __repr__(self) -> str:
        return f"<RestoredConcreteFunction {self.name}{self.pretty_printed_signature()}>"


class RestoredFunction:
    """A saved jf.function: calls the first traced signature the arguments fit (TF's RestoredFunction).

    >>> import tempfile
    >>> class Adder(jf.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.v = jf.Variable(1.0)
    ...     @jf.function(input_signature=[jf.TensorSpec([], jf.float32)])
    ...     def add(self, x):
    ...         return {"y": x + self.v}
    >>> path = tempfile.mkdtemp() + "/adder"
    >>> adder = Adder()
    >>> jf.saved_model.save(adder, path, signatures={"serving_default": adder.add})
    >>> float(jf.saved_model.load(path).add(jf.constant(2.0))["y"].numpy())
    3.0
    """

    def __init__(self, name: str, concretes: List[RestoredConcreteFunction], spec=None) -> None:
        self.__name__ = name
        self._concretes = concretes
        self._arg_names: List[str] = []
        self._defaults: tuple = ()
        if spec is not None and spec.HasField("fullargspec"):
            fields = _structure.decode(spec.fullargspec)
            if isinstance(fields, dict):
                names = list(fields.get("args") or [])
                self._arg_names = names[1:] if spec.is_method and names else names
                self._defaults = tuple(fields.get("defaults") or ())

    def _canonicalize(self, args: tuple, kwargs: dict):
        """Positional arguments with keywords and defaults filled in, as the traced signatures hold them."""
        if not self._arg_names:
            return args, kwargs
        kwargs = dict(kwargs)
        positional = list(args)
        first_default = len(self._arg_names) - len(self._defaults)
        for i in range(len(args), len(self._arg_names)):
            name = self._arg_names[i]
            if name in kwargs:
                positional.append(kwargs.pop(name))
            elif i >= first_default:
                positional.append(self._defaults[i - first_default])
            else:
                break
        return tuple(positional), kwargs

    def concrete_functions(self) -> List[RestoredConcreteFunction]:
        return list(self._concretes)

    list_concrete_functions = concrete_functions

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        args, kwargs = self._canonicalize(args, kwargs)
        for cf in self._concretes:
            leaves = cf._bind(args, kwargs)
            if leaves is not None:
                return cf._call_flat(leaves)
        options = "\n".join(f"  Option {i + 1}: {cf.pretty_printed_signature()}"
                            for i, cf in enumerate(self._concretes))
        given = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
        raise ValueError(f"Could not find matching concrete function to call loaded from the SavedModel. Got:\n"
                         f"  {self.__name__}({given})\nExpected one of:\n{options or '  (none were traced)'}")

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> RestoredConcreteFunction:
        args, kwargs = self._canonicalize(args, kwargs)
        for cf in self._concretes:
            if cf._bind(args, kwargs) is not None:
                return cf
        raise ValueError(f"{self.__name__}: no saved concrete function matches these arguments")

    def __repr__(self) -> str:
        return f"<RestoredFunction {self.__name__} with {len(self._concretes)} concrete function(s)>"


class SignatureFunction(RestoredConcreteFunction):
    """A serving signature: keyword tensors in, a dict of named output tensors out."""

    def __init__(self, *a: Any, argument_keywords: Sequence[str] = (), **k: Any) -> None:
        super().__init__(*a, **k)
        self.argument_keywords = list(argument_keywords)

    def __call__(self, *args: Any, **kwargs: Any) -> Dict[str, Tensor]:
        if args:
            raise TypeError(f"signature functions take keyword arguments only ({', '.join(self.argument_keywords)}); "
                            f"got {len(args)} positional")
        return super().__call__(**kwargs)

    @property
    def inputs(self) -> List[TensorSpec]:
        return list(self._specs)


# -- objects -----------------------------------------------------------------------------------------------
def load(export_dir: str, tags: Optional[Sequence[str]] = None, options: Any = None) -> Any:
    """Load a SavedModel written by `jf.saved_model.save` (or by TensorFlow, for ops jitflow implements).

    >>> demo2 = jf.saved_model.load("./data/demo/1")          # doctest: +SKIP
    >>> demo2.addprint(jf.constant(5.0))                       # doctest: +SKIP
    >>> demo2.signatures["serving_default"](a=jf.constant(1.0))  # doctest: +SKIP
    {'output_0': <jf.Tensor ...>}
    """
    if context.current_graph() is not None:
        raise RuntimeError("jf.saved_model.load runs eagerly; call it outside jf.function")
    export_dir = os.fspath(export_dir)
    meta = meta_graph(read_saved_model(export_dir), tags)
    library = Library(meta.graph_def.library)
    graph = meta.object_graph_def
    if not graph.nodes:
        raise DataLossError(f"the SavedModel in {export_dir!r} has an empty object graph")
    for name in graph.concrete_functions:
        library.check_supported(name)
    n = len(graph.nodes)
    objects: List[Any] = [None] * n
    with context.init_scope():
        for i, node in enumerate(graph.nodes):
            kind = node.WhichOneof("kind")
            if kind == "variable":
                v = node.variable
                dtype = _structure.dtype_of(v.dtype)
                dims = _structure.dims_of(v.shape)
                if dims is None or any(d is None for d in dims):
                    raise DataLossError(f"variable node {i} ({v.name}) has the unknown shape {dims}")
                init = np.zeros(dims, dtype.as_numpy_dtype) if not dtype.is_string else np.full(dims, b"", object)
                objects[i] = Variable(init, dtype=dtype, trainable=v.trainable, name=v.name or None)
            elif kind == "user_object" and node.user_object.identifier == "trackable_list_wrapper":
                objects[i] = []
            elif kind == "user_object" and node.user_object.identifier == "trackable_dict_wrapper":
                objects[i] = {}
            elif kind == "user_object" and node.user_object.identifier == "signature_map":
                objects[i] = _Signatures()
            elif kind in ("user_object", None, "resource", "asset", "constant", "captured_tensor"):
                objects[i] = Loaded()
    for i, node in enumerate(graph.nodes):  # functions need the variables they are bound to
        kind = node.WhichOneof("kind")
        if kind == "function":
            concretes = []
            names = list(node.function.concrete_functions)
            parent_name = _name_of(graph, i)
            for name in names:
                if name not in graph.concrete_functions:
                    raise DataLossError(f"function {parent_name!r} refers to the missing concrete function {name!r}")
                concretes.append(RestoredConcreteFunction(name, library, graph.concrete_functions[name], objects,
                                                          parent_name))
            objects[i] = RestoredFunction(parent_name, concretes, node.function.function_spec)
        elif kind == "bare_concrete_function":
            bare = node.bare_concrete_function
            name = bare.concrete_function_name
            if name not in graph.concrete_functions:
                raise DataLossError(f"signature node {i} refers to the missing concrete function {name!r}")
            objects[i] = SignatureFunction(name, library, graph.concrete_functions[name], objects,
                                           _name_of(graph, i), argument_keywords=list(bare.argument_keywords))
    for i, node in enumerate(graph.nodes):
        parent = objects[i]
        for child in node.children:
            if not 0 <= child.node_id < n:
                raise DataLossError(f"node {i}'s child {child.local_name!r} points at node {child.node_id} of {n}")
            value = objects[child.node_id]
            if isinstance(parent, list):
                parent.append(value)
            elif isinstance(parent, dict):
                parent[child.local_name] = value
            elif isinstance(parent, Loaded):
                if child.local_name == "signatures" and isinstance(value, _Signatures):
                    object.__setattr__(parent, "signatures", value)
                elif isinstance(getattr(type(parent), child.local_name, None), property):
                    # Keras's export saves lists named `variables`, `trainable_variables`, ...: kept as
                    # children (the checkpoint reaches the variables through them); the Module
                    # properties of the same names still answer, with the same variables.
                    parent.__dict__[child.local_name] = value
                else:
                    object.__setattr__(parent, child.local_name, value)
    root = objects[0]
    if isinstance(root, Loaded) and not hasattr(root, "signatures"):
        object.__setattr__(root, "signatures", _Signatures())
    prefix = os.path.join(export_dir, VARIABLES_DIRECTORY, VARIABLES_FILENAME)
    if any(isinstance(o, Variable) for o in objects):
        nodes, arrays = _checkpoint._read_checkpoint(prefix)
        restore = _checkpoint._Restore(prefix, nodes, arrays)
        restore.apply(root, 0, "")
        missing = [p for p in restore.unmatched_live]
        if missing:
            raise DataLossError(f"the variables of {export_dir!r} do not match its object graph: no values for "
                                f"{missing}")
    return root


def _name_of(graph, node_id: int) -> str:
    for node in graph.nodes:
        for child in node.children:
            if child.node_id == node_id:
                return child.local_name
    return f"function_{node_id}"
