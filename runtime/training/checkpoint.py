"""`jf.train.Checkpoint`, `CheckpointManager`, `latest_checkpoint`: saving and restoring state.

What is saved is an object graph, as in TF: the checkpoint's keyword arguments are the
root's children; a `jf.Module`'s children are its attributes holding variables, modules,
optimizers, or lists/dicts of them; an optimizer's are `iter` (its iterations) and
`learning_rate`, plus slot variables attached to the variables they belong to. Restore
matches objects by these names, not by variable names. Objects that do not exist yet
are restored when they are created and assigned as an attribute (restore-on-creation,
seed 003), and so are optimizer slots, when the optimizer makes them.

File format: TensorFlow's (`save("dir/ckpt")` → prefix `dir/ckpt-N`, N = save counter):

- `<prefix>.index` + `<prefix>.data-00000-of-00001`: a tensor bundle (`tensor_bundle.py`)
  holding every variable under TF's name for it (`model/dense/w/.ATTRIBUTES/VARIABLE_VALUE`)
  and the object graph as a `TrackableObjectGraph` proto under `_CHECKPOINTABLE_OBJECT_GRAPH`
  (`object_graph.py`). TensorFlow restores these files into the equivalent `tf.Module`, and
  jitflow restores TensorFlow's.
- `checkpoint`: TF's text index of the directory (`model_checkpoint_path: "ckpt-2"`,
  then one `all_model_checkpoint_paths:` line per kept checkpoint).
- jitflow's older format (`<prefix>.json` object graph + `<prefix>.npz` values, version 1)
  is still read, so checkpoints written before the switch restore; new ones are TF's.

Writing to a prefix that already holds a checkpoint keeps that one restorable until the
new one is complete, whatever the moment of a kill (see `tensor_bundle.py`); the
`checkpoint` file is replaced by an atomic rename. Every file is written to a temporary file,
flushed, fsynced and renamed into place, so
a crash leaves either the old file or the new one. A restore reads and checks
everything first (JSON, checksum, archive, every shape and dtype against the live
variables) and assigns nothing unless all of it is valid: a truncated or corrupt
checkpoint raises `jf.errors.DataLossError` and leaves the variables untouched.
"""
from __future__ import annotations

import glob
import hashlib
import io
import json
import os
import re
import weakref
import zipfile
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.state import module as _module
from jitflow.runtime.training import optimizers as _optimizers
from jitflow.runtime.core.errors import DataLossError, NotFoundError
from jitflow.runtime.state.module import Module
from jitflow.runtime.core.tensor import host_array
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.training import object_graph as _object_graph
from jitflow.runtime.training import tensor_bundle as _bundle
from jitflow.runtime.training.atomic_files import atomic_write, remove_stale_temps

FORMAT = "jitflow.checkpoint"
VERSION = 1
INDEX_FILE = "checkpoint"


# -- the object graph ------------------------------------------------------------------------
def _has(obj: Any, method: str) -> bool:
    """Whether `obj`'s class defines `method` (looked up on the type: no __getattr__ tricks)."""
    return callable(getattr(type(obj), method, None))


def _is_trackable(value: Any) -> bool:
    if isinstance(value, (Variable, Module)) or _has(value, "_checkpoint_children"):
        return True
    if isinstance(value, (list, tuple)):
        return any(_is_trackable(v) for v in value)
    if isinstance(value, dict):
        return any(_is_trackable(v) for v in value.values())
    return False


def _kind(obj: Any) -> str:
    if isinstance(obj, Variable):
        return "variable"
    if isinstance(obj, (list, tuple)):
        return "list"
    if isinstance(obj, dict):
        return "dict"
    return "object"


def _children(obj: Any) -> Dict[str, Any]:
    """The named trackable children of `obj`, in a stable order."""
    if isinstance(obj, Variable):
        return {}
    if _has(obj, "_checkpoint_children"):
        found = obj._checkpoint_children()
    elif isinstance(obj, Module):
        attrs = vars(obj)
        found = {k: attrs[k] for k in sorted(attrs) if k not in Module._TF_MODULE_IGNORED_PROPERTIES}
    elif isinstance(obj, (list, tuple)):
        found = {str(i): v for i, v in enumerate(obj)}
    elif isinstance(obj, dict):
        found = {str(k): obj[k] for k in sorted(obj, key=repr)}
    else:
        return {}
    return {name: v for name, v in found.items() if _is_trackable(v)}


