"""Callbacks (TF's `tf.keras.callbacks`): hooks `fit`, `evaluate` and `predict` call.

`fit` calls, in order: `on_train_begin`; per epoch `on_epoch_begin`, per batch
`on_train_batch_begin`/`on_train_batch_end(batch, logs)`, the validation pass
(`on_test_begin`, `on_test_batch_*`, `on_test_end`), then `on_epoch_end(epoch, logs)`
with `loss`, the metrics and their `val_` twins; finally `on_train_end`. A callback
may set `model.stop_training = True`.

`History` is always added (it is what `fit` returns); `ProgbarLogger` is added for
`verbose=1` (a tqdm bar per epoch with the running logs) and `verbose=2` (one line per
epoch). The TensorBoard callback lives in `jitflow.summary` (it writes event files)
and is exposed as `jf.keras.callbacks.TensorBoard`.
"""
from __future__ import annotations

import csv
import math
import os
import sys
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
from tqdm.auto import tqdm

from jitflow.runtime.state.variables import Variable


class Callback:
    """Base class: override the hooks you need; `self.model` and `self.params` are set by `fit`."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: Dict[str, Any] = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: Dict[str, Any]) -> None:
        self.params = params

    def on_train_begin(self, logs=None): pass
    def on_train_end(self, logs=None): pass
    def on_epoch_begin(self, epoch, logs=None): pass
    def on_epoch_end(self, epoch, logs=None): pass
    def on_train_batch_begin(self, batch, logs=None): pass
    def on_train_batch_end(self, batch, logs=None): pass
    def on_test_begin(self, logs=None): pass
    def on_test_end(self, logs=None): pass
    def on_test_batch_begin(self, batch, logs=None): pass
    def on_test_batch_end(self, batch, logs=None): pass
    def on_predict_begin(self, logs=None): pass
    def on_predict_end(self, logs=None): pass
    def on_predict_batch_begin(self, batch, logs=None): pass
    def on_predict_batch_end(self, batch, logs=None): pass


_HOOKS = [name for name in vars(Callback) if name.startswith("on_")]


class CallbackList(Callback):
    """Calls every callback's hook in order."""

    def __init__(self, callbacks: Optional[Sequence[Callback]] = None, model: Any = None,
                 **params: Any) -> None:
        super().__init__()
        self.callbacks: List[Callback] = []
        for cb in callbacks or []:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks: expected jf.keras.callbacks.Callback instances; got {cb!r}")
            self.callbacks.append(cb)
        if model is not None:
            self.set_model(model)
        self.set_params(params)

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)
        if self.model is not None:
            callback.set_model(self.model)
        callback.set_params(self.params)

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        for cb in self.callbacks:
            cb.set_model(model)

    def set_params(self, params: Dict[str, Any]) -> None:
        super().set_params(params)
        for cb in self.callbacks:
            cb.set_params(params)


def _fan_out(name: str) -> Callable:
    def hook(self, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, name)(*args)
    hook.__name__ = name
    return hook


for _name in _HOOKS:
    setattr(CallbackList, _name, _fan_out(_name))


