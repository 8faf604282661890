"""The Keras `TensorBoard` callback's embeddings (`embeddings_freq`) for TensorBoard's Projector.

What tf.keras writes: a `projector_config.pbtxt` with one `embeddings { tensor_name ...
metadata_path ... }` per `Embedding` layer, and every `embeddings_freq` epochs the model's
weights as `train/keras_embedding.ckpt-<epoch>`. The tensor names are TF's object-graph
checkpoint keys of those weights, `layer_with_weights-<k>/embeddings/.ATTRIBUTES/VARIABLE_VALUE`
(k: the layer's position among the model's layers that have weights).

jitflow writes the checkpoint as a TF tensor bundle (`.index` + `.data-00000-of-00001`,
runtime/training's writer) holding the Embedding layers' matrices under those keys, and
the `checkpoint` index next to it. The Projector only reads a config inside a run
directory (one with event files) and finds the checkpoint through that directory's
`checkpoint` index, so the config is written to `train/` as well as to `log_dir` (where
Keras puts it, which no run reads); a relative metadata file found under `log_dir` is
copied into `train/`, since the Projector refuses asset paths outside the config's folder.
"""
from __future__ import annotations

import os
import shutil
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
from google.protobuf import text_format
from tensorboard.plugins.projector import projector_config_pb2

from jitflow.runtime.keras.layers import Embedding
from jitflow.runtime.training import checkpoint as _ckpt
from jitflow.runtime.training.atomic_files import atomic_write
from jitflow.runtime.training.tensor_bundle import write_bundle

CONFIG_NAME = "projector_config.pbtxt"


def tensor_name(k: int) -> str:
    return f"layer_with_weights-{k}/embeddings/.ATTRIBUTES/VARIABLE_VALUE"


def embedding_layers(model: Any) -> List[Tuple[str, Any]]:
    """(checkpoint key, layer) for each Embedding layer of the model."""
    out, k = [], 0
    for layer in model.layers:
        if not layer.weights:
            continue
        if isinstance(layer, Embedding):
            out.append((tensor_name(k), layer))
        k += 1
    return out


def configure(model: Any, log_dir: str, train_dir: str, metadata: Union[None, str, Dict[str, str]]) -> None:
    """Write the projector configs (raises, writing nothing, on a metadata name that is no Embedding)."""
    layers = embedding_layers(model)
    if isinstance(metadata, dict):
        unknown = sorted(set(metadata) - {layer.name for _, layer in layers})
        if unknown:
            raise ValueError(f"embeddings_metadata: unrecognized Embedding layer names {unknown}; the model's "
                             f"Embedding layers are {[layer.name for _, layer in layers]}")
    elif metadata is not None and not isinstance(metadata, str):
        raise TypeError("embeddings_metadata: expected a file name (for every Embedding layer) or a dict "
                        f"{{layer name: file name}}; got {metadata!r}")
    config = projector_config_pb2.ProjectorConfig()
    for name, layer in layers:
        embedding = config.embeddings.add()
        embedding.tensor_name = name
        path = metadata if isinstance(metadata, str) else (metadata or {}).get(layer.name)
        if path:
            embedding.metadata_path = path
    text = text_format.MessageToString(config).encode()
    os.makedirs(train_dir, exist_ok=True)
    atomic_write(os.path.join(log_dir, CONFIG_NAME), text)
    atomic_write(os.path.join(train_dir, CONFIG_NAME), text)
    for embedding in config.embeddings:
        _copy_metadata(embedding.metadata_path, log_dir, train_dir)


def _copy_metadata(path: Optional[str], log_dir: str, train_dir: str) -> None:
    if not path or os.path.isabs(path) or os.path.exists(os.path.join(train_dir, path)):
        return
    source = os.path.join(log_dir, path)
    if os.path.isfile(source):
        target = os.path.join(train_dir, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)


def write_checkpoint(model: Any, train_dir: str, epoch: int) -> str:
    """`train/keras_embedding.ckpt-<epoch>` with each Embedding matrix; returns the prefix."""
    prefix = os.path.join(train_dir, f"keras_embedding.ckpt-{epoch}")
    tensors = {name: (np.asarray(layer.embeddings.numpy()), layer.embeddings.dtype)
               for name, layer in embedding_layers(model)}
    write_bundle(prefix, tensors)
    _ckpt._write_index(train_dir, prefix, [prefix])   # the `checkpoint` index the Projector looks up
    return prefix


__all__: List[str] = []
