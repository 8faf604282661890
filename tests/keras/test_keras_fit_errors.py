"""Bad input to compile/fit/metrics: clear errors that name the argument, expected vs given."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

L = jf.keras.layers


def _model():
    model = jf.keras.Sequential([L.Dense(2, input_shape=(3,))])
    model.compile("adam", jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    return model


def test_fit_with_mismatched_lengths():
    with pytest.raises(ValueError, match=r"Data cardinality is ambiguous: x sizes: 10, y sizes: 9"):
        _model().fit(np.ones((10, 3), np.float32), np.zeros(9, np.int32), verbose=0)


def test_unknown_loss_optimizer_and_metric_names():
    model = jf.keras.Sequential([L.Dense(2, input_shape=(3,))])
    with pytest.raises(ValueError, match=r"loss: unknown loss 'cross_entropy'"):
        model.compile("adam", "cross_entropy")
    with pytest.raises(ValueError, match=r"optimizer: unknown optimizer 'adamax2'"):
        model.compile("adamax2", "mse")
    with pytest.raises(ValueError, match=r"metrics: unknown metric 'f7'"):
        model.compile("adam", "mse", metrics=["f7"])
    assert model.optimizer is None and not model.metrics   # nothing half-compiled is left behind


def test_fit_before_compile():
    model = jf.keras.Sequential([L.Dense(2, input_shape=(3,))])
    with pytest.raises(RuntimeError, match=r"must compile your model before fit"):
        model.fit(np.ones((4, 3), np.float32), np.zeros(4), verbose=0)


def test_metric_with_the_wrong_dtype():
    with pytest.raises(TypeError, match=r'metric "mean": dtype must be numeric; got string'):
        jf.keras.metrics.Mean(dtype=jf.string)
    acc = jf.keras.metrics.Accuracy()
    with pytest.raises(TypeError, match=r'metric "accuracy": y_true must be a numeric tensor; got dtype string'):
        acc.update_state(jf.constant(["a"]), jf.constant([1.0]))


def test_validation_split_out_of_range_and_with_a_generator():
    with pytest.raises(ValueError, match=r"validation_split: must be in \(0, 1\); got 1.5"):
        _model().fit(np.ones((4, 3), np.float32), np.zeros(4), validation_split=1.5, verbose=0)
    with pytest.raises(ValueError, match=r"validation_split is only supported for arrays"):
        _model().fit([(np.ones((2, 3), np.float32), np.zeros(2))], validation_split=0.5, verbose=0)


def test_metrics_accumulate_and_reset():
    m = jf.keras.metrics.SparseCategoricalAccuracy()
    m.update_state([1, 0], [[0.1, 0.9], [0.2, 0.8]])
    m.update_state(np.array([[0]]), [[0.7, 0.3]])
    assert float(m.result()) == pytest.approx(2 / 3)
    m.reset_state()
    assert float(m.result()) == 0.0
    mean = jf.keras.metrics.Mean()
    mean.update_state([1.0, 3.0], sample_weight=[1.0, 3.0])
    assert float(mean.result()) == pytest.approx(2.5)
    assert float(jf.keras.metrics.CategoricalAccuracy()([[0, 1], [1, 0]], [[0.2, 0.8], [0.3, 0.7]])) == 0.5
    assert float(jf.keras.metrics.BinaryAccuracy()([[1], [0]], [[0.7], [0.6]])) == 0.5


def test_custom_metric_from_the_seed():
    class SparseCategoricalAccuracy(jf.keras.metrics.Metric):   # seed 004, with its int32 state
        def __init__(self, name="sparse_categorical_accuracy", **kwargs):
            super().__init__(name=name, **kwargs)
            self.total = self.add_weight(name="total", dtype=jf.int32, initializer=jf.zeros_initializer())
            self.count = self.add_weight(name="count", dtype=jf.int32, initializer=jf.zeros_initializer())

        def update_state(self, y_true, y_pred, sample_weight=None):
            values = jf.cast(jf.equal(y_true, jf.argmax(y_pred, axis=-1, output_type=jf.int32)), jf.int32)
            self.total.assign_add(jf.shape(y_true)[0])
            self.count.assign_add(jf.reduce_sum(values))

        def result(self):
            return self.count / self.total

    model = jf.keras.Sequential([L.Dense(2, input_shape=(3,))])
    model.compile("adam", jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  [SparseCategoricalAccuracy()])
    x = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
    history = model.fit(x, (x[:, 0] > 0).astype(np.int32), batch_size=8, epochs=1, verbose=0)
    assert 0.0 <= history.history["sparse_categorical_accuracy"][0] <= 1.0


def test_losses_match_their_formulas():
    y, p = np.array([[1.0], [0.0]], np.float32), np.array([[0.8], [0.3]], np.float32)
    bce = jf.keras.losses.BinaryCrossentropy()(y, p)
    np.testing.assert_allclose(float(bce), -(np.log(0.8) + np.log(0.7)) / 2, rtol=1e-5)
    logits = np.array([[1.4], [-0.8]], np.float32)
    np.testing.assert_allclose(float(jf.keras.losses.BinaryCrossentropy(from_logits=True)(y, logits)),
                               float(jf.keras.losses.BinaryCrossentropy()(y, 1 / (1 + np.exp(-logits)))), rtol=1e-5)
    np.testing.assert_allclose(float(jf.keras.losses.Huber()([[0.0, 0.0]], [[0.5, 3.0]])), (0.125 + 2.5) / 2)


def test_auc_matches_the_exact_rank_statistic_and_runs_in_graphs():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    p = np.clip(y * 0.3 + rng.random(400) * 0.7, 0, 1).astype(np.float32)
    pos, neg = p[y == 1], p[y == 0]
    exact = (pos[:, None] > neg[None, :]).mean() + 0.5 * (pos[:, None] == neg[None, :]).mean()
    m = jf.keras.metrics.AUC()
    m.update_state(y[:200], p[:200])
    m.update_state(y[200:], p[200:])
    assert abs(float(m.result()) - exact) < 2e-3
    eager = float(m.result())
    m.reset_state()
    jf.function(lambda a, b: m.update_state(a, b))(jf.constant(y.astype(np.float32)), jf.constant(p))
    assert float(m.result()) == pytest.approx(eager, abs=1e-6)
    with pytest.raises(TypeError, match=r'metric "auc": y_pred must be a floating-point tensor; got dtype int32'):
        m.update_state([0, 1], np.array([0, 1], np.int32))


def test_batch_norm_and_dropout_inside_fit():
    jf.keras.backend.clear_session()
    model = jf.keras.Sequential([L.Dense(4, input_shape=(3,)), L.BatchNormalization(), L.Dropout(0.3), L.Dense(2)])
    model.compile("adam", jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    x = np.random.default_rng(1).random((50, 3)).astype(np.float32) + 5.0
    model.fit(x, (x[:, 0] > 5.5).astype(np.int32), batch_size=16, epochs=2, verbose=0)
    moving_mean = model.layers[1].moving_mean.numpy()
    assert np.all(moving_mean != 0)          # updated by the assign nodes of the compiled train step
    assert model.train_function.experimental_get_tracing_count() == 2   # batches of 16 and the last of 2
