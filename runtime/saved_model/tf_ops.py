"""Ops in TensorFlow's own form, both ways: jitflow node <-> TF NodeDef.

jitflow keeps static arguments as attrs (`Sum` has `axis=(1,)`); TensorFlow passes several
of them as constant inputs (`Sum(input, reduction_indices)`), names type attrs (`T`,
`Tidx`, `SrcT`), and prints through `StringFormat` + `PrintV2`. One row per op here says how
to translate, so a jitflow SavedModel loads in TensorFlow and a TensorFlow SavedModel loads
in jitflow. An op without a row is exported in jitflow's own form (marked `_jf_native`),
which jitflow loads and TensorFlow does not. The CNN ops (`tf_nn_ops`) and the sized array ops
(`tf_array_ops`) keep their rows in modules of their own, as tables merged here.

`export(node, ...)` returns the NodeDefs for one jitflow node (extra `Const`s first) or None;
`IMPORTS[op](inputs, attrs, const)` returns (jitflow op, inputs, attrs), where `const(i)`
is the constant value of input i (TF's axis/shape inputs must be constants).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.saved_model import attrs as _attrs
from jitflow.runtime.saved_model import tf_array_ops, tf_composites, tf_nn_ops
from jitflow.runtime.saved_model.protos import node_def_pb2

NATIVE = "_jf_native"

# TF's name for each op's (first) output argument: FunctionDef refs are `node:<name>:<index>`.
OUTPUT_NAMES: Dict[str, str] = {
    **{op: "z" for op in ("AddV2", "Add", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow", "FloorDiv",
                          "FloorMod", "Greater", "GreaterEqual", "Less", "LessEqual", "Equal", "NotEqual",
                          "LogicalAnd", "LogicalOr")},
    **{op: "y" for op in ("Tanh", "Sigmoid", "Exp", "Log", "Neg", "Abs", "Square", "Sqrt", "Sin", "Cos", "Sign",
                          "Cast", "Transpose", "LogicalNot", "ZerosLike", "OnesLike", "IsFinite")},
    "MatMul": "product", "BatchMatMulV2": "output", "ReadVariableOp": "value", "Relu": "activations",
    "Softmax": "softmax", "LogSoftmax": "logsoftmax", "SelectV2": "output",
    **{op: "y" for op in ("Log1p", "Expm1", "Rsqrt", "Reciprocal", "Floor", "Ceil", "Round", "Tan", "Atan",
                          "Asin", "Acos", "Sinh", "Cosh")},
    **tf_nn_ops.OUTPUT_NAMES, **tf_array_ops.OUTPUT_NAMES,
}
# Rows kept in modules of their own (CNN ops; sized array ops), as (op -> export fn) tables.
_EXPORT_TABLES = {**tf_nn_ops.EXPORTS, **tf_array_ops.EXPORTS}


def output_name(op: str) -> str:
    return OUTPUT_NAMES.get(op, "output")


_ELEMENTWISE_T = {"AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Pow", "FloorDiv", "FloorMod", "Greater",
                  "GreaterEqual", "Less", "LessEqual", "Relu", "Tanh", "Sigmoid", "Exp", "Log", "Neg", "Abs",
                  "Square", "Sqrt", "Sin", "Cos", "Sign", "Identity", "StopGradient", "ZerosLike", "OnesLike",
                  "SelectV2", "IsFinite"}
# jitflow's math_extra unary ops, named as TF names them (Erf is left out: TF writes GELU with it, and
# the tests keep one op TF writes that jitflow refuses by name)
_EXTRA_UNARY = {"Log1p", "Expm1", "Rsqrt", "Reciprocal", "Floor", "Ceil", "Round", "Tan", "Atan", "Asin", "Acos",
                "Sinh", "Cosh", "Softsign"}
_ELEMENTWISE_T |= _EXTRA_UNARY
_NO_ATTRS = {"LogicalAnd", "LogicalOr", "LogicalNot"}
_REDUCTIONS = {"Sum", "Mean", "Max", "Min", "Prod", "All", "Any"}


def _const_node(name: str, value: np.ndarray, dtype: _dt.DType) -> "node_def_pb2.NodeDef":
    nd = node_def_pb2.NodeDef(name=name, op="Const")
    nd.attr["dtype"].type = dtype.tf_enum
    nd.attr["value"].tensor.CopyFrom(_attrs.tensor_proto(value, dtype))
    return nd


def export(node: Any, inputs: List[str], unique: Callable[[str], str]) -> Optional[List["node_def_pb2.NodeDef"]]:
    """TF NodeDefs for `node` (refs to its inputs given), or None when it has no TF form."""
    op, a = node.op.tf_op, node.attrs
    nd = node_def_pb2.NodeDef(name=node.name, op=op)
    extra: List[node_def_pb2.NodeDef] = []
    dims = [t._dims for t in node.inputs]
    dtypes = [t._dtype for t in node.inputs]

    def const_input(suffix: str, value: Any, dtype=_dt.int32) -> str:
        c = _const_node(unique(f"{node.name}/{suffix}"), np.asarray(value, dtype=dtype.as_numpy_dtype), dtype)
        extra.append(c)
        return f"{c.name}:output:0"

    def new_node(suffix: str, op: str) -> "node_def_pb2.NodeDef":  # a helper node the row fills in
        helper = node_def_pb2.NodeDef(name=unique(f"{node.name}/{suffix}"), op=op)
        extra.append(helper)
        return helper

    if op in _EXPORT_TABLES:
        if not _EXPORT_TABLES[op](nd, node, inputs, const_input, new_node):
            return None
    elif op in _ELEMENTWISE_T:
        nd.attr["T"].type = dtypes[-1].tf_enum
        nd.input.extend(inputs)
    elif op in _NO_ATTRS:
        nd.input.extend(inputs)
    elif op in ("Equal", "NotEqual"):
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["incompatible_shape_error"].b = True
        nd.input.extend(inputs)
    elif op in ("Softmax", "LogSoftmax"):
        if a.get("axis", -1) not in (-1, (len(dims[0]) - 1) if dims[0] is not None else -1):
            return None
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.input.extend(inputs)
    elif op == "MatMul":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["transpose_a"].b = bool(a.get("transpose_a", False))
        nd.attr["transpose_b"].b = bool(a.get("transpose_b", False))
        nd.input.extend(inputs)
    elif op == "Const":
        value = a["value"]
        nd.attr["dtype"].type = a["dtype"].tf_enum
        nd.attr["value"].tensor.CopyFrom(_attrs.tensor_proto(value, a["dtype"]))
    elif op in ("ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"):
        nd.attr["dtype"].type = a["dtype"].tf_enum
        nd.input.extend(inputs)
    elif op in _REDUCTIONS:
        axis = a.get("axis")
        if axis is None:
            if dims[0] is None:
                return None
            axis = tuple(range(len(dims[0])))
        axis = [axis] if isinstance(axis, (int, np.integer)) else list(axis)
        if op not in ("All", "Any"):
            nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["Tidx"].type = _dt.int32.tf_enum
        nd.attr["keep_dims"].b = bool(a.get("keepdims", False))
        nd.input.extend([inputs[0], const_input("reduction_indices", axis)])
    elif op == "Cast":
        nd.attr["SrcT"].type = a["SrcT"].tf_enum
        nd.attr["DstT"].type = a["DstT"].tf_enum
        nd.attr["Truncate"].b = False
        nd.input.extend(inputs)
    elif op == "Reshape":
        nd.attr["T"].type = dtypes[0].tf_enum
        if len(node.inputs) == 2:  # a shape computed at run time
            nd.attr["Tshape"].type = dtypes[1].tf_enum
            nd.input.extend(inputs)
        else:
            nd.attr["Tshape"].type = _dt.int32.tf_enum
            nd.input.extend([inputs[0], const_input("shape", list(a["shape"]))])
    elif op == "Transpose":
        perm = a.get("perm")
        if perm is None:
            if dims[0] is None:
                return None
            perm = tuple(reversed(range(len(dims[0]))))
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["Tperm"].type = _dt.int32.tf_enum
        nd.input.extend([inputs[0], const_input("perm", list(perm))])
    elif op == "ExpandDims":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["Tdim"].type = _dt.int32.tf_enum
        nd.input.extend([inputs[0], const_input("dim", a["axis"])])
    elif op == "Squeeze":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["squeeze_dims"].list.i.extend(list(a.get("squeeze_dims") or ()))
        nd.input.extend(inputs)
    elif op == "ConcatV2":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["N"].i = len(inputs)
        nd.attr["Tidx"].type = _dt.int32.tf_enum
        nd.input.extend(list(inputs) + [const_input("axis", a["axis"])])
    elif op == "Pack":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["N"].i = len(inputs)
        nd.attr["axis"].i = int(a.get("axis", 0))
        nd.input.extend(inputs)
    elif op in ("ArgMax", "ArgMin"):
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["Tidx"].type = _dt.int32.tf_enum
        nd.attr["output_type"].type = a["output_type"].tf_enum
        nd.input.extend([inputs[0], const_input("dimension", a["axis"])])
    elif op == "GatherV2":
        nd.attr["Tparams"].type = dtypes[0].tf_enum
        nd.attr["Tindices"].type = dtypes[1].tf_enum
        nd.attr["Taxis"].type = _dt.int32.tf_enum
        nd.attr["batch_dims"].i = 0
        nd.input.extend([inputs[0], inputs[1], const_input("axis", a["axis"])])
    elif op == "Fill":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["index_type"].type = _dt.int32.tf_enum
        nd.input.extend([const_input("dims", list(a["dims"])), inputs[0]])
    elif op == "Range":
        nd.attr["Tidx"].type = dtypes[0].tf_enum
        nd.input.extend(inputs)
    elif op in ("Shape", "Size"):
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["out_type"].type = a["out_type"].tf_enum
        nd.input.extend(inputs)
    elif op == "Pad":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["Tpaddings"].type = dtypes[1].tf_enum
        nd.input.extend(inputs)
    elif op == "Unpack":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["num"].i = int(a["num"])
        nd.attr["axis"].i = int(a["axis"])
        nd.input.extend(inputs)
    elif op == "BatchMatMulV2":
        nd.attr["T"].type = dtypes[0].tf_enum
        nd.attr["adj_x"].b = bool(a.get("transpose_a", False))
        nd.attr["adj_y"].b = bool(a.get("transpose_b", False))
        nd.input.extend(inputs)
    elif op == "PrintV2":
        parts, template = a["template"], []
        for kind, payload in parts:
            if kind == "lit" and "{}" in payload:
                return None
            template.append(payload if kind == "lit" else "{}")
        if [p for kind, p in parts if kind != "lit"] != list(range(len(inputs))) or a["output_stream"] not in (
                "stdout", "stderr"):
            return None
        fmt = node_def_pb2.NodeDef(name=unique(f"{node.name}/StringFormat"), op="StringFormat")
        fmt.input.extend(inputs)
        fmt.attr["T"].list.type.extend(d.tf_enum for d in dtypes)
        fmt.attr["template"].s = a["sep"].join(template).encode("utf-8")
        fmt.attr["placeholder"].s = b"{}"
        fmt.attr["summarize"].i = int(a["summarize"])
        extra.append(fmt)
        nd.input.append(f"{fmt.name}:output:0")
        nd.attr["output_stream"].s = a["output_stream"].encode()
        nd.attr["end"].s = a["end"].encode("utf-8")
    else:
        return None
    return extra + [nd]


# -- import ------------------------------------------------------------------------------------------------
class FormattedString:
    """What a replayed `StringFormat` yields: PrintV2 prints it (jitflow's PrintV2 formats itself)."""

    def __init__(self, inputs: List[Any], template: str, placeholder: str, summarize: int) -> None:
        self.inputs, self.template, self.placeholder, self.summarize = inputs, template, placeholder, summarize


def _t(attrs: Dict[str, Any]) -> Dict[str, Any]:
    return {}


def _reduction(op: str):
    def imp(inputs, attrs, const):
        axis = const(1)
        axis = tuple(int(v) for v in np.atleast_1d(axis))
        return op, [inputs[0]], {"axis": axis, "keepdims": bool(attrs.get("keep_dims", False))}
    return imp


def _variable_op(op: str):
    def imp(inputs, attrs, const):
        var = inputs[0]
        shape = tuple(var.shape.as_list()) if hasattr(var, "shape") and var.shape.rank is not None else None
        return op, inputs, {"dtype": attrs["dtype"], "_shape": shape}
    return imp


def _range(inputs, attrs, const):
    try:
        start, limit, delta = (float(np.asarray(const(i))) for i in range(3))
        length = max(0, int(np.ceil((limit - start) / delta)))
    except Exception:  # run-time bounds: jitflow's Range then has an unknown length
        length = None
    return "Range", inputs, {"_length": length}


def _print(inputs, attrs, const):
    fmt = inputs[0]
    if not isinstance(fmt, FormattedString):
        raise ValueError("PrintV2: jitflow prints what StringFormat formats; this input is not a StringFormat")
    pieces = fmt.template.split(fmt.placeholder)
    if len(pieces) - 1 != len(fmt.inputs):
        raise ValueError(f"StringFormat: the template {fmt.template!r} has {len(pieces) - 1} placeholders for "
                         f"{len(fmt.inputs)} inputs")
    template = []
    for i, piece in enumerate(pieces):
        if piece:
            template.append(("lit", piece))
        if i < len(fmt.inputs):
            template.append(("tensor", i))
    stream = attrs.get("output_stream", "stderr")
    stream = stream if stream in ("stdout", "stderr") else "stderr"
    return "PrintV2", fmt.inputs, {"template": tuple(template), "sep": "", "end": attrs.get("end", "\n"),
                                   "output_stream": stream, "summarize": fmt.summarize}


def _reshape(inputs, attrs, const):
    try:
        shape = const(1)
    except ValueError:  # computed at run time (Keras's Flatten: Shape -> StridedSlice -> Pack)
        return "Reshape", inputs, {"shape": None}
    return "Reshape", [inputs[0]], {"shape": tuple(int(v) for v in np.atleast_1d(shape))}


IMPORTS: Dict[str, Callable] = {
    **{op: (lambda op: lambda inputs, attrs, const: (op, inputs, {}))(op)
       for op in _ELEMENTWISE_T | _NO_ATTRS | {"Equal", "NotEqual"}},
    "Softmax": lambda inputs, attrs, const: ("Softmax", inputs, {"axis": -1}),
    "LogSoftmax": lambda inputs, attrs, const: ("LogSoftmax", inputs, {"axis": -1}),
    "MatMul": lambda inputs, attrs, const: ("MatMul", inputs, {"transpose_a": bool(attrs.get("transpose_a")),
                                                               "transpose_b": bool(attrs.get("transpose_b"))}),
    "Const": lambda inputs, attrs, const: ("Const", [], {"value": attrs["value"], "dtype": attrs["dtype"]}),
    **{op: _variable_op(op) for op in ("ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
                                       "AssignSubVariableOp")},
    **{op: _reduction(op) for op in _REDUCTIONS},
    "Cast": lambda inputs, attrs, const: ("Cast", inputs, {"SrcT": attrs["SrcT"], "DstT": attrs["DstT"]}),
    "Reshape": _reshape,
    "Transpose": lambda inputs, attrs, const: ("Transpose", [inputs[0]],
                                               {"perm": tuple(int(v) for v in np.atleast_1d(const(1)))}),
    "ExpandDims": lambda inputs, attrs, const: ("ExpandDims", [inputs[0]], {"axis": int(const(1))}),
    "Squeeze": lambda inputs, attrs, const: ("Squeeze", inputs,
                                             {"squeeze_dims": tuple(attrs.get("squeeze_dims") or ()) or None}),
    "ConcatV2": lambda inputs, attrs, const: ("ConcatV2", inputs[:-1], {"axis": int(const(len(inputs) - 1))}),
    "Pack": lambda inputs, attrs, const: ("Pack", inputs, {"axis": int(attrs.get("axis", 0))}),
    "PrintV2": _print,
    "ArgMax": lambda inputs, attrs, const: ("ArgMax", [inputs[0]], {
        "axis": int(const(1)), "output_type": attrs.get("output_type", _dt.int64)}),
    "ArgMin": lambda inputs, attrs, const: ("ArgMin", [inputs[0]], {
        "axis": int(const(1)), "output_type": attrs.get("output_type", _dt.int64)}),
    "GatherV2": lambda inputs, attrs, const: ("GatherV2", inputs[:2], {"axis": int(const(2))}),
    "Fill": lambda inputs, attrs, const: ("Fill", [inputs[1]],
                                          {"dims": tuple(int(v) for v in np.atleast_1d(const(0)))}),
    "Range": _range,
    "Shape": lambda inputs, attrs, const: ("Shape", inputs, {"out_type": attrs.get("out_type", _dt.int32)}),
    "Size": lambda inputs, attrs, const: ("Size", inputs, {"out_type": attrs.get("out_type", _dt.int32)}),
    "Pad": lambda inputs, attrs, const: ("Pad", inputs, {"_paddings": [tuple(int(v) for v in row)
                                                                      for row in np.asarray(const(1))]}),
    "Unpack": lambda inputs, attrs, const: ("Unpack", inputs, {"num": int(attrs["num"]),
                                                               "axis": int(attrs.get("axis", 0))}),
    "BatchMatMulV2": lambda inputs, attrs, const: ("BatchMatMulV2", inputs, {
        "transpose_a": bool(attrs.get("adj_x")), "transpose_b": bool(attrs.get("adj_y"))}),
}
IMPORTS.update(tf_nn_ops.IMPORTS)
IMPORTS.update(tf_array_ops.IMPORTS)
COMPOSITES = tf_composites.COMPOSITES  # one TF op replayed as a few jitflow ops
TF_ONLY = {"StringFormat", "NoOp"}  # handled by the replayer itself
