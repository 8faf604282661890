"""Placement: which device each eager op and each graph node runs on, and the copies between.

Used only while `devices.active` (a GPU is, or may be, visible); otherwise eager ops and
plans never come here. The rules (TF's, with soft placement):

- Ops the CUDA table does not override (`KERNELS["cuda"][op] is KERNELS["cpu"][op]`:
  printing, Python callbacks, summaries) and ops on strings run on the CPU.
- Control flow, function calls and variable ops are *device-agnostic*: they run on the
  host and drive whatever device their values live on (a variable's ops run where the
  variable lives; a read of a mirrored variable traced in a replica, where that replica's GPU
  holds its copy: see `mirrored_reader`); their outputs' device is known only at run time.
- Any other op goes to the innermost `jf.device(...)` (eagerly) or its node's device
  (in a graph) when that device exists, else to the first visible GPU, else the CPU.

A value needed on another device is copied by `CopyToDevice` / `CopyFromDevice`: eagerly
an event of its own when tracing; in a plan a node of its own (named after the value,
`<node>/CopyToDevice`), so copies show in step stats and profiles like any op.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from jitflow.runtime.core import context, devices, dtypes as _dt, instrument
from jitflow.runtime.ops import registry
from jitflow.runtime.ops.infer import same_as_input
from jitflow.runtime.ops.registry import KERNELS, OPS, _infer, kernel_attrs, register
from jitflow.runtime.core.tensor import CPU0, EagerTensor, SymbolicTensor

DYNAMIC = "dynamic"
DEVICE_AGNOSTIC = frozenset({"If", "While", "StatefulPartitionedCall", "ReadVariableOp", "AssignVariableOp",
                             "InitializeVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                             "ResourceStridedSliceAssign"})
_NEVER_ON_GPU = frozenset({"Placeholder", "Const", "CopyToDevice", "CopyFromDevice"})


def _dm():
    from jitflow.runtime.execution import device_memory  # lazy: imports numba.cuda
    return device_memory


def cuda_table() -> Dict[str, Any]:
    """`KERNELS["cuda"]`, built on first use (it imports numba.cuda)."""
    return registry.kernel_table("cuda")


def has_gpu_kernel(op: str) -> bool:
    table = cuda_table()
    return op in table and table[op] is not KERNELS["cpu"].get(op) and op not in _NEVER_ON_GPU


# -- copies ------------------------------------------------------------------------------------
def _copy_to_device(x: Any) -> Any:
    return _dm().to_device(x)


def _copy_from_device(x: Any) -> Any:
    return _dm().to_host(x)


register("CopyToDevice", same_as_input, cpu=_copy_to_device, public_name="copy to device",
         default_name="CopyToDevice")
register("CopyFromDevice", same_as_input, cpu=_copy_from_device, public_name="copy from device",
         default_name="CopyFromDevice")
COPY_TO, COPY_FROM = OPS["CopyToDevice"], OPS["CopyFromDevice"]


def move(value: Any, target: str) -> Any:
    """`value` (a host or device array) on device `target`, copied if it lives elsewhere."""
    dm = _dm() if target != CPU0 or value.__class__ is not np.ndarray else None
    if target == CPU0:
        if dm is None or not dm.is_device_array(value):
            return value
        return _timed_copy(COPY_FROM, _copy_from_device, value, CPU0)
    gpu = devices.gpu_by_name(target)
    assert dm is not None  # loaded above for every target but the CPU
    mem = dm.use(gpu)
    if dm.is_device_array(value) and dm.gpu_name_of(value) in (None, target):
        return value
    if dm.is_device_array(value):  # another GPU: through the host
        value = _copy_from_device(value)
        dm.use(gpu)
    return _timed_copy(COPY_TO, lambda v: dm.to_device(v, mem), value, target)


def _timed_copy(op: Any, fn: Any, value: Any, device: str) -> Any:
    if not instrument.enabled:
        return fn(value)
    return instrument.run_eager_op(op, fn, [value], {}, [])


# -- eager placement ---------------------------------------------------------------------------
def _is_string(t: Any) -> bool:
    return isinstance(t, (EagerTensor, SymbolicTensor)) and t._dtype.is_string


def eager_target(op: Any, inputs: Sequence[Any], attrs: Dict[str, Any]) -> str:
    """The device an eager op runs on (DYNAMIC for device-agnostic ops)."""
    name = op.tf_op
    if name in DEVICE_AGNOSTIC:
        return DYNAMIC
    if not devices.gpus() or any(_is_string(t) for t in inputs) or not has_gpu_kernel(name) \
            or _string_attrs(attrs):
        return CPU0
    return devices.resolve(context._state.device)


def _string_attrs(attrs: Dict[str, Any]) -> bool:
    dt = attrs.get("dtype") or attrs.get("DstT") or attrs.get("out_type")
    return isinstance(dt, _dt.DType) and dt.is_string


def run_eager(op: Any, inputs: Sequence[Any], attrs: Dict[str, Any]) -> List[Any]:
    """`registry._run_eager` when devices are active: place, copy, run, wrap."""
    if not devices.gpus():  # the possible GPU turned out absent: back to the plain path for good
        return registry._run_eager(op, inputs, attrs)
    target = eager_target(op, inputs, attrs)
    operands, specs = [], []
    for t in inputs:
        if t.__class__ is EagerTensor:
            value = t._value
            if target is not DYNAMIC and t._device != target:
                value = move(value, target)
            operands.append(value)
            specs.append((tuple(value.shape), t._dtype))
        elif isinstance(t, SymbolicTensor):
            return registry._run_eager(op, inputs, attrs)  # raises the usual error
        else:  # a Variable feeding a resource input
            operands.append(t)
            specs.append(((), _dt.resource))
    out_specs = _infer(op, specs, attrs)
    kattrs = kernel_attrs(attrs)
    if target == CPU0:
        kernel = KERNELS["cpu"][op.tf_op]
    else:
        kernel = cuda_table()[op.tf_op]
        if target is not DYNAMIC:
            _dm().use(devices.gpu_by_name(target))
    if instrument.enabled:
        result = _run_instrumented(op, kernel, operands, kattrs, out_specs, target)
    else:
        result = kernel(*operands, **kattrs)
    if not out_specs:
        return []
    results = [result] if len(out_specs) == 1 else list(result)
    return [registry._wrap(r, spec[1]) for r, spec in zip(results, out_specs)]


def _run_instrumented(op: Any, kernel: Any, operands: list, kattrs: dict, out_specs: list, target: str) -> Any:
    if target == CPU0 or target is DYNAMIC:
        return instrument.run_eager_op(op, kernel, operands, kattrs, out_specs)
    timer = GpuTimer(_dm().current())
    start = time.perf_counter_ns()
    e0 = timer.mark()
    result = kernel(*operands, **kattrs)
    e1 = timer.mark()
    end = time.perf_counter_ns()
    sink = instrument.sink()
    if sink is not None:
        import threading
        sink.eager_op(op, start, end, threading.get_ident(), result)
        device_op = getattr(sink, "device_op", None)
        if device_op is not None:
            t0, t1 = timer.times([(e0, start, e1, end)])[0]
            device_op(op.public_name, op.tf_op, target, t0, t1, None)
    return result


class GpuTimer:
    """CUDA events on a device's stream, turned into perf_counter_ns times.

    An anchor event recorded on an idle stream fixes GPU time against host time; each
    kernel's events then give its start and end. The simulator's events carry no times,
    so there the host times around the (synchronous) launch stand in.
    """

    def __init__(self, mem: Any) -> None:
        from numba import cuda
        self._cuda = cuda
        self.mem = mem
        self.simulated = devices.simulated()
        if not self.simulated:
            mem.stream.synchronize()
        self.anchor = self.mark()
        self.anchor_ns = time.perf_counter_ns()

    def mark(self) -> Any:
        if self.simulated:
            return None
        event = self._cuda.event(timing=True)
        event.record(self.mem.stream)
        return event

    def times(self, marks: List[tuple]) -> List[tuple]:
        """[(e0, host_t0, e1, host_t1)] → [(start_ns, end_ns)] on the GPU's clock, in host time."""
        if self.simulated:
            return [(t0, t1) for _, t0, _, t1 in marks]
        self.mem.stream.synchronize()
        out = []
        for e0, _, e1, _ in marks:
            start = self.anchor_ns + int(self.anchor.elapsed_time(e0) * 1e6)
            end = self.anchor_ns + int(self.anchor.elapsed_time(e1) * 1e6)
            out.append((start, max(start, end)))
        return out


