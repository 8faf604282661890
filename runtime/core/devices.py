"""Devices: what jitflow can run on, which of it is visible, and where an op goes.

The CPU is always there. GPUs come from numba's CUDA target, which is imported only
when a CUDA driver (or numba's simulator, `NUMBA_ENABLE_CUDASIM=1`) can be present at
all: on a machine without CUDA nothing imports `numba.cuda` and `active` stays False,
so eager ops and graph plans take exactly the CPU path they always took.

Configuration follows TF: physical devices are discovered, some are made visible,
memory growth and logical devices (`LogicalDeviceConfiguration(memory_limit=MB)`) are
set, and all of it freezes once the devices are initialised (the first op placed on a
GPU, or `list_logical_devices`). Logical GPUs are `Gpu` objects: a full TF device name,
a physical ordinal, and (in `device_memory`) an allocator that enforces the limit and
a stream that every kernel of that device is launched on.

Placement is TF's default with soft placement: an explicit `jf.device(...)` scope wins
when that device exists; otherwise the first visible GPU, else the CPU. Ops without a
GPU kernel (strings, printing, Python callbacks) run on the CPU.
"""
from __future__ import annotations

import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from jitflow.runtime.core import context, lazyjit

JOB = "/job:localhost/replica:0/task:0"
CPU0 = f"{JOB}/device:CPU:0"


# -- the public value types (TF's reprs) ---------------------------------------------------
@dataclass(frozen=True)
class PhysicalDevice:
    """A device found on this machine: `PhysicalDevice(name='/physical_device:GPU:0', device_type='GPU')`.

    >>> jf.config.list_physical_devices('CPU')[0].device_type
    'CPU'
    """
    name: str
    device_type: str


@dataclass(frozen=True)
class LogicalDevice:
    """A device ops can be placed on: `LogicalDevice(name='/device:GPU:0', device_type='GPU')`.

    >>> jf.config.list_logical_devices('CPU')[0].device_type
    'CPU'
    """
    name: str
    device_type: str


class LogicalDeviceConfiguration:
    """How one logical device is carved out of a physical one (TF's class).

    `memory_limit` is in MB; jitflow's allocator refuses allocations beyond it with a
    `jf.errors.ResourceExhaustedError` that names the limit and the request.

    >>> jf.config.LogicalDeviceConfiguration(memory_limit=1024).memory_limit
    1024
    """

    def __init__(self, memory_limit: Optional[int] = None, experimental_priority: Optional[int] = None,
                 experimental_device_ordinal: Optional[int] = None) -> None:
        if memory_limit is not None and (not isinstance(memory_limit, int) or isinstance(memory_limit, bool)
                                         or memory_limit <= 0):
            raise ValueError(f"memory_limit: expected a positive int (MB) or None; got {memory_limit!r}")
        self.memory_limit = memory_limit
        self.experimental_priority = experimental_priority
        self.experimental_device_ordinal = experimental_device_ordinal

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, LogicalDeviceConfiguration) and other.memory_limit == self.memory_limit
                and other.experimental_priority == self.experimental_priority)

    def __repr__(self) -> str:
        return f"LogicalDeviceConfiguration(memory_limit={self.memory_limit})"


class Gpu:
    """A logical GPU at run time: where kernels go and whose allocator they use."""

    __slots__ = ("index", "physical", "name", "spec", "memory_limit", "memory_growth", "memory")

    def __init__(self, index: int, physical: int, memory_limit: Optional[int], memory_growth: bool) -> None:
        self.index = index
        self.physical = physical
        self.spec = f"/device:GPU:{index}"
        self.name = f"{JOB}/device:GPU:{index}"
        self.memory_limit = memory_limit          # bytes, or None
        self.memory_growth = memory_growth
        self.memory: Any = None                   # device_memory.DeviceMemory, made on first use

    def __repr__(self) -> str:
        limit = "" if self.memory_limit is None else f", memory_limit={self.memory_limit >> 20} MB"
        return f"<Gpu {self.spec} on physical GPU {self.physical}{limit}>"


# -- state -----------------------------------------------------------------------------------
_lock = threading.RLock()
_physical_gpus: Optional[List[PhysicalDevice]] = None
_visible: Optional[List[PhysicalDevice]] = None          # None: every physical GPU
_growth: Dict[str, bool] = {}
_logical_cfg: Dict[str, List[LogicalDeviceConfiguration]] = {}
_cpu_cfg: Optional[List[LogicalDeviceConfiguration]] = None
_gpus: Optional[List[Gpu]] = None                         # set when initialised
_by_name: Dict[str, Gpu] = {}


