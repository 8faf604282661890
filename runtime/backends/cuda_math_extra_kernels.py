"""CUDA kernels of complex numbers, `cumprod`, `linalg.inv/det`, and the selection ops
(`where(condition)`, `unique`, `searchsorted`, `segment_sum`, `bincount`,
`tensor_scatter_nd_add`, `gather_nd`) and the sliced variable assignment `v[...].assign`.

Outputs whose size depends on the data are made in passes, as on a GPU they must be:
flag each element on the device, count the flags per chunk (one thread a chunk), scan
the chunk counts, read the total back (the only copy to the host), allocate, then each
chunk writes its elements at their offsets, in order, so the result is the CPU kernel's.
Bad indices are flagged on the device; the host reads one flag and raises the CPU
kernel's error (the indices are copied to the host only then, to name the bad one).
Matrices are inverted and factored one thread per matrix (Gauss-Jordan and LU with
partial pivoting), the batch across threads. Scatter-adds use atomics where the device
has them for the dtype, else one thread per column walks the updates in order.
`unique` finds each element's first occurrence by scanning the elements before it (n²/2
comparisons across the threads): exact and in TF's order, but meant for the sizes unique
sees in models (vocabularies, ids of a batch), not for millions of elements.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Tuple

import numpy as np
from numba import cuda

from jitflow.runtime.backends import cuda_kernels as CK
from jitflow.runtime.backends import cuda_primitives as P
from jitflow.runtime.backends.cuda_extra_kernels import _along_last
from jitflow.runtime.core import devices
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.execution import device_memory as D
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops.registry import KERNELS

CHUNKS = 4 if P.SIM else 4096  # threads of the counting passes
_ATOMIC_DTYPES = frozenset({"float32", "float64", "int32", "int64"})


# -- device kernels: counting, then filling ----------------------------------------------------------
@cuda.jit
def nonzero_flags(flags, x):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        flags[i] = 1 if x[i] != 0 else 0


@cuda.jit(device=True)
def _chunk_end(c, chunk, n):
    end = (c + 1) * chunk  # not min(): numba's builtin min overload does not compile for CUDA
    return n if end > n else end


@cuda.jit
def chunk_counts(counts, flags, chunk):
    for c in range(cuda.grid(1), counts.size - 1, cuda.gridsize(1)):
        total = 0
        for i in range(c * chunk, _chunk_end(c, chunk, flags.size)):
            total += flags[i]
        counts[c] = total


@cuda.jit
def exclusive_scan(counts):
    """counts[:-1] → their exclusive prefix sums; counts[-1] ← the total (one thread)."""
    if cuda.grid(1) == 0:
        acc = 0
        for c in range(counts.size - 1):
            n = counts[c]
            counts[c] = acc
            acc += n
        counts[counts.size - 1] = acc


@cuda.jit
def chunk_offsets(offsets, flags, counts, chunk):
    for c in range(cuda.grid(1), counts.size - 1, cuda.gridsize(1)):
        acc = counts[c]
        for i in range(c * chunk, _chunk_end(c, chunk, flags.size)):
            offsets[i] = acc
            acc += flags[i]


@cuda.jit
def where_fill(out, flags, offsets, shape):
    rank = len(shape)
    for i in range(cuda.grid(1), flags.size, cuda.gridsize(1)):
        if flags[i]:
            row = offsets[i] * rank
            r = i
            for d in range(rank - 1, -1, -1):
                out[row + d] = r % shape[d]
                r //= shape[d]


@cuda.jit
def unique_first(first, flags, x):
    """first[i]: where x[i]'s value first occurs (NaNs are one value, as np.unique's)."""
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        v = x[i]
        f = i
        for j in range(i):
            w = x[j]
            if w == v or (w != w and v != v):
                f = j
                break
        first[i] = f
        flags[i] = 1 if f == i else 0


@cuda.jit
def unique_fill(values, idx, x, first, offsets):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        f = first[i]
        if f == i:
            values[offsets[i]] = x[i]
        idx[i] = offsets[f]


# -- device kernels: searching, segments, counting values ----------------------------------------------
@cuda.jit(device=True)
def _before(a, b):
    """a sorts before b, NaN last (numpy's order)."""
    return a < b or (b != b and a == a)


@cuda.jit
def search_rows(out, s, v, m, per_row, right):
    for i in range(cuda.grid(1), v.size, cuda.gridsize(1)):
        base = (i // per_row) * m
        x = v[i]
        lo, hi = 0, m
        while lo < hi:
            mid = (lo + hi) // 2
            if (not _before(x, s[base + mid])) if right else _before(s[base + mid], x):
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo


@cuda.jit
def sorted_ids_ok(bad, ids):
    for i in range(cuda.grid(1), ids.size, cuda.gridsize(1)):
        if (i == 0 and ids[0] < 0) or (i > 0 and ids[i] < ids[i - 1]):
            bad[0] = 1


@cuda.jit
def segment_sum_sorted(out, data, ids, inner, zero):
    """One thread per output element; its rows are a run of the sorted ids (binary search)."""
    n = ids.size
    for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        seg = o // inner
        j = o % inner
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) // 2
            if ids[mid] < seg:
                lo = mid + 1
            else:
                hi = mid
        acc = zero
        r = lo
        while r < n and ids[r] == seg:
            acc += data[r * inner + j]
            r += 1
        out[o] = acc


@cuda.jit
def kept_min_max(out, a, limit):
    """out[0] ← min of a, out[1] ← max of the values below `limit` (-1 if none)."""
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        v = np.int64(a[i])
        cuda.atomic.min(out, 0, v)
        if v < limit:
            cuda.atomic.max(out, 1, v)


@cuda.jit
def bincount_count(out, a, limit):
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        if a[i] < limit:
            cuda.atomic.add(out, a[i], 1)


@cuda.jit
def bincount_weigh(out, a, w, limit):
    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):
        if a[i] < limit:
            cuda.atomic.add(out, a[i], w[i])


