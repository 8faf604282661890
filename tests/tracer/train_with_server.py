"""A training job that TensorBoard can profile live: the demo's MLP trained with Adam
while a profiler server listens. Used by the capture tests as a real subprocess.

    python train_with_server.py PORT [--seconds S] [--jit-compile]

Prints `READY <port>` once the server listens and the train step has run (traced and
settled on its tier), then trains until S seconds have passed or stdin closes, marking
every step with `jf.profiler.experimental.Trace("train", step_num=i, _r=1)`. Exits 0
after printing `DONE <steps>`.
"""
from __future__ import annotations

import argparse
import sys
import threading
import time

import numpy as np

import jitflow as jf
from jitflow.demo import MLP, make_dataset


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--jit-compile", action="store_true")
    args = parser.parse_args(argv)

    jf.random.set_seed(0)
    x_all, y_all = make_dataset(seed=0)
    model = MLP()
    optimizer = jf.optimizers.Adam(learning_rate=0.01)

    @jf.function(jit_compile=True if args.jit_compile else None)
    def train_step(x, y):
        with jf.GradientTape() as tape:
            logits = model(x)
            loss = jf.reduce_mean(jf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    server = jf.profiler.experimental.server.start(args.port)
    rng = np.random.default_rng(0)

    def batch():
        idx = rng.choice(len(x_all), size=64, replace=False)
        return x_all[idx], y_all[idx]

    for _ in range(5):  # trace and settle before anyone captures
        train_step(*batch())
    concrete = train_step.get_concrete_function(*batch())
    deadline = time.time() + 120
    while not args.jit_compile and concrete._compile_state == "compiling" and time.time() < deadline:
        time.sleep(0.05)  # the background tier-up: profile the program that runs from now on
    print(f"READY {server.port}", flush=True)

    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    deadline = time.time() + args.seconds
    step = 0
    while not stop.is_set() and time.time() < deadline:
        with jf.profiler.experimental.Trace("train", step_num=step, _r=1):
            with jf.profiler.experimental.Trace("batch", input_pipeline=True):  # input time on xprof's pages
                x, y = batch()
            loss = train_step(x, y)
        float(loss)
        step += 1
        time.sleep(0.01)  # a modest step rate: a small machine also runs TensorBoard and the test
    jf.profiler.experimental.server.stop()
    print(f"DONE {step}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
