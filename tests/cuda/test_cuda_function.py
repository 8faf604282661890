"""Placement, copies and `jf.function` on a (simulated) GPU.

The same computations run once on the GPU (the default placement when one is visible)
and once inside `jf.device("/CPU:0")`; results must agree, and the tensors, graph nodes
and generated plans must say where things ran and where values were copied.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.execution import device_memory as D

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def on_cpu(fn, *args):
    """`fn(*args)` on the CPU; a jf.function is traced afresh there (its device scope is the
    one in force while it traces: the trace cache does not key on the caller's scope)."""
    if isinstance(fn, jf.Function):
        fn = jf.function(fn.__wrapped__)
    with jf.device("/CPU:0"):
        return fn(*args)


# -- eager placement ----------------------------------------------------------------------------
def test_default_placement_is_the_gpu_and_numpy_copies_back():
    x = jf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert x.device == CPU0  # a constant stays in host memory until an op needs it
    y = jf.tanh(x * 2.0)
    assert y.device == GPU0
    assert D.is_device_array(y._value)
    value = y.numpy()
    assert isinstance(value, np.ndarray) and value.flags.writeable
    value[0, 0] = 99.0  # a fresh copy: the tensor does not change
    np.testing.assert_allclose(y.numpy(), np.tanh(np.array([[2, 4], [6, 8]], np.float32)), rtol=1e-6)
    assert float(jf.reduce_sum(y)) == pytest.approx(float(np.tanh([2, 4, 6, 8]).sum()), rel=1e-6)
    assert repr(jf.constant(3.0) + 1.0) == "<jf.Tensor: shape=(), dtype=float32, numpy=4.0>"
    rows = list(y)  # iterating a GPU tensor unstacks it on the GPU
    assert [r.device for r in rows] == [GPU0, GPU0]
    np.testing.assert_allclose([r.numpy() for r in rows], np.tanh([[2, 4], [6, 8]]), rtol=1e-6)


def test_device_scopes_place_ops_and_new_tensors():
    with jf.device("/GPU:0"):
        g = jf.constant([1, 2, 3])
        z = jf.zeros([2])
    assert g.device == GPU0 and z.device == GPU0
    with jf.device("/CPU:0"):
        c = g * 2
    assert c.device == CPU0 and c.numpy().tolist() == [2, 4, 6]
    with jf.device("/job:localhost/replica:0/task:0/device:GPU:0"):
        assert (c + 1).device == GPU0
    with jf.device("GPU:7"):  # no such GPU: soft placement picks an existing one
        assert (c + 1).device == GPU0
    with pytest.raises(ValueError, match="cannot parse device"):
        jf.device("/TPU:0")


def test_mixed_device_inputs_are_copied_and_the_copy_is_an_event():
    from jitflow.tracer import capture
    a = on_cpu(lambda: jf.constant([1.0, 2.0]) * 1.0)
    b = jf.constant([10.0, 20.0]) * 1.0
    assert (a.device, b.device) == (CPU0, GPU0)
    cap = capture.start()
    try:
        s = a + b
    finally:
        capture.stop()
    assert s.device == GPU0 and s.numpy().tolist() == [11.0, 22.0]
    types = [e.op_type for e in cap.eager]
    assert "CopyToDevice" in types and "AddV2" in types
    assert [e.op_type for e in cap.device] == ["AddV2"]  # the kernel, timed on the GPU
    assert cap.device[0].device == GPU0


# -- jf.function --------------------------------------------------------------------------------
@jf.function
def model(x, w, b):
    h = jf.nn.relu(jf.matmul(x, w) + b)
    p = jf.nn.softmax(h, axis=-1)
    return jf.reduce_mean(p * jf.math.log(p + 1e-6), axis=0), jf.argmax(h, axis=1)


def _model_args():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=(3, 5)).astype(np.float32),
            rng.normal(size=(5,)).astype(np.float32))


