"""Checkpoints: round trips through the object graph, restore-on-creation (variables and
optimizer slots), CheckpointManager, the file format, and corrupt files that must not
half-restore."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.training import checkpoint as ckpt_mod


class Dense(jf.Module):
    def __init__(self, n_in, n_out, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = jf.Variable(np.full((n_in, n_out), 0.5, np.float32), name="w")
            self.b = jf.Variable(np.zeros(n_out, np.float32), name="b")

    def __call__(self, x):
        return jf.matmul(x, self.w) + self.b


class Net(jf.Module):
    def __init__(self):
        super().__init__()
        self.layers = [Dense(3, 4), Dense(4, 2)]
        self.extra = {"scale": jf.Variable(2.0), "steps": jf.Variable(0, dtype=jf.int64)}
        self.note = "not saved"

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x * self.extra["scale"]


def values(module):
    return [v.numpy().copy() for v in module.variables]


def scramble(module):
    for v in module.variables:
        v.assign(jf.cast(jf.ones_like(v) * 7, v.dtype))


def test_round_trip_through_nested_modules_lists_and_dicts(tmp_path):
    net, flag = Net(), jf.Variable([True, False])
    ckpt = jf.train.Checkpoint(model=net, flag=flag)
    before = values(net)
    path = ckpt.save(str(tmp_path / "ckpt"))
    assert path == str(tmp_path / "ckpt-1")
    scramble(net)
    flag.assign([False, False])
    ckpt.restore(path).assert_consumed()
    for got, want in zip(values(net), before):
        np.testing.assert_array_equal(got, want)
    assert flag.numpy().tolist() == [True, False]

    twin, twin_flag = Net(), jf.Variable([False, True])  # fresh objects: matched by names, not identity
    scramble(twin)
    jf.train.Checkpoint(model=twin, flag=twin_flag).restore(path).assert_consumed()
    for got, want in zip(values(twin), before):
        np.testing.assert_array_equal(got, want)


def test_save_numbers_files_and_the_index(tmp_path):
    ckpt = jf.train.Checkpoint(v=jf.Variable(1.0))
    prefix = str(tmp_path / "sub" / "model.ckpt")
    assert ckpt.save(prefix) == prefix + "-1"
    assert ckpt.save(prefix) == prefix + "-2"
    assert ckpt.save_counter.numpy() == 2
    files = sorted(os.listdir(tmp_path / "sub"))
    assert files == ["checkpoint", "model.ckpt-1.json", "model.ckpt-1.npz", "model.ckpt-2.json", "model.ckpt-2.npz"]
    index = (tmp_path / "sub" / "checkpoint").read_text()
    assert index.splitlines() == ['model_checkpoint_path: "model.ckpt-2"', 'all_model_checkpoint_paths: "model.ckpt-2"']
    assert jf.train.latest_checkpoint(str(tmp_path / "sub")) == prefix + "-2"
    assert jf.train.latest_checkpoint(str(tmp_path / "nothing")) is None
    meta = json.loads((tmp_path / "sub" / "model.ckpt-1.json").read_text())
    assert (meta["format"], meta["version"]) == ("jitflow.checkpoint", 1)
    assert [c["name"] for c in meta["nodes"][0]["children"]] == ["v", "save_counter"]


def test_write_uses_the_exact_prefix_and_restore_continues_the_counter(tmp_path):
    v = jf.Variable(3.0)
    ckpt = jf.train.Checkpoint(v=v)
    assert ckpt.write(str(tmp_path / "exact")) == str(tmp_path / "exact")
    assert ckpt.save_counter.numpy() == 0
    ckpt.save(str(tmp_path / "c"))
    other = jf.train.Checkpoint(v=jf.Variable(0.0))
    other.restore(str(tmp_path / "c-1"))
    assert other.save(str(tmp_path / "c")) == str(tmp_path / "c-2")


def test_restore_on_creation_of_lazily_built_modules(tmp_path):
    class Lazy(jf.Module):
        def __init__(self):
            super().__init__()
            self.inner = None

        def build(self):
            self.inner = Dense(2, 2)

    src = Lazy()
    src.build()
    src.inner.w.assign([[1.0, 2.0], [3.0, 4.0]])
    path = jf.train.Checkpoint(model=src).save(str(tmp_path / "lazy"))

    dst = Lazy()
    status = jf.train.Checkpoint(model=dst).restore(path)
    with pytest.raises(AssertionError, match="model/inner"):
        status.assert_consumed()
    status.expect_partial()
    dst.build()  # created after restore: gets the saved values on assignment
    np.testing.assert_array_equal(dst.inner.w.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    status.assert_consumed()


def test_optimizer_slots_and_iterations_restore_on_creation_and_training_continues_exactly(tmp_path):
    x = jf.constant(np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32))
    y = jf.constant(np.random.default_rng(1).normal(size=(8, 2)).astype(np.float32))

    class Lazy(jf.Module):
        def __init__(self):
            super().__init__()
            self.w = None

        def __call__(self, x):
            if self.w is None:  # built inside the jf.function's first trace
                self.w = jf.Variable(jf.initializers.GlorotUniform()([3, 2]), name="w")
            return jf.matmul(x, self.w)

    def make():
        model, opt = Lazy(), jf.optimizers.Adam(0.1)

        @jf.function
        def step(x, y):
            with jf.GradientTape() as tape:
                loss = jf.reduce_mean(jf.square(model(x) - y))
            opt.apply_gradients([(tape.gradient(loss, model.w), model.w)])
            return loss
        return model, opt, step

    model, opt, step = make()
    for _ in range(3):
        step(x, y)
    path = jf.train.Checkpoint(model=model, optimizer=opt).save(str(tmp_path / "train"))
    expected = [float(step(x, y)) for _ in range(3)]

    model2, opt2, step2 = make()
    status = jf.train.Checkpoint(model=model2, optimizer=opt2).restore(path)
    assert opt2.iterations.numpy() == 3  # existed already: restored at once
    got = [float(step2(x, y)) for _ in range(3)]  # w, then m and v, restored as they are created
    assert got == expected
    status.assert_consumed()


def test_checkpoint_manager_keeps_the_newest(tmp_path):
    v = jf.Variable(0.0)
    ckpt = jf.train.Checkpoint(v=v)
    manager = jf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2, checkpoint_name="model.ckpt")
    assert manager.latest_checkpoint is None and manager.restore_or_initialize() is None
    for i in range(1, 5):
        v.assign(float(i))
        manager.save()
    prefix = str(tmp_path / "model.ckpt")
    assert manager.checkpoints == [prefix + "-3", prefix + "-4"]
    assert manager.latest_checkpoint == prefix + "-4" == jf.train.latest_checkpoint(str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-3.json", "model.ckpt-3.npz",
                                            "model.ckpt-4.json", "model.ckpt-4.npz"]
    assert manager.save(checkpoint_number=100) == prefix + "-100"
    assert manager.checkpoints == [prefix + "-4", prefix + "-100"]

    again = jf.train.CheckpointManager(jf.train.Checkpoint(v=jf.Variable(-1.0)), str(tmp_path), max_to_keep=2,
                                       checkpoint_name="model.ckpt")
    assert again.checkpoints == [prefix + "-4", prefix + "-100"]  # recovered from the index file
    assert again.restore_or_initialize() == prefix + "-100"
    assert again.checkpoint.v.numpy() == 4.0
    with pytest.raises(ValueError, match="max_to_keep"):
        jf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=0)


def test_restore_none_and_mismatches(tmp_path):
    status = jf.train.Checkpoint(v=jf.Variable(1.0)).restore(None)
    with pytest.raises(AssertionError):
        status.assert_consumed()
    path = jf.train.Checkpoint(v=jf.Variable(1.0)).save(str(tmp_path / "c"))
    extra = jf.train.Checkpoint(v=jf.Variable(0.0), w=jf.Variable(5.0))
    status = extra.restore(path)
    assert extra.v.numpy() == 1.0
    with pytest.raises(AssertionError, match="'w'"):
        status.assert_existing_objects_matched()
    with pytest.raises(ValueError, match="is not something a checkpoint can save"):
        jf.train.Checkpoint(model=object())


# -- corrupt files never half-restore -----------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    a, b = jf.Variable([1.0, 2.0]), jf.Variable(3.0)
    path = jf.train.Checkpoint(a=a, b=b).save(str(tmp_path / "c"))
    return path, jf.train.Checkpoint(a=jf.Variable([0.0, 0.0]), b=jf.Variable(0.0))


def assert_untouched(ckpt):
    assert ckpt.a.numpy().tolist() == [0.0, 0.0] and ckpt.b.numpy() == 0.0
    assert ckpt.save_counter.numpy() == 0


def test_truncated_data_raises_data_loss_and_restores_nothing(saved):
    path, fresh = saved
    data = open(path + ".npz", "rb").read()
    open(path + ".npz", "wb").write(data[:len(data) // 2])
    with pytest.raises(jf.errors.DataLossError, match="truncated"):
        fresh.restore(path)
    assert_untouched(fresh)


def test_flipped_byte_fails_the_checksum(saved):
    path, fresh = saved
    data = bytearray(open(path + ".npz", "rb").read())
    data[-40] ^= 0xFF
    open(path + ".npz", "wb").write(bytes(data))
    with pytest.raises(jf.errors.DataLossError, match="sha256"):
        fresh.restore(path)
    assert_untouched(fresh)


def test_truncated_or_newer_index_and_missing_files(saved):
    path, fresh = saved
    text = open(path + ".json").read()
    open(path + ".json", "w").write(text[:len(text) // 2])
    with pytest.raises(jf.errors.DataLossError, match="not valid JSON"):
        fresh.restore(path)
    meta = json.loads(text)
    meta["version"] = 99
    open(path + ".json", "w").write(json.dumps(meta))
    with pytest.raises(jf.errors.DataLossError, match="newer"):
        fresh.restore(path)
    os.remove(path + ".json")
    with pytest.raises(jf.errors.DataLossError, match="did not finish"):
        fresh.restore(path)
    with pytest.raises(jf.errors.NotFoundError):
        fresh.restore(path + "-nope")
    assert_untouched(fresh)


def test_one_bad_shape_assigns_nothing(saved):
    path, _ = saved
    fresh = jf.train.Checkpoint(a=jf.Variable([0.0, 0.0, 0.0]), b=jf.Variable(0.0))  # a has the wrong shape
    with pytest.raises(ValueError, match=r"'?a'?: the checkpoint value has shape \(2,\)"):
        fresh.restore(path)
    assert fresh.b.numpy() == 0.0 and fresh.save_counter.numpy() == 0


def test_a_crash_while_writing_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    v = jf.Variable(1.0)
    ckpt = jf.train.Checkpoint(v=v)
    first = ckpt.save(str(tmp_path / "c"))
    v.assign(2.0)
    real_replace = os.replace

    def crash_on_index(src, dst):
        if dst.endswith(".json"):
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(ckpt_mod.os, "replace", crash_on_index)
    with pytest.raises(OSError, match="disk full"):
        ckpt.save(str(tmp_path / "c"))
    monkeypatch.undo()
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]  # temporary files cleaned up
    assert jf.train.latest_checkpoint(str(tmp_path)) == first
    with pytest.raises(jf.errors.DataLossError):  # the data of save 2 landed, its index did not
        jf.train.Checkpoint(v=jf.Variable(0.0)).restore(str(tmp_path / "c-2"))
    restored = jf.train.Checkpoint(v=jf.Variable(0.0))
    restored.restore(first).assert_consumed()
    assert restored.v.numpy() == 1.0
