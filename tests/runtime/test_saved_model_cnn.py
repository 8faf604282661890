"""Keras CNNs across TensorFlow and jitflow in TensorFlow's op form (issue #18).

jitflow's `model.export()` of seed 004's CNN (and of a model with every CNN layer) writes
`Conv2D`, `MaxPool`, `AvgPool`, `DepthwiseConv2dNative`, `BiasAdd`, `LeakyRelu`, `Elu`,
`StridedSlice`, ... as TensorFlow writes them (no `_jf_native` node), TensorFlow runs the
export and predicts what jitflow predicts; jitflow runs what Keras exported (checked-in
fixtures, and a live export when TF is installed).
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.saved_model.loading import meta_graph, read_saved_model

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf_keras_cnn")
L = jf.keras.layers
CNN_OPS = {"Conv2D", "MaxPool", "AvgPool", "DepthwiseConv2dNative", "BiasAdd", "LeakyRelu", "Elu", "ConcatV2",
           "Reshape", "MatMul", "Softmax", "Relu", "Mean", "Max", "GatherV2", "Pad", "StridedSlice", "Squeeze",
           "ExpandDims"}


def seed_004_cnn():
    """Seed 004's MNIST CNN: Conv2D 32 -> MaxPool -> Conv2D 64 -> MaxPool -> Flatten -> Dense 128 -> Dense 10."""
    jf.random.set_seed(4)
    model = jf.keras.Sequential([
        L.Conv2D(32, 3, activation="relu", input_shape=(28, 28, 1)),
        L.MaxPooling2D(2),
        L.Conv2D(64, 3, activation="relu"),
        L.MaxPooling2D(2),
        L.Flatten(),
        L.Dense(128, activation="relu"),
        L.Dense(10, activation="softmax"),
    ])
    return model, np.random.RandomState(4).rand(3, 28, 28, 1).astype(np.float32)


class _Extras(L.Layer):
    """Mean/Max/Sum reductions, Pad, Squeeze/ExpandDims and static slices, as a custom layer writes them."""

    def call(self, x):
        padded = jf.pad(x, [[0, 0], [1, 1], [0, 0], [0, 0]])
        sliced = padded[:, 1:-1, ::2, :]                      # StridedSlice with masks
        first = jf.expand_dims(sliced[..., 0], -1)            # shrink + ellipsis, then ExpandDims
        squeezed = jf.squeeze(jf.reduce_max(first, axis=[2], keepdims=True), [2])
        return jf.concat([jf.reduce_mean(sliced, axis=[1, 2]), jf.reduce_sum(squeezed, axis=1)], axis=-1)


def layered_cnn():
    """Every CNN layer with a TF form: BatchNormalization (inference), a dilated Conv2D, DepthwiseConv2D, ..."""
    jf.random.set_seed(7)
    image = L.Input(shape=(10, 10, 3))
    ids = L.Input(shape=(4,), dtype=jf.int32)
    x = L.Conv2D(6, 3, activation="relu", padding="same")(image)
    x = L.BatchNormalization()(x)
    x = L.MaxPooling2D(2)(x)
    x = L.Conv2D(6, 3, dilation_rate=2, padding="same")(x)
    y = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(x)
    y = L.AveragePooling2D(2, padding="same")(y)
    z = L.Conv2D(4, 1, strides=2, padding="same")(x)
    x = L.Concatenate()([y, z])
    x = L.Dropout(0.5)(x)
    x = L.LeakyReLU(0.1)(x)
    x = L.ELU()(x)
    x = L.ReLU(max_value=6.0)(x)
    extras = _Extras()(x)
    x = L.Reshape((3, 3, 16))(x)
    x = L.Flatten()(x)
    e = L.Flatten()(L.Embedding(20, 3)(ids))
    x = L.Concatenate()([x, extras, e])
    x = L.Dense(16, activation="softplus")(x)
    out = L.Softmax()(L.Dense(10)(x))
    model = jf.keras.Model([image, ids], out)
    bn = next(layer for layer in model.layers if isinstance(layer, L.BatchNormalization))
    bn.moving_mean.assign(np.linspace(-0.5, 0.5, 6).astype(np.float32))  # not 0/1: normalisation shows
    bn.moving_variance.assign(np.linspace(0.5, 2.0, 6).astype(np.float32))
    rng = np.random.RandomState(7)
    return model, [rng.rand(3, 10, 10, 3).astype(np.float32), rng.randint(0, 20, (3, 4)).astype(np.int32)]


