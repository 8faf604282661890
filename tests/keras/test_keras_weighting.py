"""`sample_weight` and `class_weight` in `fit`/`evaluate`/`train_on_batch` and in datasets, with
Keras 3's semantics: the loss is Σ wᵢ·lossᵢ / batch size (`sum_over_batch_size`), `metrics` ignore
the weights, `weighted_metrics` use them (`weighted_<name>` when the name is taken), and
`class_weight` becomes per-example weights from the labels."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

k = jf.keras


def _model(units=2):
    model = k.Sequential([k.Input((3,)), k.layers.Dense(units, kernel_initializer="ones")])
    model.compile("sgd", k.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"],
                  weighted_metrics=["accuracy"])
    return model


def _data(n=10):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (rng.random(n) > 0.5).astype(np.int32)
    return x, y


def _per_example_loss(model, x, y):
    logits = model.predict(x, verbose=0)
    z = logits - logits.max(-1, keepdims=True)
    return -(z[np.arange(len(y)), y] - np.log(np.exp(z).sum(-1)))


def test_sample_weight_scales_the_loss_sum_over_batch_size():
    x, y = _data()
    model = _model()
    w = np.arange(10, dtype=np.float32)
    per = _per_example_loss(model, x, y)
    logs = model.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0, return_dict=True)
    assert logs["loss"] == pytest.approx(float((w * per).sum() / 10), rel=1e-5)   # not Σw·l / Σw
    assert set(logs) == {"loss", "accuracy", "weighted_accuracy"}
    correct = (np.argmax(model.predict(x, verbose=0), -1) == y).astype(np.float32)
    assert logs["accuracy"] == pytest.approx(correct.mean())                      # unweighted
    assert logs["weighted_accuracy"] == pytest.approx(float((w * correct).sum() / w.sum()))
    unweighted = model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True)
    assert unweighted["loss"] == pytest.approx(float(per.mean()), rel=1e-5)


def test_train_on_batch_and_fit_use_the_weights():
    x, y = _data()
    a, b = _model(), _model()
    zero = np.zeros(10, np.float32)
    logs = a.train_on_batch(x, y, sample_weight=zero, return_dict=True)
    assert logs["loss"] == 0.0
    np.testing.assert_array_equal(a.get_weights()[0], np.ones((3, 2)))   # zero weight: no gradient
    b.fit(x, y, sample_weight=np.ones(10, np.float32), batch_size=10, epochs=1, shuffle=False, verbose=0)
    assert not np.allclose(b.get_weights()[0], 1.0)


def test_class_weight_equals_the_sample_weights_it_implies():
    x, y = _data(16)
    cw = {0: 2.0, 1: 0.5}
    a, b = _model(), _model()
    ha = a.fit(x, y, class_weight=cw, batch_size=4, epochs=2, shuffle=False, verbose=0)
    hb = b.fit(x, y, sample_weight=np.where(y == 0, 2.0, 0.5).astype(np.float32), batch_size=4, epochs=2,
               shuffle=False, verbose=0)
    assert ha.history == hb.history
    for wa, wb in zip(a.get_weights(), b.get_weights()):
        np.testing.assert_array_equal(wa, wb)


def test_class_weight_with_one_hot_labels_and_a_dataset_of_weights():
    x, y = _data(8)
    onehot = np.eye(2, dtype=np.float32)[y]
    from jitflow.runtime.keras.data_adapter import class_weight_to_sample_weight
    np.testing.assert_array_equal(class_weight_to_sample_weight(onehot, {1: 3.0}), np.where(y == 1, 3.0, 1.0))
    np.testing.assert_array_equal(class_weight_to_sample_weight(y[:, None], {0: 0.0}), np.where(y == 0, 0.0, 1.0))
    # A dataset yielding (x, y, sample_weight) batches is weighted as the arrays are.
    w = np.linspace(0, 1, 8).astype(np.float32)
    a, b = _model(), _model()
    ds = jf.data.Dataset.from_tensor_slices((x, y, w)).batch(4)
    la = a.evaluate(ds, verbose=0, return_dict=True)
    lb = b.evaluate(x, y, sample_weight=w, batch_size=4, verbose=0, return_dict=True)
    assert la == pytest.approx(lb)
    # and class_weight applies to a dataset's (x, y) batches
    c = _model()
    c.fit(jf.data.Dataset.from_tensor_slices((x, y)).batch(4), class_weight={0: 0.0, 1: 0.0}, epochs=1, verbose=0)
    np.testing.assert_array_equal(c.get_weights()[0], np.ones((3, 2)))


def test_bad_weights_are_refused_before_training():
    x, y = _data()
    model = _model()
    with pytest.raises(ValueError, match="class_weight and sample_weight"):
        model.fit(x, y, class_weight={0: 1.0}, sample_weight=np.ones(10), verbose=0)
    with pytest.raises(ValueError, match="class_weight must be a dict mapping integer class ids"):
        model.fit(x, y, class_weight=[1.0, 2.0], verbose=0)
    with pytest.raises(ValueError, match="sample_weight sizes: 3"):
        model.fit(x, y, sample_weight=np.ones(3), verbose=0)
    np.testing.assert_array_equal(model.get_weights()[0], np.ones((3, 2)))
