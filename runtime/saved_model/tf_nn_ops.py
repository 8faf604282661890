"""The CNN ops in TensorFlow's own form, both ways: convolutions, pooling, activations, slicing.

A Keras CNN traces to `Conv2D`, `DepthwiseConv2dNative`, `MaxPool`, `AvgPool`, `BiasAdd`,
`LeakyRelu`/`Elu`/`Softplus`, `StridedSlice` and `Reshape`; jitflow registers them under
TF's names with TF's attrs (NHWC, 4-int `strides`/`ksize`/`dilations`), so the export writes
every attr TF's OpDef declares (`T`, `data_format`, `explicit_paddings`, `use_cudnn_on_gpu`,
...) and the import reads them back, refusing what jitflow cannot run (NCHW, `EXPLICIT`
padding) with an error that names the node's attr. jitflow's `StridedSlice` keeps the index
as a spec (`("slice", 1, None, 2)`, `("int", 0)`, ...) with run-time bounds as extra scalar
inputs, where TF passes begin/end/strides inputs (a `Pack` of scalars when a bound is a tensor)
and five bit masks; `_index_to_tf`/`_index_from_tf` translate.

TF ops jitflow has no single op for (`Relu6`, `Selu`, `SpaceToBatchND`, ...) are in
`tf_composites`.

`EXPORTS[op](nd, node, inputs, const_input, new_node)` fills TF's NodeDef `nd` (adding `Const`s
and helper nodes such as a `Pack` of run-time slice bounds) and returns False when the node has
no TF form; `IMPORTS[op](inputs, attrs, const)` returns (jitflow op, inputs, attrs).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.ops import registry

OUTPUT_NAMES: Dict[str, str] = {"LeakyRelu": "activations", "Elu": "activations", "Softplus": "activations",
                                "Relu6": "activations", "Selu": "activations", "Softsign": "activations"}


# -- export -------------------------------------------------------------------------------------------------
def _ints(nd, key: str, values: Sequence[int]) -> None:
    nd.attr[key].list.i.extend(int(v) for v in values)
    if not len(values):  # an empty list is still a list (TF's OpDef type check wants `list {}`)
        nd.attr[key].list.SetInParent()


def _window(nd, node, with_dilations: bool) -> None:
    a = node.attrs
    nd.attr["T"].type = node.inputs[0]._dtype.tf_enum
    _ints(nd, "strides", a["strides"])
    nd.attr["padding"].s = a["padding"].encode()
    nd.attr["data_format"].s = b"NHWC"
    if with_dilations:
        _ints(nd, "dilations", a.get("dilations") or (1, 1, 1, 1))


def _export_conv2d(nd, node, inputs, const_input, new_node) -> bool:
    _window(nd, node, with_dilations=True)
    nd.attr["use_cudnn_on_gpu"].b = True
    _ints(nd, "explicit_paddings", [])
    nd.input.extend(inputs)
    return True


def _export_depthwise(nd, node, inputs, const_input, new_node) -> bool:
    _window(nd, node, with_dilations=True)
    _ints(nd, "explicit_paddings", [])
    nd.input.extend(inputs)
    return True


def _export_pool(explicit_paddings: bool):
    def export(nd, node, inputs, const_input, new_node) -> bool:
        _window(nd, node, with_dilations=False)
        _ints(nd, "ksize", node.attrs["ksize"])
        if explicit_paddings:  # MaxPool declares it, AvgPool does not
            _ints(nd, "explicit_paddings", [])
        nd.input.extend(inputs)
        return True
    return export


def _export_bias_add(nd, node, inputs, const_input, new_node) -> bool:
    nd.attr["T"].type = node.inputs[0]._dtype.tf_enum
    nd.attr["data_format"].s = b"NHWC"
    nd.input.extend(inputs)
    return True


def _export_leaky_relu(nd, node, inputs, const_input, new_node) -> bool:
    nd.attr["T"].type = node.inputs[0]._dtype.tf_enum
    nd.attr["alpha"].f = float(node.attrs.get("alpha", 0.2))
    nd.input.extend(inputs)
    return True


def _export_unary(nd, node, inputs, const_input, new_node) -> bool:
    nd.attr["T"].type = node.inputs[0]._dtype.tf_enum
    nd.input.extend(inputs)
    return True


_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _index_to_tf(index: Sequence[Tuple[Any, ...]]):
    """jitflow's index spec -> (begin, end, strides, masks); an entry is an int or `_RUNTIME` for the next
    run-time bound (jitflow feeds those as extra scalar inputs, in spec order)."""
    begin: List[Any] = []
    end: List[Any] = []
    strides: List[Any] = []
    masks = dict.fromkeys(_MASKS, 0)
    for i, (kind, *args) in enumerate(index):
        bit = 1 << i
        if kind == "slice":
            start, stop, step = (_RUNTIME if v == "?" else v for v in args)
            begin.append(0 if start is None else start)
            end.append(0 if stop is None else stop)
            strides.append(1 if step is None else step)
            masks["begin_mask"] |= bit if start is None else 0
            masks["end_mask"] |= bit if stop is None else 0
        elif kind == "int":
            begin.append(args[0])
            end.append(args[0] + 1)  # -1 + 1 == 0: TF reads only begin for a shrunk axis, as Python's x[-1]
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
        elif kind == "dyn":  # x[n] with a tensor n: TF ignores end on a shrunk axis
            begin.append(_RUNTIME)
            end.append(_SAME_AS_BEGIN)
            strides.append(1)
            masks["shrink_axis_mask"] |= bit
        else:  # "newaxis", "ellipsis"
            begin.append(0)
            end.append(0)
            strides.append(1)
            masks["new_axis_mask" if kind == "newaxis" else "ellipsis_mask"] |= bit
    return begin, end, strides, masks


_RUNTIME, _SAME_AS_BEGIN = object(), object()


def _export_strided_slice(nd, node, inputs, const_input, new_node) -> bool:
    begin, end, strides, masks = _index_to_tf(node.attrs["index"])
    runtime = list(zip(node.inputs[1:], inputs[1:]))  # (tensor, ref) of each run-time bound, in spec order
    kinds = {t._dtype for t, _ in runtime}
    if len(kinds) > 1 or kinds - {_dt.int32, _dt.int64} or any(t._dims not in ((), None) for t, _ in runtime):
        return False  # TF's Pack needs one index type
    index_dtype = kinds.pop() if kinds else _dt.int32
    fed = iter(ref for _, ref in runtime)
    vectors = [list(begin), list(end), list(strides)]
    for j in range(len(begin)):  # jitflow fed the bounds per entry: start, stop, step
        for vec in vectors:
            if vec[j] is _RUNTIME:
                vec[j] = next(fed)
    vectors[1] = [b if e is _SAME_AS_BEGIN else e for b, e in zip(vectors[0], vectors[1])]
    refs = [_pack(new_node, const_input, suffix, values, index_dtype)
            for suffix, values in zip(("stack", "stack_1", "stack_2"), vectors)]
    nd.attr["T"].type = node.inputs[0]._dtype.tf_enum
    nd.attr["Index"].type = index_dtype.tf_enum
    for key in _MASKS:
        nd.attr[key].i = masks[key]
    nd.input.extend([inputs[0], *refs])
    return True


def _pack(new_node, const_input, suffix: str, values: List[Any], dtype: _dt.DType) -> str:
    """A 1-D index vector: a `Const` when every entry is static, else TF's `Pack` of scalars."""
    if all(not isinstance(v, str) for v in values):
        return const_input(suffix, values, dtype)
    pack = new_node(suffix, "Pack")
    for j, v in enumerate(values):
        pack.input.append(v if isinstance(v, str) else const_input(f"{suffix}/{j}", int(v), dtype))
    pack.attr["T"].type = dtype.tf_enum
    pack.attr["N"].i = len(values)
    pack.attr["axis"].i = 0
    return f"{pack.name}:output:0"


