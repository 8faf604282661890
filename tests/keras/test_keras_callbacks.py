"""Callbacks: the hook order, History, ModelCheckpoint, EarlyStopping, LearningRateScheduler,
CSVLogger, ProgbarLogger (tqdm) and TerminateOnNaN, on small real fits."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest

import jitflow as jf

L = jf.keras.layers
CB = jf.keras.callbacks


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, (x[:, :1] * 2.0 - x[:, 1:2]).astype(np.float32)


def _model(lr=0.05):
    jf.keras.backend.clear_session()
    model = jf.keras.Sequential([L.Dense(1, input_shape=(4,))])
    model.compile(jf.keras.optimizers.SGD(lr), "mse", metrics=["mae"])
    return model


class Recorder(CB.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            return lambda *args: self.calls.append((name,) + tuple(a for a in args if isinstance(a, int)))
        return super().__getattribute__(name)


def test_hooks_are_called_in_keras_order_with_logs():
    x, y = _data(24)
    rec = Recorder()
    _model().fit(x, y, batch_size=12, epochs=2, validation_data=(x[:12], y[:12]), callbacks=[rec], verbose=0)
    assert rec.calls[:5] == [("on_train_begin",), ("on_epoch_begin", 0), ("on_train_batch_begin", 0),
                             ("on_train_batch_end", 0), ("on_train_batch_begin", 1)]
    assert rec.calls[6:10] == [("on_test_begin",), ("on_test_batch_begin", 0), ("on_test_batch_end", 0),
                               ("on_test_end",)]
    assert rec.calls[10] == ("on_epoch_end", 0) and rec.calls[-1] == ("on_train_end",)


def test_history_model_checkpoint_and_csv_logger(tmp_path):
    x, y = _data()
    model = _model()
    ckpt = CB.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}-{val_loss:.2f}"), save_best_only=True)
    csv_path = tmp_path / "log.csv"
    history = model.fit(x, y, batch_size=16, epochs=3, validation_split=0.25, verbose=0,
                        callbacks=[ckpt, CB.CSVLogger(str(csv_path))])
    assert history is model.history and history.epoch == [0, 1, 2]
    assert set(history.history) == {"loss", "mae", "val_loss", "val_mae"}
    saved = sorted(p.name for p in tmp_path.glob("w-*.index"))  # jf.train.Checkpoint files (TF format)
    assert saved and saved[0].startswith("w-01-")
    rows = list(csv.DictReader(open(csv_path)))
    assert [r["epoch"] for r in rows] == ["0", "1", "2"]
    np.testing.assert_allclose([float(r["val_loss"]) for r in rows], history.history["val_loss"], rtol=1e-6)


def test_early_stopping_restores_the_best_weights():
    x, y = _data()
    model = _model()
    stop = CB.EarlyStopping(monitor="loss", min_delta=100.0, patience=2, restore_best_weights=True)
    first = []
    keep = CB.LambdaCallback(on_epoch_end=lambda epoch, logs: first.append(model.get_weights()) if epoch == 0 else None)
    history = model.fit(x, y, batch_size=16, epochs=30, callbacks=[keep, stop], verbose=0)
    assert history.epoch == [0, 1, 2] and model.stop_training and stop.stopped_epoch == 2
    assert stop.best == history.history["loss"][0]   # nothing improved by min_delta after the first epoch
    for got, want in zip(model.get_weights(), first[0]):
        np.testing.assert_array_equal(got, want)


def test_learning_rate_scheduler_sets_and_logs_the_rate():
    x, y = _data()
    model = _model()
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0,
                        callbacks=[CB.LearningRateScheduler(lambda epoch, lr: 0.1 / (epoch + 1))])
    np.testing.assert_allclose(history.history["lr"], [0.1, 0.05, 0.1 / 3], rtol=1e-6)
    np.testing.assert_allclose(float(model.optimizer.learning_rate.numpy()), 0.1 / 3, rtol=1e-6)


def test_terminate_on_nan():
    x, y = _data()
    y[0] = np.inf
    model = _model()
    history = model.fit(x, y, batch_size=16, epochs=3, verbose=0, callbacks=[CB.TerminateOnNaN()])
    assert model.stop_training and len(history.epoch) == 1


def test_progress_bar_is_a_tqdm_bar_and_verbose_2_prints_one_line_per_epoch(capsys):
    x, y = _data()
    out = io.StringIO()
    bar = CB.ProgbarLogger(verbose=1, file=out)
    _model().fit(x, y, batch_size=16, epochs=2, verbose=0, callbacks=[bar])
    text = out.getvalue()
    assert "Epoch 1/2" in text and "Epoch 2/2" in text and "3/3" in text and "loss=" in text
    _model().fit(x, y, batch_size=16, epochs=2, verbose=2)
    lines = [l for l in capsys.readouterr().out.splitlines() if l.strip()]
    assert lines[0] == "Epoch 1/2" and lines[1].startswith("3/3 - ") and " - loss: " in lines[1]


def test_callbacks_must_be_callback_instances():
    x, y = _data()
    with pytest.raises(TypeError, match=r"callbacks: expected jf.keras.callbacks.Callback instances"):
        _model().fit(x, y, callbacks=[print], verbose=0)
