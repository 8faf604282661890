"""Optimizers: update math against hand-written numpy, slots and iterations, learning-rate
forms, behaviour inside `jf.function`, and an MLP trained to >= 95% accuracy."""
from __future__ import annotations

import time

import numpy as np
import pytest

import jitflow as jf

GRADS = [np.array([0.5, -1.0, 2.0]), np.array([-0.25, 0.75, 1.0]), np.array([1.5, 0.0, -0.5]),
         np.array([0.1, 0.2, -0.3]), np.array([-1.0, 1.0, 0.25])]
W0 = np.array([1.0, -2.0, 0.5])
LR32 = float(np.float32(0.1))  # a float learning rate is kept in a float32 variable


def run(opt, steps=len(GRADS)):
    """Apply GRADS to a float64 variable; returns its value after each step."""
    w = jf.Variable(W0.copy())
    out = []
    for g in GRADS[:steps]:
        opt.apply_gradients([(jf.constant(g), w)])
        out.append(w.numpy())
    return w, out


def sgd_ref(lr, momentum=0.0, nesterov=False):
    w, v, out = W0.copy(), np.zeros(3), []
    for g in GRADS:
        if momentum:
            v = momentum * v - lr * g
            w = w + (momentum * v - lr * g if nesterov else v)
        else:
            w = w - lr * g
        out.append(w)
    return out


def adam_ref(lr, b1=0.9, b2=0.999, eps=1e-7, amsgrad=False):
    w, m, v, vhat, out = W0.copy(), np.zeros(3), np.zeros(3), np.zeros(3), []
    for t, g in enumerate(GRADS, 1):
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        vhat = np.maximum(vhat, v)
        alpha = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        w = w - alpha * m / (np.sqrt(vhat if amsgrad else v) + eps)
        out.append(w)
    return out


@pytest.mark.parametrize("momentum, nesterov", [(0.0, False), (0.9, False), (0.9, True)])
def test_sgd_matches_numpy_for_several_steps(momentum, nesterov):
    opt = jf.optimizers.SGD(learning_rate=0.1, momentum=momentum, nesterov=nesterov)
    _, got = run(opt)
    np.testing.assert_allclose(got, sgd_ref(LR32, momentum, nesterov), rtol=1e-12, atol=1e-14)
    assert opt.iterations.numpy() == len(GRADS)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adam_matches_numpy_for_several_steps(amsgrad):
    opt = jf.optimizers.Adam(learning_rate=0.1, beta_1=0.8, beta_2=0.99, epsilon=1e-6, amsgrad=amsgrad)
    w, got = run(opt)
    np.testing.assert_allclose(got, adam_ref(LR32, 0.8, 0.99, 1e-6, amsgrad), rtol=1e-12, atol=1e-14)
    assert opt.get_slot(w, "m").dtype is jf.float64
    assert sorted(opt.get_slot_names()) == (["m", "v", "vhat"] if amsgrad else ["m", "v"])


def test_defaults_follow_keras():
    sgd, adam = jf.optimizers.SGD(), jf.optimizers.Adam()
    assert float(sgd.learning_rate.numpy()) == pytest.approx(0.01)
    assert (adam.beta_1, adam.beta_2, adam.epsilon) == (0.9, 0.999, 1e-7)
    assert float(adam.learning_rate.numpy()) == pytest.approx(0.001)
    _, got = run(jf.optimizers.Adam())
    np.testing.assert_allclose(got, adam_ref(float(np.float32(0.001))), rtol=1e-12)


def test_iterations_is_an_int64_variable_counting_steps():
    opt = jf.optimizers.SGD(0.1)
    assert isinstance(opt.iterations, jf.Variable)
    assert opt.iterations.dtype is jf.int64 and opt.iterations.numpy() == 0
    run(opt, steps=2)
    assert opt.iterations.numpy() == 2


def test_none_gradients_are_skipped_with_a_warning():
    opt = jf.optimizers.SGD(0.5)
    a, b = jf.Variable([1.0]), jf.Variable([2.0], name="unused")
    with pytest.warns(UserWarning, match="unused"):
        opt.apply_gradients([(jf.constant([1.0]), a), (None, b)])
    assert a.numpy()[0] == 0.5 and b.numpy()[0] == 2.0
    with pytest.raises(ValueError, match="No gradients"):
        opt.apply_gradients([(None, b)])


def test_learning_rate_variable_schedule_and_setter():
    lr = jf.Variable(0.5, dtype=jf.float64)
    opt = jf.optimizers.SGD(lr)
    w = jf.Variable([0.0], dtype=jf.float64)
    opt.apply_gradients([(jf.constant([1.0], jf.float64), w)])
    lr.assign(0.25)
    opt.apply_gradients([(jf.constant([1.0], jf.float64), w)])
    assert w.numpy()[0] == -0.75

    schedule = jf.optimizers.SGD(lambda step: 1.0 / (1.0 + jf.cast(step, jf.float32)))
    v = jf.Variable([0.0])
    for _ in range(3):
        schedule.apply_gradients([(jf.constant([1.0]), v)])
    assert v.numpy()[0] == pytest.approx(-(1 + 1 / 2 + 1 / 3))
    assert float(schedule.learning_rate.numpy()) == pytest.approx(0.25)

    opt = jf.optimizers.SGD(0.1)
    x = jf.Variable([0.0])

    @jf.function
    def step():
        opt.apply_gradients([(jf.constant([1.0]), x)])

    step()
    opt.learning_rate = 1.0  # the traced graph reads the learning-rate variable
    step()
    assert x.numpy()[0] == pytest.approx(-1.1)
    assert step.tracing_count == 1


