"""The compiled tier: identical results to the interpreter, tier-up, disk cache, fallbacks."""
import os
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.execution import compiler


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    path = tmp_path / "jfcache"
    monkeypatch.setenv("JITFLOW_CACHE_DIR", str(path))
    return path


def _programs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5)).astype(np.float32)
    w = rng.normal(size=(5, 3)).astype(np.float32)
    v = jf.Variable(np.ones(3, np.float32))

    def small(a, b, c):
        return jf.reduce_sum(jf.tanh(a * b + c))

    def mlp(x, w):
        h = jf.nn.relu(jf.matmul(x, w) + v)
        return jf.reduce_mean(jf.nn.log_softmax(h), axis=1), jf.nn.softmax(h), jf.reduce_sum(h, axis=0)

    def chain(x):
        for i in range(12):
            x = jf.sigmoid(x * 0.5 + 0.1) if i % 2 else jf.exp(-jf.square(x)) - jf.sqrt(jf.abs(x) + 1.0)
        return x, jf.reduce_max(x), jf.cast(x > 0.3, jf.int32) * 3 - 1

    def mixed(x):
        jf.print("side effect")
        v.assign_add(jf.ones([3]))
        return jf.reduce_sum(x) + jf.reduce_sum(v)

    a = np.linspace(-1, 1, 10).astype(np.float32)
    return [(small, (a, a, a)), (mlp, (x, w)), (chain, (x,)), (mixed, (x,))]


def _run(fn, args, jit_compile):
    f = jf.function(fn, jit_compile=jit_compile)
    out = f(*args)
    cf = f.get_concrete_function(*args)
    return out, cf


def _flat(out):
    if isinstance(out, (list, tuple)):
        return [a for o in out for a in _flat(o)]
    return [out.numpy()]


def test_compiled_results_are_identical_to_the_interpreter(cache_dir, capsys):
    # Fresh programs (and variables) per tier, so stateful ones start from the same state.
    for (fn, args), (fn2, args2) in zip(_programs(), _programs()):
        interpreted, cf_i = _run(fn, args, False)
        compiled, cf_c = _run(fn2, args2, True)
        assert cf_i.tier == "interpreter" and cf_c.tier == "compiled", fn.__name__
        for a, b in zip(_flat(interpreted), _flat(compiled)):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b, err_msg=fn.__name__)


def test_python_steps_split_segments_and_still_run(cache_dir, capsys):
    v = jf.Variable(0.0)

    @jf.function(jit_compile=True)
    def f(x):
        y = x * 2.0
        jf.print("between")
        v.assign_add(y)         # a Python step that needs the first segment's value
        return jf.tanh(y) + v   # and a second segment that needs the Python step's

    assert f(jf.constant(1.0)).numpy() == pytest.approx(np.tanh(2.0) + 2.0)
    assert f(jf.constant(1.0)).numpy() == pytest.approx(np.tanh(2.0) + 4.0)
    assert capsys.readouterr().out == "between\nbetween\n"
    plan = f.get_concrete_function(jf.constant(1.0))._fast
    kinds = ["segment" if isinstance(s, compiler.Segment) else s.op.tf_op for s in plan.steps]
    assert kinds.count("segment") == 2 and "PrintV2" in kinds and "AssignAddVariableOp" in kinds
    first, last = kinds.index("segment"), len(kinds) - 1 - kinds[::-1].index("segment")
    assert first < kinds.index("AssignAddVariableOp") < kinds.index("ReadVariableOp") < last


def test_python_steps_that_need_no_segment_value_do_not_split_segments(cache_dir, capsys):
    v = jf.Variable(1.0)

    @jf.function(jit_compile=True)
    def f(x):
        y = jf.tanh(x * 2.0)
        jf.print("independent")   # needs nothing computed: runs before the chain
        return jf.exp(y) * v      # the variable read is hoisted too: one segment

    assert f(jf.constant(0.5)).numpy() == pytest.approx(np.exp(np.tanh(1.0)), rel=1e-6)
    plan = f.get_concrete_function(jf.constant(0.5))._fast
    kinds = ["segment" if isinstance(s, compiler.Segment) else s.op.tf_op for s in plan.steps]
    assert kinds.count("segment") == 1 and kinds[-1] == "segment"