def _ops(path):
    meta = meta_graph(read_saved_model(path))
    nodes = [nd for f in meta.graph_def.library.function for nd in f.node_def]
    return nodes


def _keywords(signature, args):
    """The serving signature's keyword arguments (TF names a list's entries `inputs`, `input_1`, ...),
    matched to the model's inputs by rank (the two inputs here differ in rank)."""
    specs = signature.structured_input_signature[1]
    args = args if isinstance(args, list) else [args]
    return {key: next(a for a in args if len(a.shape) == len(spec.shape)) for key, spec in specs.items()}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Both models, built, run once by jitflow (its predictions) and exported."""
    out = {}
    for name, build in (("seed_004", seed_004_cnn), ("layered", layered_cnn)):
        model, x = build()
        want = model(x if not isinstance(x, list) else [jf.constant(v) for v in x], training=False).numpy()
        path = str(tmp_path_factory.mktemp("cnn") / name)
        model.export(path, verbose=False)
        out[name] = (model, x, want, path)
    return out


def test_the_exports_are_all_in_tensorflows_op_form(exports):
    seen = set()
    for name, (_, _, _, path) in exports.items():
        nodes = _ops(path)
        native = sorted({nd.op for nd in nodes if "_jf_native" in nd.attr})
        assert native == [], f"{name}: ops written in jitflow's own form: {native}"
        seen |= {nd.op for nd in nodes}
    assert CNN_OPS <= seen, sorted(CNN_OPS - seen)
    conv = next(nd for nd in _ops(exports["seed_004"][3]) if nd.op == "Conv2D")
    assert list(conv.attr["strides"].list.i) == [1, 1, 1, 1] and conv.attr["padding"].s == b"VALID"
    assert conv.attr["data_format"].s == b"NHWC" and list(conv.attr["dilations"].list.i) == [1, 1, 1, 1]
    assert conv.attr["use_cudnn_on_gpu"].b and conv.attr["T"].type == jf.float32.tf_enum
    dilated = [nd for nd in _ops(exports["layered"][3]) if nd.op == "Conv2D" and nd.attr["dilations"].list.i[1] == 2]
    assert dilated and list(dilated[0].attr["dilations"].list.i) == [1, 2, 2, 1]
    pool = next(nd for nd in _ops(exports["seed_004"][3]) if nd.op == "MaxPool")
    assert list(pool.attr["ksize"].list.i) == [1, 2, 2, 1] and list(pool.attr["strides"].list.i) == [1, 2, 2, 1]


def test_jitflow_runs_its_own_cnn_exports_unchanged(exports):
    for name, (_, x, want, path) in exports.items():
        loaded = jf.saved_model.load(path)
        args = [jf.constant(v) for v in x] if isinstance(x, list) else jf.constant(x)
        np.testing.assert_allclose(loaded.serve(args).numpy(), want, rtol=1e-5, atol=1e-6, err_msg=name)
        out = loaded.signatures["serving_default"](
            **_keywords(loaded.signatures["serving_default"], args))
        np.testing.assert_allclose(out["output_0"].numpy(), want, rtol=1e-5, atol=1e-6, err_msg=name)


# The TF ops each fixture holds (so the test shows which of TF's forms it covers).
FIXTURE_OPS = {
    "cnn": {"Conv2D", "BiasAdd", "Rsqrt", "MaxPool", "DepthwiseConv2dNative", "AvgPool", "LeakyRelu", "Elu",
            "Relu6", "Selu", "Pad", "Shape", "StridedSlice", "Pack", "Reshape", "Mean", "Max", "Squeeze", "Softmax"},
    "embedding": {"GatherV2", "Conv2D", "Reshape"},
    "dilated": {"SpaceToBatchND", "Conv2D", "DepthwiseConv2dNative", "BatchToSpaceND"},
    "lookup": {"ResourceGather", "MaxPoolV2"},
}


@pytest.mark.parametrize("name", sorted(FIXTURE_OPS))
def test_jitflow_predicts_what_keras_predicts_for_its_exported_cnn(name):
    assert FIXTURE_OPS[name] <= {nd.op for nd in _ops(os.path.join(FIXTURES, name))}
    expected = json.load(open(os.path.join(FIXTURES, name, "expected.json")))
    x = np.array(expected["x"], dtype=expected["dtype"])
    loaded = jf.saved_model.load(os.path.join(FIXTURES, name))
    np.testing.assert_allclose(loaded.serve(jf.constant(x)).numpy(), expected["y"], rtol=1e-5, atol=1e-6)
    signature = loaded.signatures["serving_default"]
    (out,) = signature(**_keywords(signature, jf.constant(x))).values()
    np.testing.assert_allclose(out.numpy(), expected["y"], rtol=1e-5, atol=1e-6)
    assert len(loaded.variables) > 0 and all(isinstance(v, jf.Variable) for v in loaded.variables)


def _slices(x):
    return {"a": x[:, 1:3, ::2], "b": x[..., -1], "c": x[0, None, :, 4], "d": x[:, ::-1, 1:], "e": x[1:, 2],
            "f": x[-2:, ..., None, 1]}


class Slices(jf.Module):
    @jf.function(input_signature=[jf.TensorSpec([None, 4, 5], jf.float32)])
    def f(self, x):
        return _slices(x)


def _run_time_slices(x, n):
    return {"g": x[:, :n], "h": x[n], "i": x[:, 1, n:n + 2:1]}


class RunTimeSlices(jf.Module):
    @jf.function(input_signature=[jf.TensorSpec([None, 4, 5], jf.float32), jf.TensorSpec([], jf.int32)])
    def f(self, x, n):
        return _run_time_slices(x, n)


def test_slices_with_run_time_bounds_round_trip_in_tensorflows_form(tmp_path):
    jf.saved_model.save(RunTimeSlices(), str(tmp_path / "r"))
    nodes = _ops(str(tmp_path / "r"))
    assert [nd.op for nd in nodes if "_jf_native" in nd.attr] == []
    assert sum(nd.op == "StridedSlice" for nd in nodes) == 3 and any(nd.op == "Pack" for nd in nodes)
    x = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    loaded = jf.saved_model.load(str(tmp_path / "r"))
    for n in (1, 2):
        got = loaded.f(jf.constant(x), jf.constant(n))
        for key, value in _run_time_slices(x, n).items():
            np.testing.assert_array_equal(got[key].numpy(), value, err_msg=f"{key}, n={n}")


def test_strided_slices_round_trip_in_tensorflows_form(tmp_path):
    module = Slices()
    jf.saved_model.save(module, str(tmp_path / "s"))
    nodes = _ops(str(tmp_path / "s"))
    assert [nd.op for nd in nodes if "_jf_native" in nd.attr] == []
    masks = {nd.name.rsplit("/", 1)[-1]: nd for nd in nodes if nd.op == "StridedSlice"}
    assert len(masks) == 6
    x = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    got = jf.saved_model.load(str(tmp_path / "s")).f(jf.constant(x))
    for key, value in _slices(x).items():
        np.testing.assert_array_equal(got[key].numpy(), value, err_msg=key)


_UNARY = ("log1p", "expm1", "rsqrt", "reciprocal", "floor", "ceil", "round", "tan", "atan", "asin", "acos", "sinh",
          "cosh")


class UnaryOps(jf.Module):
    """jitflow's extra unary math ops and activations, each written as TF's op of the same name."""

    @jf.function(input_signature=[jf.TensorSpec([None, 3], jf.float32)])
    def f(self, x):
        out = {name: getattr(jf.math, name)(x) for name in _UNARY}
        out.update(softsign=jf.nn.softsign(x), softplus=jf.nn.softplus(x), elu=jf.nn.elu(x - 0.5),
                   leaky_relu=jf.nn.leaky_relu(x - 0.5, alpha=0.3))
        return out


_UNARY_X = np.array([[0.1, 0.45, 0.9], [0.25, 0.5, 0.75]], np.float32)


def test_unary_math_ops_round_trip_in_tensorflows_form(tmp_path):
    module = UnaryOps()
    jf.saved_model.save(module, str(tmp_path / "u"))
    nodes = _ops(str(tmp_path / "u"))
    assert [nd.op for nd in nodes if "_jf_native" in nd.attr] == []
    ops = {nd.op for nd in nodes}
    assert {"Log1p", "Rsqrt", "Round", "Softsign", "Softplus", "Elu", "LeakyRelu"} <= ops
    want = module.f(jf.constant(_UNARY_X))
    got = jf.saved_model.load(str(tmp_path / "u")).f(jf.constant(_UNARY_X))
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=1e-6, err_msg=key)


class ArrayOps(jf.Module):
    """Ops whose sizes TF passes as constant inputs (Tile, BroadcastTo, SplitV, Cumsum), and a Reshape to a
    shape computed at run time (Shape -> StridedSlice -> Pack -> Reshape, as Keras's Flatten writes it)."""

    @jf.function(input_signature=[jf.TensorSpec([2, 3], jf.float32)])
    def f(self, x):
        first, rest = jf.split(x, [1, 2], axis=1)
        return {"tile": jf.tile(x, [2, 1]), "broadcast": jf.broadcast_to(x[0], [4, 3]), "first": first,
                "rest": rest, "cumsum": jf.math.cumsum(x, axis=1, exclusive=True, reverse=True),
                "flat": jf.reshape(x, jf.stack([jf.shape(x)[0], -1]))}  # a shape computed at run time


def test_sized_array_ops_round_trip_in_tensorflows_form(tmp_path):
    module = ArrayOps()
    jf.saved_model.save(module, str(tmp_path / "a"))
    nodes = _ops(str(tmp_path / "a"))
    assert [nd.op for nd in nodes if "_jf_native" in nd.attr] == []
    assert {"Tile", "BroadcastTo", "SplitV", "Cumsum"} <= {nd.op for nd in nodes}
    reshape = next(nd for nd in nodes if nd.op == "Reshape")
    assert not reshape.input[1].split(":")[0].endswith("/shape")  # fed by the Pack, not a constant
    want = module.f(jf.constant(_UNARY_X))
    got = jf.saved_model.load(str(tmp_path / "a")).f(jf.constant(_UNARY_X))
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), err_msg=key)


