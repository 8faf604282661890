"""Every CUDA kernel compiles for a real GPU, with every argument type the ops pass it.

The simulator runs kernels as Python, so it cannot catch what numba's CUDA compiler
rejects (typing, unsupported conversions such as float16 ones, atomics on a dtype).
This module runs without the simulator and compiles each primitive in
`runtime/ops/cuda_primitives.py` to PTX for compute capability 7.5 (matmul also for 9.0,
the H100) with numba's NVVM: no GPU is needed. Where NVVM itself is missing, kernels are
still typed and lowered to LLVM IR (`compile_cuda`), which catches the same type errors.
"""
from __future__ import annotations

import types as pytypes
from typing import Any, List, Tuple

import numpy as np
import pytest

from numba import cuda, from_dtype
from numba import types as T
import numba.cuda.dispatcher as _dispatcher

from jitflow.runtime.core import devices
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.backends import cuda_kernels as CK
from jitflow.runtime.backends import cuda_primitives as P
from jitflow.runtime.ops import math_ops as M

CC = (7, 5)
FLOATS = [np.float32, np.float64]                 # float16 is computed in float32
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8]
ALL = [np.float16] + FLOATS + INTS + [np.bool_]   # what data movement and casts see
CORE_INTS = [np.int8, np.int32, np.int64, np.uint8]  # arithmetic: int16 types like int8/int32
I64 = T.int64


def arr(dtype: Any) -> T.Array:
    return T.Array(from_dtype(np.dtype(dtype)), 1, "C")


def tup(n: int) -> T.UniTuple:
    return T.UniTuple(I64, n)


def _nvvm_available() -> bool:
    try:
        from numba.cuda.cudadrv import nvvm
        nvvm.NVVM()
        return True
    except Exception:
        return False


NVVM = _nvvm_available()


@pytest.fixture(autouse=True, scope="module")
def no_device_needed():
    """Device functions compile for the current device's architecture: give them one."""
    assert not devices.simulated(), "this module must run without NUMBA_ENABLE_CUDASIM"
    saved = _dispatcher.get_current_device
    _dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=CC)
    yield
    _dispatcher.get_current_device = saved


_compiled: set = set()


def compile_all(kernel: Any, signatures: List[Tuple], cc: Tuple[int, int] = CC) -> int:
    """Compile `kernel` for each signature (once); raise naming the signature that failed."""
    for sig in signatures:
        if (kernel, sig, cc) in _compiled:  # e.g. Mean's kernels are Sum's
            continue
        _compiled.add((kernel, sig, cc))
        try:
            if NVVM:
                ptx, _ = cuda.compile_ptx(kernel.py_func, sig, cc=cc)
                assert ".entry" in ptx
            else:
                from numba.cuda.compiler import compile_cuda
                compile_cuda(kernel.py_func, T.void, sig, cc=cc)
        except Exception as e:
            raise AssertionError(f"{kernel.py_func.__qualname__}{sig} does not compile for sm_{cc[0]}{cc[1]}: "
                                 f"{type(e).__name__}: {str(e)[:2000]}") from None
    return len(signatures)


def _kinds(kinds: str) -> list:
    return (FLOATS if "f" in kinds else []) + (CORE_INTS if "i" in kinds else []) + ([np.bool_] if "b" in kinds else [])


def test_elementwise_kernels():
    n = 0
    for _op, _pub, _name, kinds, out, fn, _ref in M._BINARY:
        for dt in _kinds(kinds):
            o = np.bool_ if out is not None else dt
            n += compile_all(P.map2_flat(fn), [(arr(o), arr(dt), arr(dt))])
            if dt in (np.float32, np.int32, np.bool_):  # the strided variant adds only index arithmetic
                n += compile_all(P.map2(fn), [(arr(o), arr(dt), tup(2), arr(dt), tup(2), tup(2))])
    for _op, _pub, _name, kinds, fn, _ref in M._UNARY:
        fn = CK._DEVICE_VARIANTS.get(fn, fn)
        for dt in _kinds(kinds):
            n += compile_all(P.map1_flat(fn), [(arr(dt), arr(dt))])
    for dt in FLOATS:
        n += compile_all(P.map1_flat(K.isfinite_), [(arr(np.bool_), arr(dt))])
    for dt in FLOATS + INTS + [np.bool_]:
        n += compile_all(P.map3(P.select_),
                         [(arr(dt), arr(np.bool_), tup(1), arr(dt), tup(1), arr(dt), tup(1), tup(1))])
    assert n > 100


