"""`KERNELS["cuda"]`: the CPU table, with every data op replaced by a CUDA kernel.

Imported on the first use of a GPU (never on a machine without one). Each kernel has the
CPU kernel's signature — arrays positional, attrs as keywords — but takes and returns
device arrays, allocates from the current device's allocator and launches on its
stream, so nothing here waits for the GPU except where a value is needed on the host
(a dynamic shape, the length of a `range`, a loop predicate).

Elementwise ops reuse the CPU kernels' scalar functions (`cpu_kernels.add_`, ...);
float16 is computed in float32 and rounded back, as on the CPU. Ops left as they are
(printing, Python callbacks, summaries, string `Add`) run on the host: placement sends
them to the CPU. Control flow and variable ops are device-agnostic: they run on the
host and drive whichever device their values live on.
"""
from __future__ import annotations

import functools
import math
import warnings
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from jitflow.runtime.tracing import control_flow as _cf
from jitflow.runtime.execution import device_memory as D
from jitflow.runtime.core import devices
from jitflow.runtime.state import variables as _vars
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import array_ops as _array
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.backends import cuda_primitives as P
from jitflow.runtime.ops import math_ops as _math
from jitflow.runtime.ops import math_extra_ops as _extra
from jitflow.runtime.ops import random_ops as _random
from jitflow.runtime.ops.infer import normalize_axes, normalize_axis, reduced_dims
from jitflow.runtime.ops.registry import KERNELS
from jitflow.runtime.execution import placement

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


# -- helpers -------------------------------------------------------------------------------------
def launch(kernel: Any, n: int, *args: Any) -> None:
    blocks, threads = P.grid(n)
    kernel[blocks, threads, D.current().stream](*args)


def flat(a: Any) -> Any:
    return a if a.ndim == 1 else a.reshape(a.size)


def empty(shape: Sequence[int], dtype: Any) -> Any:
    return D.empty(tuple(shape), dtype)


def c_strides(shape: Sequence[int]) -> Tuple[int, ...]:
    out, step = [], 1
    for d in reversed(tuple(shape)):
        out.append(step)
        step *= d
    return tuple(reversed(out))


def broadcast_strides(shape: Sequence[int], out_shape: Sequence[int]) -> Tuple[int, ...]:
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    return tuple(0 if d == 1 and o != 1 else s for d, o, s in zip(shape, out_shape, c_strides(shape)))


def collapse(shape: Sequence[int], *strides: Sequence[int]) -> Tuple[tuple, List[tuple]]:
    """Merge adjacent dims that every operand walks contiguously; at least one dim (rank 0 → (1,))."""
    dims = [(int(d), [int(s[i]) for s in strides]) for i, d in enumerate(shape) if d != 1]
    merged: List[Tuple[int, List[int]]] = []
    for d, st in dims:
        if merged and all(ps == s * d for ps, s in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * d, st)
        else:
            merged.append((d, st))
    if not merged:
        merged = [(1, [0] * len(strides))]
    return tuple(d for d, _ in merged), [tuple(st[k] for _, st in merged) for k in range(len(strides))]


def host(a: Any) -> np.ndarray:
    return D.to_host(a)


def cast(x: Any, dtype: Any) -> Any:
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    if x.dtype == F16 and dtype.kind == "b":  # NVVM rejects a float16 → bool conversion: via float32
        x = cast(x, F32)
    out = empty(x.shape, dtype)
    if out.size:
        launch(P.map1_flat(P.identity_), out.size, flat(out), flat(x))
    return out


def copy_view(dst: Any, d_off: int, d_st: Sequence[int], src: Any, s_off: int, s_st: Sequence[int],
              shape: Sequence[int]) -> None:
    n = math.prod(shape)
    if n:
        shape, (d_st, s_st) = collapse(shape, d_st, s_st)
        launch(P.copy_strided, n, flat(dst), d_off, d_st, flat(src), s_off, s_st, shape, n)


def fill(out: Any, value: Any) -> Any:
    if out.size:
        launch(P.fill, out.size, flat(out), value.item() if hasattr(value, "item") else value)
    return out


