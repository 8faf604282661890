"""The Keras `TensorBoard` callback: what `tf.keras.callbacks.TensorBoard` writes, where it writes it.

Layout under `log_dir` (TF 2 with Keras 3, checked against TensorFlow in the tests):

- `train/`: `epoch_loss`, `epoch_<metric>` and `epoch_learning_rate` per epoch (step =
  epoch); with `update_freq="batch"` or N, `batch_loss`/`batch_<metric>` every N steps
  (step = optimizer iterations); weight histograms `<model>/<layer>/<weight>/histogram`
  every `histogram_freq` epochs (and `.../image` with `write_images`); the model's
  config as the `keras` summary (the Graphs tab's conceptual graph); the graph of
  `fit`'s train function (`write_graph`) as a GraphDef plus a `graph_run_metadata`
  summary with step stats of its first batch; the profile of the batches named by
  `profile_batch` under `train/plugins/profile/<run>/` (XPlane + trace), whose step
  markers come from `fit`'s `instrument.region("train", step_num=...)`.
- with `embeddings_freq`: the Projector's `projector_config.pbtxt` and, every that many
  epochs, `train/keras_embedding.ckpt-<epoch>` (see `keras_embeddings`).
- `validation/`: `epoch_loss`, `epoch_<metric>` after each validation pass (step =
  epoch) and `evaluation_<name>_vs_iterations` (step = optimizer iterations).

In a multi-worker job the chief writes this layout under `log_dir` and every other worker
under `log_dir/worker_<rank>` (TensorBoard then shows one run per worker beside the job's,
and no two processes append to one event file).

It lives here, not in `jitflow.runtime.keras`, because it writes event files and traces
(the runtime never imports the summary or tracer packages); `jf.keras.callbacks`
re-exports it.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Tuple

import numpy as np
from tensorboard.compat.proto import summary_pb2

from jitflow.runtime.distribute import logdirs as _logdirs
from jitflow.runtime.keras.callbacks import Callback
from jitflow.summary import keras_embeddings as _embeddings
from jitflow.summary import trace as _trace
from jitflow.summary import writer as _writer
from jitflow.tracer import capture as _capture


def _profile_range(profile_batch: Any) -> Tuple[int, int]:
    """(start, stop) global batch numbers, 1-based; (0, 0) disables profiling."""
    if isinstance(profile_batch, str):
        profile_batch = [int(p) for p in profile_batch.split(",")]
    if isinstance(profile_batch, (int, np.integer)) and not isinstance(profile_batch, bool):
        start = stop = int(profile_batch)
    elif isinstance(profile_batch, (list, tuple)) and len(profile_batch) == 2:
        start, stop = (int(v) for v in profile_batch)
    else:
        raise ValueError(f"profile_batch: expected a non-negative int or a pair of them (start, stop); "
                         f"got {profile_batch!r}")
    if start < 0 or stop < start or (start == 0 and stop != 0):
        raise ValueError(f"profile_batch: expected 0 (off) or 1 <= start <= stop; got {profile_batch!r}")
    return start, stop


def _image_of(weight: np.ndarray) -> Optional[np.ndarray]:
    """Keras's picture of a weight: [k, h, w, 1] for 1-D, 2-D and 3-D (conv, channels last) weights."""
    w = np.squeeze(weight)
    if w.ndim == 1:
        w = w.reshape(1, w.shape[0], 1, 1)
    elif w.ndim == 2:
        if w.shape[0] > w.shape[1]:
            w = w.T
        w = w.reshape(1, w.shape[0], w.shape[1], 1)
    elif w.ndim == 3:
        w = np.transpose(w, (2, 0, 1))[..., None]
    else:
        return None
    return w if w.shape[-1] in (1, 3, 4) else None


