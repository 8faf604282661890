"""CUDA kernels of the `jf.sparse` ops (runtime/sparse/): COO indices, values and dense shape.

Dense shapes, slice boxes and axes are a handful of numbers: they are read on the host (the
output's shape depends on them). The per-entry work runs on the device:

- every op that reads indices first turns them into row-major positions on the device; an
  out-of-bounds row sets the lowest bad row number (an atomic min), so the host reads one
  number and raises the CPU kernel's InvalidArgumentError naming that row;
- outputs whose size depends on the data (from_dense, retain, slice, add, fill_empty_rows)
  are built in passes: a keep-mask, per-chunk counts, an exclusive scan of the counts, the
  output allocated from the total (one number read back), then each kept entry written at
  its place. Order is kept, so results are row-major as on the CPU;
- reorder, add and concat sort by position with a stable rank (each entry counts the
  entries before it): quadratic in the number of entries, parallel over them; sparse
  inputs of these ops are small next to the dense tensors they stand for;
- sums (dense add, reduce_sum, sparse_dense_matmul) are atomic adds, in a wider dtype where
  CUDA has no atomic for the values' (int8/int16/uint8/bool: int32, float16: float32), then
  cast back, which wraps integers exactly like the CPU kernels' sums.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np
from numba import cuda

from jitflow.runtime.backends import cuda_kernels as CK
from jitflow.runtime.backends import cuda_primitives as P
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.execution import device_memory as D
from jitflow.runtime.ops.sparse_shapes import concat_shape

I64 = np.dtype(np.int64)
CHUNK = 4 if P.SIM else 1024  # entries one thread counts and places in a compaction
# CUDA atomics exist for 32/64-bit ints and floats: narrower dtypes are summed wider.
WIDE = {"int8": np.int32, "int16": np.int32, "uint8": np.int32, "bool": np.int32, "float16": np.float32}


# -- device kernels ------------------------------------------------------------------------
@cuda.jit
def linearize(lin, bad, idx, shape, rank, n):
    """Row-major position of each index row; the lowest out-of-bounds row goes to bad[0]."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        acc = 0
        ok = True
        for d in range(rank):
            v = idx[i * rank + d]
            s = shape[d]
            if v < 0 or v >= s:
                ok = False
            acc = acc * s + v
        lin[i] = acc
        if not ok:
            cuda.atomic.min(bad, 0, i)


@cuda.jit
def first_unordered(bad, lin, n):
    """The lowest i with lin[i] <= lin[i - 1] goes to bad[0] (to_dense's validate_indices)."""
    for i in range(cuda.grid(1) + 1, n, cuda.gridsize(1)):
        if lin[i] <= lin[i - 1]:
            cuda.atomic.min(bad, 0, i)


