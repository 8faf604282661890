"""One copy of a variable per device: what `MirroredStrategy` gives each GPU.

A variable created in the scope of a `MirroredStrategy` over several GPUs lives on the
first of them (its primary copy, `var.device`) and gets a `Mirrors` for the others. A
read inside a replica (whose thread runs under `jf.device(<its GPU>)`) returns the copy
on that replica's GPU, so each replica computes with weights in its own device memory,
as TF's mirrored variables do. In a compiled function the same holds per read: a read
traced in a replica is bound to the copy on that replica's GPU (`placement.mirrored_reader`
calls `value_on` with it), so one trace serves every replica. Updates go to the primary
copy (the optimizer applies the all-reduced gradients once, in the merge); each bumps the
variable's version, and the next read on another device refreshes that device's copy
first (one device-to-device copy per variable and device per update, instead of one
update per device).

The copies are allocated from each logical GPU's own allocator (`device_memory`), so
`memory_limit`s and memory statistics see them where they are.
"""
from __future__ import annotations

import threading
from typing import Any, Dict, List, Tuple

from jitflow.runtime.core import context, devices
from jitflow.runtime.execution import placement


class Mirrors:
    """The non-primary copies of one variable: device name → (version copied, the copy)."""

    def __init__(self, device_names: List[str]) -> None:
        self._copies: Dict[str, Tuple[int, Any]] = {name: (-1, None) for name in device_names}
        self._lock = threading.Lock()

    @property
    def devices(self) -> List[str]:
        return list(self._copies)

    def value_on(self, var: Any, device_name: str) -> Any:
        """The variable's current value on `device_name` (its primary value there, or a fresh copy)."""
        if device_name == var._device_name or device_name not in self._copies:
            if var._device_name != devices.CPU0:
                placement._dm().use(devices.gpu_by_name(var._device_name))
            return var._value
        with self._lock:
            version, copy = self._copies[device_name]
            if version != var._version or copy is None:
                copy = placement.place_value(var._value, device_name)
                self._copies[device_name] = (var._version, copy)
        if device_name != devices.CPU0:  # the copy's GPU is where the read's result lives
            placement._dm().use(devices.gpu_by_name(device_name))
        return copy

    def device_for_read(self, var: Any) -> str:
        """Where a read in this thread is served: the device of its `jf.device` scope when the
        variable has a copy there, else the primary copy's device."""
        spec = context._state.device
        if spec is None:
            return var._device_name
        here = devices.resolve(spec)
        return here if here in self._copies else var._device_name

    def read(self, var: Any) -> Any:
        """The value for a read in this thread (see `device_for_read`)."""
        return self.value_on(var, self.device_for_read(var))


__all__ = ["Mirrors"]
