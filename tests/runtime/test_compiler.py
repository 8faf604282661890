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
from jitflow.runtime import compiler


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
        v.assign_add(1.0)
        return jf.tanh(y) + v

    assert f(jf.constant(1.0)).numpy() == pytest.approx(np.tanh(2.0) + 1.0)
    assert f(jf.constant(1.0)).numpy() == pytest.approx(np.tanh(2.0) + 2.0)
    assert capsys.readouterr().out == "between\nbetween\n"
    plan = f.get_concrete_function(jf.constant(1.0))._fast
    kinds = ["segment" if isinstance(s, compiler.Segment) else s.op.tf_op for s in plan.steps]
    assert kinds.count("segment") >= 2 and "PrintV2" in kinds and "AssignAddVariableOp" in kinds
    assert kinds.index("PrintV2") > kinds.index("segment")


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
    from jitflow.runtime.function import CompileWarning
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
