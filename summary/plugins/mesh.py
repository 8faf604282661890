"""Meshes and point clouds (`mesh` plugin), laid out as PyTorch's `add_mesh`
writes them: one float32 tensor per component (vertices [B, N, 3], faces
[B, F, 3], colors [B, N, 3]) under `<tag>_VERTEX`, `<tag>_FACE`, `<tag>_COLOR`,
each with `MeshPluginData` naming the instance, the component bitmask, the
shape and a JSON Three.js config.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.mesh import metadata as mesh_md
from tensorboard.plugins.mesh import plugin_data_pb2
from tensorboard.util import tensor_util

from jitflow.summary.values import as_numpy, describe

_CT = plugin_data_pb2.MeshPluginData.ContentType
# component -> (content type, allowed dtype kinds)
_COMPONENTS = {"vertices": (_CT.VERTEX, "biuf"), "faces": (_CT.FACE, "iu"), "colors": (_CT.COLOR, "iuf")}


def _component(name: str, value: Any, batch: int | None) -> np.ndarray:
    a = as_numpy(value, name)
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"{name}: expected shape [batch, count, 3], got {describe(a)}")
    if a.dtype.kind not in _COMPONENTS[name][1]:
        raise TypeError(f"{name}: expected {'integer' if name == 'faces' else 'numeric'} values, got {describe(a)}")
    if batch is not None and a.shape[0] != batch:
        raise ValueError(f"{name}: expected batch size {batch} (as vertices), got {describe(a)}")
    return a


def mesh_values(tag: str, vertices: Any, colors: Any = None, faces: Any = None,
                config_dict: Any = None, description: str | None = None) -> list[summary_pb2.Summary.Value]:
    if config_dict is not None and not isinstance(config_dict, dict):
        raise TypeError(f"config_dict: expected a dict (Three.js camera/lights/material config) or None, "
                        f"got {describe(config_dict)}")
    try:
        json_config = json.dumps(config_dict if config_dict is not None else {}, sort_keys=True)
    except TypeError as e:
        raise TypeError(f"config_dict: expected JSON-serializable values ({e})") from None
    v = _component("vertices", vertices, None)
    parts = [("vertices", v)]
    if faces is not None:
        f = _component("faces", faces, v.shape[0])
        if f.size and (f.min() < 0 or f.max() >= v.shape[1]):
            raise ValueError(f"faces: expected vertex indices in [0, {v.shape[1]}), got [{f.min()}, {f.max()}]")
        parts.append(("faces", f))
    if colors is not None:
        c = _component("colors", colors, v.shape[0])
        if c.shape[1] != v.shape[1]:
            raise ValueError(f"colors: expected one colour per vertex ({v.shape[1]}), got {describe(c)}")
        parts.append(("colors", c))
    types = [_COMPONENTS[n][0] for n, _ in parts]
    components = mesh_md.get_components_bitmask(types)
    out = []
    for (_name, a), ct in zip(parts, types):
        md = mesh_md.create_summary_metadata(tag, None, ct, components, list(a.shape),
                                             description=description, json_config=json_config)
        out.append(summary_pb2.Summary.Value(tag=mesh_md.get_instance_name(tag, ct), metadata=md,
                                             tensor=tensor_util.make_tensor_proto(a.astype(np.float32))))
    return out
