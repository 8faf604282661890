"""compile / fit / evaluate / predict on the seed-004 CNN, a subclassed model and a functional model.

Small on purpose (a few hundred 28x28 samples, 2-3 epochs): the task is learnable, so
reaching >= 95 % proves the forward pass, the gradients of every op, the optimizer and
the metrics work together.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf
from keras_data import mnist_like

L = jf.keras.layers


@pytest.fixture(autouse=True)
def _fresh_names_and_seed():
    jf.keras.backend.clear_session()
    jf.random.set_seed(1234)   # weights and shuffling repeat from run to run
    yield
    jf.random.set_seed(None)


def seed004_cnn():
    return jf.keras.Sequential([
        L.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)), L.MaxPool2D(),
        L.Conv2D(64, 3, activation="relu"), L.MaxPool2D(), L.Flatten(),
        L.Dense(128, activation="relu"), L.Dense(10)])


class SmallCNN(jf.keras.Model):
    """The seed's subclassing pattern: layers in __init__, the forward pass in call."""

    def __init__(self):
        super().__init__()
        self.conv = L.Conv2D(8, 3, activation="relu")
        self.pool = L.MaxPool2D()
        self.flatten = L.Flatten()
        self.dropout = L.Dropout(0.1)
        self.out = L.Dense(10)

    def call(self, inputs, training=None):
        x = self.flatten(self.pool(self.conv(inputs)))
        return jf.nn.softmax(self.out(self.dropout(x, training=training)))


def test_seed004_cnn_learns_to_95_percent_with_one_train_trace_per_batch_shape():
    x, y = mnist_like(320)
    model = seed004_cnn()
    model.compile(optimizer=jf.keras.optimizers.Adam(1e-3),
                  loss=jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    history = model.fit(x, y, batch_size=64, epochs=3, validation_split=0.25, verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert len(history.history["loss"]) == 3 and history.epoch == [0, 1, 2]
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert history.history["val_accuracy"][-1] >= 0.95
    # 240 training samples: batches of 64 and a last batch of 48 → exactly two traces, in any epoch
    assert model.train_function.experimental_get_tracing_count() == 2
    loss, acc = model.evaluate(x, y, verbose=0)
    assert acc >= 0.95 and loss < 0.5
    probs = model.predict(x[:10], batch_size=4)
    assert probs.shape == (10, 10)
    assert (probs.argmax(-1) == y[:10]).mean() >= 0.9


def test_subclassed_model_trains_with_fit_and_the_seed_loss_function():
    x, y = mnist_like(256, seed=1)
    model = SmallCNN()
    model.compile(optimizer=jf.keras.optimizers.Adam(3e-3), loss=jf.keras.losses.sparse_categorical_crossentropy,
                  metrics=[jf.keras.metrics.SparseCategoricalAccuracy()])
    history = model.fit(x, y, batch_size=32, epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert model.evaluate(x, y, return_dict=True)["sparse_categorical_accuracy"] >= 0.95
    assert [v.name for v in model.trainable_variables] == ["conv2d/kernel:0", "conv2d/bias:0", "dense/kernel:0",
                                                            "dense/bias:0"]


def test_functional_model_with_a_branch():
    inputs = jf.keras.Input(shape=(6,))
    a = L.Dense(8, activation="relu")(inputs)
    b = L.Dense(8, activation="tanh")(inputs)
    outputs = L.Dense(1)(L.Concatenate()([a, L.Add()([a, b])]))
    model = jf.keras.Model(inputs=inputs, outputs=outputs)
    assert [l.name for l in model.layers] == ["dense", "dense_1", "add", "concatenate", "dense_2"]
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 6)).astype(np.float32)
    y = (x @ rng.normal(size=(6, 1))).astype(np.float32)
    model.compile(jf.keras.optimizers.Adam(0.02), "mse", metrics=["mae"])
    history = model.fit(x, y, batch_size=32, epochs=25, verbose=0)
    assert history.history["loss"][-1] < 0.1 * history.history["loss"][0]
    assert model.predict(x).shape == (128, 1)
    assert model.count_params() == (6 * 8 + 8) * 2 + 16 + 1


def test_train_on_batch_and_test_on_batch_and_datasets_of_batches():
    model = jf.keras.Sequential([L.Dense(4, activation="relu", input_shape=(3,)), L.Dense(2)])
    model.compile(jf.keras.optimizers.SGD(0.1, momentum=0.9, nesterov=True),
                  jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), ["accuracy"])
    x = np.random.default_rng(0).normal(size=(16, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    loss, acc = model.train_on_batch(x, y)
    assert np.isfinite(loss) and 0 <= acc <= 1
    logs = model.test_on_batch(x, y, return_dict=True)
    assert set(logs) == {"loss", "accuracy"}
    batches = [(x[:8], y[:8]), (x[8:], y[8:])]
    history = model.fit(batches, epochs=2, verbose=0, validation_data=batches)
    assert len(history.history["val_loss"]) == 2
    assert model.optimizer.iterations.numpy() == 1 + 4


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "adamw", "rmsprop", "adagrad",
                                       jf.keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True)])
