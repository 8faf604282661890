"""Tile, BroadcastTo, SplitV and Cumsum in TensorFlow's own form, both ways.

jitflow keeps their sizes as static attrs (`Tile`'s `multiples`, `BroadcastTo`'s `shape`,
`SplitV`'s `size_splits` and `axis`, `Cumsum`'s `axis`); TensorFlow passes them as constant
inputs. Same protocol as `tf_nn_ops`: `EXPORTS[op](nd, node, inputs, const_input, new_node)` fills TF's
NodeDef, `IMPORTS[op](inputs, attrs, const)` returns (jitflow op, inputs, attrs).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np

from jitflow.runtime.core import dtypes as _dt

OUTPUT_NAMES: Dict[str, str] = {"Cumsum": "out"}


def _ints(value: Any) -> List[int]:
    return [int(v) for v in np.atleast_1d(value)]


def _export_sized(input_name: str, attr: str, index_type: str):
    """`Tile`/`BroadcastTo`: the input, then the static sizes as an int32 `Const`."""
    def export(nd, node, inputs, const_input, new_node) -> bool:
        nd.attr["T"].type = node.inputs[0]._dtype.tf_enum
        nd.attr[index_type].type = _dt.int32.tf_enum
        nd.input.extend([inputs[0], const_input(input_name, list(node.attrs[attr]))])
        return True
    return export


def _export_split(nd, node, inputs, const_input, new_node) -> bool:
    sizes = list(node.attrs["size_splits"])
    nd.attr["T"].type = node.inputs[0]._dtype.tf_enum
    nd.attr["Tlen"].type = _dt.int64.tf_enum
    nd.attr["num_split"].i = len(sizes)
    nd.input.extend([inputs[0], const_input("size_splits", sizes, _dt.int64),
                     const_input("split_dim", int(node.attrs["axis"]))])
    return True


def _export_cumsum(nd, node, inputs, const_input, new_node) -> bool:
    a = node.attrs
    nd.attr["T"].type = node.inputs[0]._dtype.tf_enum
    nd.attr["Tidx"].type = _dt.int32.tf_enum
    nd.attr["exclusive"].b = bool(a.get("exclusive", False))
    nd.attr["reverse"].b = bool(a.get("reverse", False))
    nd.input.extend([inputs[0], const_input("axis", int(a["axis"]))])
    return True


EXPORTS: Dict[str, Callable[..., bool]] = {
    "Tile": _export_sized("multiples", "multiples", "Tmultiples"),
    "BroadcastTo": _export_sized("shape", "shape", "Tidx"),
    "SplitV": _export_split,
    "Cumsum": _export_cumsum,
}


def _import_split(inputs, attrs, const):
    sizes, axis = _ints(const(1)), int(const(2))
    if -1 in sizes:  # TF lets one size be inferred from the dimension being split
        dims = inputs[0]._dims
        dim = None if dims is None else dims[axis]
        if dim is None:
            raise ValueError(f"SplitV: size_splits {sizes} has a -1, but dimension {axis} of the input is unknown")
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    return "SplitV", [inputs[0]], {"size_splits": tuple(sizes), "axis": axis}


IMPORTS: Dict[str, Callable] = {
    "Tile": lambda inputs, attrs, const: ("Tile", [inputs[0]], {"multiples": tuple(_ints(const(1)))}),
    "BroadcastTo": lambda inputs, attrs, const: ("BroadcastTo", [inputs[0]], {"shape": tuple(_ints(const(1)))}),
    "SplitV": _import_split,
    "Cumsum": lambda inputs, attrs, const: ("Cumsum", [inputs[0]], {
        "axis": int(const(1)), "exclusive": bool(attrs.get("exclusive", False)),
        "reverse": bool(attrs.get("reverse", False))}),
}

__all__ = ["EXPORTS", "IMPORTS", "OUTPUT_NAMES"]