def test_minimize_with_a_callable_and_with_a_tape():
    w = jf.Variable(3.0)
    opt = jf.optimizers.SGD(0.25)
    opt.minimize(lambda: w * w, [w])  # grad 6 → 3 - 1.5
    assert w.numpy() == 1.5
    with jf.GradientTape() as tape:
        loss = w * w
    opt.minimize(loss, [w], tape=tape)  # grad 3 → 1.5 - 0.75
    assert w.numpy() == 0.75
    with pytest.raises(ValueError, match="callable"):
        opt.minimize(w * w, [w])


def test_in_jf_function_updates_are_graph_nodes_and_slots_are_created_once():
    w = jf.Variable(W0.copy())
    opt = jf.optimizers.Adam(0.1, beta_1=0.8, beta_2=0.99, epsilon=1e-6)

    @jf.function
    def step(g):
        opt.apply_gradients([(g, w)])

    for g in GRADS:
        step(jf.constant(g))
    np.testing.assert_allclose(w.numpy(), adam_ref(LR32, 0.8, 0.99, 1e-6)[-1], rtol=1e-12)
    assert step.tracing_count == 2  # the first call traces twice: creating slots, then checking none are
    assert len(opt.variables()) == 4  # iterations, learning rate, m, v
    graph = step.get_concrete_function(jf.constant(GRADS[0])).graph
    types = [n.type for n in graph.nodes]
    assert types.count("AssignVariableOp") == 2 and "AssignSubVariableOp" in types
    assert "AssignAddVariableOp" in types  # iterations
    assert any(n.name.startswith("Adam/") for n in graph.nodes)


def test_slot_names_follow_the_variable():
    with jf.name_scope("dense"):
        kernel = jf.Variable([1.0, 2.0], name="kernel")
    opt = jf.optimizers.SGD(0.1, momentum=0.5)
    opt.apply_gradients([(jf.constant([1.0, 1.0]), kernel)])
    assert opt.get_slot(kernel, "momentum").name == "dense/kernel/SGD/momentum:0"
    with pytest.raises(KeyError):
        opt.get_slot(jf.Variable(1.0), "momentum")


# -- an MLP trained with a jf.function train step ------------------------------------------------
def blobs(n=600, features=20, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(size=(classes, features)) * 1.2
    y = rng.integers(0, classes, size=n)
    x = centers[y] + rng.normal(size=(n, features))
    return x.astype(np.float32), y.astype(np.int32)


class Dense(jf.Module):
    def __init__(self, n_in, n_out, activation=None, seed=None, name=None):
        super().__init__(name=name)
        with self.name_scope:
            self.w = jf.Variable(jf.initializers.GlorotUniform(seed=seed)([n_in, n_out]), name="w")
            self.b = jf.Variable(jf.zeros([n_out]), name="b")
        self.activation = activation

    def __call__(self, x):
        y = jf.matmul(x, self.w) + self.b
        return self.activation(y) if self.activation else y


class MLP(jf.Module):
    def __init__(self):
        super().__init__()
        self.hidden = Dense(20, 32, jf.nn.relu, seed=1)
        self.out = Dense(32, 3, seed=2)

    def __call__(self, x):
        return self.out(self.hidden(x))


def test_mlp_trains_to_95_percent_accuracy_in_a_few_seconds():
    x, y = blobs()
    model = MLP()
    optimizer = jf.optimizers.Adam(learning_rate=0.01)
    loss_fn = jf.losses.SparseCategoricalCrossentropy(from_logits=True)

    @jf.function
    def train_step(images, labels):
        with jf.GradientTape() as tape:
            loss = loss_fn(labels, model(images))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    batches = [(jf.constant(x[i:i + 64]), jf.constant(y[i:i + 64])) for i in range(0, len(x), 64)]
    losses = [float(train_step(*batches[0]))]  # traces (and compiles kernels on a fresh machine)
    start = time.perf_counter()
    for epoch in range(10):
        for batch in batches[1:] if epoch == 0 else batches:
            losses.append(float(train_step(*batch)))
    elapsed = time.perf_counter() - start
    accuracy = np.mean(np.argmax(model(jf.constant(x)).numpy(), axis=-1) == y)
    assert accuracy >= 0.95, f"training accuracy {accuracy:.3f}"
    assert np.mean(losses[-10:]) < 0.2 * np.mean(losses[:3])
    assert elapsed < 5.0, f"99 training steps took {elapsed:.1f}s"
    assert train_step.tracing_count == 3  # first call (x2: slot creation) + the smaller last batch
    assert optimizer.iterations.numpy() == 10 * 10