def _cuda_possible() -> bool:
    """Cheap check (no import) for whether numba could find a CUDA device here."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        return True
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1") or os.environ.get("JITFLOW_NO_GPU"):
        return False
    if os.environ.get("NUMBA_CUDA_DRIVER"):
        return True
    if sys.platform.startswith("win"):
        return os.path.exists(os.path.join(os.environ.get("SystemRoot", r"C:\Windows"), "System32", "nvcuda.dll"))
    return any(os.path.exists(p) for p in ("/dev/nvidiactl", "/proc/driver/nvidia/version",
                                          "/usr/lib/wsl/lib/libcuda.so.1"))


# True while eager ops and new plans must consult placement: a GPU may be visible (decided
# for certain on first use) or one is in use. The CPU fast paths check only this flag.
active: bool = _cuda_possible()


def simulated() -> bool:
    """True when numba's CUDA simulator stands in for a GPU."""
    lazyjit.numba()  # never beside a background import of numba (see lazyjit.numba)
    from numba.core import config
    return bool(config.ENABLE_CUDASIM)


def _discover() -> List[PhysicalDevice]:
    global _physical_gpus
    with _lock:
        if _physical_gpus is not None:
            return _physical_gpus
        found: List[PhysicalDevice] = []
        if _cuda_possible():
            try:
                lazyjit.numba()  # never beside a background import of numba (see lazyjit.numba)
                from numba.core import config
                if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0") and not config.ENABLE_CUDASIM \
                        and "numba.cuda" not in sys.modules:
                    config.reload_config()  # the variable was set after numba was imported
                from numba import cuda
                if cuda.is_available():
                    found = [PhysicalDevice(f"/physical_device:GPU:{i}", "GPU") for i in range(len(cuda.gpus))]
            except Exception:  # a broken driver install is "no GPU", as for TF
                found = []
        _physical_gpus = found
        return found


def list_physical_devices(device_type: Optional[str] = None) -> List[PhysicalDevice]:
    """The devices on this machine, of one type (`"CPU"`, `"GPU"`) or all (`tf.config.list_physical_devices`).

    >>> [d.device_type for d in jf.config.list_physical_devices('CPU')]
    ['CPU']
    """
    kind = _check_type(device_type)
    out = []
    if kind in (None, "CPU"):
        out.append(PhysicalDevice("/physical_device:CPU:0", "CPU"))
    if kind in (None, "GPU"):
        out.extend(_discover())
    return out


def _check_type(device_type: Optional[str]) -> Optional[str]:
    if device_type is None:
        return None
    if not isinstance(device_type, str) or device_type.upper() not in ("CPU", "GPU"):
        raise ValueError(f"device_type: expected 'CPU', 'GPU' or None; got {device_type!r}")
    return device_type.upper()


def _frozen(what: str) -> RuntimeError:
    return RuntimeError(f"{what} cannot be modified after being initialized: jitflow initialises its "
                        "devices when the first op runs on a GPU (or list_logical_devices is called). "
                        "Configure devices at the start of the program.")


def _check_physical(device: Any, want: Optional[str] = None) -> PhysicalDevice:
    if not isinstance(device, PhysicalDevice) or device not in list_physical_devices():
        raise ValueError(f"Unrecognized device: {device!r}; use one of jf.config.list_physical_devices()")
    if want is not None and device.device_type != want:
        raise ValueError(f"Cannot set memory growth on non-GPU devices; got {device.name}")
    return device


def set_visible_devices(devices: Any, device_type: Optional[str] = None) -> None:
    """Restrict which physical devices of `device_type` jitflow uses; only before the devices initialise.

    >>> jf.config.set_visible_devices([], 'GPU')  # doctest: +SKIP
    """
    global _visible
    kind = _check_type(device_type)
    devices = [devices] if isinstance(devices, PhysicalDevice) else list(devices or [])
    for d in devices:
        _check_physical(d)
    if kind == "CPU" and not devices:
        raise ValueError("the CPU cannot be hidden: at least one CPU device must stay visible")
    if kind == "CPU":
        return  # the single CPU is visible whatever the list says
    new = [d for d in devices if d.device_type == "GPU"]
    with _lock:
        if _gpus is not None and new != get_visible_devices("GPU"):
            raise _frozen("Visible devices")
        _visible = new
        _refresh_active()


