"""`jitflow demo`: train a small MLP and write a complete logdir to explore.

One `jf.function` train step (GradientTape + Adam) on a synthetic three-class data set,
writing per-step `loss`/`accuracy` scalars, weight histograms every few steps, the
step's graph, one profiled `trace_export`, and a deliberate retrace story: the first
step passes the learning rate as a Python float, later steps pass a tensor, so the
panel has a retrace to explain (`arg 'lr': Python float 0.01 → float32 tensor`).
"""
from __future__ import annotations

import datetime
import os
import sys
import time
from dataclasses import dataclass
from typing import Optional, TextIO

import numpy as np

import jitflow as jf

FEATURES, HIDDEN, CLASSES = 20, 64, 3


def make_dataset(n: int = 1024, seed: int = 0):
    """Three Gaussian blobs in 20 dimensions, separable but not trivially."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=0.6, size=(CLASSES, FEATURES))
    labels = rng.integers(0, CLASSES, size=n)
    x = centers[labels] + rng.normal(scale=1.5, size=(n, FEATURES))
    return x.astype(np.float32), labels.astype(np.int32)


class Dense(jf.Module):
    def __init__(self, n_in: int, n_out: int, activation=None, name: Optional[str] = None) -> None:
        super().__init__(name=name)
        with self.name_scope:
            # mypy sees no names in jf.initializers: its star import names jitflow.runtime, which the
            # type checker does not map onto runtime/ in this source layout
            self.w = jf.Variable(jf.initializers.GlorotUniform(seed=len(self.name))([n_in, n_out]), name="w")  # type: ignore[attr-defined]
            self.b = jf.Variable(jf.zeros([n_out]), name="b")
        self.activation = activation

    @jf.Module.with_name_scope
    def __call__(self, x):
        y = jf.matmul(x, self.w) + self.b
        return self.activation(y) if self.activation is not None else y


class MLP(jf.Module):
    def __init__(self) -> None:
        super().__init__(name="mlp")
        with self.name_scope:
            self.hidden = Dense(FEATURES, HIDDEN, jf.nn.relu, name="hidden")
            self.out = Dense(HIDDEN, CLASSES, name="logits")

    def __call__(self, x):
        return self.out(self.hidden(x))


def new_run_dir(parent: str = "runs/demo", now: Optional[datetime.datetime] = None) -> str:
    """A new, empty run directory `parent/YYYYmmdd-HHMMSS` (Keras' TensorBoard habit), with
    `-2`, `-3`, ... when that second is taken: each run keeps its own graphs and traces."""
    stamp = (now or datetime.datetime.now()).strftime("%Y%m%d-%H%M%S")
    os.makedirs(parent, exist_ok=True)
    for n in range(1, 1000):
        path = os.path.join(parent, stamp if n == 1 else f"{stamp}-{n}")
        try:
            os.mkdir(path)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(f"logdir: 999 run directories named {stamp}* already exist in {parent!r}")


@dataclass
class DemoResult:
    logdir: str
    steps: int
    final_loss: float
    final_accuracy: float
    traces: int


def _progress(stream: TextIO, step: int, total: int, loss: float, acc: float) -> None:
    width = 30
    done = int(width * step / total)
    stream.write(f"\r[{'#' * done}{'.' * (width - done)}] step {step}/{total}  loss {loss:.4f}  acc {acc:.3f}")
    if step == total:
        stream.write("\n")
    stream.flush()


def _settle(train_step, x, y, lr, timeout: float = 60.0) -> None:
    """Wait (bounded) for the train step's background tier-up, so that the profiled steps
    run the program every later step runs, not the interpreter racing a compile."""
    concrete = train_step.get_concrete_function(x, y, lr)
    deadline = time.time() + timeout
    while getattr(concrete, "_compile_state", None) == "compiling" and time.time() < deadline:
        time.sleep(0.02)


def train(logdir: str = "runs/demo", steps: int = 200, batch: int = 64, seed: int = 0,
          progress: Optional[TextIO] = sys.stderr) -> DemoResult:
    """Run the demo training; returns the final metrics. Writes everything into `logdir`, one
    run directory (`jitflow demo` passes a new one from `new_run_dir` each time)."""
    if steps < 1:
        raise ValueError(f"steps: expected a positive number of training steps; got {steps}")
    jf.random.set_seed(seed)
    x_all, y_all = make_dataset(seed=seed)
    model = MLP()
    optimizer = jf.optimizers.Adam(learning_rate=0.01)
    writer = jf.summary.create_file_writer(logdir)

    @jf.function
    def train_step(x, y, lr):
        with jf.GradientTape() as tape:
            logits = model(x)
            loss = jf.reduce_mean(jf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.learning_rate.assign(lr)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        predicted = jf.argmax(logits, axis=1, output_type=jf.int32)
        accuracy = jf.reduce_mean(jf.cast(jf.equal(predicted, y), jf.float32))
        jf.summary.scalar("loss", loss)
        jf.summary.scalar("accuracy", accuracy)
        return loss, accuracy

    rng = np.random.default_rng(seed)
    lr_tensor = jf.constant(0.01)
    loss = acc = float("nan")
    # The profile covers a few steady-state steps: after the traces, the tier-up and the
    # first calls that compile kernels, so it shows what a long run spends its time on.
    profile_from = min(10, max(0, steps - 3))
    profile_to = min(steps - 1, profile_from + 2)
    with writer.as_default():
        for step in range(steps):
            jf.summary.experimental.set_step(step)
            idx = rng.choice(len(x_all), size=batch, replace=False)
            x, y = x_all[idx], y_all[idx]
            if step == profile_from:
                if step >= 2:  # the tensor-lr trace exists (step 1 made it): wait for its tier-up
                    _settle(train_step, x, y, lr_tensor)
                jf.summary.trace_on(graph=True, profiler=True)
            with jf.profiler.experimental.Trace("train", step_num=step, _r=1):
                # Step 0 passes a Python float: a trace keyed on the value 0.01. Every later
                # step passes a tensor, which traces once more and is then reused.
                loss_t, acc_t = train_step(x, y, 0.01 if step == 0 else lr_tensor)
            if step == profile_to:
                jf.summary.trace_export("train_step", step=step, profiler_outdir=logdir)
            if step == 0:
                jf.summary.graph(train_step)
            if step % 10 == 0 or step == steps - 1:
                for var in model.trainable_variables:
                    jf.summary.histogram(var.name.split(":")[0], var, step=step)
            loss, acc = float(loss_t), float(acc_t)
            if progress is not None and ((step + 1) % max(1, steps // 50) == 0 or step + 1 == steps):
                _progress(progress, step + 1, steps, loss, acc)
        jf.summary.text("about", "jitflow demo: a 20-64-3 MLP trained with Adam on three Gaussian blobs",
                        step=0)
    writer.close()
    return DemoResult(os.fspath(logdir), steps, loss, acc, train_step.tracing_count)
