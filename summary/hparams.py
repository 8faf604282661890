"""`jf.summary.hparams`: TensorBoard's hparams API, writing through jitflow.

The same names and shapes as `tensorboard.plugins.hparams.api` (`HParam`,
`Metric`, `Discrete`, `IntInterval`, `RealInterval`, `hparams`,
`hparams_config`, `hparams_pb`, `hparams_config_pb`), which TF code imports as
`hp`; the classes and proto builders are TensorBoard's own (they need no
TensorFlow), and `hparams` / `hparams_config` write to jitflow's default
writer, so a sweep logged with `jf.summary` shows in the HParams dashboard
(table, parallel coordinates, scatter plots).

Example:
    >>> import tempfile, jitflow.summary as s
    >>> from jitflow.summary import hparams as hp
    >>> root = tempfile.mkdtemp()
    >>> LR = hp.HParam("lr", hp.RealInterval(1e-4, 1e-1))
    >>> with s.create_file_writer(root).as_default():
    ...     hp.hparams_config(hparams=[LR], metrics=[hp.Metric("accuracy")])
    <jf.Tensor: shape=(), dtype=bool, numpy=True>
    >>> with s.create_file_writer(root + "/run-0").as_default():
    ...     hp.hparams({LR: 0.01}, trial_id="run-0")
    ...     s.scalar("accuracy", 0.9, step=1)
    <jf.Tensor: shape=(), dtype=bool, numpy=True>
    <jf.Tensor: shape=(), dtype=bool, numpy=True>
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from tensorboard.plugins.hparams.summary_v2 import (Discrete, Domain, HParam, IntInterval, Metric,
                                                     RealInterval, hparams_config_pb, hparams_pb)

from jitflow.runtime.core.tensor import Tensor
from jitflow.summary import writer as _writer


def hparams(hparams: Mapping[Any, Any], trial_id: str | None = None,
            start_time_secs: float | None = None) -> bool | Tensor:
    """Write this run's hyperparameter values (an HParams session) to the
    default writer; keys are `HParam`s or names. Returns whether it was written."""
    pb = hparams_pb(hparams, trial_id=trial_id, start_time_secs=start_time_secs)
    return _writer.write_raw_pb(pb.SerializeToString(), step=0)


def hparams_config(hparams: Sequence[HParam], metrics: Sequence[Metric],
                   time_created_secs: float | None = None) -> bool | Tensor:
    """Write the experiment's configuration (hparams with their domains, and
    the metrics to show) to the default writer, usually at the logdir's root."""
    pb = hparams_config_pb(hparams, metrics, time_created_secs=time_created_secs)
    return _writer.write_raw_pb(pb.SerializeToString(), step=0)


__all__ = ["HParam", "Metric", "Domain", "Discrete", "IntInterval", "RealInterval",
           "hparams", "hparams_config", "hparams_pb", "hparams_config_pb"]