def transpose(x: Any, perm: Sequence[int]) -> Any:
    shape = tuple(x.shape[p] for p in perm)
    out = empty(shape, x.dtype)
    src = c_strides(x.shape)
    copy_view(out, 0, c_strides(shape), x, 0, tuple(src[p] for p in perm), shape)
    return out


def _on_host_f16(fn: Callable) -> Callable:
    """float16 inputs computed in float32, the result rounded back (as the CPU kernels do)."""
    def run(*arrays: Any, **attrs: Any) -> Any:
        if any(getattr(a, "dtype", None) == F16 for a in arrays):
            out = fn(*[cast(a, F32) if getattr(a, "dtype", None) == F16 else a for a in arrays], **attrs)
            return cast(out, F16) if out.dtype == F32 else out
        return fn(*arrays, **attrs)
    run.__name__ = getattr(fn, "__name__", "kernel")
    return run


# -- elementwise ----------------------------------------------------------------------------------
class Elementwise:
    """A CUDA elementwise kernel around a scalar function, broadcasting like numpy."""

    def __init__(self, fn: Callable, out: str = "same", name: str = "", dtype_from: int = 0) -> None:
        self.fn = fn
        self.out = out
        self.dtype_from = dtype_from
        self.__name__ = name or fn.__name__

    def __call__(self, *arrays: Any) -> Any:
        if any(a.dtype == F16 for a in arrays):
            out = self(*[cast(a, F32) if a.dtype == F16 else a for a in arrays])
            return out if self.out == "bool" else cast(out, F16)
        shapes = [tuple(a.shape) for a in arrays]
        out_shape = tuple(np.broadcast_shapes(*shapes))
        out = empty(out_shape, np.bool_ if self.out == "bool" else arrays[self.dtype_from].dtype)
        n = out.size
        if n == 0:
            return out
        args = [flat(a) for a in arrays]
        if all(s == out_shape for s in shapes):
            kernel = (P.map1_flat, P.map2_flat)[len(arrays) - 1] if len(arrays) < 3 else None
            if kernel is not None:
                launch(kernel(self.fn), n, flat(out), *args)
                return out
        shape, strides = collapse(out_shape, *[broadcast_strides(s, out_shape) for s in shapes])
        if len(arrays) == 1:
            launch(P.map1(self.fn), n, flat(out), args[0], 0, strides[0], shape)
        elif len(arrays) == 2:
            launch(P.map2(self.fn), n, flat(out), args[0], strides[0], args[1], strides[1], shape)
        else:
            launch(P.map3(self.fn), n, flat(out), args[0], strides[0], args[1], strides[1],
                   args[2], strides[2], shape)
        return out

    def bind(self, attrs: Dict[str, Any], in_dtypes: Sequence[Any]) -> "Elementwise":
        return self


# -- shape and data movement --------------------------------------------------------------------
def _resolve_shape(size: int, shape: Sequence[int]) -> Tuple[int, ...]:
    shape = [int(d) for d in shape]
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        shape[shape.index(-1)] = size // known if known else 0
    return tuple(shape)


def _reshape(x, shape_tensor=None, shape=None):
    target = shape if shape is not None else [int(d) for d in host(shape_tensor)]
    return x.reshape(_resolve_shape(x.size, target))


def _transpose(x, perm):
    return transpose(x, tuple(perm) if perm is not None else tuple(reversed(range(x.ndim))))


def _expand_dims(x, axis):
    axis = normalize_axis(axis, x.ndim + 1)
    return x.reshape(tuple(x.shape[:axis]) + (1,) + tuple(x.shape[axis:]))


def _squeeze(x, squeeze_dims):
    axes = ({i for i, d in enumerate(x.shape) if d == 1} if squeeze_dims is None
            else {normalize_axis(a, x.ndim) for a in squeeze_dims})
    return x.reshape(tuple(d for i, d in enumerate(x.shape) if i not in axes))