# -- device kernels: gather / scatter by index vectors --------------------------------------------------
@cuda.jit
def check_index_rows(bad, idx, depth, bounds):
    for i in range(cuda.grid(1), idx.size, cuda.gridsize(1)):
        k = i % depth
        if idx[i] < 0 or idx[i] >= bounds[k]:
            bad[0] = 1


@cuda.jit(device=True)
def _row_of(idx, r, depth, strides):
    off = 0
    for k in range(depth):
        off += idx[r * depth + k] * strides[k]
    return off


@cuda.jit
def gather_nd_fill(out, params, idx, depth, strides, inner):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        r = i // inner
        out[i] = params[_row_of(idx, r, depth, strides) * inner + i % inner]


@cuda.jit
def scatter_add_atomic(out, idx, updates, depth, strides, inner):
    for i in range(cuda.grid(1), updates.size, cuda.gridsize(1)):
        r = i // inner
        cuda.atomic.add(out, _row_of(idx, r, depth, strides) * inner + i % inner, updates[i])


@cuda.jit
def scatter_add_columns(out, idx, updates, depth, strides, inner, rows):
    """One thread per column: no two threads touch one element, rows added in order."""
    for j in range(cuda.grid(1), inner, cuda.gridsize(1)):
        for r in range(rows):
            o = _row_of(idx, r, depth, strides) * inner + j
            out[o] = out[o] + updates[r * inner + j]


# -- device kernels: cumprod and matrices -------------------------------------------------------------
@cuda.jit
def cumprod_rows(out, x, inner, exclusive, reverse, one):
    rows = x.size // inner
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        acc = one
        for k in range(inner):
            j = r * inner + (inner - 1 - k if reverse else k)
            if exclusive:
                out[j] = acc
                acc *= x[j]
            else:
                acc *= x[j]
                out[j] = acc


@cuda.jit
def lu_det(out, work, n, one):
    """Per matrix (in `work`, overwritten): the product of LU's pivots, a swap flips the sign."""
    for b in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        base = b * n * n
        det = one
        for c in range(n):
            p = c
            for r in range(c + 1, n):
                if abs(work[base + r * n + c]) > abs(work[base + p * n + c]):
                    p = r
            if p != c:
                for k in range(n):
                    t = work[base + c * n + k]
                    work[base + c * n + k] = work[base + p * n + k]
                    work[base + p * n + k] = t
                det = -det
            piv = work[base + c * n + c]
            det *= piv
            if piv == 0:
                break
            for r in range(c + 1, n):
                f = work[base + r * n + c] / piv
                for k in range(c, n):
                    work[base + r * n + k] -= f * work[base + c * n + k]
        out[b] = det


