"""jf.saved_model: seed 001's DemoModule, round trips (nested modules, lists/dicts, several
signatures, every dtype, control flow, nested calls), loading in a fresh process that never
imports the saving code, the CLI, TensorBoard reading the graph, and bad input."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import jitflow as jf
from jitflow.cli import main as cli_main


class DemoModule(jf.Module):
    """Seed 001, with tf. -> jf."""

    def __init__(self, init_value=jf.constant(0.0), name=None):
        super(DemoModule, self).__init__(name=name)
        with self.name_scope:
            self.x = jf.Variable(init_value, dtype=jf.float32, trainable=True)

    @jf.function(input_signature=[jf.TensorSpec(shape=[], dtype=jf.float32)])
    def addprint(self, a):
        with self.name_scope:
            self.x.assign_add(a)
            jf.print(self.x)
            return (self.x)


SEED_SHOW_ALL = """
MetaGraphDef with tag-set: 'serve' contains the following SignatureDefs:

signature_def['__saved_model_init_op']:
  The given SavedModel SignatureDef contains the following input(s):
  The given SavedModel SignatureDef contains the following output(s):
    outputs['__saved_model_init_op'] tensor_info:
        dtype: DT_INVALID
        shape: unknown_rank
        name: NoOp
  Method name is: 

signature_def['serving_default']:
  The given SavedModel SignatureDef contains the following input(s):
    inputs['a'] tensor_info:
        dtype: DT_FLOAT
        shape: ()
        name: serving_default_a:0
  The given SavedModel SignatureDef contains the following output(s):
    outputs['output_0'] tensor_info:
        dtype: DT_FLOAT
        shape: ()
        name: StatefulPartitionedCall:0
  Method name is: tensorflow/serving/predict
The MetaGraph with tag set ['serve'] contains the following ops: {'AssignAddVariableOp', 'NoOp', 'Placeholder', \
'PrintV2', 'ReadVariableOp', 'StatefulPartitionedCall', 'StringFormat', 'VarHandleOp'}

Concrete Functions:
  Function Name: 'addprint'
    Option #1
      Callable with:
        Argument #1
          a: TensorSpec(shape=(), dtype=tf.float32, name='a')