def _concat(*xs, axis):
    axis = normalize_axis(axis, xs[0].ndim)
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    out = empty(shape, xs[0].dtype)
    dst = c_strides(shape)
    at = 0
    for x in xs:
        copy_view(out, at * dst[axis], dst, x, 0, c_strides(x.shape), x.shape)
        at += x.shape[axis]
    return out


def _pack(*xs, axis):
    axis = normalize_axis(axis, xs[0].ndim + 1)
    return _concat(*[_expand_dims(x, axis) for x in xs], axis=axis)


def _unpack(x, num, axis):
    axis = normalize_axis(axis, x.ndim)
    src = c_strides(x.shape)
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    strides = tuple(s for i, s in enumerate(src) if i != axis)
    outs = []
    for i in range(num):
        out = empty(shape, x.dtype)
        copy_view(out, 0, c_strides(shape), x, i * src[axis], strides, shape)
        outs.append(out)
    return outs[0] if num == 1 else tuple(outs)


def _view_of(shape: Sequence[int], key: tuple) -> Tuple[int, Tuple[int, ...], Tuple[int, ...]]:
    """(offset, strides, shape) in elements of `x[key]` for a C-contiguous `x` of `shape`.

    numpy computes the view over a 1-byte dummy whose strides are the element strides; no
    element is ever read.
    """
    dummy = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=tuple(shape), strides=c_strides(shape))
    if not any(k is Ellipsis for k in key):
        key = tuple(key) + (Ellipsis,)  # integers only would give a scalar, not a view
    view = dummy[key]
    start = view.__array_interface__["data"][0] - dummy.__array_interface__["data"][0]
    return start, tuple(view.strides), tuple(view.shape)


def _slice_key(dynamic: Sequence[Any], index: Any) -> tuple:
    values = [host(d) for d in dynamic]  # dynamic bounds are needed on the host
    return _array._slice_kernel(None, *values, index=index, _key_only=True)


def _strided_slice(x, *dynamic, index):
    start, strides, shape = _view_of(x.shape, _slice_key(dynamic, index))
    out = empty(shape, x.dtype)
    copy_view(out, 0, c_strides(shape), x, start, strides, shape)
    return out


def _strided_slice_grad(x, g, *dynamic, index):
    out = fill(empty(x.shape, g.dtype), 0)
    start, strides, shape = _view_of(x.shape, _slice_key(dynamic, index))
    copy_view(out, start, strides, g, 0, c_strides(shape), shape)
    return out


def _shape(x, out_type):
    return D.to_device(np.array(x.shape, dtype=out_type.as_numpy_dtype))


def _size(x, out_type):
    return D.to_device(np.array(x.size, dtype=out_type.as_numpy_dtype))


def _fill(value, dims):
    out = empty(dims, value.dtype)
    if out.size:
        launch(P.map1(P.identity_), out.size, flat(out), flat(value), 0, (0,), (out.size,))
    return out


def _range(start, limit, delta):
    s, lim, d = (host(v)[()] for v in (start, limit, delta))  # the length is needed on the host
    n = len(_array._range_kernel(s, lim, d))  # also raises for delta == 0, as the CPU kernel
    out = empty((n,), start.dtype)
    if n:
        launch(P.arange, n, out, flat(start), flat(delta))
    return out


# -- reductions -----------------------------------------------------------------------------------
def _acc(dtype: np.dtype) -> str:
    return "float64" if dtype.kind == "f" else "int64"


def _rows(x: Any, axes: Sequence[int]) -> Tuple[Any, int, int]:
    """x moved to (rows, cols), reduced axes last and contiguous (a copy only when needed)."""
    keep = [i for i in range(x.ndim) if i not in axes]
    if keep and list(axes) != list(range(x.ndim - len(axes), x.ndim)):
        x = transpose(x, keep + list(axes))
    rows = math.prod(x.shape[:len(keep)])
    cols = math.prod(x.shape[len(keep):])
    return flat(x), rows, cols


