"""`jf.saved_model.save`: a trackable object, its traced functions and signatures, in TF's layout.

    export_dir/
      saved_model.pb            SavedModel { MetaGraphDef (tags ["serve"]):
                                  graph_def.library  every concrete function (+ branches, bodies)
                                  signature_def      e.g. "serving_default"
                                  object_graph_def   the objects, their variables, functions }
      variables/variables.index + variables.data-00000-of-00001   (a TF-format checkpoint)
      assets/

The object graph's first nodes are the checkpoint's (same numbering), so node ids name the
same objects in `saved_model.pb` and in `variables/`. The export is built in a temporary
sibling directory and swapped into place only when complete: a failed save leaves the
previous export (or nothing) where it was, never a half-written one.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import shutil
import secrets
from typing import Any, Dict, List, Set, Tuple

from jitflow.runtime.training import checkpoint as _checkpoint
from jitflow.runtime.training.atomic_files import remove_stale_temps
from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.tracing.function import ConcreteFunction, Function, _Out
from jitflow.runtime.state.module import Module
from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.saved_model import structure as _structure
from jitflow.runtime.saved_model.function_export import Exporter
from jitflow.runtime.saved_model.protos import (SavedModel, meta_graph_pb2, saved_object_graph_pb2,
                                                versions_pb2)

SAVED_MODEL_FILENAME = "saved_model.pb"
VARIABLES_DIRECTORY = "variables"
VARIABLES_FILENAME = "variables"
ASSETS_DIRECTORY = "assets"
SERVE_TAG = "serve"
DEFAULT_SIGNATURE = "serving_default"
PREDICT_METHOD = "tensorflow/serving/predict"
INIT_OP_SIGNATURE = "__saved_model_init_op"
_IDENTIFIERS = {"list": "trackable_list_wrapper", "dict": "trackable_dict_wrapper"}


def _functions_of(obj: Any) -> Dict[str, Function]:
    """The jf.functions reachable as attributes of `obj` (methods bound to it, and assigned ones)."""
    found: Dict[str, Function] = {}
    if not isinstance(obj, Module) and not _checkpoint._has(obj, "_checkpoint_children"):
        return found
    names: Set[str] = set()
    for klass in type(obj).__mro__:
        names.update(k for k, v in vars(klass).items() if isinstance(v, Function))
    names.update(k for k, v in vars(obj).items() if isinstance(v, Function))
    for name in sorted(names):
        if name.startswith("_") and name != "__call__":
            continue
        value = getattr(obj, name)
        if isinstance(value, Function):
            found[name] = value
    return found


def _concretes(fn: Function) -> List[ConcreteFunction]:
    found = list(fn.list_concrete_functions())
    if not found and fn.input_signature is not None:
        found = [fn.get_concrete_function()]
    return found


def _output_signature(cf: ConcreteFunction) -> Any:
    def walk(t: Any) -> Any:
        if isinstance(t, _Out):
            out = cf.outputs[t.index]
            return TensorSpec(out._dims, out._dtype, name=f"output_{t.index}")
        if isinstance(t, dict):
            return {k: walk(v) for k, v in t.items()}
        if isinstance(t, (list, tuple)):
            items = [walk(v) for v in t]
            return items if isinstance(t, list) else tuple(items)
        return t
    return walk(cf._template)


def _signature_function(name: str, value: Any) -> ConcreteFunction:
    if isinstance(value, Function):
        if value.input_signature is None and len(value.list_concrete_functions()) != 1:
            raise ValueError(f"signatures[{name!r}]: a jf.function used as a signature needs an input_signature "
                             "(or pass one concrete function: f.get_concrete_function(jf.TensorSpec(...)))")
        value = value.get_concrete_function() if value.input_signature is not None else \
            value.list_concrete_functions()[0]
    if not isinstance(value, ConcreteFunction):
        raise TypeError(f"signatures[{name!r}]: expected a jf.function or a concrete function; got "
                        f"{type(value).__name__}")
    args, kwargs = value.structured_input_signature
    for leaf in _structure.flatten((args, kwargs)):
        if not isinstance(leaf, TensorSpec):
            raise ValueError(f"signatures[{name!r}]: every argument of a signature must be a tensor; "
                             f"{value.pretty_printed_signature()} has the Python value {leaf!r}")
    return value


def _signature_io(cf: ConcreteFunction) -> Tuple[List[Tuple[str, TensorSpec]], List[Tuple[str, Any]]]:
    """(input key, spec) per flat input and (output key, output tensor) per output, as TF names them."""
    args, kwargs = cf.structured_input_signature
    inputs = []
    for i, spec in enumerate(_structure.flatten((args, kwargs))):
        key = spec.name or (cf._param_names[i] if i < len(cf._param_names) else f"input_{i}")
        inputs.append((key, spec))
    template = cf._template
    if isinstance(template, dict):
        outputs = [(str(k), cf.outputs[v.index]) for k, v in template.items() if isinstance(v, _Out)]
    else:
        outputs = [(f"output_{i}", t) for i, t in enumerate(cf.outputs)]
    return inputs, outputs


def _normalize_signatures(signatures: Any) -> Dict[str, Any]:
    if signatures is None:
        return {}
    if isinstance(signatures, dict):
        for key in signatures:
            if not isinstance(key, str):
                raise ValueError(f"signatures: keys must be strings; got {key!r}")
        return dict(signatures)
    return {DEFAULT_SIGNATURE: signatures}


def build(obj: Any, signatures: Any = None) -> Tuple[Any, Any]:
    """(the SavedModel proto, the object graph `_Graph` whose variables go in `variables/`)."""
    if not (isinstance(obj, Module) or _checkpoint._has(obj, "_checkpoint_children")):
        raise TypeError(f"obj: jf.saved_model.save needs a jf.Module (or another trackable object such as a "
                        f"jf.train.Checkpoint); got {type(obj).__name__}")
    graph = _checkpoint._Graph(obj)
    graph.arrays()  # names every variable node (and checks each has a value)
    ids = {id(o): i for i, o in enumerate(graph.objects)}
    saved = saved_object_graph_pb2.SavedObjectGraph()
    for o, node in zip(graph.objects, graph.nodes):
        so = saved.nodes.add()
        for child in node["children"]:
            so.children.add(node_id=child["node"], local_name=child["name"])
        for slot in node.get("slot_variables", []):
            so.slot_variables.add(original_variable_node_id=slot["original"], slot_name=slot["slot"],
                                  slot_variable_node_id=slot["node"])
        if isinstance(o, Variable):
            so.variable.dtype = o.dtype.tf_enum
            so.variable.shape.CopyFrom(_structure.shape_proto(tuple(o._value.shape)))
            so.variable.trainable = o.trainable
            so.variable.name = o.name.rsplit(":", 1)[0]
        else:
            so.user_object.identifier = _IDENTIFIERS.get(node["kind"], "_generic_user_object")
            so.user_object.version.producer = 1
            so.user_object.version.min_consumer = 1
    exporter = Exporter()

    def export(cf: ConcreteFunction, input_signature: Any, output_signature: Any, where: str) -> str:
        # Outputs in the order of the flattened output structure (dict keys sorted), as TF does.
        outputs = [cf.outputs[leaf.index] for leaf in _structure.flatten(cf._template) if isinstance(leaf, _Out)]
        name, bound = exporter.add(cf.graph, cf.inputs, cf._captures, outputs, f"__inference_{cf.function._name}")
        if name in saved.concrete_functions:
            return name
        scf = saved.concrete_functions[name]
        for var in bound:
            if id(var) not in ids:
                raise ValueError(f"cannot save {where}: it uses the variable {var.name}, which is not reachable "
                                 "from the object being saved; assign the variable (or its module) as an "
                                 "attribute of that object")
            scf.bound_inputs.append(ids[id(var)])
        scf.canonicalized_input_signature.CopyFrom(_structure.encode(input_signature))
        scf.output_signature.CopyFrom(_structure.encode(output_signature))
        return name

    for i, o in enumerate(list(graph.objects)):
        for attr, fn in _functions_of(o).items():
            node_id = len(saved.nodes)
            saved.nodes[i].children.add(node_id=node_id, local_name=attr)
            so = saved.nodes.add()
            where = f"{type(o).__name__}.{attr}"
            for cf in _concretes(fn):
                so.function.concrete_functions.append(
                    export(cf, cf.structured_input_signature, _output_signature(cf), where))
            spec = so.function.function_spec
            spec.is_method = fn._bound_to is not None
            params = ["self"] * spec.is_method + [p for p in fn._param_names]
            spec.fullargspec.named_tuple_value.name = "FullArgSpec"
            spec.fullargspec.named_tuple_value.values.add(key="args").value.CopyFrom(_structure.encode(params))
            defaults = tuple(p.default for p in fn._params if p.default is not p.empty)
            try:
                encoded_defaults = _structure.encode(defaults) if defaults else _structure.encode(None)
            except TypeError:
                encoded_defaults = _structure.encode(None)  # defaults that cannot be stored: must be passed
            for key in ("varargs", "varkw", "defaults", "kwonlyargs", "kwonlydefaults", "annotations"):
                value: Any = [] if key == "kwonlyargs" else ({} if key == "annotations" else None)
                spec.fullargspec.named_tuple_value.values.add(key=key).value.CopyFrom(
                    encoded_defaults if key == "defaults" else _structure.encode(value))
            if fn.input_signature is not None:
                spec.input_signature.CopyFrom(_structure.encode(tuple(fn.input_signature)))
            else:
                spec.input_signature.none_value.SetInParent()
    meta = meta_graph_pb2.MetaGraphDef()
    meta.meta_info_def.tags.append(SERVE_TAG)
    meta.meta_info_def.tensorflow_version = "2.21.0"
    meta.meta_info_def.tensorflow_git_version = "jitflow"
    meta.meta_info_def.stripped_default_attrs = True
    meta.graph_def.versions.CopyFrom(versions_pb2.VersionDef(producer=1882, min_consumer=12))
    sigs = _normalize_signatures(signatures)
    if sigs:
        map_id = len(saved.nodes)
        saved.nodes[0].children.add(node_id=map_id, local_name="signatures")
        saved.nodes.add().user_object.identifier = "signature_map"
        saved.nodes[map_id].user_object.version.producer = 1
        saved.nodes[map_id].user_object.version.min_consumer = 1
    for sig_name, value in sigs.items():
        cf = _signature_function(sig_name, value)
        inputs, outputs = _signature_io(cf)
        # The signature's own function: keyword inputs, a dict of named outputs (as TF saves it).
        # Keyword inputs and named outputs, both in sorted key order (a dict's flattened order).
        by_key = dict(zip([key for key, _ in inputs], cf.inputs))
        outputs = sorted(outputs, key=lambda item: item[0])
        sig_exporter_name, bound = exporter.add(cf.graph, [by_key[k] for k in sorted(by_key)], cf._captures,
                                                [t for _, t in outputs],
                                                f"__inference_signature_wrapper_{cf.function._name}", fresh=True)
        scf = saved.concrete_functions[sig_exporter_name]
        for var in bound:
            if id(var) not in ids:
                raise ValueError(f"cannot save signature {sig_name!r}: it uses the variable {var.name}, which is "
                                 "not reachable from the object being saved")
            scf.bound_inputs.append(ids[id(var)])
        scf.canonicalized_input_signature.CopyFrom(_structure.encode(
            ((), {key: TensorSpec(spec.shape, spec.dtype, name=key) for key, spec in inputs})))
        scf.output_signature.CopyFrom(_structure.encode(
            {key: TensorSpec(t._dims, t._dtype, name=key) for key, t in outputs}))
        sig_node = len(saved.nodes)
        saved.nodes[map_id].children.add(node_id=sig_node, local_name=sig_name)
        bare = saved.nodes.add().bare_concrete_function
        bare.concrete_function_name = sig_exporter_name
        bare.argument_keywords.extend(key for key, _ in inputs)
        sd = meta.signature_def[sig_name]
        sd.method_name = PREDICT_METHOD
        for key, spec in inputs:
            info = sd.inputs[key]
            info.name = f"{sig_name}_{key}:0"
            info.dtype = spec.dtype.tf_enum
            info.tensor_shape.CopyFrom(_structure.shape_proto(_structure.spec_dims(spec)))
        call = _signature_call_nodes(meta.graph_def, sig_name, inputs, outputs, bound, sig_exporter_name)
        for i, (key, t) in enumerate(outputs):
            info = sd.outputs[key]
            info.name = f"{call}:{i}"
            info.dtype = t._dtype.tf_enum
            info.tensor_shape.CopyFrom(_structure.shape_proto(t._dims))
    # TF's init-op signature: what to run after restoring (nothing here: variables restore by
    # themselves), referred to by name so TensorFlow's loaders and saved_model_cli find it.
    meta.graph_def.node.add(name="NoOp", op="NoOp")
    init = meta.signature_def[INIT_OP_SIGNATURE]
    init.outputs[INIT_OP_SIGNATURE].name = "NoOp"
    init.outputs[INIT_OP_SIGNATURE].tensor_shape.unknown_rank = True
    meta.graph_def.library.CopyFrom(exporter.library)
    meta.object_graph_def.CopyFrom(saved)
    model = SavedModel(saved_model_schema_version=1)
    model.meta_graphs.append(meta)
    return model, graph


def _signature_call_nodes(graph_def, sig_name: str, inputs, outputs, bound, function_name: str) -> str:
    """The graph nodes that run a signature, as TF lays them out: a Placeholder per input, a
    VarHandleOp per variable, and a StatefulPartitionedCall of the signature's function.
    TensorFlow's tools read the signature's tensor names (and its ops) from these."""
    existing = {n.name for n in graph_def.node}
    call_name, k = "StatefulPartitionedCall", 1
    while call_name in existing:
        call_name = f"StatefulPartitionedCall_{k}"
        k += 1
    call = graph_def.node.add(name=call_name, op="StatefulPartitionedCall")
    for key, spec in sorted(inputs, key=lambda item: item[0]):
        ph = graph_def.node.add(name=f"{sig_name}_{key}", op="Placeholder")
        ph.attr["dtype"].type = spec.dtype.tf_enum
        ph.attr["shape"].shape.CopyFrom(_structure.shape_proto(_structure.spec_dims(spec)))
        call.input.append(ph.name)
        call.attr["Tin"].list.type.append(spec.dtype.tf_enum)
    for var in bound:
        handle_name = var.name.rsplit(":", 1)[0]
        if handle_name not in existing and all(n.name != handle_name for n in graph_def.node):
            handle = graph_def.node.add(name=handle_name, op="VarHandleOp")
            handle.attr["dtype"].type = var.dtype.tf_enum
            handle.attr["shape"].shape.CopyFrom(_structure.shape_proto(tuple(var._value.shape)))
            handle.attr["shared_name"].s = handle_name.encode()
            handle.attr["container"].s = b""
        call.input.append(handle_name)
        call.attr["Tin"].list.type.append(_dt.resource.tf_enum)
    call.attr["Tout"].list.type.extend(t._dtype.tf_enum for _, t in outputs)
    call.attr["f"].func.name = function_name
    for key in ("config", "config_proto", "executor_type"):
        call.attr[key].s = b""
    # keep the Placeholders and handles before the call (GraphDefs need no order, but it reads better)
    nodes = list(graph_def.node)
    call_index = next(i for i, n in enumerate(nodes) if n.name == call_name)
    reordered = nodes[:call_index] + nodes[call_index + 1:] + [nodes[call_index]]
    del graph_def.node[:]
    graph_def.node.extend(reordered)
    return call_name


# -- putting the directory in place --------------------------------------------------------------------
_RENAME_EXCHANGE = 2


def _exchange(a: str, b: str) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the system cannot."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd = -100
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0


def _fsync_tree(root: str) -> None:
    for directory, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(directory, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def save(obj: Any, export_dir: str, signatures: Any = None, options: Any = None) -> None:
    """Save `obj` (a jf.Module), its variables, traced functions and `signatures` as a SavedModel.

    >>> jf.saved_model.save(demo, "./data/demo/1", signatures={"serving_default": demo.addprint})  # doctest: +SKIP
    >>> demo2 = jf.saved_model.load("./data/demo/1")          # doctest: +SKIP
    >>> demo2.addprint(jf.constant(5.0))                       # doctest: +SKIP
    """
    if context.current_graph() is not None:
        raise RuntimeError("jf.saved_model.save runs eagerly; call it outside jf.function")
    export_dir = os.path.abspath(os.fspath(export_dir))
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise ValueError(f"export_dir: {export_dir!r} exists and is not a directory")
    if os.path.isdir(export_dir) and os.listdir(export_dir) and not os.path.exists(
            os.path.join(export_dir, SAVED_MODEL_FILENAME)):
        raise ValueError(f"export_dir: {export_dir!r} is a non-empty directory without a {SAVED_MODEL_FILENAME}; "
                         "refusing to replace it (pass a new or empty directory, or an earlier export)")
    model, graph = build(obj, signatures)
    parent = os.path.dirname(export_dir)
    os.makedirs(parent, exist_ok=True)
    remove_stale_temps(export_dir)  # exports of writers that were killed half-way
    tmp = os.path.join(parent, f".{os.path.basename(export_dir)}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        os.makedirs(os.path.join(tmp, VARIABLES_DIRECTORY))
        os.makedirs(os.path.join(tmp, ASSETS_DIRECTORY))
        _checkpoint._write_checkpoint(os.path.join(tmp, VARIABLES_DIRECTORY, VARIABLES_FILENAME), obj)
        with open(os.path.join(tmp, SAVED_MODEL_FILENAME), "wb") as f:
            f.write(model.SerializeToString())
        _fsync_tree(tmp)
        if os.path.isdir(export_dir):
            if not _exchange(tmp, export_dir):  # no renameat2: a short window without export_dir
                old = tmp + ".old"
                os.rename(export_dir, old)
                os.rename(tmp, export_dir)
                tmp = old
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            os.rename(tmp, export_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
