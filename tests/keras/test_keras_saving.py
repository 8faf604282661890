"""`model.save("m.keras")` / `jf.keras.models.load_model` (Keras 3's zip: config.json, metadata.json,
model.weights.h5) and `save_weights("w.weights.h5")`: jitflow → jitflow round trips give identical
predictions and compiled state; files TF's Keras wrote (tests/fixtures/keras, made by
make_keras_fixtures.py) load and predict as TF did."""
from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

import jitflow as jf

pytest.importorskip("h5py")
k = jf.keras
L = k.layers
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "keras")


def _cnn():
    model = k.Sequential([k.Input((8, 8, 1)), L.Conv2D(3, 3, activation="relu", padding="same"), L.MaxPool2D(),
                          L.Flatten(), L.Dropout(0.2), L.BatchNormalization(), L.Dense(4)])
    model.compile(k.optimizers.Adam(0.01), k.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def _images(n=16):
    rng = np.random.default_rng(1)
    return rng.random((n, 8, 8, 1)).astype(np.float32), rng.integers(0, 4, n)


def test_sequential_round_trip_keeps_predictions_and_compiled_state(tmp_path):
    x, y = _images()
    model = _cnn()
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    path = str(tmp_path / "cnn.keras")
    model.save(path)
    with zipfile.ZipFile(path) as z:
        assert set(z.namelist()) == {"metadata.json", "config.json", "model.weights.h5"}
        config = json.loads(z.read("config.json"))
    assert config["class_name"] == "Sequential"
    assert [l["class_name"] for l in config["config"]["layers"]] == [
        "InputLayer", "Conv2D", "MaxPooling2D", "Flatten", "Dropout", "BatchNormalization", "Dense"]
    assert config["compile_config"]["optimizer"]["class_name"] == "Adam"
    loaded = k.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert [w.name for w in loaded.weights] == [w.name for w in model.weights]
    assert type(loaded.optimizer).__name__ == "Adam"
    assert loaded.optimizer.get_config()["learning_rate"] == pytest.approx(0.01)
    assert int(loaded.optimizer.iterations.numpy()) == int(model.optimizer.iterations.numpy()) == 4
    for var in model.trainable_variables:   # Adam's m and v come back too
        mine = model.optimizer._slots[id(var)][1]
        other = dict(zip([v.name for v in loaded.trainable_variables], loaded.trainable_variables))[var.name]
        theirs = loaded.optimizer._slots[id(other)][1]
        for slot in ("m", "v"):
            np.testing.assert_array_equal(mine[slot].numpy(), theirs[slot].numpy())
    assert loaded.evaluate(x, y, verbose=0) == pytest.approx(model.evaluate(x, y, verbose=0), rel=1e-6)
    loaded.fit(x, y, batch_size=8, epochs=1, verbose=0)   # training goes on from the restored step
    assert int(loaded.optimizer.iterations.numpy()) == 6


def _functional():
    a, b = k.Input((3,), name="a"), k.Input((5,), dtype="int32", name="tokens")
    h = L.Dense(4, activation="relu", name="hid")(a)
    e = L.Flatten(name="flat")(L.Embedding(10, 2, name="embed")(b))
    joined = L.Concatenate(name="join")([h, e])
    model = k.Model([a, b], [L.Dense(1, name="reg")(joined), L.Dense(3, name="cls")(joined)], name="two_heads")
    model.compile(k.optimizers.SGD(0.05, momentum=0.9),
                  loss=["mse", k.losses.SparseCategoricalCrossentropy(from_logits=True)], loss_weights=[1.0, 0.5],
                  metrics=[["mae"], ["accuracy"]])
    return model


def test_functional_multi_input_multi_output_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    xa, xb = rng.random((8, 3)).astype(np.float32), rng.integers(0, 10, (8, 5)).astype(np.int32)
    ys = [rng.random((8, 1)).astype(np.float32), rng.integers(0, 3, 8)]
    model = _functional()
    model.fit([xa, xb], ys, batch_size=4, epochs=1, verbose=0)
    path = str(tmp_path / "f.keras")
    model.save(path)
    loaded = k.models.load_model(path)
    assert loaded.name == "two_heads" and loaded.output_names == ["reg", "cls"]
    for p, q in zip(model.predict([xa, xb], verbose=0), loaded.predict([xa, xb], verbose=0)):
        np.testing.assert_array_equal(p, q)
    logs = loaded.evaluate([xa, xb], ys, verbose=0, return_dict=True)
    assert logs == pytest.approx(model.evaluate([xa, xb], ys, verbose=0, return_dict=True))
    assert set(logs) == {"loss", "reg_loss", "cls_loss", "reg_mae", "cls_accuracy"}   # loss_weights, metrics kept


@k.saving.register_keras_serializable(package="tests")
class Residual(k.Model):
    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.inner = L.Dense(units, activation="relu")
        self.blocks = [L.Dense(units), L.Dense(units)]
        self.out = L.Dense(2)

    def call(self, x, training=None):
        h = self.inner(x)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)

    def get_config(self):
        return {"units": self.units, "name": self.name}


def test_subclassed_model_registered_or_through_custom_objects(tmp_path):
    x = np.random.default_rng(3).random((5, 3)).astype(np.float32)
    model = Residual(units=4)
    model.compile("adam", "mse")
    model.fit(x, np.zeros((5, 2), np.float32), epochs=1, verbose=0)
    path = str(tmp_path / "sub.keras")
    model.save(path)
    loaded = k.models.load_model(path)
    assert isinstance(loaded, Residual) and loaded.units == 4
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    with zipfile.ZipFile(path) as z:
        config = json.loads(z.read("config.json"))
    assert config["registered_name"] == "tests>Residual"
    config["registered_name"] = "Unregistered"
    config["class_name"] = "Unregistered"
    other = str(tmp_path / "other.keras")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(other, "w") as dst:
        for name in src.namelist():
            dst.writestr(name, json.dumps(config) if name == "config.json" else src.read(name))
    with pytest.raises(ValueError, match="Could not locate class 'Unregistered'.*custom_objects"):
        k.models.load_model(other)
    again = k.models.load_model(other, custom_objects={"Unregistered": Residual})
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))