EXPORTS: Dict[str, Callable[..., bool]] = {
    "Conv2D": _export_conv2d,
    "DepthwiseConv2dNative": _export_depthwise,
    "MaxPool": _export_pool(explicit_paddings=True),
    "AvgPool": _export_pool(explicit_paddings=False),
    "BiasAdd": _export_bias_add,
    "LeakyRelu": _export_leaky_relu,
    "Elu": _export_unary,
    "Softplus": _export_unary,
    "StridedSlice": _export_strided_slice,
}


# -- import -------------------------------------------------------------------------------------------------
def _nhwc(op: str, attrs: Dict[str, Any]) -> None:
    fmt = attrs.get("data_format") or "NHWC"
    if fmt != "NHWC":
        raise ValueError(f"{op}: attr data_format is {fmt!r}; jitflow runs NHWC (channels last) only")
    padding = attrs.get("padding")
    if padding is not None and padding not in ("SAME", "VALID"):
        raise ValueError(f"{op}: attr padding is {padding!r}; jitflow supports 'SAME' and 'VALID'")


def _import_conv(op: str):
    def imp(inputs, attrs, const):
        _nhwc(op, attrs)
        return op, inputs, {"strides": tuple(attrs["strides"]), "padding": attrs["padding"],
                            "dilations": tuple(attrs.get("dilations") or (1, 1, 1, 1)), "data_format": "NHWC"}
    return imp