def get_visible_devices(device_type: Optional[str] = None) -> List[PhysicalDevice]:
    """The physical devices of `device_type` jitflow uses (`tf.config.get_visible_devices`).

    >>> [d.device_type for d in jf.config.get_visible_devices('CPU')]
    ['CPU']
    """
    kind = _check_type(device_type)
    gpus = _discover() if _visible is None else list(_visible)
    out = [PhysicalDevice("/physical_device:CPU:0", "CPU")] if kind in (None, "CPU") else []
    return out + (gpus if kind in (None, "GPU") else [])


def set_memory_growth(device: PhysicalDevice, enable: bool) -> None:
    _check_physical(device, "GPU")
    with _lock:
        if _gpus is not None and bool(enable) != _growth.get(device.name, False):
            raise _frozen("Physical devices")
        if enable and any(c.memory_limit for c in _logical_cfg.get(device.name, [])):
            raise ValueError(f"Cannot set memory growth on {device.name}: it has logical devices with a "
                             "memory limit (set_logical_device_configuration)")
        _growth[device.name] = bool(enable)


def get_memory_growth(device: PhysicalDevice) -> bool:
    _check_physical(device, "GPU")
    return _growth.get(device.name, False)


def set_logical_device_configuration(device: PhysicalDevice, logical_devices: Optional[List[Any]]) -> None:
    """Split a physical device into logical ones (`tf.config.set_logical_device_configuration`); only
    before the devices initialise.

    >>> cpu = jf.config.list_physical_devices('CPU')[0]
    >>> jf.config.set_logical_device_configuration(cpu, [jf.config.LogicalDeviceConfiguration()] * 2)  # doctest: +SKIP
    """
    global _cpu_cfg
    _check_physical(device)
    configs = None if logical_devices is None else list(logical_devices)
    for c in configs or []:
        if not isinstance(c, LogicalDeviceConfiguration):
            raise TypeError(f"logical_devices: expected LogicalDeviceConfiguration objects; got {c!r}")
        if device.device_type == "GPU" and c.memory_limit is None:
            raise ValueError("a logical GPU needs a memory_limit (MB): LogicalDeviceConfiguration(memory_limit=1024)")
    with _lock:
        current = _cpu_cfg if device.device_type == "CPU" else _logical_cfg.get(device.name)
        if _gpus is not None and configs != current:
            raise _frozen("Virtual devices")
        if device.device_type == "CPU":
            _cpu_cfg = configs
        elif configs is None:
            _logical_cfg.pop(device.name, None)
        else:
            if _growth.get(device.name):
                raise ValueError(f"Cannot set a memory limit on {device.name}: memory growth is enabled for it")
            _logical_cfg[device.name] = configs


def get_logical_device_configuration(device: PhysicalDevice) -> Optional[List[LogicalDeviceConfiguration]]:
    """The logical configurations set for a physical device, or None (`tf.config.get_logical_device_configuration`).

    >>> cpu = jf.config.list_physical_devices('CPU')[0]
    >>> jf.config.get_logical_device_configuration(cpu)  # doctest: +SKIP
    """
    _check_physical(device)
    if device.device_type == "CPU":
        return None if _cpu_cfg is None else list(_cpu_cfg)
    found = _logical_cfg.get(device.name)
    return None if found is None else list(found)


def gpus() -> List[Gpu]:
    """The logical GPUs, creating them (and freezing the configuration) on first call."""
    global _gpus
    found = _gpus
    if found is not None:
        return found
    with _lock:
        if _gpus is None:
            made: List[Gpu] = []
            visible = get_visible_devices("GPU")
            for phys in visible:
                ordinal = int(phys.name.rsplit(":", 1)[1])
                growth = _growth.get(phys.name, False)
                for cfg in _logical_cfg.get(phys.name) or [LogicalDeviceConfiguration()]:
                    limit = None if cfg.memory_limit is None else cfg.memory_limit * (1 << 20)
                    made.append(Gpu(len(made), ordinal, limit, growth))
            _by_name.clear()
            for g in made:
                _by_name[g.name] = g
            _gpus = made
            _refresh_active()
        return _gpus


def _refresh_active() -> None:
    global active
    if _gpus is not None:
        active = bool(_gpus)
    else:
        active = _cuda_possible() and (_visible is None or bool(_visible))


