"""The same MLP train step in jitflow and TensorFlow, from the same initial weights.

Both frameworks run a `function`-compiled step (GradientTape + SGD or Adam, relu,
sparse softmax cross-entropy) on the same batches; the script prints both loss curves,
their largest difference, and the per-step time ratio. It needs TensorFlow, so run it
from an environment that has both (see README.md in this folder):

    /tmp/benchenv/bin/python benchmarks/compare_tf_mlp.py [--steps 50] [--optimizer adam]
"""
from __future__ import annotations

import argparse
import sys
import time
from typing import List, Optional

import numpy as np

import jitflow as jf


def _data(n: int, d: int, classes: int, seed: int):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=0.8, size=(classes, d))
    y = rng.integers(0, classes, size=n)
    x = centers[y] + rng.normal(size=(n, d))
    return x.astype(np.float32), y.astype(np.int32)


def _weights(d: int, hidden: int, classes: int, seed: int):
    rng = np.random.default_rng(seed + 1)
    lim1, lim2 = np.sqrt(6 / (d + hidden)), np.sqrt(6 / (hidden + classes))
    return [rng.uniform(-lim1, lim1, (d, hidden)).astype(np.float32), np.zeros(hidden, np.float32),
            rng.uniform(-lim2, lim2, (hidden, classes)).astype(np.float32), np.zeros(classes, np.float32)]


def _train_step(m, params, optimizer):
    """One SGD/Adam step of the MLP in namespace `m` (jf or tf: the same API)."""
    def step(x, y):
        with m.GradientTape() as tape:
            h = m.nn.relu(m.matmul(x, params[0]) + params[1])
            logits = m.matmul(h, params[2]) + params[3]
            loss = m.reduce_mean(m.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        grads = tape.gradient(loss, params)
        optimizer.apply_gradients(zip(grads, params))
        return loss
    return step


def run_jitflow(weights, batches, opt: str, lr: float):
    params = [jf.Variable(w) for w in weights]
    optimizer = jf.optimizers.Adam(lr) if opt == "adam" else jf.optimizers.SGD(lr)
    return _drive(jf.function(_train_step(jf, params, optimizer), jit_compile=True), batches)


def run_tensorflow(tf, weights, batches, opt: str, lr: float):
    params = [tf.Variable(w) for w in weights]
    optimizer = tf.keras.optimizers.Adam(lr) if opt == "adam" else tf.keras.optimizers.SGD(lr)
    return _drive(tf.function(_train_step(tf, params, optimizer)), batches)


def _drive(step, batches):
    losses, times = [], []
    for x, y in batches:
        start = time.perf_counter()
        loss = step(x, y)
        value = float(loss)
        times.append(time.perf_counter() - start)
        losses.append(value)
    return np.array(losses), float(np.median(times[5:] or times))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--features", type=int, default=784)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args(argv)
    try:
        import tensorflow as tf
    except ImportError:
        print("TensorFlow is not installed here; run this from an environment with both (see README.md).")
        return 0
    x, y = _data(args.batch * args.steps, args.features, args.classes, seed=0)
    batches = [(x[i:i + args.batch], y[i:i + args.batch]) for i in range(0, len(x), args.batch)]
    weights = _weights(args.features, args.hidden, args.classes, seed=0)
    jf_losses, jf_time = run_jitflow(weights, batches, args.optimizer, args.lr)
    tf_losses, tf_time = run_tensorflow(tf, weights, batches, args.optimizer, args.lr)
    diff = np.abs(jf_losses - tf_losses)
    print(f"MLP {args.features}-{args.hidden}-{args.classes}, batch {args.batch}, {args.optimizer} lr={args.lr}")
    print(" step   jitflow loss   TensorFlow loss   |diff|")
    for i in list(range(0, len(jf_losses), max(1, len(jf_losses) // 10))) + [len(jf_losses) - 1]:
        print(f"{i:5d}   {jf_losses[i]:12.6f}   {tf_losses[i]:15.6f}   {diff[i]:.2e}")
    print(f"largest |loss difference| over {len(diff)} steps: {diff.max():.3e} "
          f"(relative {np.max(diff / np.maximum(np.abs(tf_losses), 1e-12)):.3e})")
    print(f"median step time: jitflow {jf_time * 1e3:.3f} ms, TensorFlow {tf_time * 1e3:.3f} ms "
          f"(jitflow ÷ TensorFlow = {jf_time / tf_time:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
