"""The numpy tier (runtime/execution/numpy_tier.py, runtime/ops/numpy_kernels.py).

A new process runs a concrete function's first calls on numpy kernels while numba loads,
so those kernels must give the numba kernels' results bit for bit. The first tests hold
every op and dtype of the "numpy" table against the numba ("cpu") kernel, called as the
interpreter calls them (`bind_kernel`), on edge values: both zeros, infinities, NaNs with
different payloads, subnormals, integer extremes, broadcasting, 0-d inputs and empty axes.
The last tests run fresh processes: the first call needs no numba at all (numba is made
unimportable), and in a normal process the tier hands over to numba's interpreter and
then to the compiled tier with identical results.
"""
import itertools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.ops import math_ops, numpy_kernels
from jitflow.runtime.ops.registry import KERNELS, OPS, bind_kernel, kernel_table

TABLE = kernel_table("numpy")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _nan(payload, dtype):
    """A quiet NaN with a chosen payload (and sign), to tell NaNs apart bit for bit."""
    if dtype == np.float64:
        return np.array([0x7FF8000000000000 | payload], np.uint64).view(np.float64)[0]
    if dtype == np.float32:
        return np.array([0x7FC00000 | payload], np.uint32).view(np.float32)[0]
    return np.array([0x7E00 | payload], np.uint16).view(np.float16)[0]


