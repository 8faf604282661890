"""Functional models with several inputs and outputs: `compile(loss=[...] | {...}, loss_weights=...,
metrics=[[...]] | {...})`, logs named as Keras names them (`loss`, `<output>_loss`,
`<output>_<metric>`), `predict` returning a list or a dict, and the TensorBoard callback writing
those tags (read back with TensorBoard's loader)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitflow as jf

k = jf.keras
ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _data(n=12):
    rng = np.random.default_rng(0)
    return (rng.normal(size=(n, 3)).astype(np.float32), rng.normal(size=(n, 2)).astype(np.float32),
            rng.normal(size=(n, 1)).astype(np.float32), rng.integers(0, 3, n).astype(np.int32))


def _two_outputs(as_dict=False):
    a, b = k.Input((3,), name="a"), k.Input((2,), name="b")
    h = k.layers.Dense(4, activation="relu", name="hid")(a)
    g = k.layers.Dense(4, name="side")(b)
    reg = k.layers.Dense(1, name="reg")(h)
    cls = k.layers.Dense(3, name="cls")(g)
    if as_dict:
        return k.Model({"a": a, "b": b}, {"reg": reg, "cls": cls})
    return k.Model([a, b], [reg, cls])


def _mse(y, p):
    return float(np.mean((p - y) ** 2))


def _sce(y, logits):
    z = logits - logits.max(-1, keepdims=True)
    return float(np.mean(-(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(-1)))))


def test_list_losses_weights_and_metrics_log_keras_names():
    xa, xb, yr, yc = _data()
    model = _two_outputs()
    assert model.output_names == ["reg", "cls"]
    model.compile("sgd", loss=["mse", k.losses.SparseCategoricalCrossentropy(from_logits=True)],
                  loss_weights=[1.0, 0.5], metrics=[["mae"], ["accuracy"]])
    pr, pc = model.predict([xa, xb], verbose=0)
    logs = model.evaluate([xa, xb], [yr, yc], batch_size=12, verbose=0, return_dict=True)
    assert set(logs) == {"loss", "reg_loss", "cls_loss", "reg_mae", "cls_accuracy"}
    assert logs["reg_loss"] == pytest.approx(_mse(yr, pr), rel=1e-5)
    assert logs["cls_loss"] == pytest.approx(_sce(yc, pc), rel=1e-5)
    assert logs["loss"] == pytest.approx(logs["reg_loss"] + 0.5 * logs["cls_loss"], rel=1e-5)
    assert logs["reg_mae"] == pytest.approx(float(np.mean(np.abs(pr - yr))), rel=1e-5)
    assert logs["cls_accuracy"] == pytest.approx(float(np.mean(np.argmax(pc, -1) == yc)))
    # evaluate's list: loss, the per-output losses, then the rest by name (Keras's order)
    values = model.evaluate([xa, xb], [yr, yc], batch_size=12, verbose=0)
    assert values == pytest.approx([logs[n] for n in ("loss", "reg_loss", "cls_loss", "cls_accuracy", "reg_mae")])
    history = model.fit([xa, xb], [yr, yc], batch_size=4, epochs=2, validation_split=0.25, verbose=0)
    assert set(history.history) == {p + n for p in ("", "val_") for n in logs}


def test_dict_outputs_dict_inputs_and_per_output_sample_weights():
    xa, xb, yr, yc = _data()
    model = _two_outputs(as_dict=True)
    model.compile("adam", loss={"reg": "mse", "cls": k.losses.SparseCategoricalCrossentropy(from_logits=True)},
                  loss_weights={"reg": 2.0, "cls": 1.0}, metrics={"cls": ["accuracy"]})
    out = model.predict({"a": xa, "b": xb}, verbose=0)
    assert isinstance(out, dict) and out["reg"].shape == (12, 1) and out["cls"].shape == (12, 3)
    w = {"reg": np.zeros(12, np.float32), "cls": np.ones(12, np.float32)}
    logs = model.evaluate({"a": xa, "b": xb}, {"reg": yr, "cls": yc}, sample_weight=w, verbose=0, return_dict=True)
    assert logs["reg_loss"] == 0.0
    assert logs["loss"] == pytest.approx(logs["cls_loss"], rel=1e-6)
    assert set(logs) == {"loss", "reg_loss", "cls_loss", "cls_accuracy"}
    model.fit({"a": xa, "b": xb}, {"reg": yr, "cls": yc}, epochs=1, verbose=0)


def test_one_loss_for_every_output_and_a_loss_for_only_one():
    xa, xb, yr, yc = _data()
    model = _two_outputs()
    model.compile("sgd", loss={"reg": "mse"})
    logs = model.evaluate([xa, xb], [yr, yc], verbose=0, return_dict=True)
    assert set(logs) == {"loss"}        # one loss: no per-output trackers (as Keras)
    pr, _ = model.predict([xa, xb], verbose=0)
    assert logs["loss"] == pytest.approx(_mse(yr, pr), rel=1e-5)
    model.compile("sgd", loss="mse")
    yc1 = np.eye(3, dtype=np.float32)[yc]
    logs = model.evaluate([xa, xb], [yr, yc1], verbose=0, return_dict=True)
    assert set(logs) == {"loss", "reg_loss", "cls_loss"}


def test_bad_multi_output_compile_arguments():
    model = _two_outputs()
    with pytest.raises(ValueError, match=r"one entry per output \(2: \['reg', 'cls'\]\)"):
        model.compile("sgd", loss=["mse"])
        model.evaluate([np.ones((2, 3)), np.ones((2, 2))], [np.ones((2, 1)), np.ones((2, 3))], verbose=0)
    with pytest.raises(ValueError, match=r"names output\(s\) \['nope'\]"):
        model.compile("sgd", loss={"nope": "mse"})
        model.evaluate([np.ones((2, 3)), np.ones((2, 2))], [np.ones((2, 1)), np.ones((2, 3))], verbose=0)
    with pytest.raises(ValueError, match="unknown loss 'msx'"):
        model.compile("sgd", loss=["mse", "msx"])
    with pytest.raises(ValueError, match="class_weight is only supported for models with a single output"):
        model.compile("sgd", loss="mse")
        model.fit([np.ones((2, 3)), np.ones((2, 2))], [np.ones((2, 1)), np.ones((2, 3))], class_weight={0: 1.0},
                  verbose=0)


def test_tensorboard_writes_the_per_output_tags(tmp_path):
    xa, xb, yr, yc = _data()
    model = _two_outputs()
    model.compile("sgd", loss=["mse", k.losses.SparseCategoricalCrossentropy(from_logits=True)],
                  metrics=[["mae"], ["accuracy"]])
    model.fit([xa, xb], [yr, yc], batch_size=4, epochs=2, validation_split=0.25, verbose=0,
              callbacks=[k.callbacks.TensorBoard(str(tmp_path), write_graph=False)])
    tags = {}
    for run in ("train", "validation"):
        acc = ea.EventAccumulator(os.path.join(tmp_path, run), size_guidance={ea.TENSORS: 0})
        acc.Reload()
        tags[run] = {t for t in acc.Tags()["tensors"] if t.startswith("epoch_")}
    names = {"loss", "reg_loss", "cls_loss", "reg_mae", "cls_accuracy"}
    assert tags["train"] == {"epoch_" + n for n in names} | {"epoch_learning_rate"}
    assert tags["validation"] == {"epoch_" + n for n in names}


def test_targets_keyed_by_unknown_output_names_are_refused():
    xa, xb, yr, yc = _data()
    model = _two_outputs()
    model.compile("sgd", loss=["mse", "mse"])
    with pytest.raises(ValueError, match=r"output names \['reg', 'cls'\]; got keys \['cls', 'regression'\]"):
        model.evaluate([xa, xb], {"regression": yr, "cls": np.eye(3, dtype=np.float32)[yc]}, verbose=0)