# -- TensorFlow in the loop ---------------------------------------------------------------------------------
@pytest.mark.tf
def test_tensorflow_runs_jitflows_exported_cnns(exports):
    tf = pytest.importorskip("tensorflow")
    for name, (_, x, want, path) in exports.items():
        loaded = tf.saved_model.load(path)
        args = [tf.constant(v) for v in x] if isinstance(x, list) else tf.constant(x)
        np.testing.assert_allclose(loaded.serve(args).numpy(), want, rtol=1e-5, atol=1e-6, err_msg=name)
        signature = loaded.signatures["serving_default"]
        got = signature(**_keywords(signature, args))["output_0"].numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def _check_against_op_defs(path, name):
    """Op names, input counts and attrs as TF's OpDefs declare them (no unknown attr, none missing)."""
    from tensorflow.python.framework import op_def_registry
    for nd in _ops(path):
        if nd.op in ("StatefulPartitionedCall", "PartitionedCall"):
            continue
        op_def = op_def_registry.get(nd.op)
        assert op_def is not None, f"{name}: {nd.name} uses {nd.op!r}, which TensorFlow does not define"
        declared = {a.name for a in op_def.attr}
        attrs = {k for k in nd.attr if not k.startswith("_")}
        assert attrs <= declared, f"{nd.op} {nd.name}: attrs TF does not declare: {sorted(attrs - declared)}"
        required = {a.name for a in op_def.attr if not a.HasField("default_value")}
        assert required <= attrs, f"{nd.op} {nd.name}: missing attrs {sorted(required - attrs)}"
        data_inputs = [i for i in nd.input if not i.startswith("^")]
        fixed = [a for a in op_def.input_arg if not a.number_attr and not a.type_list_attr]
        if len(fixed) == len(op_def.input_arg):
            assert len(data_inputs) == len(fixed), f"{nd.op} {nd.name}: {len(data_inputs)} inputs"


