"""Checkpoints: round trips through the object graph, restore-on-creation (variables and
optimizer slots), CheckpointManager, the file format, and corrupt files that must not
half-restore."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import jitflow as jf


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
    assert files == ["checkpoint", "model.ckpt-1.data-00000-of-00001", "model.ckpt-1.index",
                     "model.ckpt-2.data-00000-of-00001", "model.ckpt-2.index"]
    index = (tmp_path / "sub" / "checkpoint").read_text()
    assert index.splitlines() == ['model_checkpoint_path: "model.ckpt-2"', 'all_model_checkpoint_paths: "model.ckpt-2"']
    assert jf.train.latest_checkpoint(str(tmp_path / "sub")) == prefix + "-2"
    assert jf.train.latest_checkpoint(str(tmp_path / "nothing")) is None
    assert jf.train.list_variables(prefix + "-1") == [
        ("_CHECKPOINTABLE_OBJECT_GRAPH", []), ("save_counter/.ATTRIBUTES/VARIABLE_VALUE", []),
        ("v/.ATTRIBUTES/VARIABLE_VALUE", [])]
    reader = jf.train.load_checkpoint(str(tmp_path / "sub"))  # a directory: its latest checkpoint
    assert reader.get_tensor("save_counter/.ATTRIBUTES/VARIABLE_VALUE") == 2
    assert reader.get_variable_to_dtype_map()["v/.ATTRIBUTES/VARIABLE_VALUE"] is jf.float32


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
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "model.ckpt-3.data-00000-of-00001",
                                            "model.ckpt-3.index", "model.ckpt-4.data-00000-of-00001",
                                            "model.ckpt-4.index"]
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
    data = open(path + ".data-00000-of-00001", "rb").read()
    open(path + ".data-00000-of-00001", "wb").write(data[:len(data) // 2])
    with pytest.raises(jf.errors.DataLossError, match="truncated"):
        fresh.restore(path)
    assert_untouched(fresh)


def test_flipped_byte_fails_the_checksum(saved):
    path, fresh = saved
    data = bytearray(open(path + ".data-00000-of-00001", "rb").read())
    data[-1] ^= 0xFF  # in the last value (save_counter)
    open(path + ".data-00000-of-00001", "wb").write(bytes(data))
    with pytest.raises(jf.errors.DataLossError, match="fails its CRC-32C check"):
        fresh.restore(path)
    data[-1] ^= 0xFF
    data[3] ^= 0xFF  # in the object graph's string lengths
    open(path + ".data-00000-of-00001", "wb").write(bytes(data))
    with pytest.raises(jf.errors.DataLossError, match="checksum"):
        fresh.restore(path)
    assert_untouched(fresh)


def test_truncated_or_damaged_index_and_missing_files(saved):
    path, fresh = saved
    raw = open(path + ".index", "rb").read()
    open(path + ".index", "wb").write(raw[:len(raw) // 2])
    with pytest.raises(jf.errors.DataLossError, match="not a valid index"):
        fresh.restore(path)
    damaged = bytearray(raw)
    damaged[5] ^= 0x01
    open(path + ".index", "wb").write(bytes(damaged))
    with pytest.raises(jf.errors.DataLossError, match="CRC"):
        fresh.restore(path)
    os.remove(path + ".index")
    with pytest.raises(jf.errors.DataLossError, match="did not finish"):
        fresh.restore(path)
    with pytest.raises(jf.errors.NotFoundError):
        fresh.restore(path + "-nope")
    assert_untouched(fresh)


# -- jitflow's older .json + .npz checkpoints still restore (the migration path) ---------------
def write_legacy(prefix, variables):
    """A version-1 jitflow checkpoint of Checkpoint(**variables) as the previous release wrote it."""
    import hashlib
    import io
    names = sorted(variables)
    nodes = [{"kind": "object", "children": [{"name": n, "node": i + 1} for i, n in enumerate(names)]}]
    arrays = {}
    for i, n in enumerate(names):
        value = np.asarray(variables[n])
        arrays[f"n{i + 1}"] = value
        nodes.append({"kind": "variable", "children": [], "variable": {
            "key": f"n{i + 1}", "dtype": value.dtype.name, "shape": list(value.shape), "name": n + ":0"}})
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    data = buffer.getvalue()
    open(prefix + ".npz", "wb").write(data)
    meta = {"format": "jitflow.checkpoint", "version": 1, "data_file": os.path.basename(prefix) + ".npz",
            "data_bytes": len(data), "data_sha256": hashlib.sha256(data).hexdigest(), "nodes": nodes}
    open(prefix + ".json", "w").write(json.dumps(meta))
    return prefix


@pytest.fixture
def legacy(tmp_path):
    path = write_legacy(str(tmp_path / "old-1"), {"a": np.array([1.0, 2.0], np.float32),
                                                 "b": np.array(3.0, np.float32),
                                                 "save_counter": np.array(1, np.int64)})
    return path, jf.train.Checkpoint(a=jf.Variable([0.0, 0.0]), b=jf.Variable(0.0))


def test_legacy_checkpoints_restore_and_resave_in_tf_format(legacy, tmp_path):
    path, fresh = legacy
    fresh.restore(path).assert_existing_objects_matched()
    assert fresh.a.numpy().tolist() == [1.0, 2.0] and fresh.b.numpy() == 3.0
    assert jf.train.list_variables(path) == [("a/.ATTRIBUTES/VARIABLE_VALUE", [2]),
                                             ("b/.ATTRIBUTES/VARIABLE_VALUE", []),
                                             ("save_counter/.ATTRIBUTES/VARIABLE_VALUE", [])]
    new = fresh.save(str(tmp_path / "new"))
    assert new == str(tmp_path / "new-2")  # the save counter was restored too
    assert os.path.exists(new + ".index") and not os.path.exists(new + ".json")


def test_legacy_truncated_or_newer_index_and_bad_archives(legacy):
    path, fresh = legacy
    text = open(path + ".json").read()
    open(path + ".json", "w").write(text[:len(text) // 2])
    with pytest.raises(jf.errors.DataLossError, match="not valid JSON"):
        fresh.restore(path)
    meta = json.loads(text)
    open(path + ".json", "w").write(json.dumps(dict(meta, version=99)))
    with pytest.raises(jf.errors.DataLossError, match="newer"):
        fresh.restore(path)
    data = bytearray(open(path + ".npz", "rb").read())
    data[-40] ^= 0xFF
    open(path + ".npz", "wb").write(bytes(data))
    open(path + ".json", "w").write(text)
    with pytest.raises(jf.errors.DataLossError, match="sha256"):
        fresh.restore(path)
    assert fresh.a.numpy().tolist() == [0.0, 0.0] and fresh.b.numpy() == 0.0


def test_one_bad_shape_assigns_nothing(saved):
    path, _ = saved
    fresh = jf.train.Checkpoint(a=jf.Variable([0.0, 0.0, 0.0]), b=jf.Variable(0.0))  # a has the wrong shape
    with pytest.raises(ValueError, match=r"'?a'?: the checkpoint value has shape \(2,\)"):
        fresh.restore(path)
    assert fresh.b.numpy() == 0.0 and fresh.save_counter.numpy() == 0


def test_a_crash_while_writing_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    v = jf.Variable(1.0)
    ckpt = jf.train.Checkpoint(v=v)
    first = ckpt.write(str(tmp_path / "c"))
    v.assign(2.0)
    real_replace = os.replace

    def crash_on_index(src, dst):
        if dst.endswith(".index"):
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crash_on_index)
    with pytest.raises(OSError, match="disk full"):
        ckpt.write(str(tmp_path / "c"))  # the same prefix: its data file is replaced, its index is not
    monkeypatch.undo()
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]  # temporary files cleaned up
    restored = jf.train.Checkpoint(v=jf.Variable(0.0))
    # A checkpoint only ever written (never `save`d) holds no save_counter, as TF's: not "consumed".
    restored.restore(first).assert_nontrivial_match()  # the old index still reads the new data file
    assert restored.v.numpy() == 1.0
    ckpt.write(str(tmp_path / "c"))
    restored.restore(first).assert_nontrivial_match()
    assert restored.v.numpy() == 2.0


def test_string_variables_round_trip(tmp_path):
    v = jf.Variable(["a", "bc", ""])
    path = jf.train.Checkpoint(v=v).save(str(tmp_path / "c"))
    w = jf.Variable(["x", "y", "z"])
    jf.train.Checkpoint(v=w).restore(path).assert_consumed()
    assert w.numpy().tolist() == [b"a", b"bc", b""]
    assert jf.train.load_checkpoint(path).get_tensor("v/.ATTRIBUTES/VARIABLE_VALUE").tolist() == [b"a", b"bc", b""]