@cuda.jit
def unravel(out, lin, shape, rank, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = lin[i]
        for d in range(rank - 1, -1, -1):
            s = shape[d]
            out[i * rank + d] = r % s
            r //= s


@cuda.jit
def stable_rank(pos, keys, n):
    """pos[i]: where entry i goes when sorting by key, ties kept in input order."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        k = keys[i]
        p = 0
        for j in range(n):
            kj = keys[j]
            if kj < k or (kj == k and j < i):
                p += 1
        pos[i] = p


@cuda.jit
def move_rows(dst, src, pos, width, total):
    """Row i of src (width items) to row pos[i] of dst; rows with pos < 0 are dropped."""
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        p = pos[t // width]
        if p >= 0:
            dst[p * width + t % width] = src[t]


@cuda.jit
def chunk_counts(counts, mask, chunk, n, m):
    for c in range(cuda.grid(1), m, cuda.gridsize(1)):
        s = 0
        end = (c + 1) * chunk
        if end > n:
            end = n
        for i in range(c * chunk, end):
            if mask[i]:
                s += 1
        counts[c] = s


@cuda.jit
def exclusive_scan(offsets, counts, m):
    """offsets[c] = counts[0] + ... + counts[c - 1]; offsets[m] is the total (one thread)."""
    if cuda.grid(1) == 0:
        acc = 0
        for c in range(m):
            offsets[c] = acc
            acc += counts[c]
        offsets[m] = acc


@cuda.jit
def chunk_place(pos, mask, offsets, chunk, n, m):
    for c in range(cuda.grid(1), m, cuda.gridsize(1)):
        p = offsets[c]
        end = (c + 1) * chunk
        if end > n:
            end = n
        for i in range(c * chunk, end):
            if mask[i]:
                pos[i] = p
                p += 1
            else:
                pos[i] = -1


@cuda.jit
def nonzero_mask(mask, x, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        mask[i] = x[i] != 0


@cuda.jit
def from_dense_fill(ind, vals, x, pos, shape, rank, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        p = pos[i]
        if p >= 0:
            vals[p] = x[i]
            r = i
            for d in range(rank - 1, -1, -1):
                s = shape[d]
                ind[p * rank + d] = r % s
                r //= s


@cuda.jit
def fill_from(out, value):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = value[0]


@cuda.jit
def scatter_values(out, lin, vals, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        out[lin[i]] = vals[i]


@cuda.jit
def scatter_last(out, lin, vals, n):
    """Unvalidated indices may repeat: the last entry of a position is written, as numpy's
    `out[lin] = vals` does (each entry looks for a later one at its position)."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        last = True
        for j in range(i + 1, n):
            if lin[j] == lin[i]:
                last = False
                break
        if last:
            out[lin[i]] = vals[i]


@cuda.jit
def atomic_scatter_add(out, lin, vals, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        cuda.atomic.add(out, lin[i], vals[i])


@cuda.jit
def in_box(mask, idx, start, size, rank, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        ok = True
        for d in range(rank):
            v = idx[i * rank + d]
            if v < start[d] or v >= start[d] + size[d]:
                ok = False
        mask[i] = ok


@cuda.jit
def shift_rows(dst, src, pos, start, rank, total):
    """Row i of src minus `start` to row pos[i] of dst (slice re-indexes from its start)."""
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        p = pos[t // rank]
        if p >= 0:
            d = t % rank
            dst[p * rank + d] = src[t] - start[d]


@cuda.jit
def insert_zero_column(out, idx, rank, axis, total):
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        i = t // (rank + 1)
        c = t % (rank + 1)
        if c == axis:
            out[t] = 0
        elif c < axis:
            out[t] = idx[i * rank + c]
        else:
            out[t] = idx[i * rank + c - 1]


@cuda.jit
def row_counts(counts, idx, rank, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        cuda.atomic.add(counts, idx[i * rank], 1)


@cuda.jit
def row_totals(totals, empty, counts, rows):
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        empty[r] = counts[r] == 0
        totals[r] = counts[r] + (1 if counts[r] == 0 else 0)


@cuda.jit
def place_row_entries(out_ind, out_vals, idx, vals, starts, rank, n):
    """Entry i goes after its row's earlier entries (input order within a row, as the CPU's stable sort)."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        r = idx[i * rank]
        p = starts[r]
        for j in range(i):
            if idx[j * rank] == r:
                p += 1
        for d in range(rank):
            out_ind[p * rank + d] = idx[i * rank + d]
        out_vals[p] = vals[i]


@cuda.jit
def place_empty_rows(out_ind, out_vals, empty, starts, default, rank, rows):
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        if empty[r]:
            p = starts[r]
            out_ind[p * rank] = r
            for d in range(1, rank):
                out_ind[p * rank + d] = 0
            out_vals[p] = default[0]


@cuda.jit
def group_sums(sums, keep, lin, vals, thresh, logical, n):
    """At the first entry of each run of equal positions: the run's sum, kept when the run is
    one entry or |sum| >= thresh (TF's SparseAdd); other entries are dropped."""
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        if i > 0 and lin[i] == lin[i - 1]:
            keep[i] = False
        else:
            s = vals[i]
            j = i + 1
            while j < n and lin[j] == lin[i]:
                s += vals[j]
                j += 1
            if logical and s > 1:  # bool values: a sum is "any", True
                s = 1
            sums[i] = s
            keep[i] = j - i == 1 or abs(s) >= thresh


@cuda.jit
def copy_into(dst, offset, src, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        dst[offset + i] = src[i]


@cuda.jit
def copy_shifted_rows(dst, offset, src, rank, axis, shift, total):
    """Index rows of one concat input into the joined rows, moved by `shift` along `axis`."""
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        dst[offset + t] = src[t] + (shift if t % rank == axis else 0)


@cuda.jit
def picked_cwise(out, idx, vals, dense, dstrides, rank, is_mul, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        off = 0
        for d in range(rank):
            off += idx[i * rank + d] * dstrides[d]
        if is_mul:
            out[i] = vals[i] * dense[off]
        else:
            out[i] = vals[i] / dense[off]


@cuda.jit
def reduce_scatter(out, idx, vals, ostrides, rank, n):
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        t = 0
        for d in range(rank):
            t += idx[i * rank + d] * ostrides[d]
        cuda.atomic.add(out, t, vals[i])


@cuda.jit
def sparse_dense_matmul(out, idx, vals, b, ncols, adjoint_a, total):
    """out[row, j] += value * b[col, j], one thread per (entry, output column)."""
    for t in range(cuda.grid(1), total, cuda.gridsize(1)):
        i = t // ncols
        j = t % ncols
        r = idx[2 * i]
        c = idx[2 * i + 1]
        if adjoint_a:
            r, c = c, r
        cuda.atomic.add(out, r * ncols + j, vals[i] * b[c * ncols + j])


# -- host helpers ----------------------------------------------------------------------------
def _launch(kernel: Any, n: int, *args: Any) -> None:
    if n > 0:
        CK.launch(kernel, n, *args)


def _small(values: Sequence[int]) -> Any:
    """A few int64 numbers on the device (never empty: kernels loop to `rank`, not its size)."""
    vals = [int(v) for v in values] or [0]
    return D.to_device(np.asarray(vals, dtype=I64))


def _shape_of(dense_shape: Any) -> Tuple[int, ...]:
    return tuple(int(d) for d in np.asarray(CK.host(dense_shape)).reshape(-1))


def _scalar(a: Any, i: int) -> int:
    return int(CK.host(a[i:i + 1])[0])


def _rows(indices: Any, rank: int) -> Tuple[Any, int]:
    """The index rows as flat int64 on the device, and how many there are."""
    idx = CK.cast(indices, I64)
    n = int(idx.shape[0]) if idx.ndim == 2 else (idx.size // rank if rank else 0)
    return CK.flat(idx), n


def _linear(indices: Any, shape: Tuple[int, ...], what: str) -> Tuple[Any, Any, int]:
    """(row-major positions, flat int64 index rows, entry count); InvalidArgumentError as the CPU's."""
    rank = len(shape)
    idx, n = _rows(indices, rank)
    lin = CK.empty((n,), I64)
    if n:
        bad = D.to_device(np.asarray([n], dtype=I64))
        CK.launch(linearize, n, lin, bad, idx, _small(shape), rank, n)
        b = _scalar(bad, 0)
        if b < n:
            row = CK.host(idx[b * rank:(b + 1) * rank]).tolist()
            raise InvalidArgumentError(f"{what}: indices[{b}] = {row} is out of bounds: need "
                                       f"0 <= index < {list(shape)}")
    return lin, idx, n


def _compact(mask: Any, n: int) -> Tuple[Any, int]:
    """pos[i]: the output slot of kept entry i (-1: dropped), in order; and how many are kept."""
    pos = CK.empty((n,), I64)
    if n == 0:
        return pos, 0
    m = -(-n // CHUNK)
    counts = CK.empty((m,), I64)
    offsets = CK.empty((m + 1,), I64)
    CK.launch(chunk_counts, m, counts, mask, CHUNK, n, m)
    CK.launch(exclusive_scan, 1, offsets, counts, m)
    CK.launch(chunk_place, m, pos, mask, offsets, CHUNK, n, m)
    return pos, _scalar(offsets, m)


def _gather_rows(src: Any, pos: Any, n: int, width: int, total: int, dtype: Any) -> Any:
    out = CK.empty((total * width,), dtype)
    _launch(move_rows, n * width, out, CK.flat(src), pos, width, n * width)
    return out


def _sorted_by(keys: Any, n: int) -> Any:
    pos = CK.empty((n,), I64)
    _launch(stable_rank, n, pos, keys, n)
    return pos


def _wide(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    return np.dtype(WIDE.get(dtype.name, dtype))


def _shape_array(shape: Sequence[int]) -> Any:
    return D.to_device(np.asarray(list(shape), dtype=I64))


def _check_broadcast(dense_shape: Tuple[int, ...], shape: Tuple[int, ...], what: str) -> None:
    """np.broadcast_to's rule and error (the CPU kernels broadcast with it)."""
    ok = len(dense_shape) <= len(shape) and all(
        d in (1, s) for d, s in zip(dense_shape[::-1], shape[::-1]))
    if not ok:
        raise ValueError(f"{what}: operands could not be broadcast: dense shape {list(dense_shape)} to the sparse "
                         f"shape {list(shape)}")


# -- the ops ---------------------------------------------------------------------------------
def _to_dense(indices, dense_shape, values, default_value, validate_indices):
    shape = _shape_of(dense_shape)
    lin, idx, n = _linear(indices, shape, "sparse.to_dense")
    rank = len(shape)
    if validate_indices and n > 1:
        bad = D.to_device(np.asarray([n], dtype=I64))
        CK.launch(first_unordered, n, bad, lin, n)
        i = _scalar(bad, 0)
        if i < n:
            where = CK.host(idx[i * rank:(i + 1) * rank]).tolist()
            if _scalar(lin, i) == _scalar(lin, i - 1):
                raise InvalidArgumentError(f"sparse.to_dense: indices[{i}] = {where} is repeated")
            raise InvalidArgumentError(f"sparse.to_dense: indices[{i}] = {where} is out of order. Many sparse ops "
                                       "require sorted indices. Use `jf.sparse.reorder` to create a correctly "
                                       "ordered copy.")
    out = CK.empty(shape, values.dtype)
    flat = CK.flat(out)
    _launch(fill_from, flat.size, flat, CK.flat(CK.cast(default_value, values.dtype)))
    _launch(scatter_values if validate_indices else scatter_last, n, flat, lin, CK.flat(values), n)
    return out


def _from_dense(x):
    shape = tuple(int(d) for d in x.shape)
    rank, n = len(shape), int(x.size)
    mask = CK.empty((n,), np.bool_)
    _launch(nonzero_mask, n, mask, CK.flat(CK.cast(x, _wide(x.dtype)) if x.dtype == np.float16 else x), n)
    pos, total = _compact(mask, n)
    ind = CK.empty((total, rank), I64)
    vals = CK.empty((total,), x.dtype)
    _launch(from_dense_fill, n, CK.flat(ind), vals, CK.flat(x), pos, _small(shape), rank, n)
    return ind, vals, _shape_array(shape)


def _reorder(indices, values, dense_shape):
    shape = _shape_of(dense_shape)
    rank = len(shape)
    lin, idx, n = _linear(indices, shape, "sparse.reorder")
    pos = _sorted_by(lin, n)
    ind = _gather_rows(idx, pos, n, rank, n, I64).reshape((n, rank))
    return ind, _gather_rows(values, pos, n, 1, n, values.dtype)


def _resolve_shape(old: Tuple[int, ...], new: List[int], what: str) -> Tuple[int, ...]:
    total = math.prod(old)
    unknown = [i for i, d in enumerate(new) if d == -1]
    if len(unknown) > 1:
        raise InvalidArgumentError(f"{what}: at most one dimension can be -1; got {new}")
    known = math.prod(d for d in new if d != -1)
    if unknown:
        if known == 0 or total % known:
            raise InvalidArgumentError(f"{what}: cannot infer the -1 in {new} for a SparseTensor with {total} "
                                       "dense values")
        new[unknown[0]] = total // known
    if math.prod(new) != total:
        raise InvalidArgumentError(f"{what}: Input to reshape is a SparseTensor with {total} dense values, but "
                                   f"the requested shape has {math.prod(new)}")
    return tuple(new)


def _reshape(indices, dense_shape, new_shape):
    old = _shape_of(dense_shape)
    new = _resolve_shape(old, [int(d) for d in np.asarray(CK.host(new_shape)).reshape(-1)], "sparse.reshape")
    lin, _, n = _linear(indices, old, "sparse.reshape")
    out = CK.empty((n, len(new)), I64)
    _launch(unravel, n, CK.flat(out), lin, _small(new), len(new), n)
    return out, _shape_array(new)


def _slice(indices, values, dense_shape, start, size):
    shape = _shape_of(dense_shape)
    rank = len(shape)
    start_h = np.asarray(CK.host(start), dtype=I64).reshape(-1)
    size_h = np.asarray(CK.host(size), dtype=I64).reshape(-1)
    if start_h.size != rank or size_h.size != rank:
        raise InvalidArgumentError(f"sparse.slice: start and size need {rank} entries (the rank); got "
                                   f"{start_h.size} and {size_h.size}")
    shape_h = np.asarray(shape, dtype=I64)
    out_shape = np.maximum(np.minimum(start_h + size_h, shape_h) - np.minimum(start_h, shape_h), 0)
    idx, n = _rows(indices, rank)
    mask = CK.empty((n,), np.bool_)
    d_start = _small(start_h.tolist())
    _launch(in_box, n, mask, idx, d_start, _small(size_h.tolist()), rank, n)
    pos, total = _compact(mask, n)
    ind = CK.empty((total, rank), I64)
    _launch(shift_rows, n * rank, CK.flat(ind), idx, pos, d_start, rank, n * rank)
    return ind, _gather_rows(values, pos, n, 1, total, values.dtype), D.to_device(out_shape.astype(I64))


def _retain(indices, values, mask):
    n_mask = int(mask.size)
    n = int(values.shape[0]) if values.ndim else 1
    if n_mask != n:
        raise InvalidArgumentError(f"sparse.retain: to_retain has {n_mask} entries; the SparseTensor "
                                   f"has {n} values")
    width = int(indices.shape[1]) if indices.ndim == 2 else (indices.size // n if n else 0)
    idx = CK.flat(CK.cast(indices, I64))
    pos, total = _compact(CK.flat(CK.cast(mask, np.bool_)), n)
    ind = _gather_rows(idx, pos, n, width, total, I64).reshape((total, width))
    return ind, _gather_rows(values, pos, n, 1, total, values.dtype)


def _expand_dims(indices, dense_shape, axis):
    shape = list(_shape_of(dense_shape))
    rank = len(shape)
    if not -rank - 1 <= axis <= rank:
        raise InvalidArgumentError(f"sparse.expand_dims: axis {axis} is out of range for a rank-{rank} SparseTensor")
    a = axis % (rank + 1)
    idx, n = _rows(indices, rank)
    out = CK.empty((n, rank + 1), I64)
    _launch(insert_zero_column, n * (rank + 1), CK.flat(out), idx, rank, a, n * (rank + 1))
    return out, _shape_array(shape[:a] + [1] + shape[a:])


def _fill_empty_rows(indices, values, dense_shape, default_value):
    shape = _shape_of(dense_shape)
    if not shape:
        raise InvalidArgumentError("sparse.fill_empty_rows: the SparseTensor needs at least one dimension")
    rank, rows = len(shape), shape[0]
    _, idx, n = _linear(indices, shape, "sparse.fill_empty_rows")
    counts = CK.fill(CK.empty((rows,), I64), 0)
    _launch(row_counts, n, counts, idx, rank, n)
    empty = CK.empty((rows,), np.bool_)
    totals = CK.empty((rows,), I64)
    _launch(row_totals, rows, totals, empty, counts, rows)
    starts = CK.fill(CK.empty((rows + 1,), I64), 0)
    _launch(exclusive_scan, 1, starts, totals, rows)
    total = _scalar(starts, rows)
    ind = CK.empty((total, rank), I64)
    vals = CK.empty((total,), values.dtype)
    _launch(place_row_entries, n, CK.flat(ind), vals, idx, CK.flat(values), starts, rank, n)
    default = CK.flat(CK.cast(default_value, values.dtype))
    _launch(place_empty_rows, rows, CK.flat(ind), vals, empty, starts, default, rank, rows)
    return ind, vals, empty


def _add(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
    shape = _shape_of(a_shape)
    if shape != _shape_of(b_shape):
        raise InvalidArgumentError(f"sparse.add: Operands' shapes do not match: A.shape = {list(shape)} vs "
                                   f"B.shape = {list(_shape_of(b_shape))}")
    la, _, na = _linear(a_indices, shape, "sparse.add (a)")
    lb, _, nb = _linear(b_indices, shape, "sparse.add (b)")
    n = na + nb
    dtype = np.dtype(a_values.dtype)
    acc = _wide(dtype) if dtype.kind in "bf" else dtype  # bool sums: any True stays True; float16 in float32
    lin = CK.empty((n,), I64)
    vals = CK.empty((n,), acc)
    _launch(copy_into, na, lin, 0, la, na)
    _launch(copy_into, nb, lin, na, lb, nb)
    _launch(copy_into, na, vals, 0, CK.flat(CK.cast(a_values, acc)), na)
    _launch(copy_into, nb, vals, na, CK.flat(CK.cast(b_values, acc)), nb)
    pos = _sorted_by(lin, n)
    s_lin = _gather_rows(lin, pos, n, 1, n, I64)
    s_vals = _gather_rows(vals, pos, n, 1, n, acc)
    sums = CK.empty((n,), acc)
    keep = CK.empty((n,), np.bool_)
    _launch(group_sums, n, sums, keep, s_lin, s_vals, float(thresh), dtype.kind == "b", n)
    kpos, total = _compact(keep, n)
    out_lin = _gather_rows(s_lin, kpos, n, 1, total, I64)
    out = CK.empty((total, len(shape)), I64)
    _launch(unravel, total, CK.flat(out), out_lin, _small(shape), len(shape), total)
    out_vals = CK.cast(_gather_rows(sums, kpos, n, 1, total, acc), dtype)
    return out, out_vals, _shape_array(shape)


def _dense_add(indices, values, dense_shape, dense):
    shape = _shape_of(dense_shape)
    _check_broadcast(tuple(dense.shape), shape, "sparse.add")
    lin, _, n = _linear(indices, shape, "sparse.add")
    dtype = np.result_type(dense.dtype, values.dtype)
    wide = _wide(dtype)
    out = CK.empty(shape, wide)
    src = CK.cast(dense, wide)
    CK.copy_view(out, 0, CK.c_strides(shape), src, 0, CK.broadcast_strides(dense.shape, shape), shape)
    _launch(atomic_scatter_add, n, CK.flat(out), lin, CK.flat(CK.cast(values, wide)), n)
    return CK.cast(out, dtype)


def _cwise(indices, values, dense_shape, dense, mode):
    shape = _shape_of(dense_shape)
    if dense.ndim > len(shape):
        raise InvalidArgumentError(f"SparseTensor {mode}: the dense operand (shape {list(dense.shape)}) must "
                                   f"broadcast to the sparse shape {list(shape)}")
    _check_broadcast(tuple(dense.shape), shape, f"SparseTensor {mode}")
    _, idx, n = _linear(indices, shape, f"SparseTensor {mode}")
    out = CK.empty((n,), values.dtype)
    strides = CK.broadcast_strides(dense.shape, shape)
    _launch(picked_cwise, n, out, idx, CK.flat(values), CK.flat(dense), _small(strides), len(shape), mode == "mul",
            n)
    return out


def _axes(axis: Any, rank: int, what: str) -> Tuple[int, ...]:
    if axis is None:
        return tuple(range(rank))
    out = []
    for a in np.asarray(axis).reshape(-1).tolist():
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"{what}: axis {a} is out of range for a rank-{rank} SparseTensor")
        out.append(a % rank)
    return tuple(sorted(set(out)))


def _reduce_sum(indices, values, dense_shape, axis, keepdims):
    shape = _shape_of(dense_shape)
    rank = len(shape)
    axes = _axes(axis, rank, "sparse.reduce_sum")
    kept = [d for d in range(rank) if d not in axes]
    out_shape = tuple(shape[d] for d in kept)
    _, idx, n = _linear(indices, shape, "sparse.reduce_sum")
    kept_strides = dict(zip(kept, CK.c_strides(out_shape)))
    strides = [kept_strides.get(d, 0) for d in range(rank)]
    dtype = np.dtype(values.dtype)
    wide = _wide(dtype)
    out = CK.fill(CK.empty(out_shape, wide), 0)
    _launch(reduce_scatter, n, CK.flat(out), idx, CK.flat(CK.cast(values, wide)), _small(strides), rank, n)
    out = CK.cast(out, dtype)
    if keepdims:
        return out.reshape(tuple(1 if d in axes else shape[d] for d in range(rank)))
    return out


def _concat(*parts, concat_dim, expand_nonconcat_dims):
    groups = [parts[i:i + 3] for i in range(0, len(parts), 3)]
    shapes = [_shape_of(s) for _, _, s in groups]
    axis, out_shape = concat_shape(shapes, concat_dim, expand_nonconcat_dims)
    rank = len(out_shape)
    checked = [_linear(ind, s, "sparse.concat") for (ind, _, _), s in zip(groups, shapes)]
    n = sum(c[2] for c in checked)
    dtype = groups[0][1].dtype
    idx = CK.empty((n * rank,), I64)
    vals = CK.empty((n,), dtype)
    row = shift = 0
    for (_, val, _), s, (_, part, k) in zip(groups, shapes, checked):
        _launch(copy_shifted_rows, k * rank, idx, row * rank, part, rank, axis, shift, k * rank)
        _launch(copy_into, k, vals, row, CK.flat(CK.cast(val, dtype)), k)
        row += k
        shift += s[axis]
    lin, _, _ = _linear(idx.reshape((n, rank)), tuple(out_shape), "sparse.concat")
    pos = _sorted_by(lin, n)
    ind = _gather_rows(idx, pos, n, rank, n, I64).reshape((n, rank))
    return ind, _gather_rows(vals, pos, n, 1, n, dtype), _shape_array(out_shape)


def _matmul(a_indices, a_values, a_shape, b, adjoint_a, adjoint_b):
    shape = _shape_of(a_shape)
    if len(shape) != 2:
        raise InvalidArgumentError(f"sparse_dense_matmul: sp_a must be a matrix; got dense shape {list(shape)}")
    _, idx, n = _linear(a_indices, shape, "sparse_dense_matmul")
    if b.ndim != 2:
        raise InvalidArgumentError(f"sparse_dense_matmul: b must be a matrix; got shape {list(b.shape)}")
    m, k = shape
    if adjoint_a:
        m, k = k, m
    if adjoint_b:
        b = CK.transpose(b, (1, 0))
    if b.shape[0] != k:
        raise InvalidArgumentError(f"sparse_dense_matmul: Cannot multiply A and B because inner dimension does "
                                   f"not match: {k} vs. {b.shape[0]}")
    dtype = np.result_type(a_values.dtype, b.dtype)
    wide = _wide(dtype)
    ncols = int(b.shape[1])
    out = CK.fill(CK.empty((m, ncols), wide), 0)
    _launch(sparse_dense_matmul, n * ncols, CK.flat(out), idx, CK.flat(CK.cast(a_values, wide)),
            CK.flat(CK.cast(b, wide)), ncols, bool(adjoint_a), n * ncols)
    return CK.cast(out, dtype)


def _f16_in_f32(fn: Callable) -> Callable:
    """float16 values computed in float32 (CUDA has no float16 atomics; numba types f16 poorly)."""
    return CK._on_host_f16(fn)


OVERRIDES: Dict[str, Any] = {
    "SparseToDense": _to_dense,
    "SparseFromDense": _from_dense,
    "SparseReorder": _reorder,
    "SparseReshape": _reshape,
    "SparseSlice": _slice,
    "SparseRetain": _retain,
    "SparseExpandDims": _expand_dims,
    "SparseFillEmptyRows": _fill_empty_rows,
    "SparseAdd": _add,
    "SparseTensorDenseAdd": _dense_add,
    "SparseDenseCwiseOp": _f16_in_f32(_cwise),
    "SparseReduceSum": _reduce_sum,
    "SparseConcat": _concat,
    "SparseTensorDenseMatMul": _matmul,
}
