"""The seed 002/004 retracing examples (tf. → jf.), written to a logdir.

Run as a script by the end-to-end test, so that every trace happens in a fresh process:

    python tests/webui/webui_seed.py LOGDIR
"""
from __future__ import annotations

import os
import sys

import jitflow as jf


@jf.function
def train_one_step():
    return jf.constant(1.0) * 2.0


@jf.function
def train(num_steps):                 # seed 002: a Python int argument is part of the cache key
    total = jf.constant(0.0)
    for _ in jf.range(num_steps):
        total = total + train_one_step()
    return total


@jf.function
def f(x):                             # seed 004: a tensor's dtype is part of the cache key
    return x + x


def write(logdir: str, run: str = "seed") -> str:
    writer = jf.summary.create_file_writer(os.path.join(logdir, run))
    with writer.as_default(step=0):
        train(num_steps=10)
        train(num_steps=20)           # retrace: arg 'num_steps': Python int 10 → 20
        f(jf.constant(1))
        f(jf.constant(1.0))           # retrace: arg 'x': dtype int32 → float32
        for step in range(3):
            jf.summary.scalar("loss", 1.0 / (step + 1), step=step)
    writer.close()
    return os.path.join(logdir, run)


if __name__ == "__main__":
    print(write(sys.argv[1]))