@pytest.mark.tf
def test_every_exported_node_matches_tensorflows_op_def(exports):
    pytest.importorskip("tensorflow")
    for name, (_, _, _, path) in exports.items():
        _check_against_op_defs(path, name)


@pytest.mark.tf
def test_jitflow_runs_the_seed_004_cnn_tensorflow_just_exported(tmp_path):
    tf = pytest.importorskip("tensorflow")
    keras = tf.keras
    keras.utils.set_random_seed(4)
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        keras.layers.Conv2D(32, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(64, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10, activation="softmax"),
    ])
    x = np.random.RandomState(4).rand(3, 28, 28, 1).astype(np.float32)
    want = model.predict(x, verbose=0)
    model.export(str(tmp_path / "tf_cnn"), verbose=False)
    loaded = jf.saved_model.load(str(tmp_path / "tf_cnn"))
    np.testing.assert_allclose(loaded.serve(jf.constant(x)).numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_tf_layout_jitflow_does_not_run_is_refused_naming_the_node(tmp_path):
    model = jf.keras.Sequential([L.Conv2D(2, 3, input_shape=(6, 6, 1))])
    model(np.zeros((1, 6, 6, 1), np.float32))
    path = str(tmp_path / "nchw")
    model.export(path, verbose=False)
    saved = read_saved_model(path)
    conv = next(nd for f in meta_graph(saved).graph_def.library.function for nd in f.node_def if nd.op == "Conv2D")
    conv.attr["data_format"].s = b"NCHW"  # what TF writes for a channels-first model on GPU
    with open(os.path.join(path, "saved_model.pb"), "wb") as f:
        f.write(saved.SerializeToString())
    with pytest.raises(jf.saved_model.UnsupportedOpError,
                       match=rf"node '{conv.name}': Conv2D: attr data_format is 'NCHW'; jitflow runs NHWC"):
        jf.saved_model.load(path).serve(jf.constant(np.zeros((1, 6, 6, 1), np.float32)))


@pytest.mark.tf
def test_tensorflow_runs_the_unary_math_ops_jitflow_saved(tmp_path):
    tf = pytest.importorskip("tensorflow")
    module = UnaryOps()
    jf.saved_model.save(module, str(tmp_path / "u"))
    want = module.f(jf.constant(_UNARY_X))
    _check_against_op_defs(str(tmp_path / "u"), "unary")
    loaded = tf.saved_model.load(str(tmp_path / "u"))
    got = loaded.f(tf.constant(_UNARY_X))
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), rtol=1e-5, atol=1e-7, err_msg=key)


