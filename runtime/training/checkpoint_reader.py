"""`jf.train.list_variables`, `jf.train.load_checkpoint`: look inside a checkpoint without restoring it.

Works on TF-format checkpoints (jitflow's or TensorFlow's) and on jitflow's older
`.json` + `.npz` ones, whose values are listed under the names TF would give them.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

import numpy as np

from jitflow.runtime.training import checkpoint as _checkpoint
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.training import object_graph as _object_graph
from jitflow.runtime.training import tensor_bundle as _bundle
from jitflow.runtime.core.errors import NotFoundError


def _resolve(ckpt_dir_or_file: str) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = _checkpoint.latest_checkpoint(path)
        if latest is None:
            raise ValueError(f"ckpt_dir_or_file: the directory {path!r} holds no checkpoint (no 'checkpoint' "
                             "file naming a complete one)")
        return latest
    return path


class CheckpointReader:
    """The tensors of one checkpoint by name (TF's `py_checkpoint_reader.CheckpointReader`).

    >>> reader = jf.train.load_checkpoint("ckpts")            # doctest: +SKIP
    >>> reader.get_variable_to_shape_map()                    # doctest: +SKIP
    {'model/w/.ATTRIBUTES/VARIABLE_VALUE': [3, 2], ...}
    >>> reader.get_tensor("model/w/.ATTRIBUTES/VARIABLE_VALUE")  # doctest: +SKIP
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._legacy = None
        if os.path.exists(_bundle.index_path(prefix)) or not os.path.exists(prefix + ".json"):
            if not os.path.exists(_bundle.index_path(prefix)):
                raise NotFoundError(f"Unsuccessful TensorSliceReader constructor: Failed to find any matching "
                                    f"files for {prefix}")
            self._reader = _bundle.BundleReader(prefix)
            self._reader.check_ranges()
            self._dtypes = {n: e.dtype for n, e in self._reader.entries.items()}
            self._shapes = {n: list(e.shape) for n, e in self._reader.entries.items()}
        else:
            nodes, arrays = _checkpoint._read_checkpoint(prefix)
            where = _object_graph.paths(nodes)
            self._legacy = {}
            for i, node in enumerate(nodes):
                spec = node.get("variable")
                if spec is not None:
                    self._legacy[f"{where.get(i, 'node' + str(i))}/.ATTRIBUTES/VARIABLE_VALUE"] = arrays[spec["key"]]
            self._dtypes = {n: _dt.as_dtype(a.dtype) for n, a in self._legacy.items()}
            self._shapes = {n: list(a.shape) for n, a in self._legacy.items()}

    def has_tensor(self, name: str) -> bool:
        return name in self._shapes

    def get_tensor(self, name: str) -> np.ndarray:
        """The value of tensor `name` (checked against its CRC as it is read)."""
        if name not in self._shapes:
            raise NotFoundError(f"Key {name} not found in checkpoint {self.prefix!r}")
        if self._legacy is not None:
            return self._legacy[name].copy()
        value = self._reader.read(name)
        return value.item() if value.dtype == object and value.ndim == 0 else value

    def get_variable_to_shape_map(self) -> Dict[str, List[int]]:
        return dict(self._shapes)

    def get_variable_to_dtype_map(self) -> Dict[str, Optional[_dt.DType]]:
        return dict(self._dtypes)


def load_checkpoint(ckpt_dir_or_file: str) -> CheckpointReader:
    """A `CheckpointReader` for a checkpoint prefix, or for the latest checkpoint in a directory.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> _ = jf.train.Checkpoint(w=jf.Variable([1.0, 2.0])).save(folder + "/ckpt")
    >>> reader = jf.train.load_checkpoint(folder)
    >>> reader.get_variable_to_shape_map()["w/.ATTRIBUTES/VARIABLE_VALUE"]
    [2]
    """
    return CheckpointReader(_resolve(ckpt_dir_or_file))


def list_variables(ckpt_dir_or_file: str) -> List[Tuple[str, List[int]]]:
    """Sorted (name, shape) of every tensor in the checkpoint, as `tf.train.list_variables` lists them.

    >>> jf.train.list_variables("ckpts")                    # doctest: +SKIP
    [('_CHECKPOINTABLE_OBJECT_GRAPH', []), ('model/w/.ATTRIBUTES/VARIABLE_VALUE', [3, 2]), ...]
    """
    shapes = load_checkpoint(ckpt_dir_or_file).get_variable_to_shape_map()
    return sorted(shapes.items())


__all__ = ["CheckpointReader", "load_checkpoint", "list_variables"]
