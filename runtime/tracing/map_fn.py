"""`jf.map_fn`: apply a function to each slice along axis 0 and stack the results (`tf.map_fn`).

Eagerly it is a Python loop. In a trace it is one `jf.while_loop` writing a `jf.TensorArray`
per output, so the graph stays the same size whatever the number of elements (also when
it is known only at run time), as TF's.
"""
from __future__ import annotations

from typing import Any, Callable, List

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.tensor import Tensor, TensorSpec
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.indexing_ops import tensor_scatter_nd_update
from jitflow.runtime.tracing import control_flow
from jitflow.runtime.tracing.tensor_array import TensorArray


def _flatten(structure: Any) -> List[Any]:
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in _flatten(item)]
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in _flatten(structure[k])]
    return [structure]


def _pack(structure: Any, flat: List[Any]) -> Any:
    it = iter(flat)

    def build(s: Any) -> Any:
        if isinstance(s, (list, tuple)):
            items = [build(x) for x in s]
            return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)
        if isinstance(s, dict):
            return {k: build(s[k]) for k in sorted(s)}
        return next(it)
    return build(structure)


def map_fn(fn: Callable, elems: Any, dtype: Any = None, parallel_iterations: Any = None, back_prop: bool = True,
           swap_memory: bool = False, infer_shape: bool = True, name: Any = None,
           fn_output_signature: Any = None) -> Any:
    """fn applied to each element of `elems` along axis 0, results stacked (`tf.map_fn`).

    `elems` may be a tensor or a (nested) list/tuple/dict of tensors of one length; `fn`
    gets the matching structure of slices. `fn_output_signature` (or the legacy `dtype`)
    gives the output dtype(s) when they differ from the input's.

    >>> jf.map_fn(lambda x: x * x, jf.constant([1, 2, 3])).numpy()
    array([1, 4, 9], dtype=int32)
    >>> jf.map_fn(lambda p: p[0] + p[1], (jf.constant([1.0, 2.0]), jf.constant([10.0, 20.0])),
    ...           fn_output_signature=jf.float32).numpy()
    array([11., 22.], dtype=float32)
    """
    if not callable(fn):
        raise TypeError(f"fn: expected a callable; got {fn!r}")
    flat = [convert_to_tensor(e) for e in _flatten(elems)]
    if not flat:
        raise ValueError("elems: map_fn needs at least one tensor")
    for k, e in enumerate(flat):
        if e.ndim == 0:
            raise ValueError(f"elems: each tensor must have rank >= 1 (map_fn slices along axis 0); "
                             f"elems leaf {k} is a scalar")
    signature = fn_output_signature if fn_output_signature is not None else dtype
    n_static = flat[0].shape.as_list()[0]
    for k, e in enumerate(flat[1:], 1):
        m = e.shape.as_list()[0]
        if n_static is not None and m is not None and m != n_static:
            raise ValueError(f"elems: all tensors must have the same first dimension; leaf 0 has {n_static}, "
                             f"leaf {k} has {m}")

    def element(i: Any) -> Any:
        return _pack(elems, [e[i] for e in flat])

    if context.current_graph() is None:  # eagerly: a Python loop
        raw = [fn(element(i)) for i in range(n_static or 0)]
        if not raw:
            return _pack_empty(elems, flat, signature)
        _check_output(elems, raw[0], signature)
        results = [_flatten(r) for r in raw]
        stacked = [A.stack([r[k] for r in results]) for k in range(len(results[0]))]
        return _cast_to_signature(_pack(raw[0], stacked), signature)
    # traced: probe the output structure on element 0 (unused nodes are pruned), then loop
    probe = fn(element(0))
    _check_output(elems, probe, signature)
    probe_flat = [convert_to_tensor(p) for p in _flatten(probe)]
    dtypes = _signature_dtypes(signature, probe_flat)
    n = A.shape(flat[0])[0]
    if all(p.shape.is_fully_defined() and (dt.is_floating or dt.is_integer or dt.is_complex)
           for p, dt in zip(probe_flat, dtypes)):
        # Known element shapes: the results are loop tensors updated row by row, which the
        # while-loop gradient differentiates like any other loop variable.
        buffers: List[Any] = [_zeros(n_static, n, p.shape.as_list(), dt) for p, dt in zip(probe_flat, dtypes)]

        def write(buf: Any, i: Any, o: Any) -> Any:
            return tensor_scatter_nd_update(buf, A.reshape(i, [1, 1]), A.expand_dims(o, 0))
    else:
        buffers = [TensorArray(dt, size=n, element_shape=p.shape) for dt, p in zip(dtypes, probe_flat)]

        def write(buf: Any, i: Any, o: Any) -> Any:
            return buf.write(i, o)

    def cond(i, *bufs):
        return i < n

    def body(i, *bufs):
        outs = [convert_to_tensor(o) for o in _flatten(fn(element(i)))]
        return [i + 1] + [write(buf, i, A.cast(o, dt) if o.dtype is not dt else o)
                          for buf, o, dt in zip(bufs, outs, dtypes)]

    final = control_flow.while_loop(cond, body, [convert_to_tensor(0, _dt.int32)] + buffers)
    return _pack(probe, [b.stack() if isinstance(b, TensorArray) else b for b in final[1:]])


def _zeros(n_static: Any, n: Any, element: List[int], dtype: _dt.DType) -> Tensor:
    """zeros([n] + element) with n known only at run time: a [n] column broadcast against the rest."""
    if n_static is not None:
        return A.zeros([n_static] + element, dtype)
    column = A.reshape(A.zeros_like(A.cast(A.range(n), dtype)), [-1] + [1] * len(element))
    return column + A.zeros(element, dtype) if element else column


def _same_structure(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b)
                and all(_same_structure(x, y) for x, y in zip(a, b)))
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and sorted(a) == sorted(b)
                and all(_same_structure(a[k], b[k]) for k in a))
    return True


def _check_output(elems: Any, output: Any, signature: Any) -> None:
    """Without fn_output_signature the output must nest like `elems`, as TF requires."""
    if signature is None and not _same_structure(elems, output):
        raise ValueError("The two structures don't have the same nested structure: fn's output "
                         f"{type(output).__name__} does not nest like elems ({type(elems).__name__}); pass "
                         "fn_output_signature= to map_fn when fn returns another structure")


def _signature_dtypes(signature: Any, probe_flat: List[Tensor]) -> List[_dt.DType]:
    if signature is None:
        return [p.dtype for p in probe_flat]
    sig = _flatten(signature)
    if len(sig) != len(probe_flat):
        raise ValueError(f"fn_output_signature: {len(sig)} entries, but fn returns {len(probe_flat)} tensors")
    return [s.dtype if isinstance(s, TensorSpec) else _dt.as_dtype(s) for s in sig]


def _cast_to_signature(result: Any, signature: Any) -> Any:
    if signature is None:
        return result
    flat = _flatten(result)
    dtypes = _signature_dtypes(signature, flat)
    return _pack(result, [A.cast(t, dt) if t.dtype is not dt else t for t, dt in zip(flat, dtypes)])


def _pack_empty(elems: Any, flat: List[Tensor], signature: Any) -> Any:
    """No elements: empty tensors shaped like the inputs' slices (TF needs the signature too)."""
    dtypes = _signature_dtypes(signature, flat) if signature is not None else [e.dtype for e in flat]
    return _pack(elems, [A.zeros([0] + e.shape.as_list()[1:], dtype=dt) for e, dt in zip(flat, dtypes)])


__all__ = ["map_fn"]
