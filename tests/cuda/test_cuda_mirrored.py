"""MirroredStrategy over two GPUs: one copy of each variable per GPU. The simulator offers one
physical GPU, so the two GPUs are logical devices carved out of it (TF's way to test multi-GPU
code on one): each has its own allocator, and the copies are counted where they live. What the
simulator cannot show (real device-to-device bandwidth, kernels overlapping on two GPUs) is
untested here."""
from __future__ import annotations

import gc
import sys
import os

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.core import devices
from jitflow.runtime.execution import device_memory

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "distribute"))
import _models  # noqa: E402

GPU = "/job:localhost/replica:0/task:0/device:GPU:{}"


@pytest.fixture(autouse=True)
def two_gpus():
    gc.collect()
    devices._reset_for_tests()
    device_memory._current.mem = None
    (gpu,) = jf.config.list_physical_devices("GPU")
    jf.config.set_logical_device_configuration(gpu, [jf.config.LogicalDeviceConfiguration(64)] * 2)
    yield ["/gpu:0", "/gpu:1"]
    gc.collect()
    devices._reset_for_tests()
    device_memory._current.mem = None


def in_use(index):
    return devices.gpu_by_name(GPU.format(index)).memory.info()["current"] if \
        devices.gpu_by_name(GPU.format(index)).memory else 0


def test_each_replica_reads_its_own_copy(two_gpus):
    strategy = jf.distribute.MirroredStrategy(two_gpus)
    with strategy.scope():
        v = jf.Variable(np.arange(256, dtype=np.float32))
    assert v.device == GPU.format(0)                       # the primary copy: the first GPU
    assert v._mirrors.devices == [GPU.format(1)]
    before = in_use(1)

    def replica():
        value = v.read_value()
        return value.device, float(jf.reduce_sum(value))
    where, total = strategy.run(replica)
    assert tuple(where) == (GPU.format(0), GPU.format(1))
    assert tuple(total) == (float(np.arange(256).sum()),) * 2
    assert in_use(1) - before >= 256 * 4                   # the copy was allocated on GPU 1's allocator
    v.assign(np.ones(256, np.float32))                     # an update: GPU 1's copy is refreshed on its next read
    assert tuple(strategy.run(lambda: float(jf.reduce_sum(v.read_value())))) == (256.0, 256.0)


def test_two_gpus_train_like_one(two_gpus):
    make = lambda: jf.optimizers.SGD(0.1, momentum=0.9)  # noqa: E731
    one, losses_one, _ = _models.train(jf.distribute.MirroredStrategy(two_gpus[:1]), traced=False,
                                       optimizer_cls=make, steps=2)
    two, losses_two, iterations = _models.train(jf.distribute.MirroredStrategy(two_gpus), traced=False,
                                                optimizer_cls=make, steps=2)
    assert iterations == 2
    np.testing.assert_allclose(losses_two, losses_one, rtol=1e-5)
    for a, b in zip(one, two):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


@pytest.fixture
def reads(monkeypatch):
    """(device, value returned) for every read served by a variable's `Mirrors`."""
    from jitflow.runtime.state import mirrors
    seen = []
    value_on = mirrors.Mirrors.value_on

    def spy(self, var, device_name):
        value = value_on(self, var, device_name)
        seen.append((device_name, value))
        return value
    monkeypatch.setattr(mirrors.Mirrors, "value_on", spy)
    return seen


def test_compiled_step_reads_each_replicas_copy(two_gpus, reads):
    strategy = jf.distribute.MirroredStrategy(two_gpus)
    with strategy.scope():
        v = jf.Variable(np.arange(256, dtype=np.float32))
    before = in_use(1)

    @jf.function
    def step():
        return jf.reduce_sum(v.read_value() * 2.0)
    total = strategy.run(step)
    assert tuple(float(t) for t in total) == (2.0 * np.arange(256).sum(),) * 2
    assert sorted(device for device, _ in reads) == [GPU.format(0), GPU.format(1)]
    on_gpu1 = [value for device, value in reads if device == GPU.format(1)]
    assert on_gpu1[0] is v._mirrors._copies[GPU.format(1)][1]   # GPU 1's copy, not the primary array
    assert on_gpu1[0] is not v._value
    assert in_use(1) - before >= 256 * 4                          # allocated on GPU 1's allocator

    reads.clear()
    v.assign(np.ones(256, np.float32))                            # the update goes to the primary ...
    assert tuple(float(t) for t in strategy.run(step)) == (512.0, 512.0)  # ... and GPU 1's copy is refreshed
    assert sorted(device for device, _ in reads) == [GPU.format(0), GPU.format(1)]
    assert strategy._whole_step(step).experimental_get_tracing_count() == 1   # one trace for both replicas


def test_two_gpus_train_like_one_in_a_function(two_gpus, reads):
    make = lambda: jf.optimizers.SGD(0.1, momentum=0.9)  # noqa: E731
    one, losses_one, _ = _models.train(jf.distribute.MirroredStrategy(two_gpus[:1]), traced=True,
                                       optimizer_cls=make, steps=2)
    assert not reads                                             # one GPU: no copies
    two, losses_two, iterations = _models.train(jf.distribute.MirroredStrategy(two_gpus), traced=True,
                                                optimizer_cls=make, steps=2)
    assert iterations == 2
    served = {device for device, _ in reads}
    assert served == {GPU.format(0), GPU.format(1)}             # replica 1's reads came from GPU 1's copies
    np.testing.assert_allclose(losses_two, losses_one, rtol=1e-5)
    for a, b in zip(one, two):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_keras_fit_on_two_gpus_reads_each_copy_and_matches_one(two_gpus, reads):
    one = _models.keras_fit(jf.distribute.MirroredStrategy(two_gpus[:1]), epochs=1, rows=20)
    two = _models.keras_fit(jf.distribute.MirroredStrategy(two_gpus), epochs=1, rows=20)
    assert {device for device, _ in reads} == {GPU.format(0), GPU.format(1)}  # fit's compiled step read GPU 1's copies
    for a, b in zip(one[0], two[0]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(two[1]["loss"], one[1]["loss"], rtol=1e-5)
    np.testing.assert_allclose(two[3], one[3], rtol=1e-5, atol=1e-6)
