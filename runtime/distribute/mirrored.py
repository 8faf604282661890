"""`MirroredStrategy`: synchronous data parallelism over the devices of one process.

The replicas are threads, one per device; numba kernels release the GIL, so they
compute at the same time. On CPUs (logical devices from
`jf.config.set_logical_device_configuration`) the replicas share one copy of each
variable in host memory: every replica reads it, and the merged update (gradients
summed over the replicas in replica order) is applied to it once per step, so all
replicas always see the same weights, as TF's mirrored variables guarantee.

On several GPUs each variable gets one copy per GPU (`state.mirrors`): the primary on
the first GPU, which the merged update changes, and a copy on every other GPU that a
replica's eager read refreshes after each update, so each replica computes from its own
device memory. (Inside a `jf.function`, compiled reads use the primary copy.)
"""
from __future__ import annotations

from typing import Any, List, Optional, Sequence

from jitflow.runtime.core import devices as _devices
from jitflow.runtime.distribute.strategy import Strategy
from jitflow.runtime.state.mirrors import Mirrors
from jitflow.runtime.state.variables import Variable


def _default_devices() -> List[str]:
    gpus = _devices.list_logical_devices("GPU")
    found = gpus or _devices.list_logical_devices("CPU")
    return [d.name for d in found]


def _check_devices(devices: Any) -> List[str]:
    if isinstance(devices, (str, bytes)):
        raise TypeError(f"devices: expected a list of device names such as ['/cpu:0', '/cpu:1']; got {devices!r}")
    named = [(d, _devices.canonical(d)) for d in devices]
    unnamed = [d for d, n in named if n is None]
    if unnamed:
        raise ValueError(f"devices: expected device names such as '/cpu:0'; got {unnamed[0]!r}, which names none")
    names = [n for _, n in named if n is not None]
    if not names:
        raise ValueError("devices: expected at least one device; got an empty list")
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"devices: each device may hold one replica; got {dupes} more than once")
    present = {d.name for d in _devices.list_logical_devices()}
    missing = [n for n in names if n not in present]
    if missing:
        raise ValueError(
            f"devices: {missing} do not exist; the logical devices are {sorted(present)}. More CPU devices come "
            "from jf.config.set_logical_device_configuration(jf.config.list_physical_devices('CPU')[0], "
            "[jf.config.LogicalDeviceConfiguration()] * 2) at the start of the program")
    return names


class MirroredStrategy(Strategy):
    """One replica per device of this machine, gradients summed every step (TF's `MirroredStrategy`).

    `devices=None` takes every logical GPU, or every logical CPU when there is no GPU.

    >>> strategy = jf.distribute.MirroredStrategy(["/cpu:0"])
    >>> with strategy.scope():
    ...     w = jf.Variable([1.0, 2.0])
    >>> strategy.num_replicas_in_sync
    1
    """

    def __init__(self, devices: Optional[Sequence[Any]] = None, cross_device_ops: Any = None,
                 collective_timeout: Optional[float] = None) -> None:
        names = _default_devices() if devices is None else _check_devices(devices)
        if collective_timeout is not None and not collective_timeout > 0:
            raise ValueError(f"collective_timeout: expected seconds > 0 or None; got {collective_timeout!r}")
        super().__init__(names, collective_timeout)
        # Several GPUs: one copy of each variable per GPU (CPU devices share host memory: no copies).
        resolved = [_devices.resolve(n) for n in names] if any("GPU" in n for n in names) else []
        self._mirror_devices = [d for i, d in enumerate(resolved) if d not in resolved[:i]]

    def _replicas_take_turns(self) -> bool:
        # numba's CUDA simulator runs one kernel at a time, process-wide
        return bool(self._mirror_devices) and _devices.simulated()

    def _track(self, var: Variable) -> None:
        super()._track(var)
        others = [d for d in self._mirror_devices if d != var._device_name]
        if others and var._mirrors is None and not var.dtype.is_string:
            var._mirrors = Mirrors(others)


__all__ = ["MirroredStrategy"]
