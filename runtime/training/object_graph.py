"""A checkpoint's object graph as TF stores it: the `TrackableObjectGraph` proto.

jitflow's checkpoint code describes the saved objects as plain node dicts::

    {"kind": "object" | "list" | "dict" | "variable",
     "children": [{"name": "dense", "node": 1}, ...],
     "slot_variables": [{"original": 2, "slot": "m", "node": 7}, ...],   # optimizers only
     "variable": {"key": <tensor name in the bundle>, "dtype": "float32", "shape": [3],
                  "name": "dense/w:0"}}                                   # variables only

This module turns them into the proto TF writes under `_CHECKPOINTABLE_OBJECT_GRAPH` and
back. Tensor names follow TF (`trackable/base.py`, `checkpoint/util.py`): the path of local
names from the root (``.`` escaped as ``..`` and ``/`` as ``./``) joined by ``/``, then
``/.ATTRIBUTES/VARIABLE_VALUE``; a slot variable is named
``<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>``. So TensorFlow restores a
jitflow checkpoint into the equivalent `tf.Module` and jitflow restores TF's.
"""
from __future__ import annotations

from typing import Any, Dict, List

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
VARIABLE_VALUE = "VARIABLE_VALUE"


def escape(name: str) -> str:
    return name.replace(".", "..").replace("/", "./")


def _pb():
    from tensorboard.compat.proto import trackable_object_graph_pb2
    return trackable_object_graph_pb2


def paths(nodes: List[Dict[str, Any]]) -> Dict[int, str]:
    """Node id → escaped path from the root, breadth first (the first path found wins, as in TF)."""
    out, queue = {0: ""}, [0]
    for i in queue:
        for child in nodes[i]["children"]:
            j = child["node"]
            if j not in out:
                out[j] = (out[i] + "/" if out[i] else "") + escape(child["name"])
                queue.append(j)
    return out


def assign_keys(nodes: List[Dict[str, Any]]) -> None:
    """Give every variable node (and slot) its TF tensor name, in `node["variable"]["key"]`."""
    where = paths(nodes)
    for i, node in enumerate(nodes):
        if node["kind"] == "variable" and i in where:
            node["variable"]["key"] = f"{where[i]}/.ATTRIBUTES/{VARIABLE_VALUE}"
    for i, node in enumerate(nodes):
        for slot in node.get("slot_variables", []):
            spec = nodes[slot["node"]].get("variable")
            if spec is not None and slot["node"] not in where:
                spec["key"] = (f"{where.get(slot['original'], '')}/.OPTIMIZER_SLOT/{where.get(i, '')}/"
                               f"{escape(slot['slot'])}")


def to_proto(nodes: List[Dict[str, Any]]) -> bytes:
    pb = _pb()
    graph = pb.TrackableObjectGraph()
    for node in nodes:
        obj = graph.nodes.add()
        for child in node["children"]:
            obj.children.add(node_id=child["node"], local_name=child["name"])
        spec = node.get("variable")
        if node["kind"] == "variable" and spec is not None:
            obj.attributes.add(name=VARIABLE_VALUE, full_name=spec["name"].rsplit(":", 1)[0],
                               checkpoint_key=spec["key"])
        for slot in node.get("slot_variables", []):
            obj.slot_variables.add(original_variable_node_id=slot["original"], slot_name=slot["slot"],
                                   slot_variable_node_id=slot["node"])
        obj.has_checkpoint_values.value = True
    return graph.SerializeToString()


def from_proto(data: bytes, specs: Dict[str, Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Node dicts from TF's proto; `specs` gives each tensor's dtype and shape (from the bundle index).

    Raises ValueError naming what is malformed; nodes TF saved other attributes for (no
    VARIABLE_VALUE) become plain objects.
    """
    pb = _pb()
    graph = pb.TrackableObjectGraph()
    try:
        graph.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError
        raise ValueError(f"the object graph cannot be parsed ({e})") from None
    n = len(graph.nodes)
    if n == 0:
        raise ValueError("the object graph has no nodes")
    nodes: List[Dict[str, Any]] = []
    for i, obj in enumerate(graph.nodes):
        children = []
        for child in obj.children:
            if not 0 <= child.node_id < n:
                raise ValueError(f"node {i} has a child {child.local_name!r} pointing at node {child.node_id} "
                                 f"of {n}")
            children.append({"name": child.local_name, "node": int(child.node_id)})
        node: Dict[str, Any] = {"kind": "object", "children": children}
        for attr in obj.attributes:
            if attr.name == VARIABLE_VALUE:
                spec = specs.get(attr.checkpoint_key)
                if spec is None:
                    raise ValueError(f"node {i}'s value {attr.checkpoint_key!r} is not in the checkpoint")
                node["kind"] = "variable"
                node["variable"] = {"key": attr.checkpoint_key, "dtype": spec["dtype"], "shape": spec["shape"],
                                    "name": attr.full_name + ":0"}
        slots = []
        for slot in obj.slot_variables:
            if not (0 <= slot.original_variable_node_id < n and 0 <= slot.slot_variable_node_id < n):
                raise ValueError(f"node {i} has a slot variable {slot.slot_name!r} pointing outside the graph")
            slots.append({"original": int(slot.original_variable_node_id), "slot": slot.slot_name,
                          "node": int(slot.slot_variable_node_id)})
        if slots:
            node["slot_variables"] = slots
        nodes.append(node)
    return nodes


__all__ = ["OBJECT_GRAPH_KEY", "assign_keys", "to_proto", "from_proto", "paths", "escape"]