class History(Callback):
    """Records every epoch's logs: `history.history["loss"]` is a list, one value per epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.history: Dict[str, List[float]] = {}
        self.epoch: List[int] = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)
        if self.model is not None:
            self.model.history = self


def _format_logs(logs: Dict[str, Any]) -> str:
    return " - ".join(f"{k}: {v:.4f}" if isinstance(v, (float, np.floating)) else f"{k}: {v}"
                      for k, v in logs.items())


class ProgbarLogger(Callback):
    """Keras's progress output: `verbose=1` a tqdm bar per epoch, `verbose=2` one line per epoch."""

    def __init__(self, verbose: int = 1, file: Any = None) -> None:
        super().__init__()
        self.verbose = verbose
        self.file = file
        self._bar: Any = None
        self._start = 0.0

    def _out(self):
        return self.file if self.file is not None else sys.stdout

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()
        epochs = self.params.get("epochs", "?")
        if self.verbose == 1:
            self._bar = tqdm(total=self.params.get("steps"), desc=f"Epoch {epoch + 1}/{epochs}", unit="step",
                             file=self._out(), leave=True, dynamic_ncols=True)
        elif self.verbose == 2:
            print(f"Epoch {epoch + 1}/{epochs}", file=self._out())

    def on_train_batch_end(self, batch, logs=None):
        if self._bar is not None:
            self._bar.set_postfix({k: f"{v:.4f}" for k, v in (logs or {}).items()}, refresh=False)
            self._bar.update(1)

    def on_epoch_end(self, epoch, logs=None):
        if self._bar is not None:
            self._bar.set_postfix({k: f"{v:.4f}" for k, v in (logs or {}).items()})
            self._bar.close()
            self._bar = None
        elif self.verbose == 2:
            took = time.perf_counter() - self._start
            print(f"{self.params.get('steps', '?')}/{self.params.get('steps', '?')} - {took:.0f}s - "
                  f"{_format_logs(logs or {})}", file=self._out())


def _monitor_mode(monitor: str, mode: str) -> Callable[[float, float], bool]:
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode: expected 'auto', 'min' or 'max'; got {mode!r}")
    if mode == "auto":
        mode = "max" if ("acc" in monitor or monitor.endswith("auc")) else "min"
    return (lambda a, b: a > b) if mode == "max" else (lambda a, b: a < b)


class ModelCheckpoint(Callback):
    """Saves the model after epochs: the whole model for a `.keras` path (unless `save_weights_only`),
    else its weights (`.weights.h5`: Keras's HDF5 layout; otherwise a `jf.train.Checkpoint`);
    `filepath` may use `{epoch:02d}` and log names (`{val_loss:.2f}`). With `save_best_only`, only when
    `monitor` improved."""

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0, save_best_only: bool = False,
                 save_weights_only: bool = False, mode: str = "auto", save_freq: Any = "epoch",
                 initial_value_threshold: Optional[float] = None) -> None:
        super().__init__()
        if save_freq != "epoch":
            raise ValueError(f"save_freq: only 'epoch' is supported; got {save_freq!r}")
        self.filepath, self.monitor, self.verbose = os.fspath(filepath), monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self._better = _monitor_mode(monitor, mode)
        self.best = initial_value_threshold

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None:
                warnings.warn(f"ModelCheckpoint: can save best model only with {self.monitor} available; the logs "
                              f"have {sorted(logs)}", stacklevel=2)
                return
            if self.best is not None and not self._better(current, self.best):
                return
            self.best = current
        if path.endswith(".keras") and not self.save_weights_only:
            self.model.save(path)
        else:
            self.model.save_weights(path)
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: saving model to {path}")


