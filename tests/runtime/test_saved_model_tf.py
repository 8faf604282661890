"""SavedModels across TensorFlow and jitflow: jitflow runs SavedModels TensorFlow wrote
(checked-in fixtures with TF's outputs), and TensorFlow loads and runs jitflow's (`make test-tf`)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import jitflow as jf

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf_saved_model")


def test_jitflow_runs_seed_001_saved_by_tensorflow(capfd):
    demo2 = jf.saved_model.load(os.path.join(FIXTURES, "demo"))
    assert demo2.x.numpy() == 6.0  # restored from TF's variables/
    result = demo2.addprint(jf.constant(5.0))
    assert result.numpy() == 11.0
    assert capfd.readouterr().err == "11\n"  # tf.print writes to stderr, and so does the loaded PrintV2
    out = demo2.signatures["serving_default"](a=jf.constant(1.0))
    assert list(out) == ["output_0"] and out["output_0"].numpy() == 12.0


def test_jitflow_matches_tensorflows_outputs_for_a_tf_mlp():
    expected = json.load(open(os.path.join(FIXTURES, "mlp", "expected.json")))
    model = jf.saved_model.load(os.path.join(FIXTURES, "mlp"))
    x = jf.constant(np.array(expected["x"], np.float32))
    for out in (model.predict(x), model.signatures["serving_default"](x=x)):
        assert sorted(out) == ["count", "total", "y"]
        np.testing.assert_allclose(out["y"].numpy(), expected["y"], rtol=1e-6)
        np.testing.assert_allclose(out["total"].numpy(), expected["total"], rtol=1e-6)
        assert out["count"].dtype is jf.int64 and out["count"].numpy() == expected["count"]
    assert len(model.variables) == 4 and model.hidden.w.shape == (3, 4)
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        model.predict(jf.constant(np.ones((2, 4), np.float32)))  # the signature says [None, 3]


def test_a_tf_saved_model_with_an_op_jitflow_lacks_names_the_op():
    with pytest.raises(jf.saved_model.UnsupportedOpError, match=r"node 'Erf' uses the op 'Erf'"):
        jf.saved_model.load(os.path.join(FIXTURES, "unsupported"))


def test_show_prints_what_saved_model_cli_prints_for_tensorflows_export(capsys):
    from jitflow.cli import main
    assert main(["saved-model", "show", "--dir", os.path.join(FIXTURES, "demo"), "--tag_set", "serve",
                 "--signature_def", "serving_default"]) == 0
    assert capsys.readouterr().out == (
        "The given SavedModel SignatureDef contains the following input(s):\n"
        "  inputs['a'] tensor_info:\n      dtype: DT_FLOAT\n      shape: ()\n      name: serving_default_a:0\n"
        "The given SavedModel SignatureDef contains the following output(s):\n"
        "  outputs['output_0'] tensor_info:\n      dtype: DT_FLOAT\n      shape: ()\n"
        "      name: StatefulPartitionedCall:0\n"
        "Method name is: tensorflow/serving/predict\n")


# -- TensorFlow in the loop ---------------------------------------------------------------------------------
class DemoModule(jf.Module):
    def __init__(self, init_value=jf.constant(0.0), name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.x = jf.Variable(init_value, dtype=jf.float32, trainable=True)

    @jf.function(input_signature=[jf.TensorSpec(shape=[], dtype=jf.float32)])
    def addprint(self, a):
        with self.name_scope:
            self.x.assign_add(a)
            jf.print(self.x)
            return (self.x)


class Dense(jf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = jf.Variable(np.linspace(-1, 1, n_in * n_out).reshape(n_in, n_out).astype(np.float32), name="w")
            self.b = jf.Variable(np.linspace(0, 0.5, n_out).astype(np.float32), name="b")

    def __call__(self, x):
        return jf.nn.relu(jf.matmul(x, self.w) + self.b)


class MLP(jf.Module):
    def __init__(self):
        super().__init__()
        self.hidden = Dense(3, 4)
        self.out = Dense(4, 2)
        self.steps = jf.Variable(0, dtype=jf.int64)

    @jf.function(input_signature=[jf.TensorSpec([None, 3], jf.float32)])
    def predict(self, x):
        y = self.out(self.hidden(x))
        both = jf.concat([y, jf.reshape(y, [-1, 2])], axis=1)
        self.steps.assign_add(1)
        return {"y": jf.nn.softmax(y), "total": jf.reduce_sum(jf.transpose(both), axis=0),
                "mean": jf.reduce_mean(jf.cast(jf.maximum(y, 0.1), jf.float64)),
                "stacked": jf.stack([jf.exp(-y), jf.tanh(y), jf.sigmoid(y) * 2.0 - 1.0], axis=0)}


@pytest.mark.tf
def test_tensorflow_runs_seed_001_saved_by_jitflow(tmp_path, capfd):
    tf = pytest.importorskip("tensorflow")
    demo = DemoModule(init_value=jf.constant(1.0))
    demo.addprint(jf.constant(5.0))
    jf.saved_model.save(demo, str(tmp_path / "demo"), signatures={"serving_default": demo.addprint})
    capfd.readouterr()
    demo2 = tf.saved_model.load(str(tmp_path / "demo"))
    assert float(demo2.x.numpy()) == 6.0
    assert float(demo2.addprint(tf.constant(5.0)).numpy()) == 11.0
    assert "11" in capfd.readouterr().out
    out = demo2.signatures["serving_default"](a=tf.constant(1.0))
    assert list(out) == ["output_0"] and float(out["output_0"].numpy()) == 12.0


@pytest.mark.tf
def test_tensorflow_gets_the_same_signature_results_as_jitflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    model = MLP()
    export = str(tmp_path / "mlp")
    jf.saved_model.save(model, export, signatures=model.predict)
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5], [0.0, 0.0, 1.0]], np.float32)
    ours = jf.saved_model.load(export).signatures["serving_default"](x=jf.constant(x))
    theirs = tf.saved_model.load(export)
    got = theirs.signatures["serving_default"](x=tf.constant(x))
    assert sorted(got) == sorted(ours) == ["mean", "stacked", "total", "y"]
    for key in ours:
        assert got[key].dtype.name == ours[key].dtype.name, key
        np.testing.assert_allclose(got[key].numpy(), ours[key].numpy(), rtol=1e-5, err_msg=key)
    direct = theirs.predict(tf.constant(x))
    np.testing.assert_allclose(direct["total"].numpy(), ours["total"].numpy(), rtol=1e-5)
    assert int(theirs.steps.numpy()) == 2  # both calls ran the assignment
    np.testing.assert_array_equal(theirs.hidden.w.numpy(), model.hidden.w.numpy())
    assert theirs.hidden.w.name == model.hidden.w.name == "dense/w:0"


@pytest.mark.tf
def test_jitflow_runs_what_tensorflow_just_saved(tmp_path):
    tf = pytest.importorskip("tensorflow")

    class Scaler(tf.Module):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable([2.0, 3.0])

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def __call__(self, x):
            return tf.reduce_mean(x * self.scale, axis=0, keepdims=True)

    scaler = Scaler()
    tf.saved_model.save(scaler, str(tmp_path / "scaler"))
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    loaded = jf.saved_model.load(str(tmp_path / "scaler"))
    np.testing.assert_allclose(loaded(jf.constant(x)).numpy(), scaler(tf.constant(x)).numpy())


class Looper(jf.Module):
    def __init__(self):
        super().__init__()
        self.v = jf.Variable(2.0)
        self.inner = Dense(2, 2)

    @jf.function(input_signature=[jf.TensorSpec([None, 2], jf.float32), jf.TensorSpec([], jf.int32)])
    def f(self, x, n):
        x = self.inner(x)
        if jf.reduce_sum(x) > 1.0:
            y = x * self.v
        else:
            y = x - 1.0
        i = jf.constant(0)
        while i < n:
            y = y + self.v
            i += 1
        return y


@pytest.mark.tf
def test_control_flow_crosses_both_ways(tmp_path):
    tf = pytest.importorskip("tensorflow")
    looper = Looper()
    jf.saved_model.save(looper, str(tmp_path / "jf"))
    theirs = tf.saved_model.load(str(tmp_path / "jf"))
    for x, n in ((np.array([[1.0, 2.0]], np.float32), 3), (np.array([[-5.0, -4.0]], np.float32), 0)):
        np.testing.assert_allclose(theirs.f(tf.constant(x), tf.constant(n)).numpy(),
                                   looper.f(jf.constant(x), jf.constant(n)).numpy(), rtol=1e-6)

    class TFLooper(tf.Module):
        def __init__(self):
            super().__init__()
            self.v = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32), tf.TensorSpec([], tf.int32)])
        def f(self, x, n):
            if tf.reduce_sum(x) > 0:
                y = x * self.v
            else:
                y = x - 1.0
            i = tf.constant(0)
            while i < n:
                y = y + self.v
                i += 1
            return y

    tf_looper = TFLooper()
    tf.saved_model.save(tf_looper, str(tmp_path / "tf"))
    ours = jf.saved_model.load(str(tmp_path / "tf"))
    for x, n in ((np.array([1.0, 2.0], np.float32), 3), (np.array([-1.0, -2.0], np.float32), 2)):
        np.testing.assert_allclose(ours.f(jf.constant(x), jf.constant(n)).numpy(),
                                   tf_looper.f(tf.constant(x), tf.constant(n)).numpy(), rtol=1e-6)


class ManyOps(jf.Module):
    def __init__(self):
        super().__init__()
        self.v = jf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))

    @jf.function(input_signature=[jf.TensorSpec([2, 3], jf.float32)])
    def f(self, x):
        x = x + self.v
        a = jf.cast(jf.argmax(x, axis=1), jf.float32)
        b = jf.gather(x, [2, 0], axis=1) + jf.fill([2, 2], 3.0)
        d = jf.cast(jf.range(0, 6, 2), jf.float32)
        e = jf.cast(jf.shape(x), jf.float32) * jf.cast(jf.size(x), jf.float32)
        m = jf.matmul(jf.reshape(x, [1, 2, 3]), jf.reshape(x, [1, 3, 2]))
        return {"a": a, "b": b, "d": d, "e": e, "h": jf.pad(x, [[1, 1], [0, 2]]), "k": jf.unstack(x, axis=0)[1],
                "m": m, "s": jf.squeeze(jf.expand_dims(x, 0), [0]), "w": jf.where(x > 1.0, x, -x),
                "z": jf.reduce_prod(x, axis=0) + jf.reduce_min(x) - jf.reduce_max(x, axis=[0, 1])}


def test_many_ops_round_trip_in_tensorflows_form(tmp_path):
    model = ManyOps()
    jf.saved_model.save(model, str(tmp_path / "ops"))
    from jitflow.runtime.saved_model.loading import meta_graph, read_saved_model
    meta = meta_graph(read_saved_model(str(tmp_path / "ops")))
    native = {nd.op for f in meta.graph_def.library.function for nd in f.node_def if "_jf_native" in nd.attr}
    assert native == set()  # every op of this model is written in TensorFlow's own form
    x = np.array([[1, -2, 3], [0.5, 7, -1]], np.float32)
    want = model.f(jf.constant(x))
    got = jf.saved_model.load(str(tmp_path / "ops")).f(jf.constant(x))
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), err_msg=key)


@pytest.mark.tf
def test_tensorflow_runs_many_ops_saved_by_jitflow(tmp_path):
    tf = pytest.importorskip("tensorflow")
    model = ManyOps()
    jf.saved_model.save(model, str(tmp_path / "ops"))
    x = np.array([[1, -2, 3], [0.5, 7, -1]], np.float32)
    want = model.f(jf.constant(x))
    loaded = tf.saved_model.load(str(tmp_path / "ops"))
    got = loaded.f(tf.constant(x))
    for key in want:
        np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), err_msg=key)


@pytest.mark.tf
def test_saved_model_cli_and_jitflow_show_agree(tmp_path):
    pytest.importorskip("tensorflow")
    import subprocess
    import sys
    from jitflow.runtime.saved_model.show import show
    demo = DemoModule(init_value=jf.constant(1.0))
    export = str(tmp_path / "demo")
    jf.saved_model.save(demo, export, signatures={"serving_default": demo.addprint})
    for args in ([], ["--tag_set", "serve"], ["--tag_set", "serve", "--signature_def", "serving_default"], ["--all"]):
        cli = subprocess.run([sys.executable, "-m", "tensorflow.python.tools.saved_model_cli", "show", "--dir",
                              export, *args], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        assert cli.returncode == 0, cli.stderr
        ours = show(export, tag_set=args[1] if "--tag_set" in args else None,
                    signature_def=args[3] if "--signature_def" in args else None, all="--all" in args)
        expected, got = cli.stdout.splitlines(), ours.splitlines()
        assert len(expected) == len(got)
        for e, g in zip(expected, got):
            if "contains the following ops:" in e:  # saved_model_cli prints a Python set: order varies
                e_ops, g_ops = (sorted(x.split(": ", 1)[1].strip("{}").split(", ")) for x in (e, g))
                assert e_ops == g_ops
            else:
                assert e == g
