"""AutoGraph's coding rules (seed 000), with tf. → jf.

Run: python examples/autograph_rules.py [--logdir runs/autograph_rules]
"""
import argparse

import numpy as np

import jitflow as jf


@jf.function
def np_random():
    a = np.random.randn(3, 3)        # frozen at trace time
    jf.print(a)


@jf.function
def jf_random():
    a = jf.random.normal((3, 3))     # a new draw on every call
    jf.print(a)


x = jf.Variable(1.0, dtype=jf.float32)


@jf.function
def outer_var():
    x.assign_add(1.0)
    jf.print(x)
    return x


@jf.function
def inner_var():
    v = jf.Variable(1.0, dtype=jf.float32)  # created on every trace: not allowed
    v.assign_add(1.0)
    return v


@jf.function
def square_if_positive(v):
    if v > 0:          # a tensor condition: becomes jf.cond
        v = v * v
    else:
        v = 0.0
    return v


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default="runs/autograph_rules")
    args = parser.parse_args(argv)
    writer = jf.summary.create_file_writer(args.logdir)
    with writer.as_default(step=0):
        run()
        jf.summary.graph(square_if_positive)
    writer.close()
    print("wrote", args.logdir)
    return args.logdir


def run() -> None:
    print("numpy random is frozen at trace time:")
    np_random()
    np_random()
    print("jf.random draws again on every call:")
    jf_random()
    jf_random()
    print("variables created outside the function:")
    outer_var()
    outer_var()
    try:
        inner_var()
    except ValueError as e:
        print("variables created inside the function raise ValueError:\n  ", e)
    print("square_if_positive(3.0) =", square_if_positive(jf.constant(3.0)).numpy())
    print("square_if_positive(-3.0) =", square_if_positive(jf.constant(-3.0)).numpy())
    print(jf.autograph.to_code(square_if_positive))


if __name__ == "__main__":
    main()