# -- new tensors and variables -----------------------------------------------------------------
def place_new(tensor: EagerTensor) -> EagerTensor:
    """A new eager tensor inside `jf.device("/GPU:i")` goes to that GPU (strings stay on the CPU)."""
    spec = context._state.device
    if spec is None or tensor._dtype.is_string or spec.startswith("/device:CPU"):
        return tensor
    target = devices.resolve(spec)
    if target == CPU0:
        return tensor
    return EagerTensor(move(tensor._value, target), tensor._dtype, target)


def variable_device(dtype: _dt.DType) -> str:
    """Where a new variable lives: the scope's device, else the first visible GPU (TF's default)."""
    if dtype.is_string or not devices.gpus():
        return CPU0
    return devices.resolve(context._state.device)


def place_value(value: Any, device: str) -> Any:
    if value is None:
        return None
    if device == CPU0:
        return _dm().to_host(value) if value.__class__ is not np.ndarray else value
    return move(value, device)


# -- graph placement ---------------------------------------------------------------------------
def place_plan(nodes: Sequence[Any]) -> Optional[Dict[int, str]]:
    """id(node) → device name (or DYNAMIC) for a plan's nodes; None when no GPU is visible."""
    if not devices.gpus():
        return None
    placed: Dict[int, str] = {}
    for node in nodes:
        op = node.op.tf_op
        if op in ("Placeholder", "Const"):
            continue
        if op in DEVICE_AGNOSTIC:  # runs on the host; a variable's ops show under its device
            placed[id(node)] = DYNAMIC
            var = _variable_of(node)
            node.device = _variable_device(node, var) if var is not None else CPU0
            continue
        strings = any(t._dtype.is_string for t in list(node.inputs) + list(node.outputs))
        if strings or not has_gpu_kernel(op):
            dev = CPU0
        else:
            dev = devices.resolve(_spec_of(node.device) if node.device else None)
        placed[id(node)] = dev
        node.device = dev
    # With a GPU visible every plan is placed, even one whose nodes all run on the CPU:
    # its feeds (and variables) may still be device arrays that need copying.
    return placed


