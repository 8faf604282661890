"""Devices without CUDA (this process never has a GPU in jitflow's eyes): `jf.config` and
`jf.device` work and change nothing, numba.cuda is never imported, and the seeds' GPU
setup runs. The GPU side is tested in tests/cuda (the CUDA simulator, in subprocesses)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.core import devices

ROOT = Path(__file__).resolve().parents[2]
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
NO_GPU = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # hides any GPU from jitflow (and numba)
NO_GPU.pop("NUMBA_ENABLE_CUDASIM", None)


def _python(code: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env or NO_GPU, capture_output=True,
                          text=True, timeout=120)


def test_importing_and_running_jitflow_does_not_import_numba_cuda():
    code = ("import sys, jitflow as jf\n"
            "assert 'numba.cuda' not in sys.modules, 'import'\n"
            "f = jf.function(lambda x: jf.reduce_sum(jf.tanh(x * 2.0)))\n"
            "x = jf.constant([1.0, 2.0]) + 1.0\n"
            "f(x); v = jf.Variable([1.0]); v.assign_add([1.0])\n"
            "assert jf.config.list_physical_devices('GPU') == []\n"
            "with jf.device('/GPU:0'): y = x * 2.0\n"
            "assert y.device.endswith('CPU:0'), y.device\n"
            "assert 'numba.cuda' not in sys.modules, 'ops'\n"
            "from jitflow.runtime.core import devices; assert devices.active is False\n"
            "print('ok')\n")
    proc = _python(code)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
    plain = _python("import jitflow, sys; assert 'numba.cuda' not in sys.modules", env=dict(os.environ))
    assert plain.returncode == 0, plain.stderr


@pytest.fixture
def no_gpu(monkeypatch):
    """This process as a machine without CUDA (it is one in CI; on a GPU machine too, here)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    devices._reset_for_tests()
    yield
    monkeypatch.undo()
    devices._reset_for_tests()


def test_config_without_gpus(no_gpu):
    assert jf.config.list_physical_devices() == [jf.config.PhysicalDevice("/physical_device:CPU:0", "CPU")]
    assert jf.config.list_physical_devices("GPU") == []
    assert jf.config.get_visible_devices() == [jf.config.PhysicalDevice("/physical_device:CPU:0", "CPU")]
    assert jf.config.list_logical_devices() == [jf.config.LogicalDevice("/device:CPU:0", "CPU")]
    jf.config.set_visible_devices([], "GPU")  # nothing to hide: allowed
    # seed 004 spells the arguments out
    gpus = jf.config.list_physical_devices(device_type="GPU")
    jf.config.set_visible_devices(devices=gpus[0:2], device_type="GPU")
    assert jf.config.list_physical_devices(device_type="CPU")[0].name == "/physical_device:CPU:0"
    with pytest.raises(ValueError, match="non-GPU"):
        jf.config.experimental.set_memory_growth(jf.config.list_physical_devices("CPU")[0], True)
    with pytest.raises(ValueError, match="GPUs only|does not exist"):
        jf.config.experimental.get_memory_info("GPU:0")
    assert not devices.active


def test_seed_001_gpu_setup_is_harmless_without_a_gpu():
    proc = _python(
        "import jitflow as jf\n"
        "gpus = jf.config.list_physical_devices('GPU')\n"
        "if gpus:\n"
        "    gpu0 = gpus[0]\n"
        "    jf.config.experimental.set_memory_growth(gpu0, True)\n"
        "    jf.config.set_visible_devices([gpu0], 'GPU')\n"
        "print(gpus, jf.config.list_logical_devices(), (jf.constant(1.0) + 1.0).device)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ("[] [LogicalDevice(name='/device:CPU:0', device_type='CPU')] "
                                   f"{CPU0}")


def test_device_scopes_on_a_cpu_only_machine(no_gpu):
    x = jf.constant([1.0, 2.0])
    with jf.device("/GPU:0"):  # soft placement: the CPU
        y = x * 2.0
    with jf.device("/cpu:0"):
        z = y + 1.0
    assert y.device == CPU0 and z.device == CPU0 and z.numpy().tolist() == [3.0, 5.0]

    @jf.function
    def f(a):
        with jf.device("/GPU:0"):
            b = a * 3.0
        return b + 1.0

    assert f(x).numpy().tolist() == [4.0, 7.0] and f(x).device == CPU0
    nodes = {n.op.tf_op: n for n in f.get_concrete_function(x).graph.nodes}
    assert nodes["Mul"].device == "/device:GPU:0"  # as requested (TF prints it so too)
    assert nodes["AddV2"].device == ""
    assert f.get_concrete_function(x)._plan.placement is None  # the plain CPU plan


def test_device_spec_parsing():
    assert devices.canonical("/gpu:1") == "/device:GPU:1"
    assert devices.canonical("GPU") == "/device:GPU:0"
    assert devices.canonical("/job:localhost/replica:0/task:0/device:CPU:0") == "/device:CPU:0"
    assert devices.canonical(jf.config.LogicalDevice("/device:GPU:2", "GPU")) == "/device:GPU:2"
    assert devices.canonical(None) is None and devices.canonical("") is None
    with pytest.raises(ValueError, match="cannot parse"):
        devices.canonical("/TPU:0")
    with pytest.raises(TypeError):
        jf.device(3)
    assert repr(jf.config.LogicalDeviceConfiguration(memory_limit=64)) == "LogicalDeviceConfiguration(memory_limit=64)"


def test_bench_cuda_exits_cleanly_without_a_gpu():
    proc = subprocess.run([sys.executable, "benchmarks/bench_cuda.py", "--quick"], cwd=ROOT, env=NO_GPU,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("bench_cuda: nothing to measure: no CUDA GPU found")


def test_cpu_tensors_and_variables_say_where_they_live():
    assert jf.constant(np.arange(3)).device == CPU0
    assert jf.Variable(1.0).device == CPU0