def test_casts_and_data_movement_for_every_dtype():
    n = 0
    for src in ALL:
        for dst in ALL:
            if src is np.float16 and dst is np.bool_:
                continue  # `cuda_kernels.cast` goes through float32 (NVVM rejects this conversion)
            n += compile_all(P.map1_flat(P.identity_), [(arr(dst), arr(src))])
        n += compile_all(P.map1(P.identity_), [(arr(src), arr(src), I64, tup(1), tup(1))])
        n += compile_all(P.copy_strided, [(arr(src), I64, tup(r), arr(src), I64, tup(r), tup(r), I64) for r in (1, 3)])
        n += compile_all(P.fill, [(arr(src), T.float64), (arr(src), I64)])
        n += compile_all(P.gather, [(arr(src), arr(i), arr(src), I64, I64, I64) for i in (np.int32, np.int64)])
        n += compile_all(P.scatter_rows, [(arr(src), arr(np.int32), arr(src), I64, I64, I64)])
    for dt in FLOATS + INTS:
        n += compile_all(P.arange, [(arr(dt), arr(dt), arr(dt))])
        n += compile_all(P.mean_finish, [(arr(dt), arr(dt), I64, T.boolean)])
    for dt in (np.float32, np.float64, np.int32, np.int64):  # what UnsortedSegmentSum widens to
        n += compile_all(P.segment_sum, [(arr(dt), arr(i), arr(dt), I64, I64, I64) for i in (np.int32, np.int64)])
    assert n > 100


def test_reductions():
    n = 0
    for _op, (fn, _identity, to_bool) in CK._REDUCTIONS.items():
        for dt in ([np.bool_] if to_bool else FLOATS + CORE_INTS):
            acc = "float64" if np.dtype(dt).kind == "f" else "int64"
            init = T.float64 if acc == "float64" else I64
            out = np.bool_ if to_bool else dt
            n += compile_all(P.row_reduce(fn, acc), [(arr(dt), I64, I64, init, arr(out))])
            n += compile_all(P.rows_by_thread(fn), [(arr(dt), I64, init, arr(out))])
            if dt in (np.float32, np.int8, np.bool_):  # a long row: partial results (acc dtype), then out
                n += compile_all(P.row_reduce(fn, acc), [(arr(dt), I64, I64, init, arr(np.dtype(acc))),
                                                         (arr(np.dtype(acc)), I64, I64, init, arr(out))])
    for greater in (True, False):
        for dt in FLOATS + CORE_INTS:
            acc = "float64" if np.dtype(dt).kind == "f" else "int64"
            n += compile_all(P.row_arg(greater, acc), [(arr(dt), I64, arr(o)) for o in (np.int32, np.int64)])
    for dt in FLOATS:
        n += compile_all(P.row_softmax, [(arr(dt), I64, arr(dt), T.boolean)])
    assert n > 40


def test_matmul():
    n = 0
    for cc in (CC, (9, 0)):
        for dt, acc, zero in [(np.float32, "float32", T.float32), (np.float64, "float64", T.float64)] + \
                [(i, "int64", I64) for i in INTS]:
            n += compile_all(P.matmul(acc), [(arr(dt), tup(3), arr(dt), tup(3), arr(dt), I64, I64, I64, I64, zero)],
                             cc=cc)
    assert n == 14


def test_random():
    from numba.cuda.random import xoroshiro128p_dtype
    states = arr(xoroshiro128p_dtype)
    n = 0
    for dt in FLOATS:
        n += compile_all(P.random_normal, [(states, arr(dt), arr(dt), arr(dt))])
        n += compile_all(P.random_uniform, [(states, arr(dt), arr(dt), arr(dt), T.float64)])
    for dt in INTS:
        n += compile_all(P.random_uniform_int, [(states, arr(dt), arr(dt), arr(dt))])
    assert n == 9


