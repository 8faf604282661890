"""Seed examples for training: GradientTape, optimizer loops, Checkpoint / CheckpointManager,
TensorArray and initializers (seeds 003 and 004), ported with `tf.` → `jf.`.

Printed output is compared line by line where it is deterministic. Where TF printed random
values (TensorArray of `tf.random.normal`), the tests check the relations the cells show
(which element equals which). Paths are relative (`data/...`, `./save/...`) as in the
seeds, so each test runs in its own temporary directory.
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.training.checkpoint import CheckpointLoadStatus


@pytest.fixture(autouse=True)
def in_tmp_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- seed 003: checkpoints and restore-on-creation (In [19]-[24]) ---------------------------------
class MyModule(jf.Module):
    def assign(self, init=jf.constant([1., 2., 3.]), name=None):
        with self.name_scope:
            self.w = jf.Variable(init)

    def operate(self, value):
        self.w.assign_add(value)


def test_003_restore_on_creation(capsys):
    m = MyModule(name='test')
    m.assign()
    m.operate([1., 1., 1.])
    assert repr(m.w) == ("<jf.Variable 'test/Variable:0' shape=(3,) dtype=float32, "
                         "numpy=array([2., 3., 4.], dtype=float32)>")

    ckpt = jf.train.Checkpoint(module=m)
    assert ckpt.save('data/ckpt.save.test') == 'data/ckpt.save.test-1'

    module = MyModule(name='test')

    def exists():
        try:
            module.w  # noqa: B018 -- the access itself is what may raise
        except AttributeError:
            print("w doesn't exist.")
        else:
            print("w already exists.")

    exists()
    ckpt = jf.train.Checkpoint(module=module)
    status = ckpt.restore(jf.train.latest_checkpoint('data'))
    assert isinstance(status, CheckpointLoadStatus)
    exists()
    module.assign(jf.constant([1., 1., 1.]))
    assert capsys.readouterr().out == "w doesn't exist.\nw doesn't exist.\n"
    assert repr(module.w) == ("<jf.Variable 'test/Variable:0' shape=(3,) dtype=float32, "
                              "numpy=array([2., 3., 4.], dtype=float32)>")  # so you see...


def test_003_latest_checkpoint():
    jf.train.Checkpoint(step=jf.Variable(1)).save('data/checkpoint')
    assert jf.train.latest_checkpoint('data') == 'data/checkpoint-1'


# -- seed 003: TensorArray (In [22]-[32]) ------------------------------------------------------------
def test_003_tensor_array_unstack_read_stack_gather_scatter_split():
    x = jf.TensorArray(dtype=jf.float32, size=3, infer_shape=False, clear_after_read=False)
    a = jf.random.normal([3, 2, 2])
    x.unstack(a)
    first = x.read(0)
    assert repr(first).startswith("<jf.Tensor: shape=(2, 2), dtype=float32, numpy=\narray([[")
    np.testing.assert_array_equal(first.numpy(), a.numpy()[0])
    assert repr(x.stack().shape) == "TensorShape([3, 2, 2])"
    gathered = x.gather([1, 2])
    assert gathered.shape == (2, 2, 2)
    np.testing.assert_array_equal(gathered.numpy(), a.numpy()[[1, 2]])
    y = x.scatter([2, 1, 0], a)
    np.testing.assert_array_equal(y.read(0).numpy(), a.numpy()[2])  # the seed's In [28] ran after this
    np.testing.assert_array_equal(x.read(0).numpy(), a.numpy()[2])  # eager: y is x, changed in place

    a = jf.random.normal([5, 6])
    x.split(a, [1, 2, 2])  # lengths 1, 2, 2
    assert x.read(0).shape == (1, 6) and x.read(1).shape == (2, 6)
    np.testing.assert_array_equal(x.read(0).numpy(), a.numpy()[:1])
    np.testing.assert_array_equal(x.read(1).numpy(), a.numpy()[1:3])


# -- seed 003: initializers -----------------------------------------------------------------------------
def test_003_initializers():
    normal = jf.initializers.glorot_normal()(shape=[20, 30])
    uniform = jf.initializers.glorot_uniform()(shape=[20, 30])
    assert normal.shape == uniform.shape == (20, 30)
    assert np.abs(uniform.numpy()).max() <= np.sqrt(6 / 50)
    assert np.abs(normal.numpy()).max() <= 2 * np.sqrt(2 / 50) / 0.87962566103423978
    scalar = jf.random_normal_initializer(mean=0.0, stddev=0.05)(shape=[])
    assert scalar.shape == () and scalar.dtype is jf.float32
    u = jf.random_uniform_initializer(minval=-0.05, maxval=0.05)(shape=[])
    assert u.shape == () and -0.05 <= float(u) < 0.05


# -- seed 003: GradientTape (In [63] and the higher-order cell) --------------------------------------
def test_003_persistent_tape():
    x = jf.constant(3.0)
    with jf.GradientTape(persistent=True) as t:
        t.watch(x)  # x is a constant, so it must be watched
        y = x * x
        z = y * y
    dz_dx = t.gradient(z, x)  # 108.0 (4*x^3 at x = 3)
    dy_dx = t.gradient(y, x)  # 6.0
    del t
    assert repr(dz_dx) == "<jf.Tensor: shape=(), dtype=float32, numpy=108.0>"
    assert repr(dy_dx) == "<jf.Tensor: shape=(), dtype=float32, numpy=6.0>"


def test_003_higher_order_gradients():
    x = jf.Variable(1.0)
    with jf.GradientTape() as t:
        with jf.GradientTape() as t2:
            y = x * x * x
        dy_dx = t2.gradient(y, x)
    d2y_dx2 = t.gradient(dy_dx, x)
    assert dy_dx.numpy() == 3.0
    assert d2y_dx2.numpy() == 6.0


# -- seed 004: model, loss object, optimizer, training loop ------------------------------------------
class MyModel(jf.Module):
    def __init__(self):
        super().__init__()
        self.w = jf.Variable(jf.zeros([4, 3]))
        self.b = jf.Variable(jf.zeros([3]))

    def __call__(self, inputs):
        return jf.nn.softmax(jf.matmul(inputs, self.w) + self.b)


def data():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 3, size=32).astype(np.int32)
    images = (np.eye(4, dtype=np.float32)[labels] * 3 + rng.normal(size=(32, 4)).astype(np.float32) * 0.1)
    return jf.constant(images), jf.constant(labels)


def test_004_gradient_tape_and_sgd_loop():
    model = MyModel()
    optimizer = jf.optimizers.SGD()
    loss_obj = jf.losses.SparseCategoricalCrossentropy()
    images, labels = data()
    losses = []
    for _ in range(20):
        with jf.GradientTape() as tape:
            predictions = model(images)
            loss = loss_obj(labels, predictions)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        losses.append(float(loss))
    assert losses[0] == pytest.approx(np.log(3), rel=1e-6)  # zero weights: uniform predictions
    assert all(b < a for a, b in zip(losses, losses[1:]))
    assert optimizer.iterations.numpy() == 20


def test_004_tf_function_train_step_prints_the_loss(capsys):
    model = MyModel()
    optimizer = jf.optimizers.Adam(learning_rate=0.001)

    @jf.function
    def train_step(images, labels):
        with jf.GradientTape() as tape:
            predictions = model(images)
            loss = jf.losses.sparse_categorical_crossentropy(labels, predictions)
            loss = jf.reduce_mean(loss)
            # note: jf.print, not print: Python's print runs only while tracing
            jf.print('loss', loss)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))

    images, labels = data()
    for _ in range(3):
        train_step(images, labels)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and lines[0] == "loss 1.09861231"
    values = [float(line.split()[1]) for line in lines]
    assert values[2] < values[1] < values[0]
    assert train_step.tracing_count == 2  # the first call traces twice (Adam's slots are created once)


# -- seed 004: tf.train.Checkpoint and CheckpointManager ---------------------------------------------
def test_004_checkpoint_save_and_restore_by_key_names(in_tmp_dir):
    model, optimizer = MyModel(), jf.optimizers.Adam()
    model.w.assign(jf.ones([4, 3]))
    checkpoint = jf.train.Checkpoint(myAwesomeModel=model, myAwesomeOptimizer=optimizer)
    assert checkpoint.save('./save/model.ckpt') == './save/model.ckpt-1'
    # the seed: "checkpoint、model.ckpt-1.index 和 model.ckpt-1.data-00000-of-00001 的三个文件"
    assert sorted(os.listdir('save')) == ['checkpoint', 'model.ckpt-1.data-00000-of-00001', 'model.ckpt-1.index']

    model_to_be_restored = MyModel()
    checkpoint = jf.train.Checkpoint(myAwesomeModel=model_to_be_restored)  # same key name
    checkpoint.restore('./save/model.ckpt-1')
    np.testing.assert_array_equal(model_to_be_restored.w.numpy(), np.ones((4, 3)))

    model = MyModel()
    checkpoint = jf.train.Checkpoint(myAwesomeModel=model)
    checkpoint.restore(jf.train.latest_checkpoint('./save'))
    np.testing.assert_array_equal(model.w.numpy(), np.ones((4, 3)))


def test_004_checkpoint_manager_with_checkpoint_numbers(capsys):
    model = MyModel()
    checkpoint = jf.train.Checkpoint(model=model)
    manager = jf.train.CheckpointManager(checkpoint, directory='./save', checkpoint_name='model.ckpt',
                                         max_to_keep=3)
    for batch_index in range(1, 501):
        if batch_index % 100 == 0:
            path = manager.save(checkpoint_number=batch_index)
            print("model saved to %s" % path)
    assert capsys.readouterr().out.splitlines() == [f"model saved to ./save/model.ckpt-{n}"
                                                    for n in (100, 200, 300, 400, 500)]
    assert manager.checkpoints == ['./save/model.ckpt-300', './save/model.ckpt-400', './save/model.ckpt-500']
    assert manager.save() == './save/model.ckpt-6'  # no number given: the save counter


# -- seed 004: TensorArray ("arr = arr.write(index, value)" in graph mode) --------------------------
def test_004_tensor_array_in_a_function(capsys):
    @jf.function
    def array_write_and_read():
        arr = jf.TensorArray(dtype=jf.float32, size=3)
        arr = arr.write(0, jf.constant(0.0))
        arr = arr.write(1, jf.constant(1.0))
        arr = arr.write(2, jf.constant(2.0))
        arr_0 = arr.read(0)
        arr_1 = arr.read(1)
        arr_2 = arr.read(2)
        return arr_0, arr_1, arr_2

    a, b, c = array_write_and_read()
    print(a, b, c)
    assert capsys.readouterr().out == ("jf.Tensor(0.0, shape=(), dtype=float32) jf.Tensor(1.0, shape=(), "
                                       "dtype=float32) jf.Tensor(2.0, shape=(), dtype=float32)\n")


def test_004_dynamic_tensor_array_in_a_loop():
    @jf.function
    def collect(n):
        arr = jf.TensorArray(jf.float32, size=0, dynamic_size=True)
        for i in jf.range(n):
            arr = arr.write(i, jf.cast(i, jf.float32) / 2.0)
        return arr.stack()

    np.testing.assert_array_equal(collect(jf.constant(4)).numpy(), [0.0, 0.5, 1.0, 1.5])