@cuda.jit
def gauss_jordan(inv, work, singular, n):
    """Per matrix: [work | inv = I] reduced to [I | work⁻¹]; a zero pivot marks it singular."""
    batches = work.size // (n * n)
    for b in range(cuda.grid(1), batches, cuda.gridsize(1)):
        base = b * n * n
        for c in range(n):
            p = c
            for r in range(c + 1, n):
                if abs(work[base + r * n + c]) > abs(work[base + p * n + c]):
                    p = r
            if work[base + p * n + c] == 0:
                singular[0] = 1
                break
            if p != c:
                for k in range(n):
                    t = work[base + c * n + k]
                    work[base + c * n + k] = work[base + p * n + k]
                    work[base + p * n + k] = t
                    t = inv[base + c * n + k]
                    inv[base + c * n + k] = inv[base + p * n + k]
                    inv[base + p * n + k] = t
            piv = work[base + c * n + c]
            for k in range(n):
                work[base + c * n + k] /= piv
                inv[base + c * n + k] /= piv
            for r in range(n):
                if r != c:
                    f = work[base + r * n + c]
                    if f != 0:
                        for k in range(n):
                            work[base + r * n + k] -= f * work[base + c * n + k]
                            inv[base + r * n + k] -= f * inv[base + c * n + k]


@cuda.jit
def identity_fill(out, n):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        m = i % (n * n)
        out[i] = 1 if m // n == m % n else 0


