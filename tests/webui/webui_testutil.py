"""Helpers for the panel tests: jf.functions whose traces fill a logdir, and the writer of
that logdir (used by conftest.py's session fixture)."""
from __future__ import annotations

import os
from pathlib import Path

import jitflow as jf

XSS_FN = "<script>alert('fn')</script>"
XSS_ARG = "<script>alert(1)</script>"


@jf.function
def f(x):
    return x * 2


@jf.function
def train(num_steps):
    total = jf.constant(0.0)
    for _ in jf.range(num_steps):
        total = total + 1.0
    return total


@jf.function
def noisy(x):                       # a new shape on every call: ≥5 traces → a warning
    return jf.reduce_sum(x)


@jf.function
def model(x):
    with jf.name_scope("dense1"):
        y = jf.tanh(jf.matmul(x, x) + 1.0)
    with jf.name_scope("dense2"):
        y = jf.reduce_sum(y * 2.0)
    return y


def _xss(x, tag):
    return x + 1.0


_xss.__name__ = _xss.__qualname__ = XSS_FN
xss = jf.function(_xss)


class Weird:
    def __repr__(self) -> str:
        return "<script>alert(2)</script>"


@jf.function
def takes_object(o):
    return jf.constant(1.0)


def event_file(run_dir: Path) -> Path:
    return next(p for p in sorted(run_dir.iterdir()) if "tfevents" in p.name)


def write_logdir(logdir: Path) -> None:
    w = jf.summary.create_file_writer(str(logdir / "train"))
    with w.as_default(step=0):
        f(1)
        f(2)                                  # Python int 1 → 2
        f(jf.constant(1))                     # Python int → tensor
        f(jf.constant(1.0))                   # dtype int32 → float32
        train(num_steps=10)
        train(num_steps=20)                   # Python int 10 → 20
        for n in range(1, 7):
            noisy(jf.constant([1.0] * n))     # shape (1,) → (2,) → ...
        for step in range(5):
            jf.summary.scalar("loss", 1.0 / (step + 1), step=step)
        x = jf.constant([[1.0, 2.0], [3.0, 4.0]])
        for step in (3, 5):
            jf.summary.trace_on(graph=True, profiler=False)
            model(x)
            model(x)
            f(jf.constant(3.0))
            jf.summary.trace_export("step_trace", step=step)
        jf.summary.trace_on(graph=True, profiler=False)
        jf.summary.trace_export("graph_only", step=6)
    w.close()

    w = jf.summary.create_file_writer(str(logdir / "eval" / "xss"))
    with w.as_default(step=1):
        xss(jf.constant(1.0), "a")
        xss(jf.constant(1.0), XSS_ARG)        # Python str 'a' → '<script>…'
        takes_object(Weird())
        takes_object(Weird())                 # new object <Weird …>
    w.close()

    w = jf.summary.create_file_writer(str(logdir))
    with w.as_default(step=0):
        jf.summary.scalar("root_metric", 1.0, step=2)
    w.close()

    good = event_file(logdir / "train").read_bytes()
    (logdir / "broken").mkdir()
    (logdir / "broken" / "events.out.tfevents.1.broken").write_bytes(good[: len(good) * 2 // 3])
    (logdir / "garbage").mkdir()
    (logdir / "garbage" / "events.out.tfevents.1.garbage").write_bytes(os.urandom(64) + b"\x00" * 64)
