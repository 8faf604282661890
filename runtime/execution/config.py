"""`jf.config`: devices as TF's `tf.config` exposes them.

    gpus = jf.config.list_physical_devices("GPU")      # [] without CUDA
    if gpus:
        jf.config.experimental.set_memory_growth(gpus[0], True)
        jf.config.set_visible_devices(gpus[0], "GPU")

Everything validates its arguments and delegates to `runtime/devices.py`; configuration
must happen before the devices are initialised (the first op on a GPU), as in TF.
"""
from __future__ import annotations

import types
import weakref
from typing import Any, Dict

from jitflow.runtime.core import devices
from jitflow.runtime.ops import cpu_parallel
from jitflow.runtime.core.devices import (LogicalDevice, LogicalDeviceConfiguration,
                                          PhysicalDevice, get_logical_device_configuration,
                                          get_memory_growth, get_visible_devices,
                                          list_logical_devices, list_physical_devices,
                                          set_logical_device_configuration, set_memory_growth,
                                          set_visible_devices)


def get_memory_info(device: str) -> Dict[str, int]:
    """Bytes jitflow's allocator has handed out on a GPU: `{"current", "peak"}` (TF's keys),
    plus `"reserved"` (held from the driver, cached blocks included) and `"limit"` (-1: none).

    >>> get_memory_info("GPU:0")["current"]  # doctest: +SKIP
    0
    """
    gpu = _gpu(device)
    from jitflow.runtime.execution import device_memory  # lazy: imports numba.cuda
    return device_memory.memory(gpu).info()


def reset_memory_stats(device: str) -> None:
    """Start the `peak` of `get_memory_info(device)` again from what is in use now.

    >>> jf.config.experimental.reset_memory_stats('GPU:0')  # doctest: +SKIP
    """
    gpu = _gpu(device)
    from jitflow.runtime.execution import device_memory  # lazy: imports numba.cuda
    device_memory.memory(gpu).reset_peak()


def _gpu(device: Any) -> devices.Gpu:
    spec = devices.canonical(device)
    if spec is None or not spec.startswith("/device:GPU"):
        raise ValueError(f"device: memory info exists for GPUs only; got {device!r}")
    found = devices.gpus()
    index = int(spec.rsplit(":", 1)[1])
    if index >= len(found):
        raise ValueError(f"device: {device!r} does not exist; the logical GPUs are "
                         f"{[g.spec for g in found] or 'none'}")
    return found[index]


class _EagerMode:
    """`run_functions_eagerly`: while on, every jf.function call runs its Python function."""

    def __init__(self) -> None:
        self.on = False
        self.functions: "weakref.WeakSet" = weakref.WeakSet()


eager_mode = _EagerMode()


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Run every `jf.function` as plain Python (no tracing), to debug with print and pdb.

    >>> run_functions_eagerly(True); functions_run_eagerly()
    True
    >>> run_functions_eagerly(False)
    """
    if not isinstance(run_eagerly, bool):
        raise TypeError(f"run_eagerly: expected a bool; got {run_eagerly!r}")
    eager_mode.on = run_eagerly
    if run_eagerly:  # the direct call path would still run compiled graphs: empty its tables
        for fn in list(eager_mode.functions):
            fn._direct.clear()


def functions_run_eagerly() -> bool:
    """True while `run_functions_eagerly(True)` is in effect.

    >>> functions_run_eagerly()
    False
    """
    return eager_mode.on


def set_intra_op_parallelism_threads(num_threads: int) -> None:
    """Threads one CPU kernel (a convolution, a pooling, a bias gradient) may use; 0 lets jitflow
    choose (the CPUs this process may use, or `JITFLOW_INTRA_OP_THREADS`), as in TF.

    >>> jf.config.threading.set_intra_op_parallelism_threads(1)
    >>> jf.config.threading.get_intra_op_parallelism_threads()
    1
    >>> jf.config.threading.set_intra_op_parallelism_threads(0)
    """
    if not isinstance(num_threads, int) or isinstance(num_threads, bool) or num_threads < 0:
        raise ValueError(f"num_threads: expected a non-negative integer (0: the system's choice); got "
                         f"{num_threads!r}")
    cpu_parallel.set_intra_op_threads(num_threads)


def get_intra_op_parallelism_threads() -> int:
    """The number of threads a CPU kernel uses (TF returns 0 for "not set"; jitflow returns the
    number in effect).

    >>> jf.config.threading.get_intra_op_parallelism_threads() >= 1
    True
    """
    return cpu_parallel.intra_op_threads()


threading = types.ModuleType("jitflow.config.threading", "TF's tf.config.threading: intra-op parallelism.")
threading.__dict__.update(set_intra_op_parallelism_threads=set_intra_op_parallelism_threads,
                          get_intra_op_parallelism_threads=get_intra_op_parallelism_threads)
threading.__dict__["__all__"] = ["set_intra_op_parallelism_threads", "get_intra_op_parallelism_threads"]

experimental = types.ModuleType("jitflow.config.experimental", "TF's tf.config.experimental names.")
experimental.__dict__.update(
    set_memory_growth=set_memory_growth, get_memory_growth=get_memory_growth,
    get_memory_info=get_memory_info, reset_memory_stats=reset_memory_stats,
    list_physical_devices=list_physical_devices, list_logical_devices=list_logical_devices,
    set_visible_devices=set_visible_devices, get_visible_devices=get_visible_devices,
    set_virtual_device_configuration=set_logical_device_configuration,
    get_virtual_device_configuration=get_logical_device_configuration,
    VirtualDeviceConfiguration=LogicalDeviceConfiguration,
)
experimental.__dict__["__all__"] = sorted(n for n in experimental.__dict__ if not n.startswith("_"))

__all__ = ["run_functions_eagerly", "functions_run_eagerly", "threading",
           "list_physical_devices", "list_logical_devices", "set_visible_devices", "get_visible_devices",
           "set_logical_device_configuration", "get_logical_device_configuration", "LogicalDeviceConfiguration",
           "PhysicalDevice", "LogicalDevice", "experimental", "get_memory_info", "reset_memory_stats"]
