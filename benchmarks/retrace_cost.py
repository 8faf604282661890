"""Cost of one retrace after N earlier traces (issue #22 item 12): it must stay flat.

    .venv/bin/python benchmarks/retrace_cost.py [--quick]

Prints the median time of a retrace (a new Python int argument) around trace 100 and
around trace N, and their ratio (1.0 = flat).
"""
import argparse
import statistics
import time
import warnings

import jitflow as jf


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="1,000 traces instead of 3,000")
    n = 1000 if parser.parse_args().quick else 3000
    warnings.simplefilter("ignore", jf.RetraceWarning)
    f = jf.function(lambda x, k: x * 2.0 + 1.0)
    x = jf.constant([1.0, 2.0])
    times = []
    for k in range(n):
        start = time.perf_counter()
        f(x, k)
        times.append(time.perf_counter() - start)
    early = statistics.median(times[50:150])
    late = statistics.median(times[-100:])
    print(f"retrace near trace 100: {early * 1e3:.3f} ms; near trace {n}: {late * 1e3:.3f} ms; "
          f"ratio {late / early:.2f}")


if __name__ == "__main__":
    main()
