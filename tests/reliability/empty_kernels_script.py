"""Run every reduction/normalisation kernel on empty and zero-size inputs in every tier.

Started by `test_kernels_empty.py` in a fresh process with NUMBA_BOUNDSCHECK=1 (numba reads
it at import), so an out-of-bounds read in any numba kernel raises IndexError instead of
returning heap garbage. Prints one line per failure and "OK <count>" at the end.
"""
import inspect
import sys

import numpy as np

import jitflow as jf
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops import registry

SHAPES = [(0,), (2, 0), (0, 3), (0, 0), (3, 0, 2)]
DTYPES = [np.float32, np.int32]

# (name, fn(x), dtype kinds it takes, needs rank >= 1)
CASES = [
    ("reduce_sum", lambda x: jf.reduce_sum(x), "fi"),
    ("reduce_sum_axis-1", lambda x: jf.reduce_sum(x, axis=-1), "fi"),
    ("reduce_sum_axis0", lambda x: jf.reduce_sum(x, axis=0), "fi"),
    ("reduce_prod", lambda x: jf.reduce_prod(x), "fi"),
    ("reduce_mean", lambda x: jf.reduce_mean(x), "f"),
    ("reduce_mean_axis-1", lambda x: jf.reduce_mean(x, axis=-1), "f"),
    ("reduce_max", lambda x: jf.reduce_max(x), "fi"),
    ("reduce_max_axis-1", lambda x: jf.reduce_max(x, axis=-1), "fi"),
    ("reduce_max_axis0", lambda x: jf.reduce_max(x, axis=0), "fi"),
    ("reduce_min", lambda x: jf.reduce_min(x), "fi"),
    ("reduce_min_axis-1", lambda x: jf.reduce_min(x, axis=-1), "fi"),
    ("reduce_min_axis0", lambda x: jf.reduce_min(x, axis=0), "fi"),
    ("reduce_logsumexp", lambda x: jf.reduce_logsumexp(x), "f"),
    ("reduce_logsumexp_axis-1", lambda x: jf.reduce_logsumexp(x, axis=-1), "f"),
    ("softmax", lambda x: jf.nn.softmax(x), "f"),
    ("log_softmax", lambda x: jf.nn.log_softmax(x), "f"),
    ("tanh", lambda x: jf.tanh(x), "f"),
    ("add", lambda x: x + x, "fi"),
    ("cumsum", lambda x: jf.math.cumsum(x, axis=-1), "fi"),
    ("reduce_euclidean_norm", lambda x: jf.math.reduce_euclidean_norm(x), "f"),
]


def _reference(fn, value):
    """The same op with the numpy reference kernels (swapped into the CPU table)."""
    saved = dict(registry.KERNELS["cpu"])
    registry.KERNELS["cpu"].update(registry.KERNELS["reference"])
    try:
        with np.errstate(all="ignore"):
            return fn(jf.constant(value)).numpy()
    finally:
        registry.KERNELS["cpu"].clear()
        registry.KERNELS["cpu"].update(saved)


def run_tiers(failures):
    count = 0
    for name, fn, kinds in CASES:
        for dtype in DTYPES:
            if np.dtype(dtype).kind not in kinds:
                continue
            for shape in SHAPES:
                if name.endswith("axis0") and len(shape) > 2:
                    continue
                value = np.zeros(shape, dtype)
                want = _reference(fn, value)
                tiers = {
                    "eager": lambda fn=fn, value=value: fn(jf.constant(value)),
                    "interpreter": lambda fn=fn, value=value: jf.function(fn, jit_compile=False)(jf.constant(value)),
                    "compiled": lambda fn=fn, value=value: jf.function(fn, jit_compile=True)(jf.constant(value)),
                }
                for tier, call in tiers.items():
                    count += 1
                    try:
                        got = call().numpy()
                    except Exception as e:  # noqa: BLE001 - reported, not swallowed
                        failures.append(f"{name} {dtype.__name__}{list(shape)} {tier}: {type(e).__name__}: {e}")
                        continue
                    if got.shape != want.shape or not np.array_equal(got, want, equal_nan=True):
                        failures.append(f"{name} {dtype.__name__}{list(shape)} {tier}: got {got!r}, want {want!r}")
    return count


def run_2d_kernels(failures):
    """Every 2-D kernel of cpu_kernels called directly with an empty last axis."""
    count = 0
    names = [n for n, f in vars(K).items() if n.endswith("_2d") and hasattr(f, "py_func")
             and list(inspect.signature(f.py_func).parameters) == ["x", "out"]]
    assert len(names) >= 10, names
    for name in names:
        kernel = getattr(K, name)
        for dtype in (np.float64, np.int64, np.bool_):
            for rows in (0, 3):
                x = np.zeros((rows, 0), dtype)
                out_shape = (rows, 0) if "softmax" in name else (rows,)
                out_dtype = np.int64 if name.startswith("arg") else dtype
                out = np.zeros(out_shape, out_dtype)
                count += 1
                try:
                    kernel(x, out)
                except Exception as e:  # noqa: BLE001 - typing errors for dtypes a kernel never takes
                    if isinstance(e, IndexError):
                        failures.append(f"{name} {np.dtype(dtype).name}{list(x.shape)}: IndexError: {e}")
    return count


def main():
    failures = []
    count = run_2d_kernels(failures) + run_tiers(failures)
    for line in failures:
        print("FAIL", line)
    print("OK", count)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