"""  # noqa: W291 -- saved_model_cli prints "Method name is: " with a trailing space for an empty method name


def test_seed_001_save_load_call_and_show(tmp_path, capsys):
    demo = DemoModule(init_value=jf.constant(1.0))
    demo.addprint(jf.constant(5.0))
    export = str(tmp_path / "data" / "demo" / "1")
    jf.saved_model.save(demo, export, signatures={"serving_default": demo.addprint})
    assert sorted(os.listdir(export)) == ["assets", "saved_model.pb", "variables"]
    assert sorted(os.listdir(os.path.join(export, "variables"))) == ["variables.data-00000-of-00001",
                                                                    "variables.index"]
    demo2 = jf.saved_model.load(export)
    result = demo2.addprint(jf.constant(5.0))
    assert capsys.readouterr().out == "6\n11\n"
    assert result.numpy() == 11.0 and demo2.x.numpy() == 11.0
    assert not isinstance(demo2, DemoModule) and demo2.variables == (demo2.x,)
    assert demo2.x.name == "demo_module/Variable:0" and demo2.x.trainable
    out = demo2.signatures["serving_default"](a=jf.constant(1.0))
    assert list(out) == ["output_0"] and out["output_0"].numpy() == 12.0
    capsys.readouterr()
    assert cli_main(["saved-model", "show", "--dir", export, "--all"]) == 0
    assert capsys.readouterr().out == SEED_SHOW_ALL
    assert cli_main(["saved-model", "show", "--dir", export]) == 0
    assert capsys.readouterr().out == "The given SavedModel contains the following tag-sets:\n'serve'\n"
    assert cli_main(["saved-model", "show", "--dir", export, "--tag_set", "serve"]) == 0
    assert capsys.readouterr().out == (
        "The given SavedModel MetaGraphDef contains SignatureDefs with the following keys:\n"
        'SignatureDef key: "__saved_model_init_op"\nSignatureDef key: "serving_default"\n')
    assert cli_main(["saved-model", "show", "--dir", export, "--tag_set", "serve",
                     "--signature_def", "serving_default"]) == 0
    assert "inputs['a'] tensor_info:\n      dtype: DT_FLOAT" in capsys.readouterr().out


class Dense(jf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = jf.Variable(np.arange(n_in * n_out, dtype=np.float32).reshape(n_in, n_out) / 10, name="w")
            self.b = jf.Variable(np.linspace(-1, 1, n_out).astype(np.float32), name="b")

    @jf.function
    def __call__(self, x):
        return jf.nn.relu(jf.matmul(x, self.w) + self.b)


class Net(jf.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Dense(3, 4)
        self.layers = [Dense(4, 4), Dense(4, 2)]
        self.extra = {"scale": jf.Variable(2.0), "calls": jf.Variable(0, dtype=jf.int64)}
        self.dtypes = [jf.Variable(np.array([1.5, -2], np.float16)), jf.Variable(np.float64(3.25)),
                       jf.Variable(np.array([-8, 7], np.int8)), jf.Variable(np.array([300], np.int16)),
                       jf.Variable(np.array([1, 2, 3], np.int32)), jf.Variable(np.int64(2**40)),
                       jf.Variable(np.array([0, 255], np.uint8)), jf.Variable([True, False])]

    @jf.function
    def predict(self, x, n):
        x = self.encoder(x)
        for layer in self.layers:
            x = layer(x)
        if jf.reduce_sum(x) > 0:
            x = x * self.extra["scale"]
        else:
            x = x - 1.0
        i = jf.constant(0)
        while i < n:
            x = x + 1.0
            i += 1
        self.extra["calls"].assign_add(1)
        return {"y": x, "total": jf.reduce_sum(x, axis=1)}

    @jf.function
    def scaled(self, x, factor=2):  # a Python argument: one concrete function per value
        return x * factor


def build_net():
    net = Net()
    net.predict(jf.constant(np.ones((2, 3), np.float32)), jf.constant(3))
    net.predict(jf.constant(np.ones((2, 3), np.float64)).__class__ and jf.constant(np.ones((5, 3), np.float32)),
                jf.constant(1))
    net.scaled(jf.constant([1.0, 2.0]))
    net.scaled(jf.constant([1, 2]), factor=3)
    return net


def test_round_trip_of_nested_modules_dtypes_control_flow_and_several_signatures(tmp_path):
    net = build_net()
    x = np.random.default_rng(0).normal(size=(2, 3)).astype(np.float32)
    export = str(tmp_path / "net")
    jf.saved_model.save(net, export, signatures={
        "serving_default": net.predict.get_concrete_function(jf.TensorSpec([None, 3], jf.float32),
                                                              jf.TensorSpec([], jf.int32))})
    loaded = jf.saved_model.load(export)
    want = net.predict(jf.constant(x), jf.constant(2))
    got = loaded.predict(jf.constant(x), jf.constant(2))
    assert sorted(got) == ["total", "y"]
    np.testing.assert_allclose(got["y"].numpy(), want["y"].numpy(), rtol=1e-6)
    np.testing.assert_allclose(got["total"].numpy(), want["total"].numpy(), rtol=1e-6)
    assert loaded.extra["calls"].numpy() == net.extra["calls"].numpy()
    sig = loaded.signatures["serving_default"](x=jf.constant(x), n=jf.constant(0))
    np.testing.assert_allclose(sig["total"].numpy(), net.predict(jf.constant(x), jf.constant(0))["total"].numpy(),
                               rtol=1e-6)
    np.testing.assert_allclose(loaded.layers[1](jf.constant(np.ones((1, 4), np.float32))).numpy(),
                               net.layers[1](jf.constant(np.ones((1, 4), np.float32))).numpy())
    assert loaded.scaled(jf.constant([1.0, 2.0])).numpy().tolist() == [2.0, 4.0]
    assert loaded.scaled(jf.constant([1, 2]), factor=3).numpy().tolist() == [3, 6]
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded.scaled(jf.constant([1.0]), factor=5)  # never traced with 5
    for a, b in zip(net.dtypes, loaded.dtypes):
        assert a.dtype is b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert len(loaded.variables) == len(net.variables) and len(loaded.trainable_variables) == len(
        net.trainable_variables)
    # what was loaded is a checkpointable module: its variables restore into the original class
    path = jf.train.Checkpoint(model=loaded).save(str(tmp_path / "ckpt" / "c"))
    fresh = Net()
    jf.train.Checkpoint(model=fresh).restore(path).assert_consumed()
    np.testing.assert_array_equal(fresh.encoder.w.numpy(), net.encoder.w.numpy())


FRESH_PROCESS = textwrap.dedent('''
    import json, sys
    import numpy as np
    import jitflow as jf
    m = jf.saved_model.load(sys.argv[1])
    x = jf.constant(np.full((2, 3), 0.5, np.float32))
    out = m.predict(x, jf.constant(1))
    sig = m.signatures["serving_default"](x=x, n=jf.constant(1))
    print(json.dumps({"y": out["y"].numpy().tolist(), "sig": sig["y"].numpy().tolist(),
                      "modules": sorted(k for k in sys.modules if k.startswith("test")),
                      "n_variables": len(m.variables), "type": type(m).__name__}))
''')


@pytest.mark.slow
def test_load_in_a_fresh_process_without_the_defining_module(tmp_path):
    net = build_net()
    export = str(tmp_path / "net")
    jf.saved_model.save(net, export, signatures=net.predict.get_concrete_function(
        jf.TensorSpec([None, 3], jf.float32), jf.TensorSpec([], jf.int32)))
    x = jf.constant(np.full((2, 3), 0.5, np.float32))
    before = net.extra["calls"].numpy()
    want = net.predict(x, jf.constant(1))["y"].numpy().tolist()
    net.extra["calls"].assign(before)
    result = subprocess.run([sys.executable, "-c", FRESH_PROCESS, export], capture_output=True, text=True,
                            timeout=240, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["modules"] == [] and got["type"] == "Loaded" and got["n_variables"] == len(net.variables)
    np.testing.assert_allclose(got["y"], want, rtol=1e-6)
    np.testing.assert_allclose(got["sig"], want, rtol=1e-6)


def test_to_logdir_writes_a_graph_tensorboard_reads(tmp_path, capsys):
    from tensorboard.backend.event_processing import event_accumulator
    demo = DemoModule(init_value=jf.constant(1.0))
    export = str(tmp_path / "demo")
    jf.saved_model.save(demo, export, signatures=demo.addprint)
    assert cli_main(["saved-model", "to-logdir", "--dir", export, "--logdir", str(tmp_path / "logs")]) == 0
    acc = event_accumulator.EventAccumulator(str(tmp_path / "logs"))
    acc.Reload()
    graph = acc.Graph()
    names = {n.name: n.op for n in graph.node}
    assert names["addprint/demo_module/AssignAddVariableOp"] == "AssignAddVariableOp"
    assert names["addprint/demo_module/PrintV2"] == "PrintV2"
    assert "signatures/serving_default/a" in names


# -- bad input -----------------------------------------------------------------------------------------
def test_missing_or_corrupt_exports_raise_clear_errors(tmp_path):
    with pytest.raises(jf.errors.NotFoundError, match="not a directory"):
        jf.saved_model.load(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(jf.errors.NotFoundError, match="SavedModel file does not exist"):
        jf.saved_model.load(str(tmp_path / "empty"))
    demo = DemoModule(init_value=jf.constant(1.0))
    export = str(tmp_path / "demo")
    jf.saved_model.save(demo, export, signatures=demo.addprint)
    pb = os.path.join(export, "saved_model.pb")
    data = open(pb, "rb").read()
    open(pb, "wb").write(data[:len(data) // 2])
    with pytest.raises(jf.errors.DataLossError, match="corrupt or truncated"):
        jf.saved_model.load(export)
    open(pb, "wb").write(data)
    index = os.path.join(export, "variables", "variables.index")
    raw = open(index, "rb").read()
    open(index, "wb").write(raw[:-10])
    with pytest.raises(jf.errors.DataLossError):
        jf.saved_model.load(export)
    assert cli_main(["saved-model", "show", "--dir", str(tmp_path / "nope")]) == 1


def test_saving_bad_objects_is_refused_and_leaves_the_previous_export(tmp_path, monkeypatch):
    outside = jf.Variable(1.0)

    class Leaky(jf.Module):
        @jf.function(input_signature=[jf.TensorSpec([], jf.float32)])
        def f(self, a):
            return a + outside  # a variable the module does not track

    with pytest.raises(ValueError, match="not reachable from the object being saved"):
        jf.saved_model.save(Leaky(), str(tmp_path / "leaky"))
    assert not os.path.exists(tmp_path / "leaky")
    with pytest.raises(TypeError, match="needs a jf.Module"):
        jf.saved_model.save(object(), str(tmp_path / "x"))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="refusing to replace it"):
        jf.saved_model.save(DemoModule(), str(tmp_path / "mine"))
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"

    demo = DemoModule(init_value=jf.constant(1.0))
    export = str(tmp_path / "demo")
    jf.saved_model.save(demo, export, signatures=demo.addprint)
    demo.x.assign(50.0)
    from jitflow.runtime.training import checkpoint as ckpt_mod

    def disk_full(*args, **kwargs):
        raise OSError("No space left on device")
    monkeypatch.setattr(ckpt_mod, "_write_checkpoint", disk_full)
    with pytest.raises(OSError, match="No space left"):
        jf.saved_model.save(demo, export, signatures=demo.addprint)
    monkeypatch.undo()
    assert [n for n in os.listdir(tmp_path) if n.startswith(".")] == []  # no temp directory left
    killed = tmp_path / ".demo.999999999.0badc0de.tmp"  # what a writer killed mid-export leaves
    (killed / "variables").mkdir(parents=True)
    assert jf.saved_model.load(export).x.numpy() == 1.0  # the previous export, intact
    jf.saved_model.save(demo, export, signatures=demo.addprint)  # and a later save replaces it
    assert jf.saved_model.load(export).x.numpy() == 50.0
    assert not killed.exists()


def test_a_function_with_an_op_jitflow_lacks_names_it(tmp_path):
    demo = DemoModule(init_value=jf.constant(1.0))
    export = str(tmp_path / "demo")
    jf.saved_model.save(demo, export, signatures=demo.addprint)
    from jitflow.runtime.saved_model.protos import SavedModel
    model = SavedModel()
    pb = os.path.join(export, "saved_model.pb")
    model.ParseFromString(open(pb, "rb").read())
    for fdef in model.meta_graphs[0].graph_def.library.function:
        for nd in fdef.node_def:
            if nd.op == "PrintV2":
                nd.op = "FancyUnknownOp"
    open(pb, "wb").write(model.SerializeToString())
    with pytest.raises(jf.saved_model.UnsupportedOpError, match="'FancyUnknownOp'"):
        jf.saved_model.load(export)


def test_variables_that_do_not_match_the_object_graph_are_refused(tmp_path):
    demo = DemoModule(init_value=jf.constant(1.0))
    jf.saved_model.save(demo, str(tmp_path / "demo"), signatures=demo.addprint)

    class Other(jf.Module):
        def __init__(self):
            super().__init__()
            self.x = jf.Variable([1.0, 2.0])  # same name, another shape

    jf.saved_model.save(Other(), str(tmp_path / "other"))
    shutil.rmtree(tmp_path / "demo" / "variables")
    shutil.copytree(tmp_path / "other" / "variables", tmp_path / "demo" / "variables")
    with pytest.raises(ValueError, match=r"x: the checkpoint value has shape \(2,\)"):
        jf.saved_model.load(str(tmp_path / "demo"))


def test_a_function_holding_an_unsavable_python_object_is_refused(tmp_path):
    import io
    sink = io.StringIO()

    class Printer(jf.Module):
        @jf.function(input_signature=[jf.TensorSpec([], jf.float32)])
        def f(self, a):
            jf.print(a, output_stream=sink)  # a Python file object inside the graph
            return a

    printer = Printer()
    printer.f(jf.constant(1.0))
    with pytest.raises(ValueError, match=r"attr 'output_stream' holds a StringIO"):
        jf.saved_model.save(printer, str(tmp_path / "p"))
    assert not os.path.exists(tmp_path / "p")


KERAS_FRESH = textwrap.dedent("""
    import sys, json
    import numpy as np
    import jitflow as jf
    loaded = jf.saved_model.load(sys.argv[1])
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    out = loaded.signatures["serving_default"](inputs=jf.constant(x))
    print(json.dumps({"keys": sorted(out), "y": next(iter(out.values())).numpy().tolist(),
                      "weights": len(loaded.trainable_variables)}))