def test_save_weights_h5_round_trip_and_shape_mismatch(tmp_path):
    x, _ = _images(4)
    a, b = _cnn(), _cnn()
    path = str(tmp_path / "cnn.weights.h5")
    a.save_weights(path)
    b.load_weights(path)
    np.testing.assert_array_equal(a.predict(x, verbose=0), b.predict(x, verbose=0))
    wider = k.Sequential([k.Input((8, 8, 1)), L.Conv2D(5, 3, activation="relu", padding="same"), L.MaxPool2D(),
                          L.Flatten(), L.Dropout(0.2), L.BatchNormalization(), L.Dense(4)])
    before = wider.get_weights()
    with pytest.raises(ValueError, match=r"weight conv2d.*/kernel:0 has shape \(3, 3, 1, 5\) but .* holds shape "
                                         r"\(3, 3, 1, 3\)"):
        wider.load_weights(path)
    for w0, w1 in zip(before, wider.get_weights()):   # nothing half-loaded
        np.testing.assert_array_equal(w0, w1)


def test_loads_what_tf_keras_wrote():
    expected = np.load(os.path.join(FIXTURES, "expected.npz"))
    seq = k.models.load_model(os.path.join(FIXTURES, "tf_sequential.keras"))
    np.testing.assert_allclose(seq.predict(expected["seq_x"], verbose=0), expected["seq_y"], rtol=1e-5, atol=1e-6)
    assert type(seq.optimizer).__name__ == "Adam" and int(seq.optimizer.iterations.numpy()) == 4
    func = k.models.load_model(os.path.join(FIXTURES, "tf_functional.keras"))
    reg, cls = func.predict([expected["func_a"], expected["func_b"]], verbose=0)
    np.testing.assert_allclose(reg, expected["func_reg"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cls, expected["func_cls"], rtol=1e-5, atol=1e-6)
    assert func.output_names == ["reg", "cls"]
    assert [l.name for l in func.layers] == ["embed", "hid", "flat", "join", "reg", "cls"]   # TF's order
    assert func.optimizer.get_config()["momentum"] == pytest.approx(0.9)


def test_bad_files_and_unbuilt_models(tmp_path):
    with pytest.raises(ValueError, match="is not built yet"):
        k.Sequential([L.Dense(2)]).save(str(tmp_path / "x.keras"))
    with pytest.raises(ValueError, match="must end in '.keras'"):
        _cnn().save(str(tmp_path / "x.h5"))
    bogus = tmp_path / "bogus.keras"
    bogus.write_text("not a zip")
    with pytest.raises(ValueError, match="is not a .keras file"):
        k.models.load_model(str(bogus))
    assert not os.path.exists(tmp_path / "x.keras")


def test_model_checkpoint_saves_keras_files(tmp_path):
    x, y = _images(8)
    model = _cnn()
    model.fit(x, y, epochs=2, batch_size=4, verbose=0,
              callbacks=[k.callbacks.ModelCheckpoint(str(tmp_path / "ep{epoch:02d}.keras"), monitor="loss"),
                         k.callbacks.ModelCheckpoint(str(tmp_path / "ep{epoch:02d}.weights.h5"), monitor="loss")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ep01.keras", "ep01.weights.h5", "ep02.keras",
                                                         "ep02.weights.h5"]
    last = k.models.load_model(str(tmp_path / "ep02.keras"))
    np.testing.assert_array_equal(last.predict(x, verbose=0), model.predict(x, verbose=0))


def test_get_config_from_config_for_sequential_and_functional():
    seq = _cnn()
    again = k.Sequential.from_config(seq.get_config())
    assert [type(l).__name__ for l in again.layers] == [type(l).__name__ for l in seq.layers]
    assert [l.name for l in again.layers] == [l.name for l in seq.layers]
    assert again.count_params() == seq.count_params()
    func = _functional()
    copy = k.Model.from_config(func.get_config())
    assert copy.output_names == func.output_names and [l.name for l in copy.layers] == [l.name for l in func.layers]
    copy.set_weights(func.get_weights())
    rng = np.random.default_rng(5)
    xs = [rng.random((2, 3)).astype(np.float32), rng.integers(0, 10, (2, 5)).astype(np.int32)]
    for p, q in zip(copy.predict(xs, verbose=0), func.predict(xs, verbose=0)):
        np.testing.assert_array_equal(p, q)


class Scaled(k.Model):
    """Keras's usual pattern: get_config extends the base config with __init__'s arguments."""

    def __init__(self, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.scale = scale
        self.dense = L.Dense(2)

    def call(self, x, training=None):
        return self.dense(x) * self.scale

    def get_config(self):
        config = super().get_config()
        config.update(scale=self.scale)
        return config


def test_subclassed_get_config_extending_the_base_config(tmp_path):
    x = np.ones((2, 3), np.float32)
    model = Scaled(scale=3.0, name="scaled")
    model(x)
    assert set(model.get_config()) >= {"name", "trainable", "dtype", "scale"}
    model.save(str(tmp_path / "s.keras"))
    loaded = k.models.load_model(str(tmp_path / "s.keras"), custom_objects={"Scaled": Scaled})
    assert loaded.scale == 3.0 and loaded.name == "scaled"
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