def test_tier_up_after_a_few_calls_happens_in_the_background(cache_dir):
    @jf.function
    def f(x):
        return jf.reduce_sum(x * x)

    x = jf.constant([1.0, 2.0])
    cf = f.get_concrete_function(x)
    for _ in range(compiler.COMPILE_AFTER_CALLS):
        assert f(x).numpy() == 5.0
    deadline = time.time() + 60
    while cf.tier != "compiled" and time.time() < deadline:
        time.sleep(0.05)
        f(x)
    assert cf.tier == "compiled" and cf.compile_seconds > 0
    record = [r for r in jf.trace_records.records() if r.graph_name == cf.name][0]
    assert record.compile_seconds == cf.compile_seconds


def test_jit_compile_false_never_compiles(cache_dir):
    f = jf.function(lambda x: x + 1, jit_compile=False)
    for _ in range(10):
        f(jf.constant(1.0))
    assert f.list_concrete_functions()[0].tier == "interpreter"
    assert not cache_dir.exists() or not list(cache_dir.glob("jf_*.py"))


def test_uncompilable_graph_keeps_running_without_warning(cache_dir):
    @jf.function(jit_compile=True)
    def f(s):
        return s + jf.constant("!")

    assert f(jf.constant("hi")).numpy() == b"hi!"
    assert f.list_concrete_functions()[0].tier == "interpreter"


def test_compile_failure_falls_back_with_one_warning_naming_the_op(cache_dir, monkeypatch):
    original = compiler.LOWERINGS["Tanh"]
    monkeypatch.setitem(compiler.LOWERINGS, "Tanh", lambda n, a: f"no_such_function({a[0]})")

    @jf.function(jit_compile=True)
    def f(x):
        return jf.tanh(x)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = f(jf.constant([0.5]))
        f(jf.constant([0.25]))
    np.testing.assert_allclose(out.numpy(), np.tanh([0.5]).astype(np.float32))
    from jitflow.runtime.tracing.function import CompileWarning
    messages = [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]
    assert len(messages) == 1 and "Tanh" in messages[0]
    assert original is not None


def test_corrupt_cache_entry_is_discarded_and_rebuilt(cache_dir):
    def body(x):
        return jf.reduce_sum(jf.exp(x) * 3.0)

    first, _ = _run(body, (np.ones(4, np.float32),), True)
    sources = list(cache_dir.glob("jf_*.py"))
    assert sources
    for pyc in (cache_dir / "__pycache__").glob("*"):
        pyc.write_bytes(b"garbage")
    for src in sources:
        src.write_text("this is not python")
    compiler_module = sys.modules.copy()
    for name in [n for n in compiler_module if n.startswith("jitflow_compiled_")]:
        del sys.modules[name]
    second, cf = _run(body, (np.ones(4, np.float32),), True)
    assert cf.tier == "compiled"
    assert first.numpy() == second.numpy()


@pytest.mark.slow
def test_a_second_process_loads_compiled_code_from_the_cache(cache_dir):
    script = textwrap.dedent("""
        import time, numpy as np, numba, jitflow as jf
        @jf.function(jit_compile=True)
        def f(a, b):
            return jf.reduce_sum(jf.tanh(a * b + 1.0))
        a = np.linspace(0, 1, 16).astype(np.float32)
        print(float(f(a, a)), f.list_concrete_functions()[0].compile_seconds)
    """)
    env = dict(os.environ, JITFLOW_CACHE_DIR=str(cache_dir), NUMBA_DEBUG_CACHE="1")
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    values = [line.split() for line in (r.stdout.strip().splitlines()[-1] for r in runs)]
    assert values[0][0] == values[1][0]
    # The second process found the segment in numba's index and compiled nothing.
    assert "data saved" in runs[0].stdout + runs[0].stderr
    assert "data loaded" in runs[1].stdout + runs[1].stderr


