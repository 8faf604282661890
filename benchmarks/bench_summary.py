"""Scalars per second: jitflow.summary against TensorBoard's own writer,
tensorboardX and (when installed) TensorFlow, side by side in one run; then
images/s and histograms/s of jitflow's SummaryWriter against tensorboardX's.

Each writer writes N scalars (tag "loss", Python float values, steps 0..N-1;
one jitflow row uses np.float32 values) to a fresh directory, and the clock stops
only after its flush/close has put them on disk; every file is then checked to
hold N scalar records. The best of --repeat runs is kept; the table and the
ratios come from one run in one process.

Media: `add_image` of a 3x64x64 float image and `add_histogram` of 10,000
normal values (PyTorch's default bins), --media-n calls each, same rules.

    python benchmarks/bench_summary.py [--n N] [--media-n M] [--repeat R] [--quick] [--json PATH]

Importing this module runs nothing; `main(["--quick"])` runs a smoke benchmark
and returns 0.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import struct
import sys
import tempfile
import time
from typing import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import environment, gc_disabled, import_optional, print_table, write_json  # noqa: E402


def count_records(logdir: str) -> int:
    """Records in all event files under logdir, minus one file-version header each."""
    total = 0
    for path in glob.glob(os.path.join(logdir, "**", "*tfevents*"), recursive=True):
        data = open(path, "rb").read()
        pos = 0
        while pos + 12 <= len(data):
            (n,) = struct.unpack_from("<Q", data, pos)
            pos += 16 + n
            total += 1
        total -= 1
    return total


def jitflow_tf_style(logdir: str, n: int, values) -> None:
    import jitflow.summary as s

    w = s.create_file_writer(logdir)
    with w.as_default():  # flushes on exit
        for i in range(n):
            s.scalar("loss", values[i], step=i)
    w.close()


def jitflow_torch_style(logdir: str, n: int, values) -> None:
    from jitflow.summary import SummaryWriter

    w = SummaryWriter(logdir)
    for i in range(n):
        w.add_scalar("loss", values[i], i)
    w.flush()
    w.close()


def tensorboard_writer(logdir: str, n: int, values) -> None:
    from tensorboard.summary import Writer

    w = Writer(logdir)
    for i in range(n):
        w.add_scalar("loss", values[i], i)
    w.flush()
    w.close()


def tensorboardx_writer(logdir: str, n: int, values) -> None:
    from tensorboardX import SummaryWriter

    w = SummaryWriter(logdir)
    for i in range(n):
        w.add_scalar("loss", values[i], i)
    w.flush()
    w.close()


def tensorflow_summary(logdir: str, n: int, values) -> None:
    import tensorflow as tf

    w = tf.summary.create_file_writer(logdir)
    with w.as_default():
        for i in range(n):
            tf.summary.scalar("loss", values[i], step=i)
    w.close()


def media_calls(cls, logdir: str, n: int, kind: str, data) -> None:
    w = cls(logdir)
    if kind == "images":
        for i in range(n):
            w.add_image("img", data, i)
    else:
        for i in range(n):
            w.add_histogram("hist", data, i)
    w.flush()
    w.close()


def media_contenders() -> list:
    """(name, fn) pairs for the images/s and histograms/s table."""
    from jitflow.summary import SummaryWriter
    out = [("jitflow SummaryWriter", SummaryWriter)]
    tbx, reason, _ = import_optional("tensorboardX")
    if reason is None:
        out.append(("tensorboardX SummaryWriter", tbx.SummaryWriter))
    return out


def run(fn: Callable, n: int, values, repeat: int) -> float:
    """Best wall time in seconds of `repeat` runs, each in a fresh directory (GC off
    while timing, as in the other benchmarks)."""
    best = float("inf")
    for _ in range(repeat):
        logdir = tempfile.mkdtemp(prefix="bench_summary_")
        try:
            with gc_disabled():
                t = time.perf_counter_ns()
                fn(logdir, n, values)
                best = min(best, (time.perf_counter_ns() - t) / 1e9)
            got = count_records(logdir)
            if got != n:
                raise SystemExit(f"{fn.__name__}: expected {n} records on disk, found {got}")
        finally:
            shutil.rmtree(logdir, ignore_errors=True)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="scalar calls per run (default 100000)")
    ap.add_argument("--media-n", type=int, default=1000, help="image and histogram calls per run (default 1000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per writer; the best is kept (default 3)")
    ap.add_argument("--quick", action="store_true", help="smoke run: --n 10000 --repeat 1")
    ap.add_argument("--no-tf", action="store_true", help="leave TensorFlow out even if installed")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.repeat, args.media_n = 10_000, 1, 100

    # Import everything first so that no writer's clock includes an import (nor,
    # without a C CRC-32C library, numba loading jitflow's CRC kernels).
    import tensorboard.summary  # noqa: F401

    from jitflow.summary import record_writer

    record_writer.frame_many([b"warm-up"] * 64)

    floats = [i * 1e-3 for i in range(args.n)]
    f32 = list(np.arange(args.n, dtype=np.float32) * np.float32(1e-3))
    contenders = [
        ("jitflow.summary.scalar", jitflow_tf_style, floats),
        ("jitflow.summary.scalar (np.float32 values)", jitflow_tf_style, f32),
        ("jitflow SummaryWriter.add_scalar", jitflow_torch_style, floats),
        ("tensorboard.summary.Writer.add_scalar", tensorboard_writer, floats),
    ]
    notes = []
    for module, name, fn in [("tensorboardX", "tensorboardX SummaryWriter.add_scalar", tensorboardx_writer),
                             ("tensorflow", "tf.summary.scalar", tensorflow_summary)]:
        if module == "tensorflow" and args.no_tf:
            notes.append("tf.summary.scalar: left out (--no-tf)")
            continue
        _, reason, _ = import_optional(module)
        if reason is None:
            contenders.append((name, fn, floats))
        else:
            notes.append(f"{name}: not measured ({reason})")

    results = {}
    for name, fn, values in contenders:
        print(f"timing {name} ...", file=sys.stderr)
        results[name] = run(fn, args.n, values, args.repeat)
    base = results["tensorboard.summary.Writer.add_scalar"]
    print(f"{args.n} scalar calls per run, best of {args.repeat}; each run ends with the data on disk; "
          f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print_table(["writer", "scalars/s", "us/call", "x tensorboard"],
                [[name, f"{args.n / secs:,.0f}", f"{secs / args.n * 1e6:.2f}", f"{base / secs:.1f}x"]
                 for name, secs in results.items()])
    for note in notes:
        print(note)

    rng = np.random.default_rng(0)
    media_data = {"images": rng.random((3, 64, 64)).astype(np.float32), "histograms": rng.normal(size=10_000)}
    media = {}
    for kind, data in media_data.items():
        for name, cls in media_contenders():
            print(f"timing {name} {kind} ...", file=sys.stderr)
            fn = (lambda c, k, d: lambda logdir, n, _values: media_calls(c, logdir, n, k, d))(cls, kind, data)
            fn.__name__ = f"{name} {kind}"
            media.setdefault(kind, {})[name] = run(fn, args.media_n, None, args.repeat)
    print(f"\n{args.media_n} calls per run, best of {args.repeat}: add_image (3x64x64 float), "
          "add_histogram (10,000 values, default bins)")
    rows = []
    for kind, by_writer in media.items():
        ref = by_writer.get("tensorboardX SummaryWriter")
        for name, secs in by_writer.items():
            rows.append([kind, name, f"{args.media_n / secs:,.0f}",
                         "-" if ref is None else f"{ref / secs:.1f}x"])
    print_table(["summary", "writer", "per s", "x tensorboardX"], rows)
    if args.json:
        write_json(args.json, {
            "benchmark": "bench_summary", "environment": environment(), "n": args.n,
            "repeat": args.repeat, "notes": notes,
            "results": {name: {"seconds": secs, "scalars_per_s": args.n / secs, "x_tensorboard": base / secs}
                        for name, secs in results.items()},
            "media_n": args.media_n,
            "media": {kind: {name: {"seconds": secs, "per_s": args.media_n / secs} for name, secs in by.items()}
                      for kind, by in media.items()},
        })
    return 0


if __name__ == "__main__":
    sys.exit(main())
