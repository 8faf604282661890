"""TF's Keras reads what jitflow saves: `tf.keras.models.load_model` on jitflow's `.keras` files
(Sequential CNN, functional multi-input/multi-output) predicts as jitflow does and restores the
compiled optimizer and loss; TF's `load_weights` reads jitflow's `.weights.h5`."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")
k = jf.keras
L = k.layers


def test_tf_loads_a_jitflow_sequential(tmp_path):
    rng = np.random.default_rng(0)
    x, y = rng.random((16, 8, 8, 1)).astype(np.float32), rng.integers(0, 4, 16)
    model = k.Sequential([k.Input((8, 8, 1)), L.Conv2D(3, 3, activation="relu", padding="same"), L.MaxPool2D(),
                          L.Conv2D(2, 3, strides=2, activation="relu"), L.Flatten(), L.Dropout(0.2),
                          L.BatchNormalization(), L.Dense(4, activation="softmax")])
    model.compile(k.optimizers.Adam(0.01), "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    path = str(tmp_path / "cnn.keras")
    model.save(path)
    theirs = tf.keras.models.load_model(path)
    np.testing.assert_allclose(theirs.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert type(theirs.optimizer).__name__ == "Adam"
    assert int(theirs.optimizer.iterations.numpy()) == 4     # the optimizer's state came across
    assert float(theirs.optimizer.learning_rate.numpy()) == pytest.approx(0.01)
    assert theirs.count_params() == model.count_params()
    weights = str(tmp_path / "cnn.weights.h5")
    model.save_weights(weights)
    fresh = tf.keras.models.clone_model(theirs)
    fresh.load_weights(weights)
    np.testing.assert_allclose(fresh.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)


def test_tf_loads_a_jitflow_functional_model(tmp_path):
    rng = np.random.default_rng(1)
    a, b = k.Input((3,), name="a"), k.Input((5,), dtype="int32", name="tokens")
    h = L.Dense(4, activation="relu", name="hid")(a)
    e = L.Flatten(name="flat")(L.Embedding(10, 2, name="embed")(b))
    joined = L.Concatenate(name="join")([h, e])
    model = k.Model([a, b], [L.Dense(1, name="reg")(joined), L.Dense(3, name="cls")(joined)])
    model.compile("sgd", loss=["mse", k.losses.SparseCategoricalCrossentropy(from_logits=True)],
                  loss_weights=[1.0, 0.5], metrics=[["mae"], ["accuracy"]])
    xa, xb = rng.random((8, 3)).astype(np.float32), rng.integers(0, 10, (8, 5)).astype(np.int32)
    ys = [rng.random((8, 1)).astype(np.float32), rng.integers(0, 3, 8)]
    model.fit([xa, xb], ys, batch_size=4, epochs=1, verbose=0)
    path = str(tmp_path / "f.keras")
    model.save(path)
    theirs = tf.keras.models.load_model(path)
    for p, q in zip(theirs.predict([xa, xb], verbose=0), model.predict([xa, xb], verbose=0)):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-6)
    assert theirs.output_names == ["reg", "cls"]
    assert theirs.evaluate([xa, xb], ys, verbose=0, return_dict=True) == pytest.approx(
        model.evaluate([xa, xb], ys, verbose=0, return_dict=True), rel=1e-4)


def _every_layer(module):
    k = module.keras
    L = k.layers
    img = k.Input((8, 8, 3), name="img")
    c = L.Conv2D(4, 3, padding="same", dilation_rate=2, activation="elu")(img)
    d = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same")(c)
    s = L.Add()([L.AveragePooling2D(2)(d), L.MaxPooling2D(2, strides=2)(d)])
    r = L.ReLU(max_value=6.0)(L.BatchNormalization()(s))
    g = L.Concatenate()([L.GlobalAveragePooling2D()(r), L.GlobalMaxPooling2D()(r)])
    tok = k.Input((4,), dtype="int32", name="tok")
    h = L.Concatenate()([g, L.Reshape((8,))(L.Embedding(7, 2)(tok))])
    h = L.Dropout(0.3)(L.Activation("tanh")(L.LeakyReLU(negative_slope=0.2)(L.Dense(5)(h))))
    return k.Model([img, tok], L.Softmax()(L.Dense(3)(L.ELU()(h))))


def test_every_built_in_layer_both_ways(tmp_path):
    rng = np.random.default_rng(2)
    x = [rng.random((2, 8, 8, 3)).astype(np.float32), rng.integers(0, 7, (2, 4)).astype(np.int32)]
    mine = _every_layer(jf)
    mine.save(str(tmp_path / "jf.keras"))
    np.testing.assert_allclose(tf.keras.models.load_model(str(tmp_path / "jf.keras")).predict(x, verbose=0),
                               mine.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    theirs = _every_layer(tf)
    theirs.save(str(tmp_path / "tf.keras"))
    loaded = jf.keras.models.load_model(str(tmp_path / "tf.keras"))
    np.testing.assert_allclose(loaded.predict(x, verbose=0), theirs.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    assert [type(l).__name__ for l in loaded.layers] == [type(l).__name__ for l in theirs.layers
                                                        if type(l).__name__ != "InputLayer"]
