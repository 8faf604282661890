"""A SavedModel's functions as one GraphDef that TensorBoard's Graphs tab draws.

A SavedModel's graph lives in its function library, which TensorBoard draws only where a
node calls a function. For viewing, each saved function (each concrete signature of each
`jf.function`, and each serving signature) is inlined at the top level under a name scope
of its own (`addprint/...`, `signatures/serving_default/...`), its arguments becoming
`Placeholder`s, and sub-graphs (branches, loop bodies) stay in the library.
"""
from __future__ import annotations

from typing import Dict

from jitflow.runtime.saved_model.loading import meta_graph, read_saved_model
from jitflow.runtime.saved_model.protos import graph_pb2, node_def_pb2

_CALLS = ("StatefulPartitionedCall", "PartitionedCall", "If", "While")


def _display_name(graph, node_id: int, names: Dict[int, str]) -> str:
    return names.get(node_id, f"function_{node_id}")


def graph_def(export_dir: str, tags=None) -> "graph_pb2.GraphDef":
    meta = meta_graph(read_saved_model(export_dir), tags)
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(meta.graph_def.versions)
    out.library.CopyFrom(meta.graph_def.library)
    functions = {f.signature.name: f for f in meta.graph_def.library.function}
    graph = meta.object_graph_def
    names: Dict[int, str] = {}
    for i, node in enumerate(graph.nodes):
        for child in node.children:
            prefix = names.get(i, "")
            names.setdefault(child.node_id, f"{prefix}/{child.local_name}" if prefix else child.local_name)
    scopes = []
    for i, node in enumerate(graph.nodes):
        kind = node.WhichOneof("kind")
        if kind == "function":
            cfs = list(node.function.concrete_functions)
            for k, name in enumerate(cfs):
                scopes.append((names.get(i, f"function_{i}") + (f"_{k + 1}" if len(cfs) > 1 else ""), name))
        elif kind == "bare_concrete_function":
            scopes.append((names.get(i, f"signature_{i}"), node.bare_concrete_function.concrete_function_name))
    for scope, fname in scopes:
        fdef = functions.get(fname)
        if fdef is None:
            continue
        refs = {}
        for arg in fdef.signature.input_arg:
            ph = out.node.add(name=f"{scope}/{arg.name}", op="Placeholder")
            ph.attr["dtype"].type = arg.type
            refs[arg.name] = ph.name

        def ref(r: str) -> str:
            if r.startswith("^"):
                return "^" + f"{scope}/{r[1:]}"
            if r in refs:
                return refs[r]
            parts = r.split(":")
            index = parts[-1] if len(parts) == 3 else "0"
            return f"{scope}/{parts[0]}" + ("" if index == "0" else f":{index}")
        for nd in fdef.node_def:
            copy = node_def_pb2.NodeDef()
            copy.CopyFrom(nd)
            copy.name = f"{scope}/{nd.name}"
            del copy.input[:]
            copy.input.extend(ref(r) for r in nd.input)
            out.node.append(copy)
    return out


__all__ = ["graph_def"]