# -- host wrappers: data-dependent sizes ------------------------------------------------------------
def _offsets(flags: Any) -> Tuple[Any, int]:
    """Exclusive prefix sums of `flags` (int64, on the device) and their total (on the host)."""
    n = flags.size
    chunk = max(1, -(-n // CHUNKS))
    chunks = -(-n // chunk) if n else 0
    counts = CK.empty((chunks + 1,), np.int64)
    offsets = CK.empty((n,), np.int64)
    if chunks:
        CK.launch(chunk_counts, chunks, counts, flags, chunk)
    CK.launch(exclusive_scan, 1, counts)
    if chunks:
        CK.launch(chunk_offsets, chunks, offsets, flags, counts, chunk)
    return offsets, int(CK.host(counts)[-1])


def _where(condition):
    flags = CK.empty((condition.size,), np.int64)
    if condition.size:
        x = CK.cast(condition, np.float32) if condition.dtype == CK.F16 else condition
        CK.launch(nonzero_flags, condition.size, flags, CK.flat(x))
    offsets, total = _offsets(flags)
    out = CK.empty((total, condition.ndim), np.int64)
    if total and condition.ndim:
        CK.launch(where_fill, condition.size, CK.flat(out), flags, offsets, tuple(condition.shape))
    return out


def _unique(x, out_idx):
    if x.ndim != 1:
        raise InvalidArgumentError(f"unique expects a 1-D tensor; got shape {list(x.shape)}")
    n = x.size
    first = CK.empty((n,), np.int64)
    flags = CK.empty((n,), np.int64)
    if n:
        CK.launch(unique_first, n, first, flags, x)
    offsets, total = _offsets(flags)
    values = CK.empty((total,), x.dtype)
    idx = CK.empty((n,), out_idx.as_numpy_dtype)
    if n:
        CK.launch(unique_fill, n, values, idx, x, first, offsets)
    return values, idx


def _unique_any(x, out_idx):
    """float16 compared in float32 (the same equalities), the values rounded back."""
    if x.dtype == CK.F16:
        values, idx = _unique(CK.cast(x, CK.F32), out_idx)
        return CK.cast(values, CK.F16), idx
    return _unique(x, out_idx)


# -- host wrappers: searching and counting -------------------------------------------------------------
def _searchsorted(sorted_sequence, values, side, out_type):
    s, v = sorted_sequence, values
    if not (s.ndim == 1 and v.ndim == 1) and tuple(s.shape[:-1]) != tuple(v.shape[:-1]):
        raise InvalidArgumentError(f"sorted_sequence {tuple(s.shape)} and values {tuple(v.shape)} must have the "
                                   "same leading dimensions")
    out = CK.empty(v.shape, out_type.as_numpy_dtype)
    if out.size:
        per_row = v.shape[-1] if v.ndim else 1
        CK.launch(search_rows, v.size, CK.flat(out), CK.flat(s), CK.flat(v), s.shape[-1], per_row,
                  side == "right")
    return out


def _bad_flag() -> Any:
    return CK.fill(CK.empty((1,), np.int32), 0)


def _segment_sum(data, segment_ids):
    ids = segment_ids
    if ids.shape[0] != data.shape[0]:
        raise InvalidArgumentError(f"segment_ids should be the same size as dimension 0 of data: "
                                   f"{ids.shape[0]} != {data.shape[0]}")
    n = 0
    if ids.size:
        bad = _bad_flag()
        CK.launch(sorted_ids_ok, ids.size, bad, ids)
        if CK.host(bad)[0]:
            raise InvalidArgumentError(f"segment ids are not increasing: {CK.host(ids).tolist()}")
        n = int(CK.host(ids[ids.size - 1:]).reshape(-1)[0]) + 1  # the output's size: one copy
    out = CK.empty((n,) + tuple(data.shape[1:]), data.dtype)
    if out.size:
        inner = math.prod(data.shape[1:])
        CK.launch(segment_sum_sorted, out.size, CK.flat(out), CK.flat(data), ids, inner, out.dtype.type(0))
    return out


def _bincount(arr, *weights, minlength, maxlength, dtype):
    a = CK.flat(arr)
    w = CK.flat(weights[0]) if weights else None
    if w is not None:
        if w.dtype.kind == "c":
            raise TypeError(f"Cannot cast array data from dtype('{w.dtype}') to dtype('float64') according to "
                            "the rule 'safe'")
        if w.size != a.size:
            raise ValueError("The weights and list don't have the same length.")
    limit = np.iinfo(np.int64).max if maxlength is None else int(maxlength)
    length = 0
    if a.size:
        mm = D.to_device(np.array([np.iinfo(np.int64).max, -1], np.int64))
        CK.launch(kept_min_max, a.size, mm, a, limit)
        lo, hi = (int(v) for v in CK.host(mm))
        if lo < 0:
            raise InvalidArgumentError(f"arr must be non-negative; got {lo}")
        length = hi + 1
    length = max(length, minlength or 0)
    if maxlength is not None:
        length = min(length, int(maxlength))
    acc = CK.fill(CK.empty((length,), np.int64 if w is None else np.float64), 0)
    if a.size and length:
        if w is None:
            CK.launch(bincount_count, a.size, acc, a, min(limit, length))
        else:
            CK.launch(bincount_weigh, a.size, acc, a, CK.cast(w, np.float64), min(limit, length))
    return CK.cast(acc, dtype.as_numpy_dtype if w is None else w.dtype)


# -- host wrappers: index vectors ------------------------------------------------------------------------
def _check_indices(indices: Any, shape: Tuple[int, ...], what: str) -> Tuple[Any, int]:
    """(flat int indices, depth); InvalidArgumentError naming the first bad index vector."""
    depth = indices.shape[-1] if indices.ndim else 0
    idx = CK.flat(indices)
    if idx.size and depth:
        bad = _bad_flag()
        CK.launch(check_index_rows, idx.size, bad, idx, depth, tuple(int(d) for d in shape[:depth]))
        if CK.host(bad)[0]:
            rows = CK.host(indices).reshape(-1, depth)
            i = int(np.nonzero(((rows < 0) | (rows >= np.asarray(shape[:depth]))).any(axis=1))[0][0])
            raise InvalidArgumentError(f"{what}: indices[{i}] = {rows[i].tolist()} is out of bounds: need "
                                       f"0 <= index < {list(shape[:depth])}")
    return idx, depth


def _gather_nd(params, indices):
    depth = indices.shape[-1]
    if depth > params.ndim:
        raise IndexError(f"too many indices for array: array is {params.ndim}-dimensional, but {depth} were "
                         "indexed")
    idx, depth = _check_indices(indices, tuple(params.shape), "gather_nd")
    out_shape = tuple(indices.shape[:-1]) + tuple(params.shape[depth:])
    out = CK.empty(out_shape, params.dtype)
    if out.size:
        inner = math.prod(params.shape[depth:])
        CK.launch(gather_nd_fill, out.size, CK.flat(out), CK.flat(params), idx, depth,
                  CK.c_strides(params.shape[:depth]) or (0,), inner)
    return out


def _scatter_add(tensor, indices, updates):
    shape = tuple(tensor.shape)
    depth = indices.shape[-1]
    for k in range(depth):  # the CPU kernel's message: the k-th index column out of range
        if k >= len(shape):
            raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, but {depth} were "
                             "indexed")
    idx = CK.flat(indices)
    if idx.size:
        bad = _bad_flag()
        CK.launch(check_index_rows, idx.size, bad, idx, depth, shape[:depth])
        if CK.host(bad)[0]:
            flat_idx = CK.host(indices).reshape(-1, depth)
            k = int(np.nonzero(((flat_idx < 0) | (flat_idx >= np.asarray(shape[:depth]))).any(axis=0))[0][0])
            raise InvalidArgumentError(f"indices[..., {k}] must be in [0, {shape[k]}); got "
                                       f"{flat_idx[:, k].tolist()}")
    rows = idx.size // depth if depth else 0
    inner = math.prod(shape[depth:])
    if updates.size != rows * inner:
        raise ValueError(f"cannot reshape array of size {updates.size} into shape {(rows,) + shape[depth:]}")
    out = CK.empty(shape, tensor.dtype)
    if out.size:
        CK.launch(P.map1_flat(P.identity_), out.size, CK.flat(out), CK.flat(tensor))
    if updates.size:
        strides = CK.c_strides(shape[:depth])
        if out.dtype.name in _ATOMIC_DTYPES:
            CK.launch(scatter_add_atomic, updates.size, CK.flat(out), idx, CK.flat(updates), depth, strides, inner)
        else:
            CK.launch(scatter_add_columns, inner, CK.flat(out), idx, CK.flat(updates), depth, strides, inner, rows)
    return out


def _slice_assign(var, value, *dynamic, index, dtype):
    """`v[key].assign(value)` on the variable's GPU: a copy of the value with the slice
    replaced (broadcast like numpy's), swapped in as the variable's value. Device-agnostic
    (placement.DEVICE_AGNOSTIC), like the other variable updates: it runs on the host and
    drives the variable's device, so the variable itself is never copied to a GPU."""
    if var._device_name == devices.CPU0:  # device-agnostic op: it runs where the variable lives
        host = [CK.host(a) if D.is_device_array(a) else a for a in (value,) + dynamic]
        return KERNELS["cpu"]["ResourceStridedSliceAssign"](var, *host, index=index, dtype=dtype)
    key = CK._slice_key(dynamic, index)
    current = var._value
    start, strides, shape = CK._view_of(current.shape, key)
    value = CK._var_value(var, value)
    v_shape = tuple(value.shape)
    while len(v_shape) > len(shape) and v_shape[0] == 1:  # numpy drops leading 1s of the value
        v_shape = v_shape[1:]
    try:
        np.broadcast_shapes(v_shape, shape)
        if len(v_shape) > len(shape) or tuple(np.broadcast_shapes(v_shape, shape)) != tuple(shape):
            raise ValueError(f"could not broadcast input array from shape {v_shape} into shape {shape}")
    except ValueError as e:
        raise InvalidArgumentError(f"cannot assign a value of shape {v_shape} to the slice {key} of variable "
                                   f"{var.name}: {e}") from None
    updated = CK.empty(current.shape, current.dtype)
    if updated.size:
        CK.launch(P.map1_flat(P.identity_), updated.size, CK.flat(updated), CK.flat(current))
    value = CK.cast(value, current.dtype)
    CK.copy_view(updated, start, strides, value, 0, CK.broadcast_strides(v_shape, shape), shape)
    var._replace(updated)


# -- host wrappers: cumprod, matrices ------------------------------------------------------------------
def _cumprod(x, axis, exclusive, reverse):
    moved, axis, inverse = _along_last(x, axis)
    out = CK.empty(moved.shape, moved.dtype)
    inner = moved.shape[-1] if moved.ndim else 1
    if out.size:
        CK.launch(cumprod_rows, out.size // inner, CK.flat(out), CK.flat(moved), inner, exclusive, reverse,
                  out.dtype.type(1))
    return CK.transpose(out, inverse) if axis != x.ndim - 1 else out


def _square(x: Any) -> int:
    if x.dtype == CK.F16:
        raise TypeError("array type float16 is unsupported in linalg")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return int(x.shape[-1])


def _copy(x: Any) -> Any:
    out = CK.empty(x.shape, x.dtype)
    if out.size:
        CK.launch(P.map1_flat(P.identity_), out.size, CK.flat(out), CK.flat(x))
    return out


def _inverse(x, adjoint):
    n = _square(x)
    if adjoint:
        x = CK.transpose(x, list(range(x.ndim - 2)) + [x.ndim - 1, x.ndim - 2])
        if x.dtype.kind == "c":
            x = _CONJ(x)
    work = _copy(x)
    inv = CK.empty(x.shape, x.dtype)
    if inv.size:
        CK.launch(identity_fill, inv.size, CK.flat(inv), n)
        singular = _bad_flag()
        CK.launch(gauss_jordan, inv.size // (n * n), CK.flat(inv), CK.flat(work), singular, n)
        if CK.host(singular)[0]:
            raise InvalidArgumentError("Input is not invertible.")
    return inv


def _det(x):
    n = _square(x)
    out = CK.empty(tuple(x.shape[:-2]), x.dtype)
    if out.size:
        if n == 0:
            return CK.fill(out, 1)
        work = _copy(x)
        CK.launch(lu_det, out.size, CK.flat(out), CK.flat(work), n, out.dtype.type(1))
    return out


# -- complex numbers ------------------------------------------------------------------------------------
_REAL: Dict[np.dtype, np.dtype] = {np.dtype(np.complex64): np.dtype(np.float32),
                                   np.dtype(np.complex128): np.dtype(np.float64)}
_COMPLEX: Dict[np.dtype, np.dtype] = {v: k for k, v in _REAL.items()}


class Typed(CK.Elementwise):
    """An elementwise kernel whose output dtype is a function of the first input's."""

    def __init__(self, fn: Callable, name: str, out_dtype: Callable[[np.dtype], np.dtype]) -> None:
        super().__init__(fn, "same", name)
        self.out_dtype = out_dtype

    def __call__(self, *arrays: Any) -> Any:
        out_shape = tuple(np.broadcast_shapes(*[tuple(a.shape) for a in arrays]))
        out = CK.empty(out_shape, self.out_dtype(np.dtype(arrays[0].dtype)))
        if out.size == 0:
            return out
        if all(tuple(a.shape) == out_shape for a in arrays):
            kernel = (P.map1_flat, P.map2_flat)[len(arrays) - 1]
            CK.launch(kernel(self.fn), out.size, CK.flat(out), *[CK.flat(a) for a in arrays])
            return out
        shape, strides = CK.collapse(out_shape, *[CK.broadcast_strides(a.shape, out_shape) for a in arrays])
        if len(arrays) == 1:
            CK.launch(P.map1(self.fn), out.size, CK.flat(out), CK.flat(arrays[0]), 0, strides[0], shape)
        else:
            CK.launch(P.map2(self.fn), out.size, CK.flat(out), CK.flat(arrays[0]), strides[0],
                      CK.flat(arrays[1]), strides[1], shape)
        return out


def _complex_of(dt: np.dtype) -> np.dtype:
    if dt not in _COMPLEX:
        raise TypeError(f"real must be a float32 or float64 array; got dtype {dt}")
    return _COMPLEX[dt]


def _real_of(dt: np.dtype) -> np.dtype:
    if dt not in _REAL:
        raise TypeError(f"input must be complex64 or complex128; got dtype {dt}")
    return _REAL[dt]


_CONJ = Typed(K.conj_, "Conj", lambda dt: dt)

OVERRIDES: Dict[str, Any] = {
    "Real": Typed(K.real_, "Real", _real_of),
    "Imag": Typed(K.imag_, "Imag", _real_of),
    "Conj": _CONJ,
    "Angle": Typed(K.angle_, "Angle", _real_of),
    "ComplexAbs": Typed(K.complex_abs_, "ComplexAbs", _real_of),
    "Complex": Typed(K.complex_, "Complex", _complex_of),
    "Cumprod": CK._on_host_f16(_cumprod),
    "MatrixInverse": _inverse,
    "MatrixDeterminant": _det,
    "SearchSorted": CK._on_host_f16(_searchsorted),
    "SegmentSum": CK._on_host_f16(_segment_sum),
    "Bincount": _bincount,
    "TensorScatterAdd": CK._on_host_f16(_scatter_add),
    "GatherNd": _gather_nd,
    "ResourceStridedSliceAssign": _slice_assign,
    "Unique": _unique_any,
    "Where": _where,
}
"""Ops of this module → their CUDA kernel (merged into the CUDA table by runtime/backends)."""

