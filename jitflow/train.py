"""`jf.train`: checkpoints (`tf.train.Checkpoint`, `CheckpointManager`, `latest_checkpoint`).

    >>> import jitflow as jf, tempfile
    >>> ckpt = jf.train.Checkpoint(v=jf.Variable(1.0))
    >>> path = ckpt.save(tempfile.mkdtemp() + "/ckpt")
    >>> jf.train.latest_checkpoint(path.rsplit("/", 1)[0]) == path
    True
"""
from jitflow.runtime.training.checkpoint import Checkpoint, CheckpointManager, latest_checkpoint

__all__ = ["Checkpoint", "CheckpointManager", "latest_checkpoint"]