@pytest.mark.tf
def test_sized_array_ops_cross_both_ways(tmp_path):
    tf = pytest.importorskip("tensorflow")
    module = ArrayOps()
    jf.saved_model.save(module, str(tmp_path / "a"))
    _check_against_op_defs(str(tmp_path / "a"), "array")
    want = module.f(jf.constant(_UNARY_X))
    loaded = tf.saved_model.load(str(tmp_path / "a"))
    got = loaded.f(tf.constant(_UNARY_X))
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), err_msg=key)

    class TFArrayOps(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([2, 3], tf.float32)])
        def f(self, x):
            first, rest = tf.split(x, [1, -1], axis=1)
            return {"tile": tf.tile(x, [2, 1]), "broadcast": tf.broadcast_to(x[0], [4, 3]), "first": first,
                    "rest": rest, "cumsum": tf.math.cumsum(x, axis=1, exclusive=True, reverse=True),
                    "flat": tf.reshape(x, tf.stack([tf.shape(x)[0], -1]))}

    tf.saved_model.save(TFArrayOps(), str(tmp_path / "tf"))
    got = jf.saved_model.load(str(tmp_path / "tf")).f(jf.constant(_UNARY_X))
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), err_msg=key)


@pytest.mark.tf
def test_strided_slices_cross_both_ways(tmp_path):
    tf = pytest.importorskip("tensorflow")
    x = np.arange(3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    jf.saved_model.save(Slices(), str(tmp_path / "jf"))
    got = tf.saved_model.load(str(tmp_path / "jf")).f(tf.constant(x))
    for key, value in _slices(x).items():
        np.testing.assert_array_equal(got[key].numpy(), value, err_msg=key)

    class TFSlices(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4, 5], tf.float32)])
        def f(self, x):
            return _slices(x)

    tf.saved_model.save(TFSlices(), str(tmp_path / "tf"))
    got = jf.saved_model.load(str(tmp_path / "tf")).f(jf.constant(x))
    for key, value in _slices(x).items():
        np.testing.assert_array_equal(got[key].numpy(), value, err_msg=key)

    jf.saved_model.save(RunTimeSlices(), str(tmp_path / "jf_r"))
    loaded = tf.saved_model.load(str(tmp_path / "jf_r"))

    class TFRunTimeSlices(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None, 4, 5], tf.float32), tf.TensorSpec([], tf.int32)])
        def f(self, x, n):
            return _run_time_slices(x, n)

    tf.saved_model.save(TFRunTimeSlices(), str(tmp_path / "tf_r"))
    from_tf = jf.saved_model.load(str(tmp_path / "tf_r"))
    for n in (1, 2):
        want = _run_time_slices(x, n)
        for got in (loaded.f(tf.constant(x), tf.constant(n)), from_tf.f(jf.constant(x), jf.constant(n))):
            for key, value in want.items():
                np.testing.assert_array_equal(got[key].numpy(), value, err_msg=f"{key}, n={n}")