""")


@pytest.mark.parametrize("kind", ["sequential", "subclassed"])
def test_keras_models_round_trip_in_a_fresh_process(tmp_path, kind):
    """A Keras-style model saved with a serving signature loads (without its classes) and
    computes what the live model computes."""
    if kind == "sequential":
        model = jf.keras.Sequential([jf.keras.layers.Dense(4, activation="relu", input_shape=(3,)),
                                     jf.keras.layers.Dense(2)])
    else:
        class TwoLayer(jf.keras.Model):
            def __init__(self):
                super().__init__()
                self.hidden = jf.keras.layers.Dense(4, activation="tanh")
                self.out = jf.keras.layers.Dense(2)

            def call(self, inputs, training=None):
                return self.out(self.hidden(inputs))
        model = TwoLayer()
    x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    expected = model(x).numpy()
    serve = jf.function(lambda inputs: model(inputs), input_signature=[jf.TensorSpec([None, 3], jf.float32)])
    export = str(tmp_path / kind)
    jf.saved_model.save(model, export, signatures={"serving_default": serve})
    result = subprocess.run([sys.executable, "-c", KERAS_FRESH, export], capture_output=True, text=True,
                            timeout=240, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert got["keys"] == ["output_0"]
    assert got["weights"] == 4  # two Dense layers: kernel and bias each
    np.testing.assert_allclose(got["y"], expected, rtol=1e-6, atol=1e-6)
