"""Checkpoint write and restore: jitflow's TF-format checkpoints against TensorFlow's own
(when installed) and a plain `np.savez` + fsync baseline, in one process.

A model of L dense layers (W: n x n float32, b: n) is written to a fresh prefix (as
`CheckpointManager.save` does) and restored into a twin; the best of --repeat runs is kept.
A second jitflow row rewrites one prefix, which costs more: the new data file keeps the bytes
the old index points to, so a kill at any moment leaves the old checkpoint restorable. Everything is written
durably (jitflow and the baseline fsync; TF's writer syncs too).

    python benchmarks/bench_checkpoint.py [--n 512] [--layers 8] [--repeat 5] [--quick]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import import_optional, print_table  # noqa: E402


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.n, args.layers, args.repeat = 64, 2, 2
    import jitflow as jf
    rng = np.random.default_rng(0)
    values = [(rng.normal(size=(args.n, args.n)).astype(np.float32), rng.normal(size=args.n).astype(np.float32))
              for _ in range(args.layers)]
    mbytes = sum(w.nbytes + b.nbytes for w, b in values) / 1e6
    work = tempfile.mkdtemp(prefix="bench_ckpt_")
    rows = []
    try:
        jf_vars = [jf.Variable(v) for pair in values for v in pair]
        jf_ckpt = jf.train.Checkpoint(vars=jf_vars)
        twin = jf.train.Checkpoint(vars=[jf.Variable(np.zeros_like(v)) for pair in values for v in pair])
        counter = iter(range(10**6))
        prefix = os.path.join(work, "jf", "ckpt")
        t_write = best(lambda: jf_ckpt.write(f"{prefix}-{next(counter)}"), args.repeat)  # a new prefix each time
        t_same = best(lambda: jf_ckpt.write(prefix), args.repeat)  # rewriting one prefix keeps the old one
        t_read = best(lambda: twin.restore(prefix), args.repeat)
        np.testing.assert_array_equal(twin.vars[0].numpy(), values[0][0])
        rows.append(["jitflow (TF format)", t_write, t_read])
        rows.append(["jitflow, same prefix again", t_same, t_read])

        base = os.path.join(work, "np.npz")

        def np_write():
            with open(base, "wb") as f:
                np.savez(f, *[v for pair in values for v in pair])
                f.flush()
                os.fsync(f.fileno())

        def np_read():
            with np.load(base) as z:
                return [z[k] for k in z.files]
        rows.append(["np.savez + fsync", best(np_write, args.repeat), best(np_read, args.repeat)])

        tf, reason, _ = import_optional("tensorflow")
        if tf is not None:
            tf_vars = [tf.Variable(v) for pair in values for v in pair]
            tf_ckpt = tf.train.Checkpoint(vars=tf_vars)
            tf_twin = tf.train.Checkpoint(vars=[tf.Variable(np.zeros_like(v)) for pair in values for v in pair])
            tf_prefix = os.path.join(work, "tf", "ckpt")
            tf_counter = iter(range(10**6))
            t_write = best(lambda: tf_ckpt.write(f"{tf_prefix}-{next(tf_counter)}"), args.repeat)
            tf_ckpt.write(tf_prefix)
            t_read = best(lambda: tf_twin.restore(tf_prefix), args.repeat)
            rows.append(["TensorFlow", t_write, t_read])
        else:
            print(f"(TensorFlow not measured: {reason})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ref = rows[0]
    print(f"checkpoint of {args.layers} layers of {args.n}x{args.n} float32 ({mbytes:.1f} MB), best of {args.repeat}")
    print_table(["writer", "write ms", "restore ms", "write vs jitflow", "restore vs jitflow"],
                [[r[0], f"{r[1] * 1e3:.1f}", f"{r[2] * 1e3:.1f}", f"{r[1] / ref[1]:.2f}x", f"{r[2] / ref[2]:.2f}x"]
                 for r in rows])
    return 0


if __name__ == "__main__":
    sys.exit(main())