class EarlyStopping(Callback):
    """Stops training when `monitor` has not improved by `min_delta` for `patience` epochs."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0, verbose: int = 0,
                 mode: str = "auto", baseline: Optional[float] = None, restore_best_weights: bool = False,
                 start_from_epoch: int = 0) -> None:
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, int(patience), verbose
        self.min_delta, self.baseline = abs(float(min_delta)), baseline
        self.restore_best_weights, self.start_from_epoch = restore_best_weights, int(start_from_epoch)
        better = _monitor_mode(monitor, mode)
        sign = 1.0 if better(1.0, 0.0) else -1.0
        self._improved = lambda current, best: better(current - sign * self.min_delta, best)
        self.stopped_epoch = 0

    def on_train_begin(self, logs=None):
        self.wait, self.stopped_epoch, self.best, self.best_weights, self.best_epoch = 0, 0, None, None, 0

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            warnings.warn(f"EarlyStopping: monitor {self.monitor!r} is not in the logs {sorted(logs or {})}",
                          stacklevel=2)
            return
        if epoch < self.start_from_epoch:
            return
        if self.best is None and self.baseline is not None:
            self.best = self.baseline
        self.wait += 1
        if self.best is None or self._improved(current, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._improved(current, self.baseline):
                self.wait = 0
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


def _set_lr(optimizer: Any, value: float) -> None:
    lr = optimizer._learning_rate
    if not isinstance(lr, Variable):
        raise ValueError("the optimizer's learning rate is a schedule; a callback cannot set it")
    lr.assign(float(value))


class LearningRateScheduler(Callback):
    """Sets the learning rate at each epoch's start to `schedule(epoch, lr)`."""

    def __init__(self, schedule: Callable, verbose: int = 0) -> None:
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch, logs=None):
        lr = float(self.model.optimizer.learning_rate.numpy())
        new = self.schedule(epoch, lr)
        new = float(new.numpy() if hasattr(new, "numpy") else new)
        if not math.isfinite(new):
            raise ValueError(f"LearningRateScheduler: the schedule returned {new} for epoch {epoch}")
        _set_lr(self.model.optimizer, new)
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["lr"] = float(self.model.optimizer.learning_rate.numpy())


class ReduceLROnPlateau(Callback):
    """Multiplies the learning rate by `factor` after `patience` epochs without improvement."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10, verbose: int = 0,
                 mode: str = "auto", min_delta: float = 1e-4, cooldown: int = 0, min_lr: float = 0.0) -> None:
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"factor: must be < 1; got {factor}")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.min_delta, self.cooldown, self.min_lr = min_delta, cooldown, min_lr
        self._better = _monitor_mode(monitor, mode)
        self.best, self.wait, self.cooldown_counter = None, 0, 0

    def on_epoch_end(self, epoch, logs=None):
        current = (logs or {}).get(self.monitor)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        sign = 1.0 if self._better(1.0, 0.0) else -1.0
        if self.best is None or self._better(current - sign * self.min_delta, self.best):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                old = float(self.model.optimizer.learning_rate.numpy())
                if old > self.min_lr:
                    _set_lr(self.model.optimizer, max(old * self.factor, self.min_lr))
                    self.cooldown_counter, self.wait = self.cooldown, 0
        if logs is not None:
            logs["lr"] = float(self.model.optimizer.learning_rate.numpy())


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or infinite."""

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            print(f"Batch {batch}: Invalid loss, terminating training")
            self.model.stop_training = True


class CSVLogger(Callback):
    """Streams each epoch's logs to a CSV file (header from the first epoch's keys)."""

    def __init__(self, filename: str, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self._file: Any = None
        self._writer: Any = None
        self._keys: Optional[List[str]] = None

    def on_train_begin(self, logs=None):
        exists = self.append and os.path.exists(self.filename) and os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._header_written = exists
        self._keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self._keys is None:
            self._keys = sorted(logs)
            self._writer = csv.DictWriter(self._file, fieldnames=["epoch"] + self._keys, delimiter=self.sep)
            if not self._header_written:
                self._writer.writeheader()
        self._writer.writerow({"epoch": epoch, **{k: logs.get(k, "NA") for k in self._keys}})
        self._file.flush()

    def on_train_end(self, logs=None):
        if self._file is not None:
            self._file.close()
            self._file = None


class LambdaCallback(Callback):
    """A callback from functions: `LambdaCallback(on_epoch_end=lambda epoch, logs: ...)`."""

    def __init__(self, **hooks: Callable) -> None:
        super().__init__()
        for name, fn in hooks.items():
            if name not in _HOOKS:
                raise ValueError(f"LambdaCallback: unknown hook {name!r}; expected one of {_HOOKS}")
            setattr(self, name, fn)


__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "ModelCheckpoint", "EarlyStopping",
           "LearningRateScheduler", "ReduceLROnPlateau", "TerminateOnNaN", "CSVLogger", "LambdaCallback"]
