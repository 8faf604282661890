"""`jf.train`: checkpoints (`tf.train.Checkpoint`, `CheckpointManager`, `latest_checkpoint`).

    >>> import jitflow as jf, tempfile
    >>> ckpt = jf.train.Checkpoint(v=jf.Variable(1.0))
    >>> path = ckpt.save(tempfile.mkdtemp() + "/ckpt")
    >>> jf.train.latest_checkpoint(path.rsplit("/", 1)[0]) == path
    True
"""
from typing import Any

from jitflow.runtime.training.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint
from jitflow.runtime.training.checkpoint_reader import CheckpointReader, list_variables, load_checkpoint

# `tf.train.Example` & co.: real protobuf messages, built on first use (runtime.io.example_pb).
_EXAMPLE_PROTOS = ("Example", "Features", "Feature", "BytesList", "FloatList", "Int64List", "SequenceExample",
                   "FeatureList", "FeatureLists")

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint", "CheckpointReader", "list_variables",
           "load_checkpoint", *_EXAMPLE_PROTOS]


def __getattr__(name: str) -> Any:
    if name in _EXAMPLE_PROTOS:
        from jitflow.runtime.io import example_pb  # lazy: builds the protobuf classes on first use
        value = globals()[name] = getattr(example_pb, name)
        return value
    raise AttributeError(f"module 'jitflow.train' has no attribute {name!r}")
