"""The op registry: one entry per op, and `apply`, which runs it eagerly or adds a node.

An `OpDef` names the TensorFlow op type (`AddV2`; also the GraphDef export name), infers
output shapes/dtypes (and validates inputs, raising clear errors), and says whether it
has side effects. Kernels live in per-backend tables (`KERNELS["cpu"]["AddV2"]`), so a
backend can extend another by copying its table and overriding what differs;
`KERNELS["reference"]` holds plain-numpy definitions the fast kernels are tested
against. Gradients (`OpDef.gradient`) are filled in by the autodiff module.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from jitflow.runtime.core import context, devices, instrument
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core import tensor as _tensor_module
from jitflow.runtime.core.tensor import EagerTensor, SymbolicTensor, Tensor

Spec = Tuple[Any, _dt.DType]  # (dims tuple or None, dtype)
InferFn = Callable[[List[Spec], Dict[str, Any]], List[Spec]]
Kernel = Callable[..., Any]

EMPTY_ATTRS: Dict[str, Any] = {}


@dataclass
class OpDef:
    tf_op: str
    infer: InferFn
    public_name: str
    default_name: str
    stateful: bool = False
    # (kernel, attrs, input dtypes) -> a callable(*arrays) with attrs bound; lets a
    # kernel specialise itself once per graph node instead of on every call.
    bind: Optional[Callable[[Kernel, Dict[str, Any], Sequence[_dt.DType]], Callable]] = None
    gradient: Optional[Callable] = None
    doc: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"<OpDef {self.tf_op}>"


OPS: Dict[str, OpDef] = {}
GRADIENTS: Dict[str, Callable] = {}   # TF op → fn(record, grads) -> per-input grads (None = no grad)
NOT_DIFFERENTIABLE: Set[str] = set()  # ops whose outputs carry no gradient
# Set by `autodiff` while any GradientTape records: apply() reports each op to it.
tape_active = False
tape_hook: Optional[Callable[..., None]] = None
KERNELS: Dict[str, Dict[str, Kernel]] = {"reference": {}, "cpu": {}}
# Backend tables built on first use: name -> loader returning the table. The CUDA backend
# (`runtime.backends`) registers "cuda" here, so numba.cuda is imported only once a GPU is used.
KERNEL_LOADERS: Dict[str, Callable[[], Dict[str, Kernel]]] = {}
# Tables that do not extend the CPU table: the references, and "numpy" (`ops.numpy_kernels`:
# the CPU kernels' exact results without numba, for the ops that have them, and nothing else).
_OWN_TABLES = ("cpu", "reference", "numpy")
# Hooks installed by `runtime.execution.placement`, which sits above the ops: eager ops go to
# `placed_eager` while `devices.active` (a GPU may be visible), so the CPU path below pays one
# flag check; `place_new` moves a new constant into an enclosing `jf.device` scope.
placed_eager: Optional[Callable[..., List[Tensor]]] = None
place_new: Optional[Callable[[EagerTensor], EagerTensor]] = None


def kernel_table(backend: str) -> Dict[str, Kernel]:
    """`KERNELS[backend]`, loading the backend on first use."""
    table = KERNELS.get(backend)
    if table is None:
        loader = KERNEL_LOADERS.get(backend)
        if loader is None:
            raise KeyError(f"backend: no kernel table {backend!r}; known: {sorted(KERNELS)}")
        table = KERNELS[backend] = loader()
    return table


def register(tf_op: str, infer: InferFn, *, cpu: Kernel, reference: Optional[Kernel] = None,
             public_name: Optional[str] = None, default_name: Optional[str] = None,
             stateful: bool = False, bind=None, doc: str = "") -> OpDef:
    """Add an op. `reference` defaults to `cpu` (for ops that are plain numpy anyway)."""
    if tf_op in OPS:
        raise ValueError(f"op {tf_op!r} is already registered")
    op = OpDef(tf_op=tf_op, infer=infer, public_name=public_name or tf_op,
               default_name=default_name or tf_op, stateful=stateful, bind=bind, gradient=GRADIENTS.get(tf_op), doc=doc)
    OPS[tf_op] = op
    KERNELS["cpu"][tf_op] = cpu
    KERNELS["reference"][tf_op] = reference if reference is not None else cpu
    for backend, table in KERNELS.items():  # a backend loaded earlier extends the CPU table
        if backend not in _OWN_TABLES:
            table.setdefault(tf_op, cpu)
    return op


def gradient(tf_op: str):
    """Decorator registering the gradient function of `tf_op` (see `runtime.autodiff`)."""
    def register_gradient(fn: Callable) -> Callable:
        GRADIENTS[tf_op] = fn
        if tf_op in OPS:
            OPS[tf_op].gradient = fn
        return fn
    return register_gradient


def not_differentiable(*ops: str) -> None:
    """Declare that the outputs of `ops` carry no gradient."""
    NOT_DIFFERENTIABLE.update(ops)


def kernel_attrs(attrs: Dict[str, Any]) -> Dict[str, Any]:
    """Attrs a kernel receives: the ones not starting with `_` (those are metadata)."""
    if not attrs:
        return attrs
    return {k: v for k, v in attrs.items() if not k.startswith("_")}


def bind_kernel(op: OpDef, backend: str, attrs: Dict[str, Any], in_dtypes: Sequence[_dt.DType]) -> Callable:
    """A callable(*arrays) running `op` with `attrs` on `backend`, specialised if it can be."""
    kernel = kernel_table(backend)[op.tf_op]
    kattrs = kernel_attrs(attrs)
    if backend == "cuda":  # CUDA kernels specialise themselves (op.bind is for the CPU kernels)
        bind = getattr(kernel, "bind", None)
        if bind is not None:
            return bind(kattrs, in_dtypes)
    elif op.bind is not None and kernel is KERNELS["cpu"].get(op.tf_op):  # op.bind specialises that kernel
        return op.bind(kernel, kattrs, in_dtypes)
    return functools.partial(kernel, **kattrs) if kattrs else kernel


def apply(tf_op: str, inputs: Sequence[Any], attrs: Dict[str, Any] = EMPTY_ATTRS,
          name: Optional[str] = None) -> List[Tensor]:
    """Run op `tf_op` on `inputs` now, or add it to the graph being traced.

    `inputs` are tensors, or variables for resource inputs. Returns the outputs.
    """
    op = OPS[tf_op]
    graph = context._state.graph
    if graph is None:
        outputs = (placed_eager(op, inputs, attrs) if devices.active and placed_eager is not None
                   else _run_eager(op, inputs, attrs))
    else:
        outputs = _add_to_graph(graph, op, inputs, attrs, name)
    if tape_active:
        assert tape_hook is not None  # autodiff installs the hook before it sets tape_active
        tape_hook(tf_op, inputs, outputs, attrs)
    return outputs


def _prefixed(op: OpDef, e: Exception) -> str:
    """`jf.<op>: message`, without doubling a prefix the shape function already wrote."""
    message = str(e)
    for own in (f"{op.public_name}: ", f"{op.tf_op}: ", f"{op.tf_op.lower()}: "):
        if message.startswith(own):
            message = message[len(own):]
            break
    return f"jf.{op.public_name}: {message}"


def _infer(op: OpDef, specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    try:
        return op.infer(specs, attrs)
    except (InvalidArgumentError, TypeError, ValueError) as e:
        raise type(e)(_prefixed(op, e)) from None


def _run_eager(op: OpDef, inputs: Sequence[Any], attrs: Dict[str, Any]) -> List[Tensor]:
    operands = []
    specs = []
    for t in inputs:
        if t.__class__ is EagerTensor:
            operands.append(t._value)
            specs.append((t._value.shape, t._dtype))
        elif isinstance(t, SymbolicTensor):
            raise InvalidArgumentError(
                f"jf.{op.public_name}: got the symbolic tensor {t.name}, which belongs to the trace of "
                f"{t.node.graph.name!r}; symbolic tensors cannot be used outside the function that "
                "created them (return them from the function instead).")
        else:  # a Variable feeding a resource input
            operands.append(t)
            specs.append(((), _dt.resource))
    out_specs = _infer(op, specs, attrs)
    kernel = KERNELS["cpu"][op.tf_op]
    kattrs = kernel_attrs(attrs)
    if instrument.enabled:
        result = instrument.run_eager_op(op, kernel, operands, kattrs, out_specs)
    else:
        result = kernel(*operands, **kattrs)
    if len(out_specs) == 1:
        return [_wrap(result, out_specs[0][1])]
    if not out_specs:
        return []
    return [_wrap(r, spec[1]) for r, spec in zip(result, out_specs)]


def _wrap(value: Any, dtype: _dt.DType) -> EagerTensor:
    if value.__class__ is not np.ndarray:
        device = device_of(value)
        if device is not None:
            return EagerTensor(value, dtype, device)
        value = np.asarray(value, dtype=dtype.as_numpy_dtype)
    return EagerTensor(value, dtype)


def device_of(value: Any) -> Optional[str]:
    """The GPU a device array lives on; None for host values (and always without CUDA)."""
    dm = _tensor_module.device_memory  # set once runtime.execution.device_memory has loaded
    if dm is not None and dm.is_device_array(value):
        return dm.current_gpu_name()
    return None


def graph_input(graph, value: Any) -> SymbolicTensor:
    """`value` as a tensor of `graph`, capturing it if it comes from outside."""
    if isinstance(value, SymbolicTensor) and value.node.graph is graph:
        return value
    return graph.capture(value)


def _add_to_graph(graph, op: OpDef, inputs: Sequence[Any], attrs: Dict[str, Any],
                  name: Optional[str]) -> List[Tensor]:
    g_inputs = [graph_input(graph, t) for t in inputs]
    out_specs = _infer(op, [(t._dims, t._dtype) for t in g_inputs], attrs)
    node = graph.add_node(op, g_inputs, attrs, out_specs, name)
    if context._state.device is not None:  # inside `with jf.device(...)`
        node.device = context._state.device
    return node.outputs


def _unstack_on_device(t: EagerTensor) -> List[Tensor]:
    return apply("Unpack", [t], {"num": t._value.shape[0], "axis": 0})


_tensor_module.unstack_on_device = _unstack_on_device
