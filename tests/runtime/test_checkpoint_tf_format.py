"""TF-format checkpoints: jitflow reads a checkpoint TensorFlow wrote (checked-in fixture), and
TensorFlow reads jitflow's (when TF is installed: `make test-tf`)."""
from __future__ import annotations

import os
import textwrap

import numpy as np
import pytest

import jitflow as jf

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "tf_checkpoint", "ckpt")


class Dense(jf.Module):
    def __init__(self, n_in, n_out, seed=0.0, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = jf.Variable(np.zeros((n_in, n_out), np.float32) + seed, name="w")
            self.b = jf.Variable(np.zeros(n_out, np.float32) + seed, name="b")


class Model(jf.Module):
    """The jitflow twin of the tf.Module in tests/fixtures/tf_checkpoint/make_fixture.py."""

    def __init__(self, seed=0.0):
        super().__init__()
        self.encoder = Dense(3, 2, seed)
        self.layers = [Dense(2, 2, seed), Dense(2, 1, seed)]
        self.extra = {"scale": jf.Variable(seed, dtype=jf.float64), "steps": jf.Variable(0, dtype=jf.int64),
                      "mask": jf.Variable([False, False, False]), "ids": jf.Variable([[0, 0], [0, 0]]),
                      "half": jf.Variable([0.0, 0.0], dtype=jf.float16),
                      "bytes": jf.Variable(np.zeros(2, np.uint8))}


def expected_fixture_values(model):
    return {
        "encoder.w": (model.encoder.w, np.arange(6, dtype=np.float32).reshape(3, 2) / 10 + 1.0),
        "encoder.b": (model.encoder.b, np.full(2, 1.0, np.float32)),
        "layers0.w": (model.layers[0].w, np.arange(4, dtype=np.float32).reshape(2, 2) / 10 + 2.0),
        "layers1.b": (model.layers[1].b, np.full(1, 3.0, np.float32)),
        "scale": (model.extra["scale"], np.float64(0.5)),
        "steps": (model.extra["steps"], np.int64(7)),
        "mask": (model.extra["mask"], np.array([True, False, True])),
        "ids": (model.extra["ids"], np.array([[1, 2], [3, 4]], np.int32)),
        "half": (model.extra["half"], np.array([1.5, -2.0], np.float16)),
        "bytes": (model.extra["bytes"], np.array([4, 200], np.uint8)),
    }


def test_jitflow_restores_a_checkpoint_tensorflow_wrote():
    latest = jf.train.latest_checkpoint(FIXTURE)
    assert latest == os.path.join(FIXTURE, "model-1")
    model = Model()
    ckpt = jf.train.Checkpoint(model=model)
    ckpt.restore(latest).assert_consumed()
    for name, (var, want) in expected_fixture_values(model).items():
        got = var.numpy()
        assert got.dtype == want.dtype, name
        np.testing.assert_array_equal(got, want, err_msg=name)
    assert ckpt.save_counter.numpy() == 1


def test_list_variables_and_reader_on_tensorflows_checkpoint():
    names = dict(jf.train.list_variables(FIXTURE))
    assert names["model/encoder/w/.ATTRIBUTES/VARIABLE_VALUE"] == [3, 2]
    assert names["model/layers/1/b/.ATTRIBUTES/VARIABLE_VALUE"] == [1]
    assert names["model/extra/ids/.ATTRIBUTES/VARIABLE_VALUE"] == [2, 2]
    assert names["_CHECKPOINTABLE_OBJECT_GRAPH"] == []
    reader = jf.train.load_checkpoint(FIXTURE)
    np.testing.assert_array_equal(reader.get_tensor("model/extra/mask/.ATTRIBUTES/VARIABLE_VALUE"),
                                  [True, False, True])
    assert reader.get_variable_to_dtype_map()["model/extra/half/.ATTRIBUTES/VARIABLE_VALUE"] is jf.float16
    with pytest.raises(jf.errors.NotFoundError, match="nope"):
        reader.get_tensor("nope")


def test_a_mismatched_twin_names_the_variable_and_restores_nothing():
    model = Model()
    model.encoder.w = jf.Variable(np.zeros((4, 2), np.float32), name="w")
    with pytest.raises(ValueError, match=r"model/encoder/w: the checkpoint value has shape \(3, 2\)"):
        jf.train.Checkpoint(model=model).restore(os.path.join(FIXTURE, "model-1"))
    assert model.encoder.b.numpy().tolist() == [0.0, 0.0]
    model = Model()
    model.extra["steps"] = jf.Variable(0, dtype=jf.int32)
    with pytest.raises(ValueError, match="model/extra/steps: the checkpoint value has dtype int64"):
        jf.train.Checkpoint(model=model).restore(os.path.join(FIXTURE, "model-1"))


def test_restore_on_creation_from_a_tensorflow_checkpoint():
    class Lazy(jf.Module):
        def __init__(self):
            super().__init__()
            self.encoder = None

    lazy = Lazy()
    status = jf.train.Checkpoint(model=lazy).restore(os.path.join(FIXTURE, "model-1"))
    lazy.encoder = Dense(3, 2)  # created after restore: gets its value when assigned
    np.testing.assert_array_equal(lazy.encoder.b.numpy(), [1.0, 1.0])
    with pytest.raises(AssertionError, match="Unresolved"):
        status.assert_consumed()


# -- TensorFlow in the loop (make test-tf) ----------------------------------------------------------
TF_TWIN = textwrap.dedent('''
    import numpy as np, tensorflow as tf
    class Dense(tf.Module):
        def __init__(self, n_in, n_out, name=None):
            super().__init__(name=name)
            with self.name_scope:
                self.w = tf.Variable(tf.zeros([n_in, n_out]), name="w")
                self.b = tf.Variable(tf.zeros([n_out]), name="b")
    class Model(tf.Module):
        def __init__(self):
            super().__init__()
            self.encoder = Dense(3, 2)
            self.layers = [Dense(2, 2), Dense(2, 1)]
            self.extra = {"scale": tf.Variable(0.0, dtype=tf.float64), "steps": tf.Variable(0, dtype=tf.int64),
                          "mask": tf.Variable([False] * 3), "ids": tf.Variable(tf.zeros([2, 2], tf.int32)),
                          "half": tf.Variable(tf.zeros([2], tf.float16)), "bytes": tf.Variable(tf.zeros([2], tf.uint8))}
''')


@pytest.mark.tf
def test_tensorflow_restores_a_jitflow_checkpoint(tmp_path):
    tf = pytest.importorskip("tensorflow")
    model = Model(seed=0.25)
    model.layers[1].w.assign([[5.0], [6.0]])
    model.extra["steps"].assign(41)
    model.extra["mask"].assign([True, True, False])
    ckpt = jf.train.Checkpoint(model=model)
    ckpt.save(str(tmp_path / "ckpt"))
    ckpt.save(str(tmp_path / "ckpt"))
    namespace = {}
    exec(TF_TWIN, namespace)
    twin = namespace["Model"]()
    tf_ckpt = tf.train.Checkpoint(model=twin)
    tf_ckpt.restore(tf.train.latest_checkpoint(str(tmp_path))).assert_consumed()
    assert int(tf_ckpt.save_counter.numpy()) == 2
    for jv, tv in zip(model.variables, twin.variables):
        assert jv.name == tv.name
        np.testing.assert_array_equal(jv.numpy(), tv.numpy(), err_msg=jv.name)
    assert sorted(tf.train.list_variables(str(tmp_path))) == sorted(
        (n, s) for n, s in jf.train.list_variables(str(tmp_path)))


@pytest.mark.tf
def test_jitflow_restores_what_tensorflow_just_wrote(tmp_path):
    tf = pytest.importorskip("tensorflow")
    namespace = {}
    exec(TF_TWIN, namespace)
    twin = namespace["Model"]()
    for i, v in enumerate(twin.variables):
        v.assign(tf.cast(tf.fill(v.shape, i + 1), v.dtype))
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=twin), str(tmp_path), max_to_keep=2)
    manager.save()
    manager.save(checkpoint_number=7)
    model = Model()
    jf.train.Checkpoint(model=model).restore(jf.train.latest_checkpoint(str(tmp_path))).assert_consumed()
    assert jf.train.latest_checkpoint(str(tmp_path)).endswith("ckpt-7")
    for jv, tv in zip(model.variables, twin.variables):
        np.testing.assert_array_equal(jv.numpy(), tv.numpy(), err_msg=jv.name)
