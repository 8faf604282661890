"""What `saved_model_cli show` prints, for `jitflow saved-model show` (same text, same options).

    show(dir)                                  the tag-sets
    show(dir, tag_set="serve")                 the signature keys of that MetaGraph
    show(dir, tag_set="serve", signature_def=) one signature's inputs and outputs
    show(dir, all=True)                        every signature, the ops, the concrete functions
"""
from __future__ import annotations

from typing import Dict, List, Optional

from jitflow.runtime.saved_model import structure as _structure
from jitflow.runtime.saved_model.loading import meta_graph, read_saved_model
from jitflow.runtime.saved_model.protos import types_pb2

_TF_DTYPE_NAMES = {"float32": "tf.float32", "float64": "tf.float64", "float16": "tf.float16", "int8": "tf.int8",
                   "int16": "tf.int16", "int32": "tf.int32", "int64": "tf.int64", "uint8": "tf.uint8",
                   "bool": "tf.bool", "string": "tf.string", "resource": "tf.resource"}


def _shape_text(proto) -> str:
    if proto.unknown_rank:
        return "unknown_rank"
    dims = [str(d.size) for d in proto.dim]
    if len(dims) == 1:
        return f"({dims[0]})"
    return "(" + ", ".join(dims) + ")"


def _tensor_info(lines: List[str], kind: str, key: str, info, indent: int) -> None:
    pad = " " * indent
    lines.append(f"{pad}{kind}['{key}'] tensor_info:")
    lines.append(f"{pad}    dtype: {types_pb2.DataType.Name(info.dtype)}")
    lines.append(f"{pad}    shape: {_shape_text(info.tensor_shape)}")
    lines.append(f"{pad}    name: {info.name}")


def _signature(lines: List[str], sig, indent: int) -> None:
    pad = " " * indent
    lines.append(f"{pad}The given SavedModel SignatureDef contains the following input(s):")
    for key in sorted(sig.inputs):
        _tensor_info(lines, "inputs", key, sig.inputs[key], indent + 2)
    lines.append(f"{pad}The given SavedModel SignatureDef contains the following output(s):")
    for key in sorted(sig.outputs):
        _tensor_info(lines, "outputs", key, sig.outputs[key], indent + 2)
    lines.append(f"{pad}Method name is: {sig.method_name}")


def _spec_text(value) -> str:
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        shape = value.shape
        dims = "None" if shape.rank is None else "(" + ", ".join(
            "None" if d is None else str(d) for d in shape.as_list()) + ("," if shape.rank == 1 else "") + ")"
        name = "None" if value.name is None else repr(value.name)
        return f"TensorSpec(shape={dims}, dtype={_TF_DTYPE_NAMES.get(value.dtype.name, value.dtype.name)}, name={name})"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(_spec_text(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_spec_text(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _ops(meta) -> List[str]:
    """The ops of the graph and of every function it calls, directly or not (saved_model_cli's set)."""
    functions = {f.signature.name: f for f in meta.graph_def.library.function}
    ops, seen, pending = set(), set(), [list(meta.graph_def.node)]
    while pending:
        for node in pending.pop():
            ops.add(node.op)
            for attr in node.attr.values():
                names = [attr.func.name] if attr.HasField("func") else [f.name for f in attr.list.func]
                for name in names:
                    if name in functions and name not in seen:
                        seen.add(name)
                        pending.append(list(functions[name].node_def))
    return sorted(ops)


def _concrete_functions(lines: List[str], meta) -> None:
    graph = meta.object_graph_def
    lines.append("")
    lines.append("Concrete Functions:")
    names: Dict[int, str] = {}
    for node in graph.nodes:
        for child in node.children:
            names.setdefault(child.node_id, child.local_name)
    entries = []
    for i, node in enumerate(graph.nodes):
        if node.WhichOneof("kind") == "function":
            entries.append((names.get(i, f"function_{i}"), list(node.function.concrete_functions)))
    for name, concretes in sorted(entries):
        lines.append(f"  Function Name: '{name}'")
        for k, cf_name in enumerate(concretes):
            saved = graph.concrete_functions[cf_name]
            args, kwargs = _structure.decode(saved.canonicalized_input_signature)
            lines.append(f"    Option #{k + 1}")
            lines.append("      Callable with:")
            for j, arg in enumerate(args):
                lines.append(f"        Argument #{j + 1}")
                label = getattr(arg, "name", None)
                text = _spec_text(arg)
                lines.append(f"          {label}: {text}" if label else f"          DType: {type(arg).__name__}\n"
                             f"          Value: {text}")
            for key in kwargs:
                lines.append(f"        Named Argument #{len(args) + 1}")
                lines.append(f"          {key}")


def show(export_dir: str, tag_set: Optional[str] = None, signature_def: Optional[str] = None,
         all: bool = False) -> str:  # noqa: A002 - saved_model_cli's flag name
    model = read_saved_model(export_dir)
    lines: List[str] = []
    if all:
        lines.append("")  # saved_model_cli starts --all with a blank line
        for meta in model.meta_graphs:
            tags = ", ".join(meta.meta_info_def.tags)
            lines.append(f"MetaGraphDef with tag-set: '{tags}' contains the following SignatureDefs:")
            lines.append("")
            for key in sorted(meta.signature_def):
                lines.append(f"signature_def['{key}']:")
                _signature(lines, meta.signature_def[key], 2)
                lines.append("")
            lines.pop()
            lines.append(f"The MetaGraph with tag set {sorted(meta.meta_info_def.tags)} contains the following ops: "
                         "{" + ", ".join(repr(op) for op in _ops(meta)) + "}")
            _concrete_functions(lines, meta)
        return "\n".join(lines) + "\n"
    if tag_set is None:
        lines.append("The given SavedModel contains the following tag-sets:")
        lines.extend(", ".join(f"'{t}'" for t in sorted(m.meta_info_def.tags)) for m in model.meta_graphs)
        return "\n".join(lines) + "\n"
    meta = meta_graph(model, tag_set.split(","))
    if signature_def is None:
        lines.append("The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:")
        lines.extend(f'SignatureDef key: "{key}"' for key in sorted(meta.signature_def))
        return "\n".join(lines) + "\n"
    if signature_def not in meta.signature_def:
        raise ValueError(f"signature_def: {signature_def!r} is not in the MetaGraphDef with tag-set {tag_set!r}; it "
                         f"has {sorted(meta.signature_def)}")
    _signature(lines, meta.signature_def[signature_def], 0)
    return "\n".join(lines) + "\n"