def test_function_runs_on_the_gpu_and_matches_the_cpu():
    args = _model_args()
    gpu_loss, gpu_arg = model(*args)
    cpu_loss, cpu_arg = on_cpu(model, *args)
    assert gpu_loss.device == GPU0 and gpu_arg.device == GPU0
    assert cpu_loss.device == CPU0
    np.testing.assert_allclose(gpu_loss.numpy(), cpu_loss.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(gpu_arg.numpy(), cpu_arg.numpy())
    cf = model.get_concrete_function(*[jf.constant(a) for a in args])
    devices = {n.op.tf_op: n.device for n in cf.graph.nodes if n.op.tf_op not in ("Placeholder", "Const")}
    assert devices["MatMul"] == GPU0 and devices["Softmax"] == GPU0 and devices["ArgMax"] == GPU0
    source = cf._plan.source
    assert "with _defer():" in source  # no driver frees (which synchronise) inside a run
    assert "_to_host" not in source  # the whole graph stays on the device: no host round trip
    assert source.count("CopyToDevice") == 3  # one copy per host-fed argument


def test_device_scope_inside_a_function_sets_node_devices_and_copies():
    @jf.function
    def f(x):
        y = jf.square(x)          # GPU
        with jf.device("/CPU:0"):
            z = y + 1.0           # CPU: y is copied back
        return jf.sqrt(z)         # GPU: z is copied over

    x = jf.constant([1.0, 2.0, 3.0])
    out = f(x)
    np.testing.assert_allclose(out.numpy(), np.sqrt(np.array([1, 4, 9]) + 1.0), rtol=1e-6)
    assert out.device == GPU0
    cf = f.get_concrete_function(x)
    node = {n.op.tf_op: n for n in cf.graph.nodes}
    assert node["AddV2"].device == CPU0 and node["Square"].device == GPU0
    assert "Square/CopyFromDevice" in cf._plan.source and "add/CopyToDevice" in cf._plan.source


def test_gpu_tensor_arguments_are_not_copied_and_results_stay_on_the_gpu():
    @jf.function
    def double(a):
        return a + a

    x = jf.constant([1.5, 2.5]) * 1.0
    assert x.device == GPU0
    y = double(x)
    assert y.device == GPU0 and D.is_device_array(y._value)
    assert y.numpy().tolist() == [3.0, 5.0]
    assert double(np.array([1.0], np.float32)).numpy().tolist() == [2.0]  # a host argument is copied


def test_variables_live_on_the_gpu_and_update_in_graphs():
    v = jf.Variable([1.0, 2.0])
    assert v.device == GPU0 and D.is_device_array(v._value)

    @jf.function
    def step(d):
        v.assign_add(d)
        v.assign_sub(jf.ones([2]) * 0.5)
        return v.read_value() * 2.0

    out = step(jf.constant([1.0, 1.0]))
    assert out.device == GPU0 and out.numpy().tolist() == [3.0, 5.0]
    assert v.numpy().tolist() == [1.5, 2.5] and D.is_device_array(v._value)
    v.assign([0.0, 0.0])
    assert v.numpy().tolist() == [0.0, 0.0] and D.is_device_array(v._value)
    with jf.device("/CPU:0"):
        w = jf.Variable(3)
    assert w.device == CPU0 and int(w) == 3
    s = jf.Variable("text")  # strings cannot live on a GPU
    assert s.device == CPU0


def test_control_flow_runs_on_the_host_and_drives_the_gpu():
    @jf.function
    def f(x, n):
        if jf.reduce_sum(x) > 0:
            x = x * 2.0
        else:
            x = -x
        i = jf.constant(0)
        while i < n:
            x = x + 1.0
            i += 1
        return x

    np.testing.assert_allclose(f(jf.constant([1.0, 2.0]), jf.constant(3)).numpy(), [5.0, 7.0])
    np.testing.assert_allclose(f(jf.constant([-1.0, -2.0]), jf.constant(2)).numpy(), [3.0, 4.0])
    assert f(jf.constant([1.0, 2.0]), jf.constant(3)).device == GPU0


def test_host_ops_in_a_gpu_graph():
    seen = []

    @jf.function
    def f(x):
        y = x * 3.0
        jf.print("y =", y, output_stream=buf)
        return jf.py_function(lambda t: seen.append(t.numpy().tolist()) or t + 1.0, [y], jf.float32)

    buf = io.StringIO()
    out = f(jf.constant([1.0, 2.0]))
    assert buf.getvalue() == "y = [3 6]\n"
    assert seen == [[3.0, 6.0]] and out.numpy().tolist() == [4.0, 7.0]


def test_gradients_on_the_gpu():
    x = jf.Variable([1.0, -2.0, 3.0])
    with jf.GradientTape() as tape:
        loss = jf.reduce_sum(x * x) + jf.reduce_mean(jf.sigmoid(x))
    grad = tape.gradient(loss, x)
    s = 1 / (1 + np.exp(-np.array([1.0, -2.0, 3.0])))
    np.testing.assert_allclose(grad.numpy(), 2 * np.array([1.0, -2.0, 3.0]) + s * (1 - s) / 3, rtol=1e-5)
    assert grad.device == GPU0


def test_elementwise_chain_matches_the_cpu():
    @jf.function
    def chain(a, b):
        x = a
        for i in range(30):
            x = jf.tanh(x * b + 0.1) if i % 2 else jf.sigmoid(x - b)
        return x

    a, b = np.linspace(-1, 1, 6, dtype=np.float32), np.linspace(0.5, 1.5, 6, dtype=np.float32)
    np.testing.assert_allclose(chain(a, b).numpy(), on_cpu(chain, a, b).numpy(), rtol=1e-5, atol=1e-6)


def test_random_in_a_function_draws_new_values_each_run():
    @jf.function
    def draw():
        return jf.random.uniform([16], seed=3)

    a, b = draw().numpy(), draw().numpy()
    assert draw().device == GPU0
    assert ((a >= 0) & (a < 1)).all() and not np.array_equal(a, b)


def test_checkpoint_of_a_gpu_variable(tmp_path):
    v = jf.Variable([1.0, 2.0])
    ckpt = jf.train.Checkpoint(v=v)
    path = ckpt.save(str(tmp_path / "ckpt"))
    v.assign([5.0, 5.0])
    ckpt.restore(path)
    assert v.numpy().tolist() == [1.0, 2.0] and v.device == GPU0


def test_strings_in_a_function_stay_on_the_cpu():
    @jf.function
    def greet(name, x):
        return jf.constant("hi ") + name, x + 1

    s, y = greet(jf.constant("bob"), jf.constant(1))
    assert s.numpy() == b"hi bob" and s.device == CPU0 and y.device == GPU0
    assert int(y) == 2


def test_gpu_graphs_stay_off_the_cpu_compiled_tier():
    import warnings

    @jf.function(jit_compile=True)
    def f(x):
        return jf.tanh(x) * 2.0

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # giving up on the CPU tier is quiet: no CompileWarning
        for _ in range(4):
            out = f(jf.constant([0.5]))
    cf = f.get_concrete_function(jf.constant([0.5]))
    assert cf.tier == "interpreter" and cf._compile_state == "failed"
    assert out.device == GPU0 and out.numpy() == pytest.approx([2 * np.tanh(0.5)])


def test_a_failing_gpu_kernel_names_its_node():
    @jf.function
    def f(x, n):
        return jf.reshape(x * 2.0, jf.stack([n, 4]))  # a shape known only at run time

    f(jf.constant(np.ones(8, np.float32)), jf.constant(2))
    with pytest.raises(Exception) as err:
        f(jf.constant(np.ones(8, np.float32)), jf.constant(3))
    assert "Reshape" in "".join(getattr(err.value, "__notes__", [])) + str(err.value)
