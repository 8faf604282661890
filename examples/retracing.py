"""When does a jf.function trace again? (seed 002/004, with tf. → jf.)

Run: python examples/retracing.py [--logdir runs/retracing]
Every trace is recorded with its reason; the last lines print them, and the records
go to the logdir for `jitflow panel --logdir runs/retracing`.
"""
import argparse

import numpy as np

import jitflow as jf


@jf.function
def f(x):
    print("The function is running in Python")  # only while tracing
    jf.print(x)                                  # every call


def main(argv=None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default="runs/retracing")
    args = parser.parse_args(argv)
    writer = jf.summary.create_file_writer(args.logdir)
    with writer.as_default(step=0):
        run()
    writer.close()
    print("wrote", args.logdir)
    return args.logdir


def run() -> None:
    print("-- tensors and numpy arrays: keyed by dtype and shape")
    f(jf.constant(1, dtype=jf.int32))
    f(jf.constant(2, dtype=jf.int32))
    f(np.array(2, dtype=np.int32))
    f(jf.constant(0.1, dtype=jf.float32))
    f(jf.constant(0.2, dtype=jf.float32))

    print("-- Python numbers: keyed by value")
    for value in (1, 2, 1, 0.1, 0.2, 0.1):
        f(value)

    print(f"-- {f.tracing_count} traces; why each happened:")
    for record in jf.trace_records.records():
        if record.function == "f":
            print(f"  #{record.trace_number}: {record.reason}")
            if record.advice:
                print(f"      advice: {record.advice}")


if __name__ == "__main__":
    main()