def test_extra_op_kernels():
    """The kernels of runtime/backends/cuda_extra_kernels.py (ops added for TF 2 tutorials)."""
    from jitflow.runtime.backends import cuda_extra_kernels as X
    from jitflow.runtime.ops import math_extra_ops as E
    n = 0
    for op, _pub, kinds, fn, _ref in E.UNARY:
        if op in CK._HOST_ONLY:
            continue
        for dt in _kinds(kinds):
            n += compile_all(P.map1_flat(fn), [(arr(dt), arr(dt))])
    for fn in (X.floor_dev, X.ceil_dev, X.round_dev):
        for dt in FLOATS:
            n += compile_all(P.map1_flat(fn), [(arr(dt), arr(dt))])
    for dt in CORE_INTS:
        n += compile_all(P.map1_flat(X.invert_dev), [(arr(dt), arr(dt))])
    for dt in FLOATS:
        n += compile_all(X.linspace_fill, [(arr(dt), arr(dt), arr(dt), I64)])
    for dt in FLOATS + CORE_INTS:
        zero = from_dtype(np.dtype(dt))
        n += compile_all(X.cumsum_rows, [(arr(dt), arr(dt), I64, T.boolean, T.boolean, zero)])
        n += compile_all(X.top_k_rows, [(arr(dt), arr(np.int32), arr(dt), I64, I64)])
        n += compile_all(X.einsum2, [(arr(dt), arr(dt), tup(2), tup(1), arr(dt), tup(2), tup(1), tup(2), tup(1),
                                      I64, zero)])
    assert n > 40


def test_sparse_op_kernels():
    """The kernels of runtime/backends/cuda_sparse_kernels.py (the jf.sparse ops), with the value
    dtypes they see: every dtype for data movement, the widened ones for sums and atomics."""
    from jitflow.runtime.backends import cuda_sparse_kernels as S
    i, b, f64, flag = arr(np.int64), arr(np.bool_), T.float64, T.boolean
    moved = [np.float16] + FLOATS + INTS + [np.bool_]
    summed = [np.float32, np.float64, np.int32, np.int64]       # what the atomics see (S.WIDE)
    added = summed + [np.int8, np.int16, np.uint8]              # SparseAdd's run sums
    n = 0
    n += compile_all(S.linearize, [(i, i, i, i, I64, I64)])
    n += compile_all(S.first_unordered, [(i, i, I64)])
    n += compile_all(S.unravel, [(i, i, i, I64, I64)])
    n += compile_all(S.stable_rank, [(i, i, I64)])
    n += compile_all(S.chunk_counts, [(i, b, I64, I64, I64)])
    n += compile_all(S.exclusive_scan, [(i, i, I64)])
    n += compile_all(S.chunk_place, [(i, b, i, I64, I64, I64)])
    n += compile_all(S.in_box, [(b, i, i, i, I64, I64)])
    n += compile_all(S.shift_rows, [(i, i, i, i, I64, I64)])
    n += compile_all(S.insert_zero_column, [(i, i, I64, I64, I64)])
    n += compile_all(S.row_counts, [(i, i, I64, I64)])
    n += compile_all(S.row_totals, [(i, b, i, I64)])
    n += compile_all(S.copy_shifted_rows, [(i, I64, i, I64, I64, I64, I64)])
    for dt in moved:
        a = arr(dt)
        n += compile_all(S.move_rows, [(a, a, i, I64, I64)])
        n += compile_all(S.from_dense_fill, [(i, a, a, i, i, I64, I64)])
        n += compile_all(S.fill_from, [(a, a)])
        n += compile_all(S.scatter_values, [(a, i, a, I64)])
        n += compile_all(S.scatter_last, [(a, i, a, I64)])
        n += compile_all(S.place_row_entries, [(i, a, i, a, i, I64, I64)])
        n += compile_all(S.place_empty_rows, [(i, a, b, i, a, I64, I64)])
        n += compile_all(S.copy_into, [(a, I64, a, I64)])
        if dt is not np.float16:  # float16 is compared and multiplied in float32
            n += compile_all(S.nonzero_mask, [(b, a, I64)])
            n += compile_all(S.picked_cwise, [(a, i, a, a, i, I64, flag, I64)])
    for dt in added:
        n += compile_all(S.group_sums, [(arr(dt), b, i, arr(dt), f64, flag, I64)])
    for dt in summed:
        a = arr(dt)
        n += compile_all(S.atomic_scatter_add, [(a, i, a, I64)])
        n += compile_all(S.reduce_scatter, [(a, i, a, i, I64, I64)])
        n += compile_all(S.sparse_dense_matmul, [(a, i, a, a, I64, flag, I64)])
    assert n > 100


