"""`model.export(path)`: an inference SavedModel (`serve` endpoint, `serving_default` signature) that
jitflow's and (when installed) TensorFlow's `saved_model.load` run with the model's predictions."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

k = jf.keras


def _models():
    seq = k.Sequential([k.Input((4,)), k.layers.Dense(3, activation="relu"), k.layers.Dense(2)])
    a, b = k.Input((3,), name="a"), k.Input((2,), name="b")
    func = k.Model([a, b], k.layers.Dense(1)(k.layers.Concatenate()([a, b])))
    rng = np.random.default_rng(0)
    return (seq, rng.random((3, 4)).astype(np.float32)), (func, [rng.random((2, 3)).astype(np.float32),
                                                                 rng.random((2, 2)).astype(np.float32)])


def test_export_runs_in_jitflow(tmp_path):
    for i, (model, x) in enumerate(_models()):
        path = str(tmp_path / f"m{i}")
        model.export(path, verbose=False)
        loaded = jf.saved_model.load(path)
        arg = [jf.constant(v) for v in x] if isinstance(x, list) else jf.constant(x)
        np.testing.assert_allclose(loaded.serve(arg).numpy(), model.predict(x, verbose=0), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="format must be 'tf_saved_model'"):
        _models()[0][0].export(str(tmp_path / "bad"), format="onnx")


@pytest.mark.tf
def test_export_runs_in_tensorflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    for i, (model, x) in enumerate(_models()):
        path = str(tmp_path / f"m{i}")
        model.export(path, verbose=False)
        loaded = tf.saved_model.load(path)
        np.testing.assert_allclose(loaded.serve(x).numpy(), model.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
        assert "serving_default" in loaded.signatures
