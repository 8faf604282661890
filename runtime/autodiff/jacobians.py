"""`GradientTape.jacobian` for targets of any shape, and `batch_jacobian`.

One backward pass per target element, seeded with a one-hot output gradient (TF uses
pfor to vectorise the same computation; the results are identical). Shapes must be known
when the jacobian is taken, eagerly or at trace time.
"""
from __future__ import annotations

from typing import Any, List

from jitflow.runtime.autodiff import tape as _tape
from jitflow.runtime.core import context
from jitflow.runtime.core.nest import flatten, pack
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import array_extra_ops as AX
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor
from jitflow.runtime.ops.indexing_ops import one_hot


def _static_shape(t: Any, what: str) -> List[int]:
    dims = convert_to_tensor(t)._dims if isinstance(t, TensorConvertible) else t._dims
    if dims is None or any(d is None for d in dims):
        raise ValueError(f"{what}: jacobian needs a fully known shape; got {dims}")
    return list(dims)


def jacobian(tape: "_tape.GradientTape", target: Any, sources: Any, unconnected: str) -> Any:
    if tape._used and not tape._persistent:
        raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of "
                           "gradients; create it with GradientTape(persistent=True) to call jacobian() "
                           "after gradient().")
    tape._used = True
    if unconnected not in ("none", "zero"):
        raise ValueError(f"unconnected_gradients: expected jf.UnconnectedGradients.NONE or .ZERO; got {unconnected!r}")
    t_shape = _static_shape(target, "target")
    like = convert_to_tensor(target)
    n = 1
    for d in t_shape:
        n *= d
    flat_sources = flatten(sources)
    s_shapes = [_static_shape(s, "sources") for s in flat_sources]
    paused = tape._recording
    tape._recording = False
    try:
        with context.name_scope("jacobian"):
            rows: List[List[Any]] = [[] for _ in flat_sources]
            for i in range(n):
                seed = A.reshape(one_hot(i, n, dtype=like.dtype), t_shape)
                grads = _tape._backprop(tape._records, [target], [seed], flat_sources)
                for k, g in enumerate(grads):
                    rows[k].append(g)
            out = []
            for k, (src, shape) in enumerate(zip(flat_sources, s_shapes)):
                if all(g is None for g in rows[k]):
                    out.append(None if unconnected == "none" else
                               A.zeros(t_shape + shape, dtype=convert_to_tensor(src).dtype))
                    continue
                filled = [A.zeros(shape, dtype=like.dtype) if g is None else g for g in rows[k]]
                stacked = A.stack(filled, axis=0) if filled else A.zeros([0] + shape, dtype=like.dtype)
                out.append(A.reshape(stacked, t_shape + shape))
    finally:
        tape._recording = paused
    return pack(sources, out)


def batch_jacobian(tape: "_tape.GradientTape", target: Any, source: Any, unconnected: str) -> Any:
    t_shape = _static_shape(target, "target")
    s_shape = _static_shape(source, "source")
    if not t_shape or not s_shape or t_shape[0] != s_shape[0]:
        raise ValueError(f"batch_jacobian: target and source need the same first (batch) dimension; got "
                         f"shapes {t_shape} and {s_shape}")
    full = jacobian(tape, target, source, unconnected)
    if full is None:
        return None
    b = t_shape[0]
    t_rest, s_rest = t_shape[1:], s_shape[1:]
    tn = 1
    for d in t_rest:
        tn *= d
    sn = 1
    for d in s_rest:
        sn *= d
    j = A.reshape(full, [b, tn, b, sn])
    diag = AX.eye(b, dtype=j.dtype)                    # keep J[i, :, i, :]
    picked = M.reduce_sum(M.multiply(j, A.reshape(diag, [b, 1, b, 1])), axis=2)
    return A.reshape(picked, [b] + t_rest + s_rest)


_tape.jacobian_impl = jacobian
_tape.batch_jacobian_impl = batch_jacobian
