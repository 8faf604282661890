"""GPU memory: one allocator and one stream per logical GPU, and host <-> device copies.

Imported only once a GPU is in use (it imports `numba.cuda`). Every device array
jitflow makes comes from `empty()`, so the allocator sees every byte:

- A logical device's `memory_limit` is enforced here: an allocation that would take the
  bytes in use past it raises `jf.errors.ResourceExhaustedError` naming the device, the
  request, what is in use and the limit.
- Without memory growth (TF's default) freed blocks are cached by size and reused, so a
  graph run in steady state neither allocates nor frees driver memory (a `cuMemFree`
  would synchronise the device). With `set_memory_growth(gpu, True)` freed blocks go back
  to the driver and the footprint follows demand.
- A block is released when the last array using it dies: the finalizer sits on the
  per-allocation memory object, which reshaped views share. (jitflow never slices a
  device array: kernels take offsets and strides instead, so no view can outlive it.)

Every kernel, allocation and copy of a device uses its stream, so work is ordered
without synchronisation; only `to_host` (a value the host needs) waits.
"""
from __future__ import annotations

import gc
import math
import sys
import threading
import warnings
import weakref
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import devices, lazyjit
from jitflow.runtime.core import tensor as _tensor
from jitflow.runtime.core.errors import ResourceExhaustedError

lazyjit.numba()  # numba may be loading on another thread: wait for it (see lazyjit.numba) before numba.cuda
from numba import cuda  # noqa: E402

SIMULATED = devices.simulated()
_GRANULE = 512

if SIMULATED:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    class _ArrayType(FakeCUDAArray):
        """The simulator's array with a real DeviceNDArray's host-side shape: a plain tuple
        (the simulator's `FakeShape` refuses negative indices, as shapes do inside kernels)."""

        @property
        def shape(self):
            return self._ary.shape

        def reshape(self, *args, **kwargs):
            return _ArrayType(self._ary.reshape(*args, **kwargs), stream=self.stream)

    DEVICE_ARRAY_TYPES: Tuple[Any, ...] = (FakeCUDAArray,)  # numba classes: untyped here
else:
    # The simulator's class above or numba's: one name, chosen once at import.
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as _ArrayType  # type: ignore[no-redef]
    from numba.cuda.cudadrv import devicearray as _devicearray
    DEVICE_ARRAY_TYPES = (_ArrayType, _devicearray.DeviceNDArrayBase)


def _fmt(nbytes: int) -> str:
    return f"{nbytes} bytes ({nbytes / (1 << 20):.2f} MiB)"