# -- fused loops: every element bit-identical to the interpreter ------------------------------------
def _bits_equal(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, what
    np.testing.assert_array_equal(a, b, err_msg=what)
    if a.dtype.kind == "f":  # -0.0 vs 0.0 too (a NaN's sign bit means nothing: not compared)
        assert np.array_equal(np.signbit(a) & ~np.isnan(a), np.signbit(b) & ~np.isnan(b)), what


def _both_tiers(fn, *args):
    outs = []
    for jit in (False, True):
        f = jf.function(fn, jit_compile=jit)
        out = f(*[jf.constant(a) for a in args])
        assert f.list_concrete_functions()[0].tier == ("compiled" if jit else "interpreter")
        outs.append([o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])])
    return outs


def _special(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-5, 6, shape).astype(dtype)
    x = rng.normal(0, 3, shape).astype(dtype)
    flat = x.reshape(-1)
    specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, 9.5, -20.0, 3e-4]
    flat[:min(len(specials), flat.size)] = specials[:flat.size]
    return x


_KIND_DTYPES = {"f": (np.float32, np.float64), "i": (np.int32, np.int64), "b": (np.bool_,)}


def _op_dtypes():
    from jitflow.runtime.ops import math_ops
    for row in math_ops._BINARY:
        for kind in row[3]:
            if kind == "i" and row[0] in ("FloorDiv", "FloorMod"):
                continue  # not compiled: the interpreter's kernel checks for division by zero (#22)
            for dt in _KIND_DTYPES.get(kind, ()):
                yield row[0], 2, dt
    for row in math_ops._UNARY:
        for kind in row[3]:
            for dt in _KIND_DTYPES.get(kind, ()):
                yield row[0], 1, dt


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::jitflow.RetraceWarning")
@pytest.mark.parametrize("op, arity, dtype", list(_op_dtypes()), ids=lambda v: getattr(v, "__name__", str(v)))
def test_every_elementwise_op_in_a_fused_loop_matches_the_interpreter(cache_dir, op, arity, dtype):
    from jitflow.runtime.ops.registry import apply
    x = _special(dtype, (3, 4), 1)
    shapes = [(3, 4), (4,), (3, 1), ()] if arity == 2 else [(3, 4)]
    for shape in shapes:
        args = (x,) if arity == 1 else (x, _special(dtype, shape, 2))
        if op in ("FloorDiv", "FloorMod") and np.dtype(dtype).kind == "i":
            args = (args[0], np.where(args[1] == 0, 1, args[1]).astype(dtype))  # ints: no x // 0
        if op == "Pow" and np.dtype(dtype).kind == "i":
            args = (args[0], np.abs(args[1]) % 3)

        def body(*xs):
            y = apply(op, list(xs))[0]
            return y, apply(op, [y] * arity)[0] if y.dtype == xs[0].dtype else y  # a 2-op chain

        interpreted, compiled = _both_tiers(body, *args)
        for a, b in zip(interpreted, compiled):
            _bits_equal(a, b, f"{op} {np.dtype(dtype).name} {shape}")


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::jitflow.RetraceWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_fused_reductions_keep_the_interpreters_accumulation(cache_dir, dtype):
    x = _special(dtype, (5, 7), 3) if np.dtype(dtype).kind == "i" else \
        np.random.default_rng(4).normal(0, 1e4, (5, 7)).astype(dtype)

    def body(x):
        y = x * x - x
        return (jf.reduce_sum(y), jf.reduce_mean(y), jf.reduce_prod(x * 1),
                jf.reduce_sum(y, axis=[0, 1], keepdims=True), jf.reduce_sum(y, axis=0), jf.reduce_mean(y, axis=1),
                y - jf.reduce_mean(y))  # a loop that needs its own reduction starts a second loop

    interpreted, compiled = _both_tiers(body, x)
    for a, b in zip(interpreted, compiled):
        _bits_equal(a, b, f"reductions {np.dtype(dtype).name}")


