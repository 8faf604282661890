"""`jf.io`: TFRecord files, `tf.train.Example` parsing, file and image codecs (TF's `tf.io`).

    with jf.io.TFRecordWriter("train.tfrecords") as w:
        w.write(jf.train.Example(features=jf.train.Features(feature={
            "label": jf.train.Feature(int64_list=jf.train.Int64List(value=[1]))})).SerializeToString())
    desc = {"label": jf.io.FixedLenFeature([], jf.int64)}
    ds = jf.data.TFRecordDataset("train.tfrecords").map(lambda s: jf.io.parse_single_example(s, desc))

`records` holds the TFRecord framing (length + masked CRC-32C) shared with the summary
writer's event files; importing it (as the summary writer does) loads nothing else: the
public names below load their module on first use.
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "read_file": "file_ops", "write_file": "file_ops", "serialize_tensor": "file_ops", "parse_tensor": "file_ops",
    "decode_image": "image_codecs", "decode_jpeg": "image_codecs", "decode_png": "image_codecs",
    "encode_jpeg": "image_codecs", "encode_png": "image_codecs",
    "FixedLenFeature": "parsing", "FixedLenSequenceFeature": "parsing", "VarLenFeature": "parsing",
    "parse_example": "parsing", "parse_single_example": "parsing", "parse_single_sequence_example": "parsing",
    "decode_raw": "decode_ops", "decode_csv": "decode_ops",
    "TFRecordOptions": "tfrecord", "TFRecordWriter": "tfrecord", "tf_record_iterator": "tfrecord",
}

__all__ = sorted(_WHERE) + ["gfile"]


def __getattr__(name: str) -> Any:
    if name == "gfile":
        value = importlib.import_module(f"{__name__}.gfile")
        globals()[name] = value
        return value
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'jitflow.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_WHERE) | {"gfile"})