def _can_defer(obj: Any) -> bool:
    """Whether a child assigned to `obj` later can still be restored (it reports attribute sets)."""
    return isinstance(obj, (Module, Checkpoint))


class _Graph:
    """The object graph of a live root, numbered breadth-first as it is saved."""

    def __init__(self, root: Any) -> None:
        self.objects: List[Any] = [root]
        self.nodes: List[Dict[str, Any]] = [{"kind": _kind(root), "children": []}]
        ids = {id(root): 0}
        i = 0
        while i < len(self.objects):
            obj = self.objects[i]
            for name, child in _children(obj).items():
                if id(child) not in ids:
                    ids[id(child)] = self._add(child)
                self.nodes[i]["children"].append({"name": name, "node": ids[id(child)]})
            i += 1
        for i, obj in enumerate(list(self.objects)):  # slots hang off the variables they belong to
            if not _has(obj, "_checkpoint_slots"):
                continue
            slots = []
            for var, slot_name, slot in obj._checkpoint_slots():
                if id(var) not in ids:
                    continue  # the variable itself is not saved, so neither are its slots
                if id(slot) not in ids:
                    ids[id(slot)] = self._add(slot)
                slots.append({"original": ids[id(var)], "slot": slot_name, "node": ids[id(slot)]})
            if slots:
                self.nodes[i]["slot_variables"] = slots

    def _add(self, obj: Any) -> int:
        self.objects.append(obj)
        self.nodes.append({"kind": _kind(obj), "children": []})
        return len(self.objects) - 1

    def arrays(self) -> Dict[str, Tuple[np.ndarray, _dt.DType]]:
        """{tensor name: (value, dtype)} of every variable, named as TF names them."""
        values = {}
        for i, (obj, node) in enumerate(zip(self.objects, self.nodes)):
            if not isinstance(obj, Variable):
                continue
            if obj._value is None:
                raise ValueError(f"cannot save {obj.name}: it has no value yet (it is initialised when the "
                                 "function that created it first runs)")
            node["variable"] = {"key": f"n{i}", "dtype": obj.dtype.name, "shape": list(obj._value.shape),
                                "name": obj.name}
            values[i] = (np.asarray(host_array(obj._value)), obj.dtype)
        _object_graph.assign_keys(self.nodes)
        return {self.nodes[i]["variable"]["key"]: v for i, v in values.items()}


# -- files ------------------------------------------------------------------------------------
def _atomic_write(path: str, data: bytes) -> None:
    """Write `data` to `path` so that a crash leaves the old file or the new one, never half."""
    remove_stale_temps(path)
    atomic_write(path, data)


# Each is called before a checkpoint file or index is written; any returning False makes
# this process skip the write (a multi-worker strategy: only the chief writes, the others
# keep their counters in step). Set by runtime/distribute.
write_guards: List[Any] = []


def _writes_enabled() -> bool:
    return all(guard() for guard in write_guards)


def _write_checkpoint(prefix: str, root: Any) -> str:
    if not _writes_enabled():
        return prefix
    graph = _Graph(root)
    tensors = graph.arrays()
    tensors[_object_graph.OBJECT_GRAPH_KEY] = (np.array(_object_graph.to_proto(graph.nodes), dtype=object),
                                                _dt.string)
    _bundle.write_bundle(prefix, tensors)
    return prefix


def exists(prefix: str) -> bool:
    """Whether a complete checkpoint (TF format, or jitflow's older .json + .npz) is at `prefix`."""
    return os.path.exists(_bundle.index_path(prefix)) or os.path.exists(prefix + ".json")


def _corrupt(prefix: str, why: str) -> DataLossError:
    return DataLossError(f"checkpoint {prefix!r} is corrupt or truncated: {why}. Nothing was restored.")


def _read_checkpoint(prefix: str) -> Tuple[List[Dict[str, Any]], Dict[str, np.ndarray]]:
    """The nodes and arrays of checkpoint `prefix`, after checking every part of it."""
    if os.path.exists(_bundle.index_path(prefix)) or not os.path.exists(prefix + ".json"):
        return _read_bundle_checkpoint(prefix)
    return _read_legacy_checkpoint(prefix)