def test_every_optimizer_reduces_a_regression_loss(optimizer):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [0.0]])).astype(np.float32)
    model = jf.keras.Sequential([L.Dense(1, input_shape=(4,))])
    opt = jf.keras.optimizers.get(optimizer)
    if isinstance(optimizer, str):
        opt.learning_rate = {"adagrad": 0.5}.get(optimizer, 0.05)
    model.compile(opt, "mse")
    history = model.fit(x, y, batch_size=16, epochs=8, verbose=0, shuffle=False)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


def test_learning_rate_schedules_follow_their_formulas():
    s = jf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    np.testing.assert_allclose(float(s(20)), 0.025, rtol=1e-6)
    s = jf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=True)
    np.testing.assert_allclose(float(s(15)), 0.05, rtol=1e-6)
    c = jf.keras.optimizers.schedules.CosineDecay(1.0, decay_steps=100, alpha=0.1)
    np.testing.assert_allclose([float(c(0)), float(c(50)), float(c(200))], [1.0, 0.55, 0.1], rtol=1e-6)
    model = jf.keras.Sequential([L.Dense(1, input_shape=(2,))])
    model.compile(jf.keras.optimizers.SGD(c), "mse")
    model.fit(np.ones((8, 2), np.float32), np.ones((8, 1), np.float32), batch_size=4, epochs=1, verbose=0)
    np.testing.assert_allclose(float(model.optimizer.learning_rate), float(c(2)), rtol=1e-6)


def test_batch_normalization_uses_batch_statistics_in_training_and_moving_ones_after():
    bn = L.BatchNormalization(momentum=0.5)
    x = np.random.default_rng(0).normal(3.0, 2.0, size=(64, 4)).astype(np.float32)
    out = bn(x, training=True).numpy()
    np.testing.assert_allclose(out.mean(0), 0, atol=1e-5)
    np.testing.assert_allclose(out.std(0), 1, atol=1e-3)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.5 * x.mean(0), rtol=1e-5)
    inference = bn(x, training=False).numpy()
    want = (x - bn.moving_mean.numpy()) / np.sqrt(bn.moving_variance.numpy() + 1e-3)
    np.testing.assert_allclose(inference, want, rtol=1e-5, atol=1e-5)
    assert [w.name for w in bn.trainable_weights] == ["batch_normalization/gamma:0", "batch_normalization/beta:0"]
    assert len(bn.non_trainable_weights) == 2


def test_save_weights_and_load_weights_round_trip(tmp_path):
    x, y = mnist_like(64)
    model = seed004_cnn()
    model.compile("adam", jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    path = model.save_weights(str(tmp_path / "ckpt"))
    before = model.predict(x[:4])
    other = seed004_cnn()
    other.compile("adam", jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert not np.allclose(other.predict(x[:4]), before)
    other.load_weights(path)
    np.testing.assert_allclose(other.predict(x[:4]), before, rtol=1e-6, atol=1e-6)
