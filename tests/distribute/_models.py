"""A small model and data shared by the distribute tests and the MPI worker script."""
import numpy as np

import jitflow as jf

GLOBAL_BATCH = 8
STEPS = 4


class MLP(jf.Module):
    def __init__(self, seed: int = 0):
        super().__init__()
        rng = np.random.default_rng(seed)
        with self.name_scope:
            self.w1 = jf.Variable(rng.normal(size=(3, 5)).astype(np.float32), name="w1")
            self.b1 = jf.Variable(np.zeros(5, np.float32), name="b1")
            self.w2 = jf.Variable(rng.normal(size=(5, 1)).astype(np.float32), name="w2")

    def __call__(self, x):
        return jf.matmul(jf.tanh(jf.matmul(x, self.w1) + self.b1), self.w2)


def batches(steps: int = STEPS, batch: int = GLOBAL_BATCH):
    rng = np.random.default_rng(1)
    out = []
    for _ in range(steps):
        x = rng.normal(size=(batch, 3)).astype(np.float32)
        y = (x.sum(axis=1, keepdims=True) > 0).astype(np.float32)
        out.append((x, y))
    return out


def train(strategy, traced: bool, optimizer_cls=None, steps: int = STEPS, clip: bool = False):
    """Train MLP under `strategy` on the same global batches; returns the final weights."""
    optimizer_cls = optimizer_cls or (lambda: jf.optimizers.SGD(0.1, momentum=0.9))
    with strategy.scope():
        model = MLP()
        optimizer = optimizer_cls()

    def step_fn(x, y):
        with jf.GradientTape() as tape:
            per_example = jf.square(model(x) - y)
            loss = jf.reduce_sum(per_example) / float(GLOBAL_BATCH)   # scaled by the global batch
        grads = tape.gradient(loss, model.trainable_variables)
        if clip:  # new gradient tensors (equal values): apply_gradients gets other tensors than the tape made
            grads = [jf.clip_by_norm(g, 1e6) for g in grads]
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def train_step(x, y):
        losses = strategy.run(step_fn, args=(x, y))
        return strategy.reduce(jf.distribute.ReduceOp.SUM, losses, axis=None)

    if traced:
        train_step = jf.function(train_step)
    losses = []
    for x, y in strategy.experimental_distribute_dataset(batches(steps)):
        losses.append(float(train_step(x, y)))
    return [v.numpy() for v in model.trainable_variables], losses, int(optimizer.iterations.numpy())


def keras_data(rows: int = 40, seed: int = 2):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32) > 0).astype(np.float32)
    return x, y


def keras_fit(strategy, epochs: int = 2, batch_size: int = 10, rows: int = 40, seed=7, run_eagerly=False,
              callbacks=None):
    """Build, compile and fit a small Keras model in `strategy.scope()` on fixed data.

    Returns (weights, history dict, evaluate dict, predictions). The shuffling and the weights
    are seeded, so 1 and 2 replicas (or workers) see the same global batches."""
    jf.random.set_seed(seed)   # None: unseeded (the workers must then agree on the shuffling themselves)
    x, y = keras_data(rows)
    with strategy.scope():
        model = jf.keras.Sequential([jf.keras.layers.Dense(6, activation="tanh", input_shape=(3,)),
                                     jf.keras.layers.Dense(1, activation="sigmoid")])
        model.compile(jf.keras.optimizers.SGD(0.2, momentum=0.9), "binary_crossentropy",
                      metrics=["binary_accuracy"], run_eagerly=run_eagerly)
    history = model.fit(x, y, batch_size=batch_size, epochs=epochs, verbose=0, shuffle=True, callbacks=callbacks)
    evaluated = model.evaluate(x, y, batch_size=batch_size, verbose=0, return_dict=True)
    predicted = model.predict(x, batch_size=batch_size, verbose=0)
    return [w.numpy() for w in model.trainable_variables], history.history, evaluated, predicted