def test_big_elementwise_chains_run_in_parallel_and_stay_identical(cache_dir, monkeypatch):
    from jitflow.runtime.execution import codegen as compiler_codegen
    monkeypatch.setattr(compiler_codegen, "PARALLEL_MIN_CPUS", 1)
    rng = np.random.default_rng(5)
    a, b, c = (rng.uniform(-3, 3, 1 << 20).astype(np.float32) for _ in range(3))
    interpreted, compiled = _both_tiers(lambda a, b, c: (jf.tanh(a * b + c), jf.sigmoid(a) - b), a, b, c)
    for x, y in zip(interpreted, compiled):
        _bits_equal(x, y, "big")
    f = jf.function(lambda a, b, c: jf.tanh(a * b + c), jit_compile=True)
    f(a, b, c)
    plan = f.list_concrete_functions()[0]._fast
    assert compiler_codegen.PARALLEL_MIN_ELEMENTS <= a.size
    assert plan.segments[0].parallel and "prange" in plan.module_source
    assert plan.segments[0].allocations  # the output is allocated by numpy (huge pages)


def test_big_outputs_are_reused_only_when_nobody_holds_them(cache_dir):
    x = np.linspace(-1, 1, 1 << 19).astype(np.float32)  # 2 MiB: allocated by the caller
    f = jf.function(lambda x: x * 2.0 + 1.0, jit_compile=True)
    kept = [f(jf.constant(x)) for _ in range(3)]
    arrays = [np.asarray(t) for t in kept]
    assert len({a.__array_interface__["data"][0] for a in arrays}) == 3  # three live buffers
    view = np.asarray(f(jf.constant(x)))[10:20]  # only a view survives the call
    first = view.copy()
    f(jf.constant(x * 0))
    np.testing.assert_array_equal(view, first)
    addresses = {np.asarray(f(jf.constant(x))).__array_interface__["data"][0] for _ in range(3)}
    assert len(addresses) == 1  # dropped at once each time: the same buffer every call


def test_scalars_between_segments_and_python_steps_keep_their_dtype(cache_dir, capsys):
    v = jf.Variable(np.int32(2))

    def body(x, n):
        total = jf.reduce_sum(x)           # a float32 scalar out of a segment ...
        jf.print(total)                    # ... into a Python step
        count = jf.reduce_sum(n) * 3       # an int32 scalar
        v.assign_add(count)
        return total * x, count + v, jf.cast(count, jf.float32) / total

    x = np.linspace(-1, 2, 6).astype(np.float32)
    n = np.arange(4, dtype=np.int32)
    interpreted, compiled = _both_tiers(body, x, n)
    for a, b in zip(interpreted, compiled):
        assert a.dtype == b.dtype
    np.testing.assert_array_equal(interpreted[0], compiled[0])
    np.testing.assert_array_equal(interpreted[2], compiled[2])
    out = capsys.readouterr().out.split()
    assert out[0] == out[1]