class TensorBoard(Callback):
    """Writes training logs for TensorBoard (TF's `tf.keras.callbacks.TensorBoard`).

    >>> tb = TensorBoard(log_dir="logs/fit", histogram_freq=1, update_freq="batch", profile_batch=2)
    >>> model.fit(x, y, epochs=2, validation_split=0.2, callbacks=[tb])  # doctest: +SKIP
    """

    def __init__(self, log_dir: str = "logs", histogram_freq: int = 0, write_graph: bool = True,
                 write_images: bool = False, write_steps_per_second: bool = False, update_freq: Any = "epoch",
                 profile_batch: Any = 0, embeddings_freq: int = 0, embeddings_metadata: Any = None) -> None:
        super().__init__()
        if not isinstance(log_dir, (str, os.PathLike)):
            raise TypeError(f"log_dir: expected a directory path; got {log_dir!r}")
        if not isinstance(histogram_freq, int) or histogram_freq < 0:
            raise ValueError(f"histogram_freq: expected a non-negative int; got {histogram_freq!r}")
        if update_freq not in ("epoch", "batch") and not (isinstance(update_freq, int) and update_freq > 0):
            raise ValueError(f"update_freq: expected 'epoch', 'batch' or a positive int; got {update_freq!r}")
        if not isinstance(embeddings_freq, int) or embeddings_freq < 0:
            raise ValueError(f"embeddings_freq: expected a non-negative int; got {embeddings_freq!r}")
        self.embeddings_freq, self.embeddings_metadata = embeddings_freq, embeddings_metadata
        self.log_dir = os.fspath(log_dir)
        self.histogram_freq, self.write_graph, self.write_images = histogram_freq, write_graph, write_images
        self.write_steps_per_second = write_steps_per_second
        self.update_freq = 1 if update_freq == "batch" else update_freq
        self._profile_start, self._profile_stop = _profile_range(profile_batch)
        self._writers: Dict[str, Any] = {}
        self._global_batch = 0
        self._tracing: Optional[str] = None   # "profile" or "graph" while a capture is on
        self._graph_written = False
        self._batch_start = 0.0

    # -- writers -------------------------------------------------------------------------------------
    @property
    def _run_dir(self) -> str:
        """`log_dir` on the chief (and without a multi-worker strategy); `log_dir/worker_<rank>`
        on the other workers of an MPI job, so workers never write into one another's files and
        TensorBoard shows each as its own run beside the job's."""
        if _logdirs.is_chief():
            return self.log_dir
        return _logdirs.worker_logdir(self.log_dir)

    @property
    def _train_dir(self) -> str:
        return os.path.join(self._run_dir, "train")

    @property
    def _val_dir(self) -> str:
        return os.path.join(self._run_dir, "validation")

    def _writer(self, which: str) -> Any:
        w = self._writers.get(which)
        if w is None:
            w = self._writers[which] = _writer.create_file_writer(self._train_dir if which == "train"
                                                                  else self._val_dir)
        return w

    def _close(self) -> None:
        for w in self._writers.values():
            w.close()
        self._writers = {}

    def _iterations(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    # -- training --------------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self._global_batch = 0
        self._graph_written = False
        if self.write_graph and self._describable():
            self._write_model_config()
        if self.embeddings_freq:
            _embeddings.configure(self.model, self._run_dir, self._train_dir, self.embeddings_metadata)

    def on_train_batch_begin(self, batch, logs=None):
        self._global_batch += 1
        if self._tracing is not None or _capture.active() is not None:
            return
        if self._profile_start and self._global_batch == self._profile_start:
            _trace.trace_on(graph=True, profiler=True)
            self._tracing = "profile"
        elif self.write_graph and not self._graph_written:
            _trace.trace_on(graph=True, profiler=False)
            self._tracing = "graph"

    def on_train_batch_end(self, batch, logs=None):
        step = self._iterations()
        if self._tracing == "graph":
            self._export_trace(f"batch_{self._global_batch}", step)
        elif self._tracing == "profile" and self._global_batch >= self._profile_stop:
            self._export_trace(f"batch_{self._profile_stop}", self._profile_stop)
        if self.write_graph and not self._graph_written:
            self._write_train_graph()
        if self.update_freq != "epoch" and logs and step % self.update_freq == 0:
            with self._writer("train").as_default(step=step):
                for name, value in logs.items():
                    _writer.scalar("batch_" + name, value, step=step)

    def _export_trace(self, name: str, step: int) -> None:
        profiling = self._tracing == "profile"
        self._tracing = None
        with self._writer("train").as_default():
            _trace.trace_export(name, step=step, profiler_outdir=self._train_dir if profiling else None)

    def _write_train_graph(self) -> None:
        fn: Any = getattr(self.model, "train_function", None)  # duck-typed: a jf.function, or absent
        concretes = fn.list_concrete_functions() if hasattr(fn, "list_concrete_functions") else []
        if not concretes:
            return
        with self._writer("train").as_default():
            _writer.graph(concretes[-1])
        self._graph_written = True

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        if "learning_rate" not in train and "lr" not in train:
            train["learning_rate"] = float(self.model.optimizer.learning_rate.numpy())
        with self._writer("train").as_default(step=epoch):
            for name, value in train.items():
                _writer.scalar("epoch_" + name, value, step=epoch)
            if self.histogram_freq and epoch % self.histogram_freq == 0:
                self._log_weights(epoch)
        if self.embeddings_freq and epoch % self.embeddings_freq == 0:
            _embeddings.write_checkpoint(self.model, self._train_dir, epoch)
        if val:
            iterations = self._iterations()
            with self._writer("validation").as_default(step=epoch):
                for name, value in val.items():
                    _writer.scalar("epoch_" + name, value, step=epoch)
                    _writer.scalar(f"evaluation_{name}_vs_iterations", value, step=iterations)
        for w in self._writers.values():
            w.flush()

    def _log_weights(self, epoch: int) -> None:
        for layer in self.model.layers:
            for weight in layer.weights:
                path = f"{self.model.name}/{weight.name.split(':')[0]}"   # Keras 3's weight.path
                value = weight.numpy()
                _writer.histogram(path + "/histogram", value, step=epoch)
                if self.write_images:
                    img = _image_of(value)
                    if img is not None:
                        lo, hi = float(img.min()), float(img.max())
                        _writer.image(path + "/image", (img - lo) / (hi - lo) if hi > lo else np.zeros_like(img),
                                      step=epoch)

    def _describable(self) -> bool:
        """Keras writes the `keras` summary only for Sequential and functional models (a subclassed
        model's config does not describe its graph)."""
        return getattr(self.model, "_functional", None) is not None or type(self.model).__name__ == "Sequential"

    def _write_model_config(self) -> None:
        """The `keras` summary: the model's config as JSON (TensorBoard's conceptual graph of a Keras model)."""
        is_functional = getattr(self.model, "_functional", None) is not None and type(self.model).__name__ == "Model"
        config = {"class_name": "Functional" if is_functional else type(self.model).__name__,   # Keras 3's names
                  "config": self.model.get_config(), "keras_version": "jitflow", "backend": "jitflow"}
        metadata = summary_pb2.SummaryMetadata()
        metadata.plugin_data.plugin_name = "graph_keras_model"
        metadata.plugin_data.content = b"1"
        with self._writer("train").as_default():
            _writer.write("keras", np.array(json.dumps(config, default=str), dtype=object), step=0,
                          metadata=metadata)

    def on_train_end(self, logs=None):
        if self._tracing is not None:  # training stopped inside the profiled range: write what ran
            self._export_trace(f"batch_{self._global_batch}", self._global_batch)
        self._close()


__all__ = ["TensorBoard"]