def _values(dtype):
    """Edge values of `dtype` plus a spread of ordinary ones."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(7)
    if dt == np.bool_:
        return np.array([True, False])
    if dt.kind == "f":
        info = np.finfo(dt)
        special = [0.0, -0.0, 1.0, -1.0, 0.5, -1.5, 2.5, 3.0, -7.0, np.inf, -np.inf, info.max, -info.max,
                   info.tiny, -info.tiny, info.smallest_subnormal, info.eps, 1e-4, -3e-4, 8.5, -9.5, 12.0]
        vals = np.array(special, dt)
        nans = np.array([_nan(1, dt), -_nan(2, dt)], dt)
        ordinary = (rng.standard_normal(24) * np.array([1e-3, 0.3, 3, 300] * 6)).astype(dt)
        return np.concatenate([vals, nans, ordinary])
    info = np.iinfo(dt)
    special = [0, 1, 2, 3, 7, 100, info.max, info.max - 1, info.min, info.min + 1]
    if dt.kind == "i":
        special += [-1, -2, -3, -7, -100]
    return np.array(special, dt)


def _same_bits(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, f"{what}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
    assert a.tobytes() == b.tobytes(), f"{what}: numpy {a!r} != numba {b!r}"


def _dtypes(kernel):
    return sorted(getattr(kernel, "dtypes", ()))


_ELEMENTWISE = [op for op, *_ in numpy_kernels._ELEMENTWISE]
_BINARY = {row[0] for row in math_ops._BINARY}
_REDUCTIONS = [op for op, *_ in numpy_kernels._REDUCTIONS]
_CASES = [(op, dt) for op in _ELEMENTWISE + _REDUCTIONS for dt in _dtypes(TABLE[op])]


def test_the_table_holds_exactly_the_listed_ops():
    assert set(TABLE) == set(_ELEMENTWISE) | set(_REDUCTIONS) | (set(numpy_kernels.PLAIN_OPS) & set(OPS))
    for op in numpy_kernels.PLAIN_OPS:
        if op in OPS:
            assert TABLE[op] is KERNELS["cpu"][op], f"{op}: a plain-numpy op's numpy kernel is its CPU kernel"
    assert "Exp" not in TABLE and "MatMul" not in TABLE  # libm / BLAS: left to numba (see numpy_kernels)


@pytest.mark.parametrize("op,dtype", [c for c in _CASES if c[0] in _ELEMENTWISE])
def test_elementwise_numpy_kernel_matches_numba_bit_for_bit(op, dtype):
    in_dtypes = [_dt.as_dtype(dtype)] * (2 if op in _BINARY else 1)
    numpy_run = bind_kernel(OPS[op], "numpy", {}, in_dtypes)
    numba_run = bind_kernel(OPS[op], "cpu", {}, in_dtypes)
    v = _values(dtype)
    if len(in_dtypes) == 2:
        args = [(v[:, None], v[None, :]), (v[-1], v), (v, v[0]), (v[1], v[-1])]  # all pairs, scalars, 0-d
    else:
        args = [(v,), (v.reshape(-1, 1),), (v[-1],)]
        if op == "Tanh":  # the rational approximation's every regime, densely
            args.append((np.linspace(-12, 12, 200_001).astype(dtype),))
    for a in args:
        _same_bits(numpy_run(*a), numba_run(*a), f"{op}[{dtype}] on {[np.shape(x) for x in a]}")


@pytest.mark.parametrize("op,dtype", [c for c in _CASES if c[0] in _REDUCTIONS])
def test_reduction_numpy_kernel_matches_numba_bit_for_bit(op, dtype):
    v = _values(dtype)
    rng = np.random.default_rng(3)
    arrays = [v, rng.permutation(np.resize(v, 6 * 8)).reshape(6, 8),
              rng.permutation(np.resize(v, 2 * 3 * 8)).reshape(2, 3, 8), np.zeros((0, 3), dtype)]
    if np.dtype(dtype).kind == "f":
        arrays.append(np.full((2, 5), -0.0, dtype))  # a sum of -0.0s is +0.0 in numba's loop
        nan_first = np.array([[_nan(1, dtype), 1.0, _nan(2, dtype), 3.0], [_nan(3, dtype), 1.0, 2.0, 0.0],
                              [1.0, _nan(4, dtype), 5.0, _nan(5, dtype)], [-0.0, 0.0, -0.0, 0.0]], dtype)
        arrays.append(nan_first)
    for x in arrays:
        axes = [None] + list(range(-x.ndim, x.ndim)) + [tuple(range(x.ndim))] + \
            [c for c in itertools.combinations(range(x.ndim), 2) if x.ndim > 2]
        for axis, keepdims in itertools.product(axes, (False, True)):
            attrs = {"axis": axis, "keepdims": keepdims}
            want = _run_or_error(bind_kernel(OPS[op], "cpu", attrs, [_dt.as_dtype(dtype)]), x)
            got = _run_or_error(bind_kernel(OPS[op], "numpy", attrs, [_dt.as_dtype(dtype)]), x)
            if isinstance(want, Exception):
                assert type(got) is type(want) and str(got) == str(want)
            else:
                _same_bits(got, want, f"{op}[{dtype}] of {x.shape} over {axis} keepdims={keepdims}")


def _run_or_error(run, x):
    try:
        return run(x)
    except Exception as e:  # noqa: BLE001 - e.g. max over an empty axis: both must raise the same
        return e


def test_a_kernel_refuses_dtypes_it_does_not_match():
    f32, f64, i32, c64 = _dt.float32, _dt.float64, _dt.int32, _dt.complex64
    assert numpy_kernels.kernel("Tanh", [f32]) is not None
    assert numpy_kernels.kernel("Tanh", [f64]) is None  # libm's tanh: numba's, not numpy's
    assert numpy_kernels.kernel("AddV2", [c64, c64]) is None
    assert numpy_kernels.kernel("AddV2", [f32, f64]) is None  # mixed inputs: numba's loop would cast
    assert numpy_kernels.kernel("RealDiv", [i32, i32]) is None
    assert numpy_kernels.kernel("MatMul", [f32, f32]) is None


# -- fresh processes ----------------------------------------------------------------------------
_PROGRAM = r"""
import json, sys, time
import numpy as np
import jitflow as jf

@jf.function
def f(x, i, b):
    y = jf.tanh(x * 2.0 + 1.0) - jf.sqrt(jf.abs(x)) / (jf.square(x) + 1.0)
    z = jf.reshape(jf.transpose(jf.reshape(y, [4, 6])), [-1])
    parts = jf.split(jf.concat([z, jf.fill([2], 0.5)], 0), 2)
    s = jf.stack([parts[0], parts[1]])
    m = jf.where(b, jf.maximum(x, 0.25), jf.minimum(x, -0.25))
    k = jf.cast(jf.range(0, 24, 1), jf.float32) * jf.nn.relu(x)
    t = jf.tile(jf.expand_dims(jf.sign(x), 0), [2, 1])
    return {"sum": jf.reduce_sum(s, axis=1), "mean": jf.reduce_mean(y), "max": jf.reduce_max(m),
            "min": jf.reduce_min(k), "prod": jf.reduce_prod(x[:5] + 1.0), "any": jf.reduce_any(b),
            "all": jf.reduce_all(jf.logical_not(b)), "ints": jf.reduce_sum(i * 3 - 1, axis=0),
            "shape": jf.shape(t), "size": jf.size(t), "like": jf.reduce_sum(jf.ones_like(x) + jf.zeros_like(x)),
            "lin": jf.linspace(0.0, 1.0, 5), "bcast": jf.broadcast_to(jf.squeeze(x[:1]), [3]),
            "cmp": jf.logical_or(x > 0.1, jf.equal(x, 0.0))}

