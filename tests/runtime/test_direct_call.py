"""The direct call path of jf.function (runtime/execution/direct_call.py and _direct.c).

Every test here checks that a call the direct path serves gives what the general path
gives, and that each condition that must send a call down the general path does. The
module runs in-process with whichever path this install uses, and once more in a
subprocess with JITFLOW_DIRECT=python, so the C accelerator and its Python twin are both
held to the same tests.
"""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.execution import compiler, direct_call
from jitflow.runtime.core import instrument
from jitflow.runtime.tracing.function import Function


def _settled(fn, *args):
    """Call `fn` (jit_compile=False: the tier is settled at once) until it serves calls directly."""
    first = fn(*args)
    assert fn._direct, "a settled concrete function must get a direct-path entry"
    return first


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a.numpy()), np.asarray(b.numpy()))
    assert a.dtype == b.dtype and a.shape == b.shape


def test_accelerator_is_built_where_a_compiler_exists():
    if os.environ.get("JITFLOW_DIRECT") == "python":
        pytest.skip("this run checks the Python twin (JITFLOW_DIRECT=python)")
    try:
        from jitflow.runtime.execution import _direct
    except ImportError:
        pytest.skip("the C accelerator was not built (no C compiler when jitflow was installed)")
    assert direct_call.ACCELERATED, "the built accelerator must be used (ABI_VERSION mismatch?)"
    assert _direct.ABI_VERSION == direct_call._C_ABI_VERSION
    assert issubclass(Function, _direct.FunctionBase)


def test_direct_result_equals_general_result_and_counts_calls():
    f = jf.function(lambda a, b: jf.reduce_sum(jf.tanh(a * b + 1.0)), jit_compile=False)
    a = jf.constant(np.linspace(0, 1, 7, dtype=np.float32))
    b = jf.constant(np.linspace(1, 2, 7, dtype=np.float32))
    general = _settled(f, a, b)
    calls = f._call_count
    direct = f(a, b)
    assert f._call_count == calls + 1
    _same(general, direct)
    assert isinstance(direct, jf.Tensor) and direct.device.endswith("CPU:0")
    assert isinstance(f, Function) and type(f).__name__ == "Function"


def test_compiled_tier_runs_through_the_direct_path():
    f = jf.function(lambda a, b, c: jf.reduce_sum(jf.tanh(a * b + c)), jit_compile=True)
    x = jf.constant(np.arange(10, dtype=np.float32) / 10)
    first = _settled(f, x, x, x)
    (cf,) = f.list_concrete_functions()
    assert cf.tier == "compiled"
    _same(first, f(x, x, x))
    interpreted = jf.function(lambda a, b, c: jf.reduce_sum(jf.tanh(a * b + c)), jit_compile=False)
    _same(f(x, x, x), interpreted(x, x, x))  # tiers are bit-identical, direct or not


def test_a_new_shape_or_dtype_retraces_as_before():
    f = jf.function(lambda x: x * 2, jit_compile=False)
    _settled(f, jf.constant([1.0, 2.0]))
    f(jf.constant([1.0, 2.0]))
    assert f.experimental_get_tracing_count() == 1
    out = f(jf.constant([1.0, 2.0, 3.0]))
    assert f.experimental_get_tracing_count() == 2
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0, 6.0])
    out = f(jf.constant([1, 2]))
    assert f.experimental_get_tracing_count() == 3
    assert out.dtype == jf.int32
    f(jf.constant([3.0, 4.0]))
    f(jf.constant([5, 6]))
    assert f.experimental_get_tracing_count() == 3
    assert len(f._direct) == 3


def test_keywords_python_values_and_numpy_arguments_take_the_general_path():
    f = jf.function(lambda x, y: x + y, jit_compile=False)
    x = jf.constant([1.0, 2.0])
    _settled(f, x, x)
    np.testing.assert_array_equal(f(x, y=x).numpy(), [2.0, 4.0])
    np.testing.assert_array_equal(f(x, 1.0).numpy(), [2.0, 3.0])
    arr = np.array([1.0, 2.0], np.float32)
    out = f(arr, arr)
    arr[0] = 100.0  # a numpy argument is copied (as TF converts it), so the result is not an alias
    np.testing.assert_array_equal(out.numpy(), [2.0, 4.0])
    with pytest.raises(TypeError, match="missing"):
        f(x)


def test_missing_and_extra_arguments_report_as_before():
    f = jf.function(lambda x, y: x + y, jit_compile=False)
    x = jf.constant(1.0)
    _settled(f, x, x)
    with pytest.raises(TypeError, match="too many positional arguments"):
        f(x, x, x)
    with pytest.raises(TypeError, match="missing a required argument: 'y'"):
        f(x)


def test_a_call_inside_a_trace_adds_a_call_node_not_an_eager_run():
    inner = jf.function(lambda x: x * 3.0, jit_compile=False)
    c = jf.constant([1.0, 2.0])
    _settled(inner, c)

    @jf.function
    def outer():
        return inner(c) + 1.0

    np.testing.assert_array_equal(outer().numpy(), [4.0, 7.0])
    graph = outer.get_concrete_function().graph
    assert any(n.op.tf_op == "StatefulPartitionedCall" for n in graph.nodes)


def test_a_recording_tape_sees_the_ops():
    f = jf.function(lambda x: x * x, jit_compile=False)
    x = jf.constant(3.0)
    _settled(f, x)
    with jf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert float(tape.gradient(y, x).numpy()) == 6.0


