"""`jf.config` with a (simulated) GPU: discovery, visibility, memory growth, logical devices
and the allocator's memory limit. Each test starts from an unconfigured runtime."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.execution import device_memory
from jitflow.runtime.core import devices

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@pytest.fixture(autouse=True)
def fresh_devices():
    gc.collect()
    devices._reset_for_tests()
    device_memory._current.mem = None
    yield
    gc.collect()
    devices._reset_for_tests()
    device_memory._current.mem = None


def test_discovery():
    gpus = jf.config.list_physical_devices("GPU")
    assert gpus == [jf.config.PhysicalDevice(name="/physical_device:GPU:0", device_type="GPU")]
    assert repr(gpus[0]) == "PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')"
    assert jf.config.list_physical_devices()[0].device_type == "CPU"
    assert [d.name for d in jf.config.list_logical_devices()] == ["/device:CPU:0", "/device:GPU:0"]
    assert jf.config.get_visible_devices("GPU") == gpus
    assert (jf.constant([1.0]) + 1.0).device == GPU0


def test_seed_001_gpu_setup_runs():
    # seed 001, "设置使用的gpu", with tf. → jf.
    gpus = jf.config.list_physical_devices("GPU")
    if gpus:
        gpu0 = gpus[0]
        jf.config.experimental.set_memory_growth(gpu0, True)
        jf.config.set_visible_devices([gpu0], "GPU")
    assert jf.config.experimental.get_memory_growth(gpus[0]) is True
    assert (jf.constant([2.0]) * 3.0).device == GPU0
    assert devices.gpus()[0].memory_growth is True


def test_hiding_the_gpus_runs_everything_on_the_cpu():
    jf.config.set_visible_devices([], "GPU")
    assert jf.config.list_logical_devices("GPU") == []
    y = jf.constant([1.0, 2.0]) * 2.0
    assert y.device == CPU0 and y.numpy().tolist() == [2.0, 4.0]
    assert not devices.active  # the CPU fast path again
    with jf.device("/GPU:0"):  # soft placement: no GPU, so the CPU
        assert (y + 1.0).device == CPU0


def test_configuration_freezes_once_initialised():
    gpu = jf.config.list_physical_devices("GPU")[0]
    jf.constant([1.0]) + 1.0  # initialises the GPU
    with pytest.raises(RuntimeError, match="cannot be modified after being initialized"):
        jf.config.set_visible_devices([], "GPU")
    with pytest.raises(RuntimeError, match="cannot be modified after being initialized"):
        jf.config.experimental.set_memory_growth(gpu, True)
    with pytest.raises(RuntimeError, match="cannot be modified after being initialized"):
        jf.config.set_logical_device_configuration(gpu, [jf.config.LogicalDeviceConfiguration(64)])
    jf.config.set_visible_devices([gpu], "GPU")  # no change: allowed, as in TF


def test_argument_errors():
    cpu, gpu = jf.config.list_physical_devices()
    with pytest.raises(ValueError, match="non-GPU"):
        jf.config.experimental.set_memory_growth(cpu, True)
    with pytest.raises(ValueError, match="Unrecognized device"):
        jf.config.set_visible_devices([jf.config.PhysicalDevice("/physical_device:GPU:3", "GPU")], "GPU")
    with pytest.raises(ValueError, match="memory_limit"):
        jf.config.LogicalDeviceConfiguration(memory_limit=-5)
    with pytest.raises(ValueError, match="needs a memory_limit"):
        jf.config.set_logical_device_configuration(gpu, [jf.config.LogicalDeviceConfiguration()])
    with pytest.raises(ValueError, match="CPU cannot be hidden"):
        jf.config.set_visible_devices([], "CPU")
    with pytest.raises(ValueError, match="device_type"):
        jf.config.list_physical_devices("TPU")
    jf.config.experimental.set_memory_growth(gpu, True)
    with pytest.raises(ValueError, match="memory growth is enabled"):
        jf.config.set_logical_device_configuration(gpu, [jf.config.LogicalDeviceConfiguration(64)])


def test_memory_limit_is_enforced_with_a_clear_error():
    gpu = jf.config.list_physical_devices("GPU")[0]
    jf.config.set_logical_device_configuration(gpu, [jf.config.LogicalDeviceConfiguration(memory_limit=1)])
    assert jf.config.get_logical_device_configuration(gpu)[0].memory_limit == 1
    small = jf.ones([100]) + 1.0
    assert small.device == GPU0

    def on_gpu(n):  # a copy to the device, no kernel (the simulator is slow on big arrays)
        with jf.device("/GPU:0"):
            return jf.constant(np.ones(n, np.float32))
    with pytest.raises(jf.errors.ResourceExhaustedError) as err:
        on_gpu(300_000)  # 1.2 MB on a 1 MB device
    text = str(err.value)
    assert "OOM when allocating tensor with shape [300000] and type float32" in text
    assert "requested 1200128 bytes" in text and "memory limit 1048576 bytes (1.00 MiB)" in text
    assert GPU0 in text and "memory_limit=1" in text
    assert isinstance(err.value, MemoryError)  # a ResourceExhaustedError is a MemoryError too
    # after freeing, the same amount fits in pieces
    parts = [on_gpu(100_000) for _ in range(2)]
    info = jf.config.experimental.get_memory_info("GPU:0")
    assert info["limit"] == 1 << 20 and 800_000 <= info["current"] <= info["peak"] <= 1 << 20
    del parts, small
    gc.collect()
    assert jf.config.experimental.get_memory_info("GPU:0")["current"] == 0


def test_memory_growth_decides_whether_freed_blocks_are_kept():
    def reserved_after_free():
        x = jf.ones([256]) * 2.0
        held = jf.config.experimental.get_memory_info("GPU:0")
        assert held["current"] >= 256 * 4
        del x
        gc.collect()
        return jf.config.experimental.get_memory_info("GPU:0")

    kept = reserved_after_free()  # default (TF's): freed blocks stay cached for reuse
    assert kept["current"] == 0 and kept["reserved"] >= 256 * 4
    devices._reset_for_tests()
    device_memory._current.mem = None
    jf.config.experimental.set_memory_growth(jf.config.list_physical_devices("GPU")[0], True)
    grown = reserved_after_free()  # growth: freed blocks go back to the driver
    assert grown["current"] == 0 and grown["reserved"] == 0


def test_cached_blocks_are_reused():
    jf.ones([100]) + 1.0
    gc.collect()
    before = jf.config.experimental.get_memory_info("GPU:0")["reserved"]
    assert before > 0
    for _ in range(5):
        jf.ones([100]) + 1.0
        gc.collect()
    assert jf.config.experimental.get_memory_info("GPU:0")["reserved"] == before


def test_two_logical_gpus_on_one_physical_gpu():
    gpu = jf.config.list_physical_devices("GPU")[0]
    jf.config.set_logical_device_configuration(gpu, [jf.config.LogicalDeviceConfiguration(memory_limit=2),
                                                     jf.config.LogicalDeviceConfiguration(memory_limit=2)])
    assert [d.name for d in jf.config.list_logical_devices("GPU")] == ["/device:GPU:0", "/device:GPU:1"]
    with jf.device("/GPU:1"):
        t = jf.constant([1.0, 2.0]) + 1.0
    assert t.device.endswith("GPU:1") and t.numpy().tolist() == [2.0, 3.0]
    assert jf.config.experimental.get_memory_info("GPU:1")["current"] > 0
    assert jf.config.experimental.get_memory_info("GPU:0")["current"] == 0
    jf.config.experimental.reset_memory_stats("GPU:1")
    with pytest.raises(ValueError, match="does not exist"):
        jf.config.experimental.get_memory_info("GPU:5")
    with pytest.raises(ValueError, match="GPUs only"):
        jf.config.experimental.get_memory_info("CPU:0")


def test_tf_aliases():
    exp = jf.config.experimental
    assert exp.VirtualDeviceConfiguration is jf.config.LogicalDeviceConfiguration
    assert exp.set_virtual_device_configuration is jf.config.set_logical_device_configuration
    assert exp.list_physical_devices("GPU") == jf.config.list_physical_devices("GPU")
    x = np.arange(3, dtype=np.float32)
    with jf.device(jf.config.list_logical_devices("GPU")[0]):  # a LogicalDevice is a device spec
        assert jf.constant(x).device == GPU0