def _spec_of(device: str) -> Optional[str]:
    return device if device.startswith(devices.JOB) else devices.canonical(device)


def _variable_of(node: Any) -> Any:
    if not node.inputs or node.op.tf_op not in DEVICE_AGNOSTIC or not node.op.tf_op.endswith("VariableOp"):
        return None
    src = node.inputs[0].node
    return src.attrs.get("_variable") if src.op.tf_op == "Placeholder" else None


def _mirrors_of(var: Any) -> Any:
    """The variable's `state.mirrors.Mirrors` (copies on other GPUs), or None; through an
    `UnreadVariable` handle to the variable it updated."""
    return getattr(getattr(var, "_shared_resource", var), "_mirrors", None)


def _variable_device(node: Any, var: Any) -> str:
    """Where a variable op shows: the variable's device; for a read of a mirrored variable
    traced in a replica (under `jf.device(<the replica's GPU>)`) that has a copy on that GPU,
    the GPU, whose copy `mirrored_reader` makes the read return."""
    mirrors = _mirrors_of(var)
    if mirrors is None or not node.device or node.op.tf_op != "ReadVariableOp":
        return var._device_name
    here = devices.resolve(_spec_of(node.device))
    return here if here in mirrors.devices else var._device_name


def mirrored_reader(node: Any) -> Optional[Any]:
    """The kernel of a placed `ReadVariableOp` of a mirrored variable: it returns the copy on
    the node's device (set by `place_plan`: the replica's GPU, or the primary's), so inside a
    compiled function each replica computes with its own GPU's copy, as in eager
    `strategy.run`. None for any other node (those keep the registered kernel: no cost for
    variables without copies)."""
    if node.op.tf_op != "ReadVariableOp":
        return None
    var = _variable_of(node)
    mirrors = _mirrors_of(var)
    if mirrors is None:
        return None
    device, kernel = node.device, KERNELS["cpu"]["ReadVariableOp"]
    dtype = node.attrs["dtype"]

    def read(handle: Any) -> Any:
        if handle._value is None:  # not initialised yet: the kernel raises the error that says so
            return kernel(handle, dtype)
        return mirrors.value_on(getattr(handle, "_shared_resource", handle), device)
    return read


def install() -> None:
    registry.placed_eager = run_eager
    registry.place_new = place_new


install()
