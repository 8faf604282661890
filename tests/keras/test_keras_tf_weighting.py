"""Cross-checks of sample/class weighting and multi-output logs against TensorFlow's Keras 3
(same initial weights, no shuffling): the same loss and metric values under the same names."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _data(n=12):
    rng = np.random.default_rng(0)
    return (rng.normal(size=(n, 3)).astype(np.float32), (rng.random(n) > 0.5).astype(np.int32),
            rng.normal(size=(n, 2)).astype(np.float32), rng.normal(size=(n, 1)).astype(np.float32),
            rng.integers(0, 3, n).astype(np.int32))


def _classifier(module):
    k = module.keras
    model = k.Sequential([k.Input((3,)), k.layers.Dense(2, kernel_initializer="ones")])
    model.compile(k.optimizers.SGD(0.1), k.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], weighted_metrics=["accuracy"])
    return model


def _close(a, b):
    assert set(a) == set(b)
    for key in a:
        assert np.allclose(a[key], b[key], rtol=1e-4, atol=1e-5), (key, a[key], b[key])


def test_sample_and_class_weights_as_tf_keras():
    x, y, *_ = _data()
    mine, theirs = _classifier(jf), _classifier(tf)
    w = np.arange(12, dtype=np.float32)
    _close(mine.evaluate(x, y, sample_weight=w, batch_size=5, verbose=0, return_dict=True),
           theirs.evaluate(x, y, sample_weight=w, batch_size=5, verbose=0, return_dict=True))
    _close(mine.train_on_batch(x, y, sample_weight=w, return_dict=True),
           theirs.train_on_batch(x, y, sample_weight=w, return_dict=True))
    cw = {0: 2.0, 1: 0.5}
    _close(mine.fit(x, y, class_weight=cw, batch_size=4, epochs=2, shuffle=False, verbose=0).history,
           theirs.fit(x, y, class_weight=cw, batch_size=4, epochs=2, shuffle=False, verbose=0).history)
    for a, b in zip(mine.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _two_outputs(module):
    k = module.keras
    a, b = k.Input((3,), name="a"), k.Input((2,), name="b")
    h = k.layers.Dense(4, activation="relu", name="hid")(a)
    g = k.layers.Dense(4, name="side")(b)
    return k.Model([a, b], [k.layers.Dense(1, name="reg")(h), k.layers.Dense(3, name="cls")(g)])


def test_multi_output_logs_as_tf_keras():
    x, _, x2, yr, yc = _data()
    mine, theirs = _two_outputs(jf), _two_outputs(tf)
    mine.set_weights(theirs.get_weights())
    for module, model in ((jf, mine), (tf, theirs)):
        model.compile(module.keras.optimizers.SGD(0.05),
                      loss=["mse", module.keras.losses.SparseCategoricalCrossentropy(from_logits=True)],
                      loss_weights=[1.0, 0.5], metrics=[["mae"], ["accuracy"]], weighted_metrics=[["mae"], []])
    w = np.linspace(0.0, 1.0, 12).astype(np.float32)
    kwargs = dict(batch_size=4, epochs=2, shuffle=False, verbose=0, validation_split=0.25)
    _close(mine.fit([x, x2], [yr, yc], sample_weight=w, **kwargs).history,
           theirs.fit([x, x2], [yr, yc], sample_weight=w, **kwargs).history)
    assert mine.evaluate([x, x2], [yr, yc], verbose=0) == pytest.approx(
        theirs.evaluate([x, x2], [yr, yc], verbose=0), rel=1e-4)
    pm, pt = mine.predict([x, x2], verbose=0), theirs.predict([x, x2], verbose=0)
    assert isinstance(pm, list) and len(pm) == len(pt) == 2
    for a, b in zip(pm, pt):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_tensorboard_tags_of_a_multi_output_fit_as_tf_keras(tmp_path):
    ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")
    import os
    x, _, x2, yr, yc = _data()
    tags = {}
    for module in (tf, jf):
        module.keras.backend.clear_session()
        model = _two_outputs(module)
        model.compile("sgd", loss=["mse", module.keras.losses.SparseCategoricalCrossentropy(from_logits=True)],
                      metrics=[["mae"], ["accuracy"]])
        logdir = str(tmp_path / module.__name__)
        model.fit([x, x2], [yr, yc], batch_size=4, epochs=2, validation_split=0.25, verbose=0,
                  callbacks=[module.keras.callbacks.TensorBoard(logdir, update_freq=1, write_graph=False)])
        runs = {}
        for run in sorted(os.listdir(logdir)):
            acc = ea.EventAccumulator(os.path.join(logdir, run), size_guidance={ea.TENSORS: 0})
            acc.Reload()
            runs[run] = {t for t in acc.Tags()["tensors"] if not t.startswith("jitflow/")}
        tags[module.__name__] = runs
    assert tags["jitflow"] == tags["tensorflow"]
    assert {"epoch_reg_loss", "epoch_cls_accuracy", "batch_cls_loss"} <= tags["jitflow"]["train"]