x = jf.constant(np.linspace(-3, 3, 24, dtype=np.float32))
i = jf.constant(np.arange(24, dtype=np.int32).reshape(4, 6))
b = jf.constant(np.arange(24) % 3 == 0)
first = f(x, i, b)
cf = f.get_concrete_function(x, i, b)
report = {"first_on_numpy": cf._numpy_plan is not None, "numba_tier": False}
results = [first]
if MODE == "handover":
    deadline = time.time() + 120
    while cf._interpreter is None and time.time() < deadline:
        time.sleep(0.05)
    report["numba_tier"] = cf._interpreter is not None and cf._numpy_plan is None
    for _ in range(5):
        results.append(f(x, i, b))
    deadline = time.time() + 240
    while cf.tier != "compiled" and cf._compile_state not in ("failed", "never") and time.time() < deadline:
        time.sleep(0.05)
    report["compiled"] = cf.tier
    results.append(f(x, i, b))
report["values"] = [{k: np.asarray(v.numpy()).tobytes().hex() for k, v in r.items()} for r in results]
report["numba_imported"] = "numba" in sys.modules
print(json.dumps(report))
"""


def _program(mode, env_extra=None, block_numba=False):
    head = "import sys\nsys.modules['numba'] = None  # importing numba fails\n" if block_numba else ""
    env = dict(os.environ, **(env_extra or {}))
    env.pop("JITFLOW_TIER", None)
    code = head + f"MODE = {mode!r}\n" + textwrap.dedent(_PROGRAM)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The program's results on numba's kernels only (the numpy tier off)."""
    cache = str(tmp_path_factory.mktemp("jitflow-cache"))
    return _program("first", {"JITFLOW_NUMPY_TIER": "0", "JITFLOW_CACHE_DIR": cache}), cache


def test_the_first_call_runs_without_numba(reference):
    want, _ = reference
    got = _program("first", block_numba=True)
    assert got["first_on_numpy"] and not want["first_on_numpy"]
    assert got["values"] == want["values"]  # every op of the program ran on a numpy kernel


def test_the_numpy_tier_hands_over_to_numba_and_the_compiled_tier_with_the_same_results(reference):
    want, cache = reference
    got = _program("handover", {"JITFLOW_CACHE_DIR": cache})
    assert got["first_on_numpy"] and got["numba_tier"] and got["numba_imported"]
    assert got["compiled"] in ("compiled", "interpreter")  # the compiled tier came after, as before
    for values in got["values"]:
        assert values == want["values"][0]


_FORK = r"""
import os
import numpy as np
import jitflow as jf

@jf.function
def f(x):
    return jf.reduce_sum(jf.tanh(x * 2.0 + 1.0))

x = jf.constant(np.linspace(-1, 1, 10, dtype=np.float32))
first = float(f(x))
assert f.get_concrete_function(x)._numpy_plan is not None or f.get_concrete_function(x)._interpreter is not None
pid = os.fork()  # numba is still loading in the background: the fork waits for it
if pid == 0:
    again = float(f(x))
    other = jf.function(lambda y: jf.exp(y) * 2.0)(x)  # needs numba: imports cleanly in the child
    os._exit(0 if again == first and np.isfinite(other.numpy()).all() else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_fork_right_after_the_first_call_gets_a_working_numba():
    env = dict(os.environ)
    env.pop("JITFLOW_TIER", None)
    proc = subprocess.run([sys.executable, "-c", _FORK], capture_output=True, text=True, timeout=300, env=env,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "0", proc.stdout + proc.stderr[-3000:]
    assert "Exception ignored" not in proc.stderr, proc.stderr[-3000:]