def import_pool(op: str):
    def imp(inputs, attrs, const):
        _nhwc(op, attrs)
        return op, inputs, {"ksize": tuple(attrs["ksize"]), "strides": tuple(attrs["strides"]),
                            "padding": attrs["padding"], "data_format": "NHWC"}
    return imp


def _import_bias_add(inputs, attrs, const):
    _nhwc("BiasAdd", attrs)
    return "BiasAdd", inputs, {"data_format": "NHWC"}


def _index_from_tf(begin, end, strides, attrs: Dict[str, Any]) -> Tuple[Tuple[Tuple[Any, ...], ...], List[Any]]:
    """TF's begin/end/strides (entries: ints, or scalar tensors when computed at run time) and masks ->
    jitflow's index spec and its run-time bounds (in the order jitflow's StridedSlice takes them)."""
    masks = {key: int(attrs.get(key) or 0) for key in _MASKS}
    spec: List[Tuple[Any, ...]] = []
    dynamic: List[Any] = []

    def bound(value: Any) -> Any:
        if isinstance(value, (int, np.integer)):
            return int(value)
        dynamic.append(value)
        return "?"

    for i in range(len(begin)):
        bit = 1 << i
        if masks["ellipsis_mask"] & bit:
            spec.append(("ellipsis",))
        elif masks["new_axis_mask"] & bit:
            spec.append(("newaxis",))
        elif masks["shrink_axis_mask"] & bit:
            spec.append(("int", int(begin[i])) if isinstance(begin[i], (int, np.integer)) else ("dyn",))
            if spec[-1] == ("dyn",):
                dynamic.append(begin[i])
        else:
            if isinstance(strides[i], (int, np.integer)) and int(strides[i]) == 0:
                raise ValueError("StridedSlice: input strides holds a 0; strides must be non-zero")
            start = None if masks["begin_mask"] & bit else bound(begin[i])
            stop = None if masks["end_mask"] & bit else bound(end[i])
            spec.append(("slice", start, stop, bound(strides[i])))
    return tuple(spec), dynamic


def _index_vector(inputs: List[Any], const, i: int) -> List[Any]:
    """Input i of a StridedSlice as a list: ints when it is a constant, else one scalar tensor per entry."""
    try:
        return [int(v) for v in np.atleast_1d(const(i))]
    except ValueError:  # computed at run time (a Pack of scalars, say)
        dims = inputs[i]._dims
        if dims is None or len(dims) != 1 or dims[0] is None:
            raise ValueError(f"StridedSlice: input {i} is computed at run time and has the shape {dims}; jitflow "
                             "needs its length") from None
        return [registry.apply("StridedSlice", [inputs[i]], {"index": (("int", j),)})[0] for j in range(dims[0])]


def _import_strided_slice(inputs, attrs, const):
    begin, end, strides = (_index_vector(inputs, const, i) for i in (1, 2, 3))
    if not len(begin) == len(end) == len(strides):
        raise ValueError(f"StridedSlice: begin, end and strides must have one length; got {len(begin)}, "
                         f"{len(end)} and {len(strides)}")
    spec, dynamic = _index_from_tf(begin, end, strides, attrs)
    return "StridedSlice", [inputs[0], *dynamic], {"index": spec}


IMPORTS: Dict[str, Callable] = {
    "Conv2D": _import_conv("Conv2D"),
    "DepthwiseConv2dNative": _import_conv("DepthwiseConv2dNative"),
    "MaxPool": import_pool("MaxPool"),
    "AvgPool": import_pool("AvgPool"),
    "BiasAdd": _import_bias_add,
    "LeakyRelu": lambda inputs, attrs, const: ("LeakyRelu", inputs, {"alpha": float(attrs.get("alpha", 0.2))}),
    "Elu": lambda inputs, attrs, const: ("Elu", inputs, {}),
    "Softplus": lambda inputs, attrs, const: ("Softplus", inputs, {}),
    "StridedSlice": _import_strided_slice,
}


__all__ = ["EXPORTS", "IMPORTS", "OUTPUT_NAMES"]