def _read_bundle_checkpoint(prefix: str) -> Tuple[List[Dict[str, Any]], Dict[str, np.ndarray]]:
    """TF's format: the bundle, its object graph, then every value the graph refers to."""
    if not os.path.exists(_bundle.index_path(prefix)):
        if glob.glob(glob.escape(prefix) + ".data-*"):
            raise _corrupt(prefix, f"{_bundle.index_path(prefix)} is missing (the save did not finish)")
        raise NotFoundError(f"no checkpoint at {prefix!r}: {_bundle.index_path(prefix)} does not exist (pass the "
                            "path that save() returned, e.g. jf.train.latest_checkpoint(directory))")
    with _bundle.BundleReader(prefix) as reader:
        reader.check_ranges()
        if _object_graph.OBJECT_GRAPH_KEY not in reader.entries:
            raise DataLossError(f"checkpoint {prefix!r} has no object graph ({_object_graph.OBJECT_GRAPH_KEY}); "
                                "it was written by TF1's name-based Saver, which jitflow does not restore")
        specs = {name: {"dtype": e.dtype.name if e.dtype is not None else f"enum {e.dtype_enum}",
                        "shape": e.shape} for name, e in reader.entries.items()}
        graph_bytes = reader.read(_object_graph.OBJECT_GRAPH_KEY).item()
        try:
            nodes = _object_graph.from_proto(graph_bytes, specs)
        except ValueError as e:
            raise _corrupt(prefix, str(e)) from None
        arrays = {}
        for node in nodes:
            spec = node.get("variable")
            if spec is not None and spec["key"] not in arrays:
                arrays[spec["key"]] = reader.read(spec["key"])
    return nodes, arrays