def test_math_extra_op_kernels():
    """The kernels of runtime/backends/cuda_math_extra_kernels.py (complex numbers, cumprod,
    inverse/determinant, where/unique/searchsorted/segment_sum/bincount, gather/scatter by
    index vectors), with every dtype their ops pass them."""
    from jitflow.runtime.backends import cuda_math_extra_kernels as X
    complexes = [np.complex64, np.complex128]
    i32, i64 = arr(np.int32), arr(np.int64)
    n = 0
    for z, r in zip(complexes, FLOATS):
        for fn in (K.real_, K.imag_, K.angle_, K.complex_abs_):
            n += compile_all(P.map1_flat(fn), [(arr(r), arr(z))])
            n += compile_all(P.map1(fn), [(arr(r), arr(z), I64, tup(1), tup(1))])
        n += compile_all(P.map1_flat(K.conj_), [(arr(z), arr(z))])
        n += compile_all(P.map2_flat(K.complex_), [(arr(z), arr(r), arr(r))])
        n += compile_all(P.map2(K.complex_), [(arr(z), arr(r), tup(2), arr(r), tup(2), tup(2))])
    for dt in [np.bool_, np.float32, np.float64] + CORE_INTS:
        n += compile_all(X.nonzero_flags, [(i64, arr(dt))])
    n += compile_all(X.chunk_counts, [(i64, i64, I64)])
    n += compile_all(X.exclusive_scan, [(i64,)])
    n += compile_all(X.chunk_offsets, [(i64, i64, i64, I64)])
    n += compile_all(X.where_fill, [(i64, i64, i64, tup(r)) for r in (1, 2, 3)])
    for dt in FLOATS + CORE_INTS:
        n += compile_all(X.unique_first, [(i64, i64, arr(dt))])
        n += compile_all(X.unique_fill, [(arr(dt), arr(o), arr(dt), i64, i64) for o in (np.int32, np.int64)])
        n += compile_all(X.search_rows, [(arr(o), arr(dt), arr(dt), I64, I64, T.boolean)
                                         for o in (np.int32, np.int64)])
    for ids in (i32, i64):
        n += compile_all(X.sorted_ids_ok, [(i32, ids)])
        n += compile_all(X.check_index_rows, [(i32, ids, I64, tup(d)) for d in (1, 2)])
        for dt in FLOATS + CORE_INTS + complexes:
            n += compile_all(X.segment_sum_sorted, [(arr(dt), arr(dt), ids, I64, from_dtype(np.dtype(dt)))])
    for dt in INTS:
        n += compile_all(X.kept_min_max, [(i64, arr(dt), I64)])
        n += compile_all(X.bincount_count, [(i64, arr(dt), I64)])
        n += compile_all(X.bincount_weigh, [(arr(np.float64), arr(dt), arr(np.float64), I64)])
    for dt in ALL + complexes:
        n += compile_all(X.gather_nd_fill, [(arr(dt), arr(dt), i64, I64, tup(d), I64) for d in (1, 2)])
    for dt in FLOATS + [np.int32, np.int64]:
        n += compile_all(X.scatter_add_atomic, [(arr(dt), ids, arr(dt), I64, tup(1), I64) for ids in (i32, i64)])
    for dt in [np.int8, np.int16, np.uint8] + complexes:
        n += compile_all(X.scatter_add_columns, [(arr(dt), ids, arr(dt), I64, tup(2), I64, I64)
                                                 for ids in (i32, i64)])
    for dt in FLOATS + CORE_INTS + complexes:
        one = from_dtype(np.dtype(dt))
        n += compile_all(X.cumprod_rows, [(arr(dt), arr(dt), I64, T.boolean, T.boolean, one)])
    for dt in FLOATS + complexes:
        n += compile_all(X.lu_det, [(arr(dt), arr(dt), I64, from_dtype(np.dtype(dt)))])
        n += compile_all(X.gauss_jordan, [(arr(dt), arr(dt), i32, I64)])
        n += compile_all(X.identity_fill, [(arr(dt), I64)])
    assert n > 100