class DeviceMemory:
    """The allocator and stream of one logical GPU."""

    def __init__(self, gpu: devices.Gpu) -> None:
        self.gpu = gpu
        self.limit = gpu.memory_limit
        self.cache = not gpu.memory_growth
        self.in_use = 0        # bytes handed out and not yet released
        self.peak = 0
        self.reserved = 0      # bytes held from the driver: in use + cached
        self._free: Dict[int, List[Any]] = {}
        self._lock = threading.RLock()  # finalizers (releases) may run inside a locked section
        with self.context():
            self.stream = cuda.stream()
        self.pooled = self._self_test()

    def context(self):
        """A context manager making this GPU current for the calling thread."""
        return cuda.gpus[self.gpu.physical]

    # -- allocation -------------------------------------------------------------------
    def empty(self, shape: Tuple[int, ...], dtype: Any) -> Any:
        dtype = np.dtype(dtype)
        shape = tuple(int(d) for d in shape)
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes == 0:
            arr = cuda.device_array(shape, dtype, stream=self.stream)
            return _ArrayType(arr._ary, stream=self.stream) if SIMULATED else arr
        size = -(-nbytes // _GRANULE) * _GRANULE
        block = self._take(size, shape, dtype)
        if not self.pooled:
            arr = _ArrayType(block._ary, stream=self.stream) if SIMULATED else block
            weakref.finalize(_owner(arr), self._release, None, size)
            return arr
        return self._view(block, size, shape, dtype)

    def _take(self, size: int, shape: tuple, dtype: np.dtype) -> Any:
        with self._lock:
            if self.limit is not None and self.in_use + size > self.limit:
                self._lock.release()
                try:
                    gc.collect()  # tensors in reference cycles may still hold blocks
                finally:
                    self._lock.acquire()
                if self.in_use + size > self.limit:
                    raise ResourceExhaustedError(
                        f"OOM when allocating tensor with shape {list(shape)} and type {dtype.name} on "
                        f"{self.gpu.name}: requested {_fmt(size)}, {_fmt(self.in_use)} in use, memory limit "
                        f"{_fmt(self.limit)} (LogicalDeviceConfiguration(memory_limit={self.limit >> 20}))")
            free = self._free.get(size) if self.pooled else None
            block = free.pop() if free else None
            if block is None:
                if self.limit is not None and self.reserved + size > self.limit:
                    self._trim(self.reserved + size - self.limit)
                self.reserved += size
            self.in_use += size
            self.peak = max(self.peak, self.in_use)
        if block is None:
            try:
                if self.pooled:
                    raw = cuda.device_array(size, np.uint8, stream=self.stream)
                    # The pool's own reference: numba frees a block when the references its
                    # views took drop to zero, which must not happen while the pool holds it.
                    block = (raw, None if SIMULATED else raw.gpu_data.own())
                else:
                    block = cuda.device_array(shape, dtype, stream=self.stream)
            except Exception as e:  # the driver's own out-of-memory
                self._release(None, size)
                raise ResourceExhaustedError(f"OOM when allocating tensor with shape {list(shape)} and type "
                                             f"{dtype.name} on {self.gpu.name}: requested {_fmt(size)} ({e})") from e
        return block

    def _trim(self, want: int) -> None:
        """Drop cached blocks (largest first) until `want` bytes are back with the driver."""
        for size in sorted(self._free, reverse=True):
            blocks = self._free[size]
            while blocks and want > 0:
                blocks.pop()
                self.reserved -= size
                want -= size

    def _release(self, block: Any, size: int) -> None:
        with self._lock:
            self.in_use -= size
            if block is not None and self.cache:
                self._free.setdefault(size, []).append(block)
            else:
                self.reserved -= size

    def _view(self, block: Any, size: int, shape: tuple, dtype: np.dtype) -> Any:
        """A typed array over a pooled block whose memory object is new (reshaped views
        share it), so it can carry the finalizer that gives the block back."""
        count = math.prod(shape)
        raw = block[0]
        if SIMULATED:
            memory = np.frombuffer(memoryview(raw._ary), dtype=dtype, count=count)  # base: the memoryview
            weakref.finalize(memory, self._release, block, size)
            return _ArrayType(memory.reshape(shape), stream=self.stream)
        memory = raw.gpu_data.view(0, count * dtype.itemsize)
        arr = _ArrayType(shape, _c_strides(shape, dtype), dtype, stream=self.stream, gpu_data=memory)
        weakref.finalize(memory, self._release, block, size)
        return arr

    def _self_test(self) -> bool:
        """Check the pooled path on this numba/driver once; fall back to plain allocations."""
        self.pooled = True
        try:
            probe = np.arange(6, dtype=np.float32).reshape(2, 3)
            a = self.empty(probe.shape, probe.dtype)
            a.copy_to_device(probe, stream=self.stream)
            back = a.reshape(6).copy_to_host(stream=self.stream)
            self.stream.synchronize()
            ok = np.array_equal(back, probe.reshape(6))
            del a
            gc.collect()
            if not SIMULATED:  # process numba's pending frees: the cached block must survive them
                cuda.current_context().deallocations.clear()
                ok = ok and all(b[0].gpu_data._finalizer.alive for bs in self._free.values() for b in bs)
            b = self.empty(probe.shape, probe.dtype)  # reuses the cached block
            b.copy_to_device(probe[::-1].copy(), stream=self.stream)
            ok = ok and np.array_equal(b.copy_to_host(stream=self.stream), probe[::-1])
            del b
            gc.collect()
            ok = ok and self.in_use == 0 and (not self.cache or self.reserved > 0)
        except Exception as e:  # pragma: no cover - depends on the numba build
            warnings.warn(f"jitflow: the caching GPU allocator is unavailable ({e}); using numba's allocator",
                          stacklevel=2)
            ok = False
        if not ok:
            self._free.clear()
            self.in_use = self.reserved = self.peak = 0
        self.peak = 0
        return ok

    def info(self) -> Dict[str, int]:
        return {"current": self.in_use, "peak": self.peak, "reserved": self.reserved,
                "limit": self.limit if self.limit is not None else -1}

    def reset_peak(self) -> None:
        with self._lock:
            self.peak = self.in_use


def _c_strides(shape: tuple, dtype: np.dtype) -> tuple:
    strides, step = [], dtype.itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= max(d, 1)
    return tuple(reversed(strides))


def _owner(arr: Any) -> Any:
    """The object whose death frees `arr`'s memory (what views of it keep alive)."""
    if SIMULATED:
        base = arr._ary
        return base if base.base is None else base.base
    return arr.gpu_data


# -- the current device (set by whoever launches kernels) --------------------------------------
class _Current(threading.local):
    """The current device is per thread: MirroredStrategy's replica threads each launch on their GPU."""
    mem: Optional[DeviceMemory] = None


_current = _Current()
_memories: Dict[int, DeviceMemory] = {}
_mem_lock = threading.Lock()


def memory(gpu: devices.Gpu) -> DeviceMemory:
    found = gpu.memory
    if found is None:
        with _mem_lock:
            if gpu.memory is None:
                gpu.memory = DeviceMemory(gpu)
            found = gpu.memory
    return found


def use(gpu: devices.Gpu) -> DeviceMemory:
    """Make `gpu` the device kernels allocate on and launch to; returns its memory."""
    mem = gpu.memory or memory(gpu)
    _current.mem = mem
    return mem


def current() -> DeviceMemory:
    mem = _current.mem
    if mem is None:
        gpu = devices.default_gpu()
        if gpu is None:
            raise RuntimeError("no GPU is visible")
        mem = use(gpu)
    return mem


def current_gpu_name() -> str:
    return current().gpu.name


def gpu_name_of(value: Any) -> Optional[str]:
    """The logical GPU whose allocator made the device array `value` (each has its own stream,
    which its arrays carry); None when no allocator of this process made it."""
    stream = getattr(value, "stream", None)
    if stream is None or stream == 0:
        return None
    for gpu in devices.gpus():
        mem = gpu.memory
        if mem is not None and mem.stream is stream:
            return gpu.name
    return None


# -- arrays and copies -------------------------------------------------------------------------
def empty(shape: Tuple[int, ...], dtype: Any) -> Any:
    return current().empty(shape, dtype)


def is_device_array(value: Any) -> bool:
    return isinstance(value, DEVICE_ARRAY_TYPES)


def to_device(value: Any, mem: Optional[DeviceMemory] = None) -> Any:
    """A device copy of a host value (a device array is returned as it is)."""
    if isinstance(value, DEVICE_ARRAY_TYPES):
        return value
    host = np.asarray(value)
    if not host.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        host = np.ascontiguousarray(host)
    if host.dtype == object:
        raise TypeError("string tensors cannot be placed on a GPU")
    mem = mem or current()
    out = mem.empty(host.shape, host.dtype)
    if host.size:
        out.copy_to_device(host, stream=mem.stream)
    return out


def to_host(value: Any) -> np.ndarray:
    """A host copy of a device array (waits for the work that produces it); host values pass."""
    if not isinstance(value, DEVICE_ARRAY_TYPES):
        return value if value.__class__ is np.ndarray else np.asarray(value)
    stream = value.stream or (current().stream)
    if value.size == 0:
        return np.empty(value.shape, value.dtype)
    out = value.copy_to_host(stream=stream)
    stream.synchronize()
    return out


def synchronize() -> None:
    for gpu in devices.gpus():
        if gpu.memory is not None:
            gpu.memory.stream.synchronize()


def defer_cleanup():
    """numba's guard against driver frees (which synchronise) inside a graph run."""
    return cuda.defer_cleanup()


_tensor.device_memory = sys.modules[__name__]  # host_array / device_of may now look at device arrays