def _read_legacy_checkpoint(prefix: str) -> Tuple[List[Dict[str, Any]], Dict[str, np.ndarray]]:
    """jitflow's version-1 format (.json + .npz), still read so older checkpoints restore."""
    meta_path = prefix + ".json"
    if not os.path.exists(meta_path):
        if os.path.exists(prefix + ".npz"):
            raise _corrupt(prefix, f"{meta_path} is missing (the save did not finish)")
        raise NotFoundError(f"no checkpoint at {prefix!r}: {meta_path} does not exist (pass the path that "
                            "save() returned, e.g. jf.train.latest_checkpoint(directory))")
    fd, size = _bundle.open_regular(meta_path, os.path.dirname(prefix), "checkpoint index")
    try:
        raw = _bundle.pread_all(fd, min(size, 64 << 20), 0)
    finally:
        os.close(fd)
    try:
        meta = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _corrupt(prefix, f"{meta_path} is not valid JSON ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise _corrupt(prefix, f"{meta_path} is not a jitflow checkpoint index")
    version = meta.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise DataLossError(f"checkpoint {prefix!r} has format version {version!r}; this jitflow reads "
                            f"versions up to {VERSION} (it was written by a newer jitflow)")
    nodes: Any = meta.get("nodes")  # a list of node dicts once _check_nodes passes
    _check_nodes(prefix, nodes)
    data_file, data_bytes = meta.get("data_file"), meta.get("data_bytes")
    if not isinstance(data_file, str) or os.path.basename(data_file) != data_file or data_file in ("", ".", ".."):
        raise _corrupt(prefix, f"its data file {data_file!r} is not a file name inside the checkpoint's directory")
    if not isinstance(data_bytes, int) or data_bytes < 0:
        raise _corrupt(prefix, f"its data size {data_bytes!r} is not a byte count")
    data_path = os.path.join(os.path.dirname(prefix), data_file)
    try:
        fd, size = _bundle.open_regular(data_path, os.path.dirname(prefix), "checkpoint data file")
    except NotFoundError:
        raise _corrupt(prefix, f"its data file {data_path} is missing") from None
    try:
        if size != data_bytes:  # checked before reading: no allocation the index did not promise
            raise _corrupt(prefix, f"{data_path} has {size} bytes, the index says {data_bytes}")
        data = _bundle.pread_all(fd, size, 0)
    finally:
        os.close(fd)
    if hashlib.sha256(data).hexdigest() != meta.get("data_sha256"):
        raise _corrupt(prefix, f"{data_path} does not match its sha256 checksum")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:  # stored members only: no decompression bombs
            packed = [i.filename for i in zf.infolist() if i.compress_type != zipfile.ZIP_STORED]
        if packed:
            raise _corrupt(prefix, f"{data_path} has compressed members {packed}; jitflow writes them stored")
        with np.load(io.BytesIO(data), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
        raise _corrupt(prefix, f"{data_path} cannot be read ({e})") from None
    for i, node in enumerate(nodes):
        spec = node.get("variable")
        if spec is None:
            continue
        arr = arrays.get(spec["key"])
        if arr is None:
            raise _corrupt(prefix, f"the value of node {i} ({spec.get('name')}) is missing from {data_path}")
        if arr.dtype != np.dtype(_dt.as_dtype(spec["dtype"]).as_numpy_dtype) or list(arr.shape) != spec["shape"]:
            raise _corrupt(prefix, f"the value of node {i} has dtype {arr.dtype.name} and shape {list(arr.shape)}, "
                                   f"the index says {spec['dtype']} {spec['shape']}")
    return nodes, arrays


def _check_nodes(prefix: str, nodes: Any) -> None:
    if not isinstance(nodes, list) or not nodes:
        raise _corrupt(prefix, "the object graph has no nodes")
    n = len(nodes)
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or node.get("kind") not in ("object", "list", "dict", "variable"):
            raise _corrupt(prefix, f"node {i} of the object graph is malformed")
        children = node.get("children")
        if not isinstance(children, list) or not all(
                isinstance(c, dict) and isinstance(c.get("name"), str) and isinstance(c.get("node"), int)
                and 0 <= c["node"] < n for c in children):
            raise _corrupt(prefix, f"node {i} has malformed children")
        for slot in node.get("slot_variables", []):
            if not (isinstance(slot, dict) and isinstance(slot.get("slot"), str)
                    and all(isinstance(slot.get(k), int) and 0 <= slot[k] < n for k in ("original", "node"))):
                raise _corrupt(prefix, f"node {i} has malformed slot variables")
        if node["kind"] == "variable":
            spec = node.get("variable")
            if not (isinstance(spec, dict) and isinstance(spec.get("key"), str) and isinstance(spec.get("shape"), list)
                    and isinstance(spec.get("dtype"), str)):
                raise _corrupt(prefix, f"variable node {i} is malformed")
            try:
                _dt.as_dtype(spec["dtype"])
            except (TypeError, ValueError, KeyError):
                raise _corrupt(prefix, f"variable node {i} has the unknown dtype {spec['dtype']!r}") from None


# -- restoring --------------------------------------------------------------------------------
# Objects that got a checkpoint node before all their children existed: obj → {name: (restore, node)}.
_deferred: "weakref.WeakKeyDictionary[Any, Dict[str, Tuple[_Restore, int]]]" = weakref.WeakKeyDictionary()
# Optimizers whose slots a restore is waiting for: optimizer → that restore.
_deferred_slots: "weakref.WeakKeyDictionary[Any, _Restore]" = weakref.WeakKeyDictionary()


class _Restore:
    """One `restore()` call: the checkpoint's contents and what has been matched so far."""

    def __init__(self, prefix: str, nodes: List[Dict[str, Any]], arrays: Dict[str, np.ndarray]) -> None:
        self.prefix = prefix
        self.nodes = nodes
        self.arrays = arrays
        self.paths = self._paths()
        self.restored: set = set()                      # variable nodes assigned
        self.matched: set = set()                       # nodes matched to a live object
        self.var_of_node: Dict[int, Variable] = {}
        self.pending_slots: Dict[Tuple[int, Optional[int], str], int] = {}  # (id(opt), original node, slot) → node
        self.unmatched_live: List[str] = []             # live objects with no checkpoint value

    def _paths(self) -> Dict[int, str]:
        paths, queue = {0: "<root>"}, [0]
        for i in queue:
            for child in self.nodes[i]["children"]:
                if child["node"] not in paths:
                    prefix = "" if i == 0 else paths[i] + "/"
                    paths[child["node"]] = prefix + child["name"]
                    queue.append(child["node"])
        for node in self.nodes:
            for slot in node.get("slot_variables", []):
                paths.setdefault(slot["node"], f"{paths.get(slot['original'], '?')}/.{slot['slot']}")
        return paths

    def plan(self, obj: Any, node: int, path: str) -> "_Plan":
        """Match the live subtree at `obj` to checkpoint node `node`; checks, but assigns nothing."""
        plan = _Plan()
        optimizers: List[Tuple[Any, int]] = []
        queue, seen = [(obj, node, path)], set()
        while queue:
            obj, i, path = queue.pop(0)
            if (id(obj), i) in seen:
                continue
            seen.add((id(obj), i))
            spec = self.nodes[i]
            if spec["kind"] == "variable":
                if not isinstance(obj, Variable):
                    plan.errors.append(f"{path}: the checkpoint holds a variable there, but the object is a "
                                       f"{type(obj).__name__}")
                    continue
                plan.check_and_assign(self, obj, i, path)
                plan.var_of_node[i] = obj
                continue
            if isinstance(obj, Variable):
                plan.errors.append(f"{path}: the object is the variable {obj.name}, but the checkpoint holds "
                                   f"an {spec['kind']} there")
                continue
            live = _children(obj)
            for child in spec["children"]:
                name, j = child["name"], child["node"]
                if name in live:
                    queue.append((live[name], j, f"{path}/{name}" if path else name))
                elif _can_defer(obj):
                    plan.defer.append((obj, name, j))
            saved = {c["name"] for c in spec["children"]}
            plan.unmatched.extend(f"{path}/{name}" if path else name for name in live if name not in saved)
            if spec.get("slot_variables"):
                optimizers.append((obj, i))
            plan.matched.add(i)
        for opt, i in optimizers:  # after the whole subtree: slots refer to variables matched above
            for slot in self.nodes[i]["slot_variables"]:
                original = plan.var_of_node.get(slot["original"])
                if original is None:  # not `or`: a Variable's truth value is its value's
                    original = self.var_of_node.get(slot["original"])
                slot_var = self._existing_slot(opt, original, slot["slot"])
                if slot_var is None:
                    plan.slots.append((opt, (id(opt), slot["original"], slot["slot"]), slot["node"]))
                else:
                    plan.check_and_assign(self, slot_var, slot["node"], self.paths.get(slot["node"], "slot"))
        return plan

    @staticmethod
    def _existing_slot(opt: Any, var: Optional[Variable], slot_name: str) -> Optional[Variable]:
        if var is None:
            return None
        for v, name, slot in opt._checkpoint_slots():
            if v is var and name == slot_name:
                return slot
        return None

    def _check_value(self, var: Variable, spec: Dict[str, Any], path: str) -> Optional[str]:
        arr = self.arrays[spec["key"]]
        if _dt.as_dtype(spec["dtype"]) is not var.dtype:
            return (f"{path}: the checkpoint value has dtype {spec['dtype']} but the variable {var.name} has "
                    f"dtype {var.dtype.name}")
        shape = var._shape
        if shape is None or len(shape) != arr.ndim or any(d is not None and d != a for d, a in zip(shape, arr.shape)):
            return (f"{path}: the checkpoint value has shape {tuple(arr.shape)} but the variable {var.name} "
                    f"has shape {var.shape}")
        return None

    def apply(self, obj: Any, node: int, path: str) -> None:
        """Plan, check, then assign: all of the subtree or (on any error) nothing."""
        plan = self.plan(obj, node, path)
        if plan.errors:
            raise ValueError(f"cannot restore {self.prefix!r}; nothing was restored:\n  " + "\n  ".join(plan.errors))
        with context.init_scope():
            for var, value, i in plan.assign:
                var.assign(value, read_value=False)
                self.restored.add(i)
        self.matched |= plan.matched | {i for _, _, i in plan.assign}
        self.var_of_node.update(plan.var_of_node)
        self.unmatched_live.extend(plan.unmatched)
        for owner, name, j in plan.defer:
            _deferred.setdefault(owner, {})[name] = (self, j)
        for opt, key, j in plan.slots:
            self.pending_slots[key] = j
            _deferred_slots[opt] = self

    def restore_slot(self, opt: Any, var: Variable, slot_name: str, slot: Variable) -> None:
        original = next((i for i, v in self.var_of_node.items() if v is var), None)
        node = self.pending_slots.pop((id(opt), original, slot_name), None)
        if node is None:
            return
        spec = self.nodes[node]["variable"]
        error = self._check_value(slot, spec, self.paths.get(node, "slot"))
        if error:
            raise ValueError(f"cannot restore {self.prefix!r}: {error}")
        with context.init_scope():
            slot.assign(self.arrays[spec["key"]], read_value=False)
        self.restored.add(node)
        self.matched.add(node)

    def unrestored(self) -> List[str]:
        return [self.paths.get(i, f"node {i}") for i, node in enumerate(self.nodes)
                if node["kind"] == "variable" and i not in self.restored]


class _Plan:
    """What restoring one subtree will do, collected before anything is assigned."""

    def __init__(self) -> None:
        self.assign: List[Tuple[Variable, np.ndarray, int]] = []
        self.defer: List[Tuple[Any, str, int]] = []           # (owner, attribute, node): restore on creation
        self.slots: List[Tuple[Any, Tuple[int, int, str], int]] = []  # optimizer slots not created yet
        self.errors: List[str] = []
        self.matched: set = set()
        self.unmatched: List[str] = []
        self.var_of_node: Dict[int, Variable] = {}

    def check_and_assign(self, restore: "_Restore", var: Variable, node: int, path: str) -> None:
        spec = restore.nodes[node]["variable"]
        error = restore._check_value(var, spec, path)
        if error:
            self.errors.append(error)
        else:
            self.assign.append((var, restore.arrays[spec["key"]], node))


def _on_attribute_set(obj: Any, name: str, value: Any) -> None:
    """Restore-on-creation: a child the last restore was waiting for has just been assigned."""
    if not _deferred:
        return
    waiting = _deferred.get(obj)
    if not waiting or name not in waiting or not _is_trackable(value):
        return
    restore, node = waiting.pop(name)
    restore.apply(value, node, restore.paths.get(node, name))


def _on_slot_created(opt: Any, var: Variable, slot_name: str, slot: Variable) -> None:
    restore = _deferred_slots.get(opt) if _deferred_slots else None
    if restore is not None:
        restore.restore_slot(opt, var, slot_name, slot)


_module._setattr_hooks.append(_on_attribute_set)
_optimizers._slot_hooks.append(_on_slot_created)


class CheckpointLoadStatus:
    """What `Checkpoint.restore` returns: checks on how completely the checkpoint matched."""

    def __init__(self, restore: _Restore) -> None:
        self._restore = restore

    def assert_consumed(self) -> "CheckpointLoadStatus":
        """Every checkpoint value was restored and every live object had a value."""
        missing = self._restore.unrestored()
        if missing:
            raise AssertionError(f"Unresolved values in checkpoint {self._restore.prefix!r} (no object was "
                                 f"created for them yet): {missing}")
        return self.assert_existing_objects_matched()

    def assert_existing_objects_matched(self) -> "CheckpointLoadStatus":
        """Every live object reachable from the checkpoint's root got a value."""
        if self._restore.unmatched_live:
            raise AssertionError(f"Objects without a value in checkpoint {self._restore.prefix!r}: "
                                 f"{self._restore.unmatched_live}")
        return self

    def assert_nontrivial_match(self) -> "CheckpointLoadStatus":
        if not self._restore.restored:
            raise AssertionError(f"nothing in {self._restore.prefix!r} matched the objects being restored")
        return self

    def expect_partial(self) -> "CheckpointLoadStatus":
        """Accept a partial restore (jitflow does not warn about one anyway)."""
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Values are assigned at restore time (TF API compatibility)."""

    initialize_or_restore = run_restore_ops


class InitializationOnlyStatus:
    """What `restore(None)` returns: nothing is restored, so every assertion fails."""

    def assert_consumed(self) -> "InitializationOnlyStatus":
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    assert_existing_objects_matched = assert_nontrivial_match = assert_consumed

    def expect_partial(self) -> "InitializationOnlyStatus":
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Nothing to do."""

    initialize_or_restore = run_restore_ops


# -- the user API ----------------------------------------------------------------------------------
class Checkpoint:
    """Saves and restores the variables of the objects given as keyword arguments.

    >>> ckpt = Checkpoint(model=model, optimizer=optimizer)    # doctest: +SKIP
    >>> path = ckpt.save("ckpts/train")                        # doctest: +SKIP
    'ckpts/train-1'
    >>> ckpt.restore(latest_checkpoint("ckpts")).assert_consumed()  # doctest: +SKIP
    """

    # Set with object.__setattr__ (this class's __setattr__ tracks public attributes).
    _children: Dict[str, Any]
    _save_counter: Optional[Variable]

    def __init__(self, **kwargs: Any) -> None:
        object.__setattr__(self, "_children", {})
        # Created on first use (save, restore, or reading `save_counter`), as TF's: a checkpoint
        # only ever `write`n holds no save_counter.
        object.__setattr__(self, "_save_counter", None)
        for name, value in kwargs.items():
            if not _is_trackable(value):
                raise ValueError(f"Checkpoint: {name}={type(value).__name__!s} is not something a checkpoint "
                                 "can save; pass variables, jf.Modules, optimizers, or lists/dicts of them")
            setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if not name.startswith("_") and _is_trackable(value):
            self._children[name] = value
            _on_attribute_set(self, name, value)

    def _counter(self) -> Variable:
        if self._save_counter is None:
            with context.init_scope():
                object.__setattr__(self, "_save_counter",
                                   Variable(0, dtype=_dt.int64, trainable=False, name="save_counter"))
        assert self._save_counter is not None
        return self._save_counter

    @property
    def save_counter(self) -> Variable:
        """How many times `save` has run (restored with the checkpoint, so numbering continues)."""
        return self._counter()

    def _checkpoint_children(self) -> Dict[str, Any]:
        if self._save_counter is None:
            return dict(self._children)
        return {**self._children, "save_counter": self._save_counter}

    def write(self, file_prefix: str) -> str:
        """Write to exactly `file_prefix` (no counter, no index update); returns it."""
        if context.current_graph() is not None:
            raise RuntimeError("Checkpoint.write runs eagerly; call it outside jf.function")
        return _write_checkpoint(os.fspath(file_prefix), self)

    def save(self, file_prefix: str) -> str:
        """Write `file_prefix-N` (N = the incremented save counter) and make it the directory's latest."""
        if context.current_graph() is not None:
            raise RuntimeError("Checkpoint.save runs eagerly; call it outside jf.function")
        file_prefix = os.fspath(file_prefix)
        counter = self._counter()
        with context.init_scope():
            counter.assign_add(1, read_value=False)
        path = self.write(f"{file_prefix}-{int(counter.numpy())}")
        _write_index(os.path.dirname(file_prefix), path, [path])
        return path

    def restore(self, save_path: Optional[str]):
        """Assign the saved values (see the module docstring); returns a status object.

        Objects created later are restored when they are assigned (restore-on-creation).
        """
        if save_path is None:
            return InitializationOnlyStatus()
        prefix = os.fspath(save_path)
        self._counter()  # restored too, when the checkpoint has one (TF creates it here as well)
        nodes, arrays = _read_checkpoint(prefix)
        restore = _Restore(prefix, nodes, arrays)
        restore.apply(self, 0, "")
        return CheckpointLoadStatus(restore)

    read = restore


# -- the directory index ------------------------------------------------------------------------
_INDEX_LINE = re.compile(r'^(\w+):\s*(".*")\s*$')


def _read_index(directory: str) -> Tuple[Optional[str], List[str]]:
    """(latest, all kept) prefixes from `directory/checkpoint`, joined with the directory."""
    path = os.path.join(directory, INDEX_FILE)
    if not os.path.isfile(path):
        return None, []
    latest, kept = None, []
    with open(path, "r", encoding="utf-8", errors="replace") as f:
        for line in f:
            m = _INDEX_LINE.match(line.strip())
            if not m:
                continue
            try:
                value = json.loads(m.group(2))
            except ValueError:
                continue
            full = value if os.path.isabs(value) else os.path.join(directory, value)
            if m.group(1) == "model_checkpoint_path":
                latest = full
            elif m.group(1) == "all_model_checkpoint_paths":
                kept.append(full)
    return latest, kept


def _write_index(directory: str, latest: str, kept: List[str]) -> None:
    if not _writes_enabled():
        return

    def rel(p: str) -> str:
        return os.path.relpath(p, directory or ".") if os.path.dirname(p) == directory else p
    lines = [f"model_checkpoint_path: {json.dumps(rel(latest))}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(rel(p))}" for p in kept]
    if directory:
        os.makedirs(directory, exist_ok=True)
    _atomic_write(os.path.join(directory or ".", INDEX_FILE), ("\n".join(lines) + "\n").encode("utf-8"))


def latest_checkpoint(checkpoint_dir: str, latest_filename: Optional[str] = None) -> Optional[str]:
    """The prefix of the newest checkpoint in `checkpoint_dir` (as `save` returned it), or None.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = jf.train.Checkpoint(v=jf.Variable(1.0)).save(folder + '/ckpt')
    >>> jf.latest_checkpoint(folder) == path
    True
    """
    directory = os.fspath(checkpoint_dir)
    if latest_filename not in (None, INDEX_FILE):
        raise ValueError(f"latest_filename: jitflow keeps its index in {INDEX_FILE!r}")
    latest, _ = _read_index(directory)
    if latest is None or not exists(latest):
        return None
    return latest


def _delete(prefix: str) -> None:
    if not _writes_enabled():
        return
    _bundle.delete_bundle(prefix)
    for suffix in (".json", ".npz"):  # the index first: a half-deleted checkpoint is no checkpoint
        try:
            os.remove(prefix + suffix)
        except FileNotFoundError:
            pass


class CheckpointManager:
    """Numbered saves in one directory, keeping the newest `max_to_keep` (None: keep all).

    >>> manager = CheckpointManager(ckpt, "./save", max_to_keep=3, checkpoint_name="model.ckpt")  # doctest: +SKIP
    >>> manager.save()                                                                          # doctest: +SKIP
    './save/model.ckpt-1'
    """

    def __init__(self, checkpoint: Checkpoint, directory: str, max_to_keep: Optional[int],
                 checkpoint_name: str = "ckpt") -> None:
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"checkpoint: expected a jf.train.Checkpoint; got {type(checkpoint).__name__}")
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep <= 0):
            raise ValueError(f"max_to_keep: expected a positive int or None; got {max_to_keep!r}")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._prefix = os.path.join(self._directory, checkpoint_name)
        latest, kept = _read_index(self._directory)
        self._kept = [p for p in kept if exists(p)]
        self._latest = latest if latest is not None and exists(latest) else None

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoints(self) -> List[str]:
        """The kept checkpoints, oldest first."""
        return list(self._kept)

    @property
    def latest_checkpoint(self) -> Optional[str]:
        return self._latest

    def save(self, checkpoint_number: Optional[int] = None) -> str:
        """Save `<directory>/<checkpoint_name>-N` (N = checkpoint_number or the save counter)."""
        counter = self._checkpoint.save_counter
        with context.init_scope():
            counter.assign_add(1, read_value=False)
        number = int(counter.numpy()) if checkpoint_number is None else int(checkpoint_number)
        path = self._checkpoint.write(f"{self._prefix}-{number}")
        if path in self._kept:
            self._kept.remove(path)
        self._kept.append(path)
        self._latest = path
        _write_index(self._directory, path, self._kept)  # the new one is recorded before deleting
        if self._max_to_keep is not None:
            while len(self._kept) > self._max_to_keep:
                _delete(self._kept.pop(0))
            _write_index(self._directory, path, self._kept)
        return path

    def restore_or_initialize(self) -> Optional[str]:
        """Restore the latest checkpoint if there is one; returns its path (or None)."""
        if self._latest is None:
            return None
        self._checkpoint.restore(self._latest)
        return self._latest


__all__ = ["Checkpoint", "CheckpointManager", "CheckpointLoadStatus", "latest_checkpoint", "FORMAT", "VERSION"]