def list_logical_devices(device_type: Optional[str] = None) -> List[LogicalDevice]:
    """The devices ops can be placed on, after visibility and logical splits (`tf.config.list_logical_devices`).

    >>> [d.name for d in jf.config.list_logical_devices('CPU')]
    ['/device:CPU:0']
    """
    kind = _check_type(device_type)
    out: List[LogicalDevice] = []
    if kind in (None, "CPU"):
        out.extend(LogicalDevice(f"/device:CPU:{i}", "CPU") for i in range(len(_cpu_cfg or [None])))
    if kind in (None, "GPU"):
        out.extend(LogicalDevice(g.spec, "GPU") for g in gpus())
    return out


def gpu_by_name(name: str) -> Gpu:
    return _by_name[name]


def is_gpu_name(name: str) -> bool:
    return name in _by_name


def default_gpu() -> Optional[Gpu]:
    found = gpus()
    return found[0] if found else None


# -- device specs ----------------------------------------------------------------------------
_SPEC = re.compile(r"^(?:/job:[^/]+)?(?:/replica:\d+)?(?:/task:\d+)?"
                   r"(?:/?(?:device:)?(?P<type>cpu|gpu|xla_gpu|xla_cpu)(?::(?P<index>\d+|\*))?)?$", re.I)


def canonical(spec: Any) -> Optional[str]:
    """`"/gpu:0"`, `"GPU"`, `"/device:GPU:0"`, a full name or a LogicalDevice → `"/device:GPU:0"`."""
    if spec is None:
        return None
    if isinstance(spec, (LogicalDevice, PhysicalDevice)):
        spec = spec.name.replace("/physical_device:", "/device:")
    if not isinstance(spec, str):
        raise TypeError(f"device: expected a device name such as '/GPU:0' or None; got {spec!r}")
    if spec == "":
        return None
    m = _SPEC.match(spec.strip())
    if m is None or m.group("type") is None:
        raise ValueError(f"device: cannot parse device specification {spec!r}; expected e.g. '/GPU:0', "
                         "'/CPU:0' or '/job:localhost/replica:0/task:0/device:GPU:0'")
    kind = "GPU" if "GPU" in m.group("type").upper() else "CPU"
    index = m.group("index")
    return f"/device:{kind}:{0 if index in (None, '*') else int(index)}"


def resolve(spec: Optional[str]) -> str:
    """The full name of the device an op requested as `spec` runs on (soft placement)."""
    if spec is not None and spec.startswith("/device:CPU"):
        return CPU0
    if spec is not None and spec.startswith(JOB):
        if spec == CPU0 or spec in _by_name:
            return spec
        spec = spec[len(JOB):]
    found = gpus()
    if not found:
        return CPU0
    if spec is not None:
        index = int(spec.rsplit(":", 1)[1])
        if index < len(found):
            return found[index].name
    return found[0].name


class device:
    """Place ops and new tensors created in the block (TF's `tf.device`).

    >>> with jf.device("/CPU:0"):
    ...     x = jf.constant([1.0, 2.0]) * 2.0   # runs on the CPU even when a GPU is visible
    >>> x.device
    '/job:localhost/replica:0/task:0/device:CPU:0'

    Inside a `jf.function` the scope sets `node.device`; the plan places the node there
    (or on the CPU when no such device exists: soft placement, as TF's default).
    """

    def __init__(self, device_name: Any) -> None:
        self._spec = canonical(device_name)
        self._saved: List[Optional[str]] = []

    def __enter__(self) -> "device":
        self._saved.append(context._state.device)
        context._state.device = self._spec
        return self

    def __exit__(self, *exc: Any) -> None:
        context._state.device = self._saved.pop()

    def __repr__(self) -> str:
        return f"jf.device({self._spec!r})"


def _reset_for_tests() -> None:
    """Forget configuration and initialised devices (tests only: real programs configure once)."""
    global _physical_gpus, _visible, _gpus, _cpu_cfg
    with _lock:
        _physical_gpus, _visible, _gpus, _cpu_cfg = None, None, None, None
        _growth.clear()
        _logical_cfg.clear()
        _by_name.clear()
        _refresh_active()


__all__ = ["PhysicalDevice", "LogicalDevice", "LogicalDeviceConfiguration", "device", "list_physical_devices",
           "list_logical_devices", "set_visible_devices", "get_visible_devices", "set_memory_growth",
           "get_memory_growth", "set_logical_device_configuration", "get_logical_device_configuration"]