class _Collect:
    def __init__(self):
        self.graph_runs = []

    def eager_op(self, *args):
        pass

    def graph_run(self, concrete, timings, start_ns, end_ns, thread_id):
        self.graph_runs.append((concrete, timings))


def test_profiling_sees_every_run():
    f = jf.function(lambda x: jf.tanh(x) + 1.0, jit_compile=False)
    x = jf.constant([0.5])
    _settled(f, x)
    sink = _Collect()
    instrument.install(sink)
    try:
        f(x)
    finally:
        instrument.uninstall()
    ((concrete, timings),) = sink.graph_runs
    assert concrete is f.list_concrete_functions()[0]
    assert {t[0].op.tf_op for t in timings} >= {"Tanh", "AddV2"}


def test_variables_are_read_at_run_time():
    v = jf.Variable(2.0)
    f = jf.function(lambda x: x * v, jit_compile=False)
    x = jf.constant(5.0)
    assert float(_settled(f, x).numpy()) == 10.0
    v.assign(3.0)
    assert float(f(x).numpy()) == 15.0


def test_several_outputs_keep_their_structure():
    @jf.function(jit_compile=False)
    def f(x):
        return {"double": x * 2.0, "pair": (x + 1.0, 7), "list": [x]}

    x = jf.constant([1.0])
    _settled(f, x)
    out = f(x)
    assert set(out) == {"double", "pair", "list"}
    np.testing.assert_array_equal(out["double"].numpy(), [2.0])
    np.testing.assert_array_equal(out["pair"][0].numpy(), [2.0])
    assert out["pair"][1] == 7
    np.testing.assert_array_equal(out["list"][0].numpy(), [1.0])

    g = jf.function(lambda x: [x * 2.0], jit_compile=False)  # one output, not a bare tensor
    _settled(g, x)
    (only,) = g(x)
    np.testing.assert_array_equal(only.numpy(), [2.0])


def test_a_failing_kernel_names_its_node():
    def check(x):
        if x.numpy() > 1.0:
            raise ValueError("bad value")
        return x

    f = jf.function(lambda x: jf.py_function(check, [x * 2.0], jf.float32), jit_compile=False)
    assert float(_settled(f, jf.constant(0.25)).numpy()) == 0.5
    calls = f._call_count
    with pytest.raises(ValueError, match="bad value") as info:
        f(jf.constant(5.0))  # same signature: served directly, and fails there
    assert f._call_count == calls + 1
    assert any("while running node" in note and "EagerPyFunc" in note
               for note in getattr(info.value, "__notes__", [])), getattr(info.value, "__notes__", None)


def test_background_compile_swaps_the_direct_entry_for_the_compiled_plan(monkeypatch):
    monkeypatch.setattr(compiler, "DEFAULT_POLICY", "auto")  # whatever JITFLOW_TIER says
    f = jf.function(lambda x: jf.reduce_sum(x * x + 1.0))  # default tier: compiles after a few calls
    x = jf.constant(np.arange(8, dtype=np.float32))
    expected = f(x).numpy()
    (cf,) = f.list_concrete_functions()
    deadline = time.time() + 120
    while cf.tier != "compiled" and time.time() < deadline:
        np.testing.assert_array_equal(f(x).numpy(), expected)
        time.sleep(0.01)
    assert cf.tier == "compiled"
    f(x)  # the first call after the swap installs the compiled entry
    entry = next(iter(f._direct.values()))
    run = entry[0] if isinstance(entry, tuple) else entry
    assert run.plan is cf._fast
    np.testing.assert_array_equal(f(x).numpy(), expected)


def test_methods_have_one_table_per_instance():
    class Scale(jf.Module):
        def __init__(self, k):
            super().__init__()
            self.k = jf.Variable(k)

        @jf.function(jit_compile=False)
        def __call__(self, x):
            return x * self.k

    a, b = Scale(2.0), Scale(3.0)
    x = jf.constant([1.0, 2.0])
    for _ in range(3):
        np.testing.assert_array_equal(a(x).numpy(), [2.0, 4.0])
        np.testing.assert_array_equal(b(x).numpy(), [3.0, 6.0])


def test_threads_calling_at_once_get_their_own_results():
    f = jf.function(lambda x: x * 2.0 + 1.0, jit_compile=False)
    _settled(f, jf.constant(np.zeros(16, np.float32)))
    errors = []

    def work(seed):
        rng = np.random.default_rng(seed)
        for _ in range(300):
            v = rng.random(16).astype(np.float32)
            out = f(jf.constant(v)).numpy()
            if not np.array_equal(out, v * np.float32(2.0) + np.float32(1.0)):
                errors.append(seed)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_input_signature_functions_keep_the_general_path():
    f = jf.function(lambda x: x + 1.0, input_signature=[jf.TensorSpec([None], jf.float32)])
    x = jf.constant([1.0])
    f(x)
    f(x)
    assert not f._direct and f._direct_arity == -1
    np.testing.assert_array_equal(f(jf.constant([1.0, 2.0])).numpy(), [2.0, 3.0])


def test_the_python_twin_passes_the_same_tests():
    if os.environ.get("JITFLOW_DIRECT") == "python":
        pytest.skip("already running the Python twin")
    env = dict(os.environ, JITFLOW_DIRECT="python")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__],
                          env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "passed" in proc.stdout