def test_a_training_step_updates_weights_identically(cache_dir):
    rng = np.random.default_rng(6)
    x = rng.normal(size=(16, 12)).astype(np.float32)
    y = rng.integers(0, 5, 16).astype(np.int32)
    init = [rng.normal(size=(12, 8)).astype(np.float32) * 0.3, np.zeros(8, np.float32),
            rng.normal(size=(8, 5)).astype(np.float32) * 0.3, np.zeros(5, np.float32)]
    results = []
    for jit in (False, True):
        params = [jf.Variable(p.copy()) for p in init]
        opt = jf.optimizers.Adam(0.01)

        @jf.function(jit_compile=jit)
        def step(x, y):
            with jf.GradientTape() as tape:
                h = jf.nn.relu(jf.matmul(x, params[0]) + params[1])
                logits = jf.matmul(h, params[2]) + params[3]
                loss = jf.reduce_mean(jf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
            opt.apply_gradients(zip(tape.gradient(loss, params), params))
            return loss

        losses = [step(jf.constant(x), jf.constant(y)).numpy() for _ in range(3)]
        assert step.list_concrete_functions()[-1].tier == ("compiled" if jit else "interpreter")
        results.append(losses + [p.numpy() for p in params])
    for a, b in zip(*results):
        _bits_equal(a, b, "training")


def test_segments_accept_views_read_only_and_0d_arguments(cache_dir):
    w = jf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))

    @jf.function(jit_compile=True)
    def f(x, s):
        return jf.reduce_sum(x * w + s)

    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = base.T[:3, :2].T  # non-contiguous
    frozen = np.ones((2, 3), np.float32)
    frozen.flags.writeable = False
    for x in (view, frozen, np.ones((2, 3), np.float32)):
        t = jf.constant(x)
        want = float(np.sum(np.asarray(x, np.float64) * w.numpy() + 0.5))
        assert f(t, jf.constant(np.float32(0.5))).numpy() == pytest.approx(want, rel=1e-6)
    w.assign(frozen)  # a variable holding a read-only array
    assert f(jf.constant(frozen), jf.constant(np.float32(0.5))).numpy() == pytest.approx(9.0)
    assert f.list_concrete_functions()[0].tier == "compiled"


def test_graphs_mixing_strings_and_numbers_compile_the_numbers(cache_dir, capsys):
    @jf.function(jit_compile=True)
    def f(x):
        jf.print(jf.constant("x is"), x)
        return jf.tanh(x * 2.0) + jf.cast(jf.size(x), jf.float32)

    out = f(jf.constant([0.5, -0.25]))
    np.testing.assert_allclose(out.numpy(), np.tanh([1.0, -0.5]) + 2.0, rtol=1e-6)
    assert f.list_concrete_functions()[0].tier == "compiled"
    assert "x is" in capsys.readouterr().out


def test_bias_add_joins_the_fused_loop_and_matches_the_interpreter(cache_dir):
    """BiasAdd lowers to the interpreter's add (bias broadcast along the last dimension), so
    a convolution's bias + ReLU is one fused loop rather than a numpy pass and a loop."""
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.float64):
        x = rng.normal(size=(4, 5, 6, 3)).astype(dtype)
        b = rng.normal(size=3).astype(dtype)
        interpreted, compiled = _both_tiers(lambda x, b: jf.nn.relu(jf.nn.bias_add(x, b)), x, b)
        _bits_equal(interpreted[0], compiled[0], f"bias_add + relu {dtype.__name__}")
        np.testing.assert_array_equal(compiled[0], np.maximum(x + b, 0))
    f = jf.function(lambda x, b: jf.nn.relu(jf.nn.bias_add(x, b)), jit_compile=True)
    f(jf.constant(x), jf.constant(b))
    plan = f.list_concrete_functions()[0]._fast
    assert len(plan.segments) == 1 and "BiasAdd" in [n.op.tf_op for n in plan.segments[0].nodes]


def test_compile_waits_for_a_background_compile_instead_of_repeating_it(cache_dir, monkeypatch):
    calls = []
    real = compiler.compile_plan

    def slow(*args):
        calls.append(1)
        time.sleep(0.3)
        return real(*args)
    monkeypatch.setattr(compiler, "compile_plan", slow)

    @jf.function
    def f(x):
        return jf.reduce_sum(x * 2.0)

    x = jf.constant([1.0, 2.0])
    for _ in range(compiler.COMPILE_AFTER_CALLS):
        f(x)
    cf = f.list_concrete_functions()[0]
    assert cf._compile_state == "compiling"   # the background thread is in the slow compile
    assert cf.compile() is not None and cf.tier == "compiled"
    assert len(calls) == 1