def reduce_rows(x2: Any, rows: int, cols: int, fn: Callable, init: Any, out: Any) -> None:
    """out[r] = fold of fn over row r of the (rows, cols) array x2; tree-reduced per block."""
    if rows == 0:
        return
    if cols <= P.ROW_THREAD_COLS:
        launch(P.rows_by_thread(fn), rows, x2, cols, init, out)
        return
    acc = "float64" if isinstance(init, float) else "int64"
    parts = 1 if rows >= 1024 else max(1, min(1024, cols // (P.RED * 8)))
    chunk = -(-cols // parts)
    if parts == 1:
        P.row_reduce(fn, acc)[(rows, 1), P.RED, D.current().stream](x2, cols, chunk, init, out)
        return
    partial = empty((rows * parts,), np.float64 if acc == "float64" else np.int64)
    P.row_reduce(fn, acc)[(rows, parts), P.RED, D.current().stream](x2, cols, chunk, init, partial)
    reduce_rows(partial, rows, parts, fn, init, out)


_REDUCTIONS = {  # op: (combine, identity for a dtype, output bool)
    "Sum": (K.add_, lambda dt: 0, False), "Mean": (K.add_, lambda dt: 0, False),
    "Prod": (K.mul_, lambda dt: 1, False),
    "Max": (K.max_nan_, lambda dt: -math.inf if dt.kind == "f" else int(np.iinfo(dt).min), False),
    "Min": (K.min_nan_, lambda dt: math.inf if dt.kind == "f" else int(np.iinfo(dt).max), False),
    "All": (P.all_, lambda dt: 1, True), "Any": (P.any_, lambda dt: 0, True),
}


def _reduction(op: str) -> Callable:
    fn, identity, to_bool = _REDUCTIONS[op]

    @_on_host_f16
    def run(x, axis, keepdims):
        axes = normalize_axes(axis, x.ndim)
        axes = tuple(range(x.ndim)) if axes is None else axes
        shape = reduced_dims(tuple(x.shape), axes, keepdims)
        out = empty(shape, np.bool_ if to_bool else x.dtype)
        x2, rows, cols = _rows(x, axes)
        init = identity(x.dtype)
        init = float(init) if x.dtype.kind == "f" else int(init)
        if cols == 0:  # the identity; a float mean of nothing is 0/0
            return fill(out, math.nan if op == "Mean" and x.dtype.kind == "f" else init)
        reduce_rows(x2, rows, cols, fn, init, flat(out))
        if op == "Mean" and out.size:
            launch(P.mean_finish, out.size, flat(out), flat(out), cols, x.dtype.kind in "iu")
        return out
    run.__name__ = f"cuda_{op}"
    return run


def _arg(greater: bool) -> Callable:
    @_on_host_f16
    def run(x, axis, output_type):
        axis = normalize_axis(axis, x.ndim)
        x2, rows, cols = _rows(x, (axis,))
        out = empty(reduced_dims(tuple(x.shape), (axis,), False), output_type.as_numpy_dtype)
        if cols == 0:
            raise InvalidArgumentError("argmax/argmin over an empty dimension")
        if rows:
            P.row_arg(greater, _acc(x.dtype))[rows, P.RED, D.current().stream](x2, cols, flat(out))
        return out
    return run


def _softmax(log: bool) -> Callable:
    @_on_host_f16
    def run(logits, axis):
        axis = normalize_axis(axis, logits.ndim)
        x2, rows, cols = _rows(logits, (axis,))
        out = empty((rows, cols), logits.dtype)
        if rows and cols:
            P.row_softmax[rows, P.RED, D.current().stream](x2, cols, flat(out), log)
        keep = [d for i, d in enumerate(logits.shape) if i != axis]
        out = out.reshape(tuple(keep) + (cols,))
        if axis != logits.ndim - 1:
            perm = list(range(logits.ndim - 1))
            perm.insert(axis, logits.ndim - 1)
            out = transpose(out, perm)
        return out
    return run


# -- matmul ---------------------------------------------------------------------------------------
def _batched(x: Any, batch: Tuple[int, ...]) -> Tuple[Any, int]:
    """x as (batch..., r, c) data and its batch stride: 0 for a broadcast batch, a copy if mixed."""
    full = tuple(x.shape)  # a tuple: the simulator's shapes refuse negative indices
    own = full[:-2]
    rc = full[-2] * full[-1]
    if own == batch or math.prod(own) == math.prod(batch) and len(own) <= len(batch) and \
            own == batch[len(batch) - len(own):]:
        return x, rc
    if math.prod(own) == 1:
        return x, 0
    shape = batch + full[-2:]
    out = empty(shape, x.dtype)
    copy_view(out, 0, c_strides(shape), x, 0, broadcast_strides(full, shape), shape)
    return out, rc


@_on_host_f16
def _matmul(a, b, transpose_a, transpose_b):
    batch = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2])))
    a, a_bs = _batched(a, batch)
    b, b_bs = _batched(b, batch)
    ar, ac = tuple(a.shape)[-2:]
    br, bc = tuple(b.shape)[-2:]
    m, k = (ac, ar) if transpose_a else (ar, ac)
    n = br if transpose_b else bc
    a_st = (a_bs, 1, ac) if transpose_a else (a_bs, ac, 1)
    b_st = (b_bs, 1, bc) if transpose_b else (b_bs, bc, 1)
    out = empty(batch + (m, n), a.dtype)
    nb = math.prod(batch)
    if out.size == 0:
        return out
    if k == 0:
        return fill(out, 0)
    acc = {"f": "float32" if a.dtype == F32 else "float64"}.get(a.dtype.kind, "int64")
    zero = np.float32(0) if acc == "float32" else (0.0 if acc == "float64" else 0)
    blocks = (-(-n // P.TILE), -(-m // P.TILE), min(nb, 65535))
    P.matmul(acc)[blocks, (P.TILE, P.TILE), D.current().stream](flat(a), a_st, flat(b), b_st, flat(out),
                                                                  m, n, k, nb, zero)
    return out


# -- random ---------------------------------------------------------------------------------------
_EPS = {np.dtype(np.float16): 2.0 ** -11, np.dtype(np.float32): 2.0 ** -24, np.dtype(np.float64): 2.0 ** -53}
_kept: Dict[int, Tuple[Any, Any]] = {}   # id(RandomStream) -> (stream, device states)


def _generator_states(stream: Any, keep: bool) -> Any:
    """Device xoroshiro128+ states (numba's) seeded from a RandomStream's seed.

    Kept, so that draws continue, for graph nodes and seeded eager streams; a one-off
    unseeded eager draw gets fresh states.
    """
    found = _kept.get(id(stream))
    if found is not None and found[0] is stream:
        return found[1]
    from numba.cuda.random import init_xoroshiro128p_states, xoroshiro128p_dtype
    states = empty((P.RANDOM_THREADS,), xoroshiro128p_dtype)
    with warnings.catch_warnings():  # the simulator seeds in object mode, with warnings
        warnings.simplefilter("ignore")
        init_xoroshiro128p_states(states, stream.seed & 0xFFFFFFFFFFFFFFFF, stream=D.current().stream)
    if keep or any(s is stream for s in list(_random._eager_streams.values())):
        _kept[id(stream)] = (stream, states)
    return states


def _draw(shape, dtype, stream, keep: bool, fill_fn: Callable) -> Any:
    np_dtype = np.dtype(dtype.as_numpy_dtype)
    wide = F32 if np_dtype == F16 else np_dtype  # no float16 arithmetic on the device
    out = empty(shape, wide)
    if out.size:
        with stream.lock, np.errstate(over="ignore"):  # the simulator runs xoroshiro in numpy scalars
            fill_fn(_generator_states(stream, keep), flat(out))
    return cast(out, np_dtype)


def _random_grid() -> tuple:
    return -(-P.RANDOM_THREADS // P.TPB), P.TPB, D.current().stream


def _normal(mean, stddev, shape, dtype, stream, seed, seed2, keep=False):
    def run(states, out):
        P.random_normal[_random_grid()](states, out, flat(mean), flat(stddev))
    return _draw(shape, dtype, stream, keep, run)


def _uniform(minval, maxval, shape, dtype, stream, seed, seed2, keep=False):
    if not dtype.is_floating:
        lo, hi = int(host(minval)), int(host(maxval))
        if lo >= hi:  # TF checks this when the op runs, for integer dtypes only
            raise InvalidArgumentError(f"jf.random.uniform: need minval < maxval for integer dtype "
                                       f"{dtype.name}; got minval={lo}, maxval={hi}")

    def run(states, out):
        if dtype.is_floating:
            eps = _EPS[np.dtype(dtype.as_numpy_dtype)]
            P.random_uniform[_random_grid()](states, out, flat(minval), flat(maxval), eps)
        else:
            P.random_uniform_int[_random_grid()](states, out, flat(minval), flat(maxval))
    return _draw(shape, dtype, stream, keep, run)


class RandomKernel:
    """A random op's kernel; bound to a graph node it keeps the node's generator states."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.__name__ = fn.__name__

    def __call__(self, *args: Any, **attrs: Any) -> Any:
        return self.fn(*args, **attrs)

    def bind(self, attrs: Dict[str, Any], in_dtypes: Sequence[Any]) -> Callable:
        return functools.partial(self.fn, keep=True, **attrs)


# -- gather / scatter / pad -----------------------------------------------------------------------
def _gather(params, indices, axis):
    axis = normalize_axis(axis, params.ndim)
    out_shape = tuple(params.shape[:axis]) + tuple(indices.shape) + tuple(params.shape[axis + 1:])
    out = empty(out_shape, params.dtype)
    if out.size:
        inner = math.prod(params.shape[axis + 1:])
        launch(P.gather, out.size, flat(params), flat(indices), flat(out), params.shape[axis], inner, indices.size)
    return out


_ATOMIC = {"int8": np.int32, "int16": np.int32, "uint8": np.int32, "float16": np.float32}


def _segment_sum(data, segment_ids, num_segments):
    n = int(host(num_segments))  # the output's size is needed on the host
    inner = math.prod(data.shape[segment_ids.ndim:])
    wide = np.dtype(_ATOMIC.get(data.dtype.name, data.dtype))
    out = fill(empty((n,) + tuple(data.shape[segment_ids.ndim:]), wide), 0)
    if data.size:
        launch(P.segment_sum, data.size, flat(cast(data, wide)), flat(segment_ids), flat(out), n, inner, data.size)
    return cast(out, data.dtype)


def _scatter(tensor, indices, updates):
    out = empty(tensor.shape, tensor.dtype)
    if out.size:
        launch(P.map1_flat(P.identity_), out.size, flat(out), flat(tensor))
    if updates.size:
        inner = math.prod(tensor.shape[1:])
        launch(P.scatter_rows, updates.size, flat(out), flat(indices), flat(updates), tensor.shape[0], inner,
               updates.size)
    return out


def _pad(x, paddings):
    p = host(paddings)  # the output's shape is needed on the host
    if (p < 0).any():
        raise InvalidArgumentError(f"jf.pad: paddings must be >= 0; got {p.tolist()}")
    shape = tuple(int(d + a + b) for d, (a, b) in zip(x.shape, p))
    out = fill(empty(shape, x.dtype), 0)
    dst = c_strides(shape)
    start = sum(int(a) * s for (a, _), s in zip(p, dst))
    copy_view(out, start, dst, x, 0, c_strides(x.shape), x.shape)
    return out


# -- variables and control flow (device-agnostic: run on the host) ------------------------------------
def _var_value(var: Any, value: Any) -> Any:
    """`value` on the variable's device (its gpu made current for what follows)."""
    device = var._device_name
    if device != devices.CPU0:
        D.use(devices.gpu_by_name(device))
    return placement.place_value(value, device)


def _assign(var, value, dtype):
    var._replace(_var_value(var, value))


def _initialize(var, value, dtype):
    if var._value is None:
        var._value = _var_value(var, value)


def _assign_update(gpu_op: Elementwise, cpu_kernel: Callable) -> Callable:
    def run(var, value, dtype):
        value = _var_value(var, value)
        if var._device_name == devices.CPU0:
            return cpu_kernel(var, value, dtype)
        var._replace(gpu_op(var._value, value))
    return run


def _host_bool(value: Any) -> bool:
    return bool(host(value))


def _if(pred, *captured, then_branch, else_branch, n_then, **export_attrs):
    return _cf._if_kernel(_host_bool(pred), *captured, then_branch=then_branch, else_branch=else_branch,
                          n_then=n_then)


def _while(*args, cond, body, n_vars, n_cond, maximum_iterations, **_export_attrs):
    values = args[:n_vars]
    cond_caps = args[n_vars:n_vars + n_cond]
    body_caps = args[n_vars + n_cond:]
    i = 0
    while (maximum_iterations is None or i < maximum_iterations) and _host_bool(cond.plan(*values, *cond_caps)[0]):
        values = body.plan(*values, *body_caps)
        i += 1
    return values[0] if n_vars == 1 else tuple(values)


def sign_(a):
    # The CPU's `(a > 0) - (a < 0)` subtracts booleans, which numba compiles but the
    # simulator (numpy scalars) rejects; same values, NaN stays NaN.
    return a if a != a else (1 if a > 0 else (-1 if a < 0 else 0))


_DEVICE_VARIANTS = {K.sign_: sign_}
# Extra unary ops whose CPU scalar functions call numpy or CPU-only njit helpers: their device
# versions are in cuda_extra_kernels.
_HOST_ONLY = {"Floor", "Ceil", "Round"}


# -- the table ------------------------------------------------------------------------------------
def _elementwise_table() -> Dict[str, Any]:
    table: Dict[str, Any] = {}
    for op, _pub, _name, _kinds, out, fn, _ref in _math._BINARY:
        table[op] = Elementwise(fn, "bool" if out is not None else "same", op)
    for op, _pub, _name, _kinds, fn, _ref in _math._UNARY:
        table[op] = Elementwise(_DEVICE_VARIANTS.get(fn, fn), "same", op)
    for op, _pub, _kinds, fn, _ref in _extra.UNARY:
        if op not in _HOST_ONLY:
            table[op] = Elementwise(fn, "same", op)
    table["IsFinite"] = Elementwise(K.isfinite_, "bool", "IsFinite")
    table["SelectV2"] = Elementwise(P.select_, "same", "SelectV2", dtype_from=1)
    return table


OVERRIDES: Dict[str, Any] = {
    **_elementwise_table(),
    "Identity": lambda x: x, "StopGradient": lambda x: x,
    "Cast": lambda x, DstT, SrcT=None: cast(x, DstT.as_numpy_dtype),  # noqa: N803 - TF attr names
    "Reshape": _reshape, "Transpose": _transpose, "ExpandDims": _expand_dims, "Squeeze": _squeeze,
    "ConcatV2": _concat, "Pack": _pack, "Unpack": _unpack,
    "StridedSlice": _strided_slice, "StridedSliceGrad": _strided_slice_grad,
    "Shape": _shape, "Size": _size, "Fill": _fill, "Range": _range,
    "ZerosLike": lambda x: fill(empty(x.shape, x.dtype), 0), "OnesLike": lambda x: fill(empty(x.shape, x.dtype), 1),
    **{op: _reduction(op) for op in _REDUCTIONS},
    "ArgMax": _arg(True), "ArgMin": _arg(False),
    "Softmax": _softmax(False), "LogSoftmax": _softmax(True),
    "MatMul": _matmul, "BatchMatMulV2": _matmul,
    "RandomStandardNormal": RandomKernel(_normal), "RandomUniform": RandomKernel(_uniform),
    "GatherV2": _gather, "UnsortedSegmentSum": _segment_sum, "TensorScatterUpdate": _scatter, "Pad": _pad,
    "AssignVariableOp": _assign, "InitializeVariableOp": _initialize,
    "AssignAddVariableOp": _assign_update(Elementwise(K.add_, "same", "add"), _vars._assign_add_kernel),
    "AssignSubVariableOp": _assign_update(Elementwise(K.sub_, "same", "sub"), _vars._assign_sub_kernel),
    "If": _if, "While": _while,
}

TABLE = {**KERNELS["cpu"], **OVERRIDES}
