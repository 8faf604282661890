"""Embeddings for TensorBoard's Projector, written as PyTorch's `add_embedding`
lays them out (the projector reads files, not event records):

    <log_dir>/projector_config.pbtxt          one `embeddings {...}` per call
    <log_dir>/<step:05d>/<tag>/tensors.tsv    one row per point, tab-separated
    <log_dir>/<step:05d>/<tag>/metadata.tsv   labels (a header row if several columns)
    <log_dir>/<step:05d>/<tag>/sprite.png     label images tiled in a square

The config is parsed and rewritten with TensorBoard's `ProjectorConfig` proto
(to a temporary name, then renamed), so a crash never leaves a half-written
config and repeated calls never duplicate an embedding's entry.
"""

from __future__ import annotations

import math
import os
import posixpath
import tempfile
import threading
from typing import Any, Sequence

import numpy as np
from google.protobuf import text_format
from tensorboard.plugins.projector import projector_config_pb2

from jitflow.summary import imaging
from jitflow.summary.png import encode_png
from jitflow.summary.values import as_numpy, describe

CONFIG_NAME = "projector_config.pbtxt"
MAX_SPRITE_SIZE = 8192  # the projector front end refuses larger sprites
_config_lock = threading.Lock()


def encode_tag(tag: str) -> str:
    """A tag as one directory name (tensorboardX's escaping of %, / and \\)."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def _tsv_cell(value: Any, where: str) -> str:
    s = str(value)
    if "\t" in s or "\n" in s or "\r" in s:
        raise ValueError(f"{where}: expected a label without tabs or newlines (they would break "
                         f"metadata.tsv), got {s!r}")
    return s


def metadata_lines(metadata: Sequence[Any], n: int, header: Sequence[str] | None) -> list[str]:
    if isinstance(metadata, (str, bytes)) or not hasattr(metadata, "__len__"):
        raise TypeError(f"metadata: expected a list of labels (one per row of mat), got {describe(metadata)}")
    metadata = list(metadata.tolist() if isinstance(metadata, np.ndarray) else metadata)
    if len(metadata) != n:
        raise ValueError(f"metadata: expected one label per row of mat ({n}), got {len(metadata)}")
    if not header:
        return [_tsv_cell(m, f"metadata[{i}]") for i, m in enumerate(metadata)]
    header = list(header)
    lines = ["\t".join(_tsv_cell(h, "metadata_header") for h in header)]
    for i, row in enumerate(metadata):
        if isinstance(row, (str, bytes)) or len(row) != len(header):
            raise ValueError(f"metadata[{i}]: expected {len(header)} columns (as metadata_header), got {row!r}")
        lines.append("\t".join(_tsv_cell(c, f"metadata[{i}]") for c in row))
    return lines


def sprite(label_img: Any, n: int) -> tuple[np.ndarray, int, int]:
    """(uint8 HWC square sprite, image height, image width) from NCHW label images."""
    a = as_numpy(label_img, "label_img")
    if a.ndim != 4 or a.shape[0] != n or a.shape[1] not in (1, 3, 4):
        raise ValueError(f"label_img: expected [N, C, H, W] images with N = rows of mat ({n}) and "
                         f"C in 1, 3, 4, got {describe(a)}")
    if a.dtype != np.uint8 and a.dtype.kind != "f":
        raise TypeError(f"label_img: expected uint8 or float (in [0, 1]) pixels, got {describe(a)}")
    h, w = a.shape[2], a.shape[3]
    per_row = int(math.ceil(math.sqrt(n * h * w) / w))
    grid = imaging.make_grid(a, ncols=per_row)[:3]  # C x H' x W' (RGB)
    side = grid.shape[2]
    if side > MAX_SPRITE_SIZE or grid.shape[1] > side:
        raise ValueError(f"label_img: the sprite would be {grid.shape[1]}x{side} pixels; the projector "
                         f"shows at most {MAX_SPRITE_SIZE}x{MAX_SPRITE_SIZE}: use fewer or smaller images")
    square = np.zeros((side, side, 3), np.float32 if a.dtype != np.uint8 else np.uint8)
    square[:grid.shape[1]] = grid.transpose(1, 2, 0)
    if square.dtype != np.uint8:
        square = np.clip(np.nan_to_num(square * 255.0), 0, 255).astype(np.uint8)
    return square, h, w


def _write_text(path: str, lines: list[str]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(lines) + "\n")


def write_embedding(log_dir: str, mat: Any, metadata: Any, label_img: Any, step: int, tag: str,
                    metadata_header: Sequence[str] | None) -> projector_config_pb2.EmbeddingInfo:
    if "://" in log_dir:
        raise ValueError(f"add_embedding: the projector files are written to a local directory; "
                         f"log_dir {log_dir!r} is a URL")
    m = as_numpy(mat, "mat")
    if m.ndim != 2 or m.dtype.kind not in "biuf" or m.shape[0] == 0:
        raise ValueError(f"mat: expected a non-empty [N, D] numeric matrix (one row per point), got {describe(m)}")
    lines = metadata_lines(metadata, m.shape[0], metadata_header) if metadata is not None else None
    spr = sprite(label_img, m.shape[0]) if label_img is not None else None
    subdir = posixpath.join(f"{step:05d}", encode_tag(tag))
    out = os.path.join(log_dir, *subdir.split("/"))
    os.makedirs(out, exist_ok=True)
    _write_text(os.path.join(out, "tensors.tsv"),
                ["\t".join(map(repr, row)) for row in m.astype(np.float64).tolist()])
    info = projector_config_pb2.EmbeddingInfo(tensor_name=f"{tag}:{step:05d}",
                                              tensor_path=posixpath.join(subdir, "tensors.tsv"),
                                              tensor_shape=list(m.shape))
    if lines is not None:
        _write_text(os.path.join(out, "metadata.tsv"), lines)
        info.metadata_path = posixpath.join(subdir, "metadata.tsv")
    if spr is not None:
        image, h, w = spr
        with open(os.path.join(out, "sprite.png"), "wb") as f:
            f.write(encode_png(image))
        info.sprite.image_path = posixpath.join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([w, h])
    _add_to_config(log_dir, info)
    return info


def _add_to_config(log_dir: str, info: projector_config_pb2.EmbeddingInfo) -> None:
    path = os.path.join(log_dir, CONFIG_NAME)
    with _config_lock:
        config = projector_config_pb2.ProjectorConfig()
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                text_format.Parse(f.read(), config)
        kept = [e for e in config.embeddings if e.tensor_name != info.tensor_name]
        del config.embeddings[:]
        config.embeddings.extend(kept + [info])
        fd, tmp = tempfile.mkstemp(prefix=".projector_config.", dir=log_dir)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text_format.MessageToString(config))
        os.replace(tmp, path)
