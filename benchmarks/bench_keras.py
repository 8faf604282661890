"""Keras benchmark: the seed-004 CNN's train step, and Conv2D's GFLOP/s against BLAS matmul.

Two sections, every implementation in one process (run it with a Python that has TF,
e.g. `.venv-tf/bin/python`, to get the TF rows; JAX rows appear when jax imports):

  (a) train step  Conv2D 32 → MaxPool → Conv2D 64 → MaxPool → Flatten → Dense 128 → Dense 10,
      batch 64 of 28x28x1, Adam, sparse softmax cross-entropy from logits:
        jf train_on_batch     `model.train_on_batch(x, y)` (the compiled `fit` step)
        jf ..., 1 thread      the same with `jf.config.threading.set_intra_op_parallelism_threads(1)`
                              (jitflow's kernels otherwise split over every CPU, as TF's do)
        jf fit (per step)     one epoch of `fit` over 8 batches, divided by 8
        tf train_on_batch     tf.keras, same architecture, same API
        tf fit (per step)     tf.keras `fit`, one epoch of 8 batches, divided by 8
        jax.jit               a hand-written jitted step (lax.conv, optax-free Adam), 2×2 max pooling
                              as a reshape + max (XLA's CPU gradient of it is 2-3× faster than
                              of lax.reduce_window, so this is the stronger JAX baseline)
        jax.jit reduce_window the same step pooling with lax.reduce_window (flax's nn.max_pool)
  (b) Conv2D forward of the CNN's second convolution, (64, 13, 13, 32) * (3, 3, 32, 64)
      VALID → 285 MFLOP, in GFLOP/s, against np.dot of the same-shape im2col matmul
      (7744 x 288 @ 288 x 64) and of a 1024² matmul (the machine's BLAS peak), and tf.nn.conv2d.
      jitflow's convolution uses every CPU (as TF's); the "1 thread" row compares it with the
      matmuls on equal terms when OPENBLAS_NUM_THREADS=1.

Ratios are "jf time / other time" (< 1: jf faster), jf's fit against the other's fit and
train_on_batch against train_on_batch. The implementations run in turns (a few steps of each
per round, the first of each turn not counted) so a machine whose load changes slows them
alike; the table gives the median and the best step, and the median CPU time of a step (all the
process's threads: what the step costs the machine, less sensitive to other processes' load
than the wall time). Compare ratios from one run, not absolute times across runs.
Every implementation is timed in its steady state: jax.jit after its compile, tf.keras after
its tracing, jitflow after its train function has moved to the compiled tier (it starts
on the interpreter and compiles in the background after a few calls; the warm-up waits
for that compile rather than timing the interpreter while numba compiles beside it).
numpy's and scipy's OpenBLAS threads contend badly on a loaded machine: `OPENBLAS_NUM_THREADS=1`
can be several times faster there.

    python benchmarks/bench_keras.py [--quick] [--json PATH] [--no-tf] [--no-jax]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402

BATCH, STEPS_PER_EPOCH = 64, 8


def _data(n: int) -> tuple:
    rng = np.random.default_rng(0)
    return rng.random((n, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, n).astype(np.int32)


def _cnn(module: Any) -> Any:
    L = module.keras.layers
    model = module.keras.Sequential([
        module.keras.Input((28, 28, 1)), L.Conv2D(32, 3, activation="relu"), L.MaxPool2D(),
        L.Conv2D(64, 3, activation="relu"), L.MaxPool2D(), L.Flatten(), L.Dense(128, activation="relu"), L.Dense(10)])
    model.compile(optimizer=module.keras.optimizers.Adam(1e-3),
                  loss=module.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def _interleaved(fns: Dict[str, Callable[[], Any]], repeat: int, warmup: int, scale: float = 1.0,
                 block: int = 4) -> Dict[str, Dict[str, float]]:
    """Median and minimum seconds of each fn, run in turns of `block` calls, so a machine whose load
    changes from second to second slows every implementation alike. The first call of each turn
    is not counted: it pays for the other library's threads still spinning after its turn."""
    with C.gc_disabled():
        for fn in fns.values():
            for _ in range(warmup):
                fn()
        times: Dict[str, List[float]] = {name: [] for name in fns}
        cpu: Dict[str, List[float]] = {name: [] for name in fns}
        for _ in range(max(1, repeat // (block - 1))):
            for name, fn in fns.items():
                for k in range(block):
                    start, start_cpu = time.perf_counter(), time.process_time()
                    fn()
                    if k:
                        times[name].append((time.perf_counter() - start) * scale)
                        cpu[name].append((time.process_time() - start_cpu) * scale)
    return {name: {"median": float(np.median(t)), "min": float(np.min(t)), "cpu": float(np.median(cpu[name]))}
            for name, t in times.items()}


def bench_train_step(jf: Any, tf: Any, jax: Any, repeat: int) -> Dict[str, Dict[str, float]]:
    x, y = _data(BATCH * STEPS_PER_EPOCH)
    xb, yb = x[:BATCH], y[:BATCH]
    models = {"jf": _cnn(jf)}
    if tf is not None:
        models["tf"] = _cnn(tf)
    steps = {f"{k} train_on_batch": (lambda m=m: m.train_on_batch(xb, yb)) for k, m in models.items()}
    for _ in range(4):
        models["jf"].train_on_batch(xb, yb)
    _settle(models["jf"])
    steps["jf train_on_batch, 1 thread"] = _one_thread(jf, steps["jf train_on_batch"])
    if jax is not None:
        steps["jax.jit"] = _jax_step(jax, xb, yb, _pool_reshape)
        steps["jax.jit reduce_window"] = _jax_step(jax, xb, yb, _pool_reduce_window)
    out = _interleaved(steps, repeat, warmup=5)
    fits = {f"{k} fit (per step)": (lambda m=m: m.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, shuffle=False))
            for k, m in models.items()}
    out.update(_interleaved(fits, max(2, repeat // 4), warmup=1, scale=1.0 / STEPS_PER_EPOCH, block=2))
    return out


def _one_thread(jf: Any, step: Callable[[], Any]) -> Callable[[], Any]:
    """`step` with jitflow's kernels on the calling thread only (no intra-op parallelism)."""
    def run() -> None:
        jf.config.threading.set_intra_op_parallelism_threads(1)
        try:
            step()
        finally:
            jf.config.threading.set_intra_op_parallelism_threads(0)
    return run


def _settle(model: Any) -> None:
    """Wait until jitflow's train function runs on its compiled tier (compiled in the background
    after its first calls): the steady state, as jax.jit's step after its compile."""
    for cf in model.train_function.list_concrete_functions():
        cf.compile()


def _pool_reduce_window(jax: Any, h: Any) -> Any:
    return jax.lax.reduce_window(h, -jax.numpy.inf, jax.lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def _pool_reshape(jax: Any, h: Any) -> Any:
    """2×2 VALID max pooling as a reshape and a max (an odd last row/column dropped, as VALID does)."""
    n, hh, ww, c = h.shape
    h = h[:, :hh // 2 * 2, :ww // 2 * 2]
    return h.reshape(n, hh // 2, 2, ww // 2, 2, c).max(axis=(2, 4))


def _jax_step(jax: Any, x: np.ndarray, y: np.ndarray, pool: Callable[[Any, Any], Any]) -> Callable[[], Any]:
    jnp, lax = jax.numpy, jax.lax
    rng = np.random.default_rng(0)
    shapes = [(3, 3, 1, 32), (32,), (3, 3, 32, 64), (64,), (1600, 128), (128,), (128, 10), (10,)]
    params = [jnp.asarray(rng.normal(0, 0.05, s).astype(np.float32)) for s in shapes]
    state = [[jnp.zeros_like(p) for p in params], [jnp.zeros_like(p) for p in params], jnp.zeros((), jnp.int32)]

    def forward(p, x):
        dn = ("NHWC", "HWIO", "NHWC")
        h = jax.nn.relu(lax.conv_general_dilated(x, p[0], (1, 1), "VALID", dimension_numbers=dn) + p[1])
        h = pool(jax, h)
        h = jax.nn.relu(lax.conv_general_dilated(h, p[2], (1, 1), "VALID", dimension_numbers=dn) + p[3])
        h = pool(jax, h).reshape(x.shape[0], -1)
        h = jax.nn.relu(h @ p[4] + p[5])
        return h @ p[6] + p[7]

    def loss(p, x, y):
        logp = jax.nn.log_softmax(forward(p, x))
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    @jax.jit
    def step(p, m, v, t, x, y):
        g = jax.grad(loss)(p, x, y)
        t = t + 1
        m = [0.9 * mi + 0.1 * gi for mi, gi in zip(m, g)]
        v = [0.999 * vi + 0.001 * gi * gi for vi, gi in zip(v, g)]
        a = 1e-3 * jnp.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t)
        p = [pi - a * mi / (jnp.sqrt(vi) + 1e-7) for pi, mi, vi in zip(p, m, v)]
        return p, m, v, t

    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def run():
        nonlocal params
        params, state[0], state[1], state[2] = step(params, state[0], state[1], state[2], xj, yj)
        params[0].block_until_ready()
    return run


def bench_conv(jf: Any, tf: Any, repeat: int) -> Dict[str, float]:
    """GFLOP/s of the CNN's second convolution and of the BLAS matmuls it compares with."""
    rng = np.random.default_rng(1)
    x = rng.random((BATCH, 13, 13, 32), dtype=np.float32)
    w = rng.random((3, 3, 32, 64), dtype=np.float32)
    flops = 2.0 * BATCH * 11 * 11 * 64 * 3 * 3 * 32
    a, b = rng.random((BATCH * 11 * 11, 288), dtype=np.float32), rng.random((288, 64), dtype=np.float32)
    sq = rng.random((1024, 1024), dtype=np.float32)
    xt, wt = jf.constant(x), jf.constant(w)
    fns = {"jf.nn.conv2d": lambda: jf.nn.conv2d(xt, wt, 1, "VALID"),
           "jf.nn.conv2d, 1 thread": _one_thread(jf, lambda: jf.nn.conv2d(xt, wt, 1, "VALID")),
           "np.dot im2col-shaped": lambda: np.dot(a, b), "np.dot 1024x1024": lambda: np.dot(sq, sq)}
    if tf is not None:
        fns["tf.nn.conv2d"] = lambda: tf.nn.conv2d(x, w, 1, "VALID").numpy()
    # in turns, as the train steps: a machine whose load changes slows every kernel alike
    times = _interleaved(fns, repeat, warmup=2)
    out = {name: (2.0 * 1024 ** 3 if "1024" in name else flops) / t["median"] / 1e9 for name, t in times.items()}
    return out


def run(options: argparse.Namespace) -> Dict[str, Any]:
    import jitflow as jf
    tf, tf_note, _ = (None, "--no-tf", 0) if options.no_tf else C.import_optional("tensorflow")
    jax, jax_note, _ = (None, "--no-jax", 0) if options.no_jax else C.import_optional("jax")
    repeat = 5 if options.quick else 20
    steps = bench_train_step(jf, tf, jax, repeat)
    conv = bench_conv(jf, tf, repeat)
    return {"train_step_seconds": steps, "conv_gflops": conv, "notes": {"tensorflow": tf_note, "jax": jax_note},
            "environment": C.environment()}


def report(results: Dict[str, Any]) -> None:
    steps = results["train_step_seconds"]
    print(f"(a) seed-004 CNN train step, batch {BATCH} (run in turns; median and best of the runs)")
    rows = []
    for name, t in steps.items():
        mine = steps["jf fit (per step)" if " fit" in name else "jf train_on_batch"]
        rows.append([name, f"{t['median'] * 1e3:.1f} ms", f"{t['min'] * 1e3:.1f} ms",
                     C.format_ratio(mine["median"], t["median"]), C.format_ratio(mine["min"], t["min"]),
                     f"{t['cpu'] * 1e3:.1f} ms", C.format_ratio(mine["cpu"], t["cpu"])])
    C.print_table(["implementation", "median", "best", "jf / this (median)", "jf / this (best)", "CPU time",
                   "jf / this (CPU)"], rows)
    for name, note in results["notes"].items():
        if note:
            print(f"  {name}: skipped ({note})")
    print("\n(b) Conv2D forward (64x13x13x32 * 3x3x32x64 VALID, 285 MFLOP) vs BLAS matmul")
    conv = results["conv_gflops"]
    C.print_table(["kernel", "GFLOP/s", "jf conv / this"],
                  [[name, f"{g:.1f}", f"{conv['jf.nn.conv2d'] / g:.2f}"] for name, g in conv.items()])


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few repeats (a smoke run)")
    parser.add_argument("--json", help="also write the results as JSON to this path")
    parser.add_argument("--no-tf", action="store_true")
    parser.add_argument("--no-jax", action="store_true")
    options = parser.parse_args(argv)
    results = run(options)
    report(results)
    if options.json:
        C.write_json(options.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
