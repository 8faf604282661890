"""Layers: Keras's names, weights, trainable flags, summary tables, configs and errors that name the layer."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

L = jf.keras.layers

# Keras's parameter counts for the seed-004 CNN (tf.keras summary(), TF 2.x):
# conv2d 320, max_pooling2d 0, conv2d_1 18496, max_pooling2d_1 0, flatten 0, dense 204928, dense_1 1290.
SEED004_PARAMS = [320, 0, 18496, 0, 0, 204928, 1290]
SEED004_SHAPES = ["(None, 26, 26, 32)", "(None, 13, 13, 32)", "(None, 11, 11, 64)", "(None, 5, 5, 64)",
                  "(None, 1600)", "(None, 128)", "(None, 10)"]


@pytest.fixture(autouse=True)
def _fresh_names():
    jf.keras.backend.clear_session()


def seed004_cnn():
    return jf.keras.Sequential([
        L.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)), L.MaxPool2D(),
        L.Conv2D(64, 3, activation="relu"), L.MaxPool2D(), L.Flatten(),
        L.Dense(128, activation="relu"), L.Dense(10)])


def test_layers_are_modules_and_models_are_layers():
    # seed 001
    assert issubclass(jf.keras.Model, jf.Module)
    assert issubclass(jf.keras.layers.Layer, jf.Module)
    assert issubclass(jf.keras.Model, jf.keras.layers.Layer)


def test_seed001_sequential_summary_variables_and_freezing():
    model = jf.keras.models.Sequential()
    model.add(L.Dense(4, input_shape=(10,)))
    model.add(L.Dense(2))
    model.add(L.Dense(1))
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert lines[0] == 'Model: "sequential"'
    for row in (" dense (Dense)", "(None, 4)", "44", "dense_1 (Dense)", "10", "dense_2 (Dense)"):
        assert row in text
    assert lines[-4:-1] == ["Total params: 57", "Trainable params: 57", "Non-trainable params: 0"]
    assert [v.name for v in model.variables] == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0", "dense_1/bias:0",
                                                 "dense_2/kernel:0", "dense_2/bias:0"]
    model.layers[0].trainable = False
    assert [v.name for v in model.trainable_variables][0] == "dense_1/kernel:0"
    assert len(model.trainable_variables) == 4 and len(model.non_trainable_weights) == 2
    assert model.submodules == tuple(model.layers)


def test_seed004_cnn_summary_matches_keras():
    model = seed004_cnn()
    assert [l.count_params() for l in model.layers] == SEED004_PARAMS
    assert model.count_params() == 225034
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    for name, shape in zip(["conv2d (Conv2D)", "max_pooling2d (MaxPooling2D)", "conv2d_1 (Conv2D)",
                            "max_pooling2d_1 (MaxPooling2D)", "flatten (Flatten)", "dense (Dense)", "dense_1 (Dense)"],
                           SEED004_SHAPES):
        assert name[:28] in text and shape in text  # Keras cuts names at the column (29 of 65)
    assert "Total params: 225,034" in text and "Non-trainable params: 0" in text


def test_batch_normalization_params_are_split_like_keras():
    model = jf.keras.Sequential([L.Conv2D(8, 3, input_shape=(8, 8, 3)), L.BatchNormalization(), L.Flatten(),
                                 L.Dropout(0.5), L.Dense(2)])
    lines = []
    model.summary(print_fn=lines.append)
    assert model.layers[1].count_params() == 32
    assert lines[-4:-1] == ["Total params: 834", "Trainable params: 818", "Non-trainable params: 16"]


def test_custom_layer_builds_lazily_with_add_weight():
    class Linear(L.Layer):   # seed 004's custom-layer pattern
        def __init__(self, units=3):
            super().__init__()
            self.units = units

        def build(self, input_shape):
            self.w = self.add_weight("w", shape=[int(input_shape[-1]), self.units],
                                     initializer=jf.keras.initializers.Ones())
            self.b = self.add_weight("b", shape=[self.units], initializer="zeros")

        def call(self, inputs):
            return jf.matmul(inputs, self.w) + self.b

    layer = Linear()
    assert not layer.built and layer.weights == []
    out = layer(np.ones((2, 4), np.float32))
    np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 4.0, np.float32))
    assert layer.built and [w.name for w in layer.weights] == ["linear/w:0", "linear/b:0"]


def test_graph_names_are_scoped_by_model_and_layer():
    model = jf.keras.Sequential([L.Conv2D(2, 3, input_shape=(5, 5, 1)), L.Flatten(), L.Dense(1)])
    fn = jf.function(lambda x: model(x))
    graph = fn.get_concrete_function(jf.TensorSpec([2, 5, 5, 1], jf.float32)).graph
    names = [n.name for n in graph.nodes]
    assert "sequential/conv2d/Conv2D" in names
    assert any(n.startswith("sequential/dense/MatMul") for n in names)


def test_user_call_with_tensor_control_flow_is_converted_inside_fit_graphs():
    class Gate(L.Layer):
        def call(self, inputs):
            if jf.reduce_sum(inputs) > 0:
                return inputs * 2.0
            return -inputs

    layer = Gate()
    f = jf.function(lambda x: layer(x))
    np.testing.assert_array_equal(f(jf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(f(jf.constant([-1.0, -2.0])).numpy(), [1.0, 2.0])


def test_get_config_round_trips():
    dense = L.Dense(5, activation="relu", name="d")
    again = L.Dense.from_config({k: v for k, v in dense.get_config().items()
                                 if k not in ("kernel_initializer", "bias_initializer")})
    assert (again.units, again.activation.__name__, again.name) == (5, "relu", "d")
    conv = L.Conv2D(4, (3, 2), strides=2, padding="same")
    assert conv.get_config()["kernel_size"] == (3, 2) and conv.get_config()["padding"] == "same"


def test_other_layers_compute_what_keras_computes():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 12
    np.testing.assert_array_equal(L.Reshape((4, 3))(x).numpy(), x.reshape(2, 4, 3))
    np.testing.assert_array_equal(L.ReLU()(x).numpy(), np.maximum(x, 0))
    np.testing.assert_allclose(L.LeakyReLU(0.1)(x).numpy(), np.where(x > 0, x, 0.1 * x))
    np.testing.assert_allclose(L.Softmax()(x).numpy().sum(-1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(L.Activation("linear")(x).numpy(), x)
    emb = L.Embedding(10, 3)
    assert emb(np.array([[1, 2], [3, 9]])).shape.as_list() == [2, 2, 3]
    drop = L.Dropout(0.5, seed=1)
    ones = np.ones((1000,), np.float32)
    np.testing.assert_array_equal(drop(ones).numpy(), ones)  # inference: identity
    kept = drop(ones, training=True).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 0.4 < (kept > 0).mean() < 0.6
    img = np.random.default_rng(0).normal(size=(2, 4, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(L.GlobalAveragePooling2D()(img).numpy(), img.mean((1, 2)), rtol=1e-6)
    np.testing.assert_allclose(L.AveragePooling2D()(img).numpy(), img.reshape(2, 2, 2, 2, 2, 3).mean((2, 4)),
                               rtol=1e-6)


# -- errors ----------------------------------------------------------------------------------------------------
def test_layer_called_on_an_incompatible_shape_names_the_layer_and_shapes():
    model = jf.keras.Sequential([L.Dense(4, input_shape=(10,)), L.Dense(1)])
    with pytest.raises(ValueError, match=r'layer "dense".*expected axis -1 of input shape to have value 10, but '
                                         r"received input with shape \(3, 7\)"):
        model(np.ones((3, 7), np.float32))
    conv = seed004_cnn()
    with pytest.raises(ValueError, match=r'layer "conv2d".*expected ndim=4, found ndim=3'):
        conv(np.ones((2, 28, 28), np.float32))


def test_a_failing_build_leaves_no_half_built_layer():
    class Bad(L.Layer):
        def build(self, input_shape):
            self.w = self.add_weight("w", shape=[2])
            raise ValueError("no")

    layer = Bad()
    with pytest.raises(ValueError, match=r'calling layer "bad".*no'):
        layer(np.ones((1, 2), np.float32))
    assert not layer.built and layer.weights == []


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match=r'Dense "dense": units must be a positive integer; got 0'):
        L.Dense(0)
    with pytest.raises(ValueError, match=r"padding must be 'same' or 'valid'; got 'full'"):
        L.Conv2D(3, 3, padding="full")
    with pytest.raises(ValueError, match=r"unknown activation 'relu6x'"):
        L.Dense(2, activation="relu6x")
    with pytest.raises(ValueError, match=r"Reshape.*total size of the new array must be unchanged"):
        L.Reshape((5,))(np.ones((2, 4), np.float32))


def test_depthwise_conv2d_layer():
    layer = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same")
    out = layer(np.ones((1, 5, 5, 3), np.float32))
    assert out.shape.as_list() == [1, 5, 5, 6]
    assert layer.count_params() == 3 * 3 * 3 * 2 + 6
    assert [w.name for w in layer.weights] == ["depthwise_conv2d/depthwise_kernel:0", "depthwise_conv2d/bias:0"]
