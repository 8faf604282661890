"""Losses, `jf.nn` cross-entropies and `jf.one_hot` against numpy; their gradients."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

LOGITS = np.array([[2.0, -1.0, 0.5], [0.1, 0.2, 3.0], [-2.0, 1.0, 1.0], [0.0, 0.0, 0.0]], np.float32)
LABELS = np.array([0, 2, 1, 2], np.int32)


def log_softmax(x):
    x = x - x.max(axis=-1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))


def softmax(x):
    return np.exp(log_softmax(x))


def test_one_hot():
    np.testing.assert_array_equal(jf.one_hot([0, 2, 5, -1], 3).numpy(),
                                  [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
    assert jf.one_hot([1], 2).dtype is jf.float32
    got = jf.one_hot(jf.constant([[1, 0]], jf.int64), 2, on_value=5, off_value=-1, dtype=jf.int32)
    np.testing.assert_array_equal(got.numpy(), [[[-1, 5], [5, -1]]])
    np.testing.assert_array_equal(jf.one_hot([0, 1], 3, axis=0).numpy(), [[1, 0], [0, 1], [0, 0]])
    with pytest.raises(TypeError, match="integer"):
        jf.one_hot([0.5], 2)


def test_sparse_softmax_cross_entropy_with_logits():
    got = jf.nn.sparse_softmax_cross_entropy_with_logits(LABELS, LOGITS)
    want = -log_softmax(LOGITS.astype(np.float64))[np.arange(4), LABELS]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    assert got.shape == (4,)
    with pytest.raises(jf.errors.InvalidArgumentError, match="outside the valid range"):
        jf.nn.sparse_softmax_cross_entropy_with_logits([3], LOGITS[:1])
    with pytest.raises(jf.errors.InvalidArgumentError, match="shape"):
        jf.nn.sparse_softmax_cross_entropy_with_logits([[0]], LOGITS[:1])


def test_softmax_cross_entropy_with_logits_and_its_gradient():
    labels = np.array([[0.2, 0.8, 0.0], [0.0, 0.0, 1.0]], np.float32)
    logits = jf.Variable(LOGITS[:2])
    with jf.GradientTape() as tape:
        loss = jf.reduce_sum(jf.nn.softmax_cross_entropy_with_logits(labels, logits))
    want = -(labels * log_softmax(LOGITS[:2].astype(np.float64))).sum(-1)
    np.testing.assert_allclose(loss.numpy(), want.sum(), rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), softmax(LOGITS[:2]) - labels, atol=1e-6)


def test_sparse_cross_entropy_gradient_is_softmax_minus_one_hot_inside_jf_function():
    logits = jf.Variable(LOGITS)

    @jf.function
    def grad(labels):
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(jf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        return tape.gradient(loss, logits)

    want = softmax(LOGITS.astype(np.float64)) - np.eye(3)[LABELS]
    np.testing.assert_allclose(grad(jf.constant(LABELS)).numpy(), want, atol=1e-6)


def test_mean_squared_error_function_and_object():
    y_true = np.array([[0.0, 1.0], [1.0, 1.0]], np.float32)
    y_pred = np.array([[1.0, 1.0], [1.0, 0.0]], np.float32)
    np.testing.assert_allclose(jf.losses.mean_squared_error(y_true, y_pred).numpy(), [0.5, 0.5])
    assert jf.losses.MeanSquaredError()(y_true, y_pred).numpy() == 0.5
    assert jf.losses.MeanSquaredError(reduction="sum")(y_true, y_pred).numpy() == 1.0
    np.testing.assert_allclose(jf.losses.MeanSquaredError(reduction="none")(y_true, y_pred).numpy(), [0.5, 0.5])
    assert jf.losses.MeanSquaredError()(y_true, y_pred, sample_weight=[1.0, 0.0]).numpy() == 0.25
    assert jf.losses.mse is jf.losses.mean_squared_error
    assert jf.losses.MeanAbsoluteError()(y_true, y_pred).numpy() == 0.5
    with pytest.raises(ValueError, match="reduction"):
        jf.losses.MeanSquaredError(reduction="mean")


def test_sparse_categorical_crossentropy_from_probabilities_and_logits():
    probs = softmax(LOGITS).astype(np.float32)
    want = -log_softmax(LOGITS.astype(np.float64))[np.arange(4), LABELS]
    np.testing.assert_allclose(jf.losses.sparse_categorical_crossentropy(LABELS, probs).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(
        jf.losses.sparse_categorical_crossentropy(LABELS, LOGITS, from_logits=True).numpy(), want, rtol=1e-6)
    loss = jf.losses.SparseCategoricalCrossentropy(from_logits=True)
    assert loss(LABELS, LOGITS).numpy() == pytest.approx(want.mean(), rel=1e-6)
    # float labels and (batch, 1) labels, as Keras accepts
    assert loss(LABELS.astype(np.float32)[:, None], LOGITS).numpy() == pytest.approx(want.mean(), rel=1e-6)
    # probabilities are clipped to [1e-7, 1 - 1e-7]: a zero probability gives -log(1e-7), not inf
    assert jf.losses.sparse_categorical_crossentropy([0], [[0.0, 1.0]]).numpy()[0] == pytest.approx(
        -np.log(1e-7), rel=1e-3)


def test_categorical_crossentropy_from_probabilities_logits_and_with_smoothing():
    onehot = np.eye(3, dtype=np.float32)[LABELS]
    want = -log_softmax(LOGITS.astype(np.float64))[np.arange(4), LABELS]
    probs = softmax(LOGITS).astype(np.float32)
    np.testing.assert_allclose(jf.losses.categorical_crossentropy(onehot, probs).numpy(), want, rtol=1e-5)
    np.testing.assert_allclose(jf.losses.categorical_crossentropy(onehot, probs * 3.0).numpy(), want, rtol=1e-5)
    loss = jf.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.3)
    smoothed = onehot * 0.7 + 0.1
    want_smooth = -(smoothed * log_softmax(LOGITS.astype(np.float64))).sum(-1).mean()
    assert loss(onehot, LOGITS).numpy() == pytest.approx(want_smooth, rel=1e-6)


def test_custom_loss_subclass_seed_004():
    class MeanSquaredError(jf.losses.Loss):
        def call(self, y_true, y_pred):
            return jf.reduce_mean(jf.square(y_pred - y_true))

    y_true = jf.constant([[1.0, 2.0, 3.0], [0.0, 0.5, 1.0]])
    y_pred = jf.constant([[1.5, 2.0, 2.0], [0.0, 0.0, 1.5]])
    assert MeanSquaredError()(y_true, y_pred).numpy() == pytest.approx(1.75 / 6)


def test_loss_gradients_flow_to_the_predictions():
    w = jf.Variable(np.ones((3, 3), np.float32))
    with jf.GradientTape() as tape:
        loss = jf.losses.SparseCategoricalCrossentropy(from_logits=True)(LABELS, jf.matmul(LOGITS, w))
    g = tape.gradient(loss, w)
    logits = LOGITS @ np.ones((3, 3))
    want = LOGITS.T @ ((softmax(logits) - np.eye(3)[LABELS]) / 4)
    np.testing.assert_allclose(g.numpy(), want, atol=1e-6)
