"""Cross-checks against TensorFlow's Keras (run with the TF venv: `.venv-tf/bin/python -m pytest -m tf`).

- `summary()` parameter counts of the seed-004 CNN and a BatchNormalization model equal tf.keras's;
- the TensorBoard callback writes the same runs and tags as tf.keras's for the same `fit`
  (jitflow adds the train graph and its run metadata, which Keras 3 does not write);
- with the same initial weights, one SGD step moves the weights as tf.keras's step does.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitflow as jf

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
ea = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _both(module, conv_bn=False):
    L = module.keras.layers
    layers = [module.keras.Input((28, 28, 1)), L.Conv2D(32, 3, activation="relu"), L.MaxPool2D(),
              L.Conv2D(64, 3, activation="relu"), L.MaxPool2D(), L.Flatten(), L.Dense(128, activation="relu"),
              L.Dense(10)]
    if conv_bn:
        layers.insert(2, L.BatchNormalization())
    return module.keras.Sequential(layers)


@pytest.mark.parametrize("conv_bn", [False, True])
def test_parameter_counts_equal_tf_keras(conv_bn):
    mine, theirs = _both(jf, conv_bn), _both(tf, conv_bn)
    assert [l.count_params() for l in mine.layers] == [l.count_params() for l in theirs.layers]
    assert [type(l).__name__ for l in mine.layers] == [type(l).__name__ for l in theirs.layers]
    for a, b in zip(mine.layers, theirs.layers):
        assert tuple(a.output_shape) == tuple(b.output.shape)
    count = lambda ws: sum(int(np.prod(w.shape)) for w in ws)  # noqa: E731
    assert count(mine.trainable_weights) == count(theirs.trainable_weights)
    assert count(mine.non_trainable_weights) == count(theirs.non_trainable_weights)


def _tags(logdir):
    out = {}
    for run in sorted(os.listdir(logdir)):
        acc = ea.EventAccumulator(os.path.join(logdir, run), size_guidance={ea.TENSORS: 0})
        acc.Reload()
        # jitflow's own trace records (`jitflow/...`, read by the retrace panel) are not Keras's tags
        out[run] = {t: [e.step for e in acc.Tensors(t)] for t in acc.Tags()["tensors"]
                    if not t.startswith("jitflow/")}
    return out


def _fit(module, logdir):
    rng = np.random.default_rng(0)
    x = rng.random((48, 28, 28, 1)).astype(np.float32)
    y = rng.integers(0, 10, 48).astype(np.int32)
    L = module.keras.layers
    model = module.keras.Sequential([module.keras.Input((28, 28, 1)), L.Conv2D(4, 3, activation="relu"),
                                     L.MaxPool2D(), L.Flatten(), L.Dense(10)])
    model.compile(optimizer="adam", loss=module.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    tb = module.keras.callbacks.TensorBoard(logdir, histogram_freq=1, update_freq=2)
    model.fit(x, y, batch_size=16, epochs=2, validation_split=1 / 3, verbose=0, callbacks=[tb])


def test_tensorboard_callback_writes_tf_keras_runs_and_tags(tmp_path):
    jf.keras.backend.clear_session()
    tf.keras.backend.clear_session()
    _fit(tf, str(tmp_path / "tf"))
    _fit(jf, str(tmp_path / "jf"))
    theirs, mine = _tags(str(tmp_path / "tf")), _tags(str(tmp_path / "jf"))
    assert sorted(mine) == sorted(theirs) == ["train", "validation"]
    assert set(mine["validation"]) == set(theirs["validation"])
    extra = set(mine["train"]) - set(theirs["train"])
    assert set(theirs["train"]) <= set(mine["train"]) and extra == {"batch_1"}   # the graph's run metadata
    for run in theirs:
        for tag in ("epoch_loss", "epoch_accuracy", "batch_loss"):
            if tag in theirs[run]:
                assert mine[run][tag] == theirs[run][tag], (run, tag)


def test_one_sgd_step_moves_the_weights_like_tf_keras():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(8, 6, 6, 2)).astype(np.float32)
    y = rng.integers(0, 3, 8).astype(np.int32)
    models = []
    for module in (tf, jf):
        L = module.keras.layers
        m = module.keras.Sequential([module.keras.Input((6, 6, 2)), L.Conv2D(3, 3, padding="same", activation="relu"),
                                     L.AveragePooling2D(2), L.Flatten(), L.Dense(3)])
        m.compile(optimizer=module.keras.optimizers.SGD(0.1),
                  loss=module.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        models.append(m)
    models[1].set_weights(models[0].get_weights())
    for m in models:
        m.train_on_batch(x, y)
    for a, b in zip(models[0].get_weights(), models[1].get_weights()):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_depthwise_and_batch_norm_layers_compute_what_tf_keras_computes():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 7, 7, 3)).astype(np.float32)
    models = []
    for module in (tf, jf):
        L = module.keras.layers
        models.append(module.keras.Sequential([
            module.keras.Input((7, 7, 3)), L.DepthwiseConv2D(3, depth_multiplier=2, strides=2, padding="same"),
            L.BatchNormalization(), L.ReLU(), L.GlobalAveragePooling2D(), L.Dense(2)]))
    assert [l.count_params() for l in models[1].layers] == [l.count_params() for l in models[0].layers]
    models[1].set_weights(models[0].get_weights())
    np.testing.assert_allclose(models[1].predict(x), models[0].predict(x, verbose=0), rtol=1e-4, atol=1e-5)


def test_auc_equals_tf_keras_auc():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, 300).astype(np.float32)
    p = np.clip(y * 0.4 + rng.random(300) * 0.6, 0, 1).astype(np.float32)
    theirs = tf.keras.metrics.AUC()
    theirs.update_state(y, p)
    mine = jf.keras.metrics.AUC()
    mine.update_state(y, p)
    assert float(mine.result()) == pytest.approx(float(theirs.result()), abs=1e-5)
