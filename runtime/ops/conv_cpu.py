"""The fast CPU convolution: im2col + BLAS in cache-sized blocks, on every core.

A convolution is a matrix product once every receptive field is copied into one row of a
`cols` matrix (N·OH·OW rows of KH·KW·C). Copying the whole batch first writes and reads
back a matrix several times the input (9× for a 3×3 filter) through main memory; here
each thread copies a block of a few images into its own scratch buffer, small enough to
stay in the core's L2 cache, and multiplies it at once:

* forward:         out[block]  = cols[block] · W             (W as a KH·KW·C × O matrix)
* input gradient:  cols[block] = dy[block] · Wᵀ, scattered back onto dx[block] (col2im)
* filter gradient: dWᵀ += dy[block]ᵀ · cols[block]

The batch is cut into at most `CHAINS` contiguous chains of blocks (fixed by the sizes,
not by the thread count): the filter gradient sums each chain into its own accumulator
and adds the chains in order, so the result is the same on 1 or 8 threads. Threads claim
whole blocks (forward, input gradient) or whole chains (filter gradient) through
`cpu_parallel`, so every image's output is computed by the same arithmetic however the
work is split.

Receptive fields of a few elements (a first layer on 1-3 channels, K = KH·KW·C ≤
`SMALL_K`) build the transposed matrix instead (see `im2col_t_range`): its copy is a run
of contiguous elements where `cols` would scatter single ones.
"""
from __future__ import annotations

import threading
from typing import Tuple

import numpy as np
from jitflow.runtime.core.lazyjit import njit

from jitflow.runtime.ops import cpu_parallel

SMALL_K = 32   # receptive fields up to this many elements use the transposed matrix
BLOCK_BYTES = 256 * 1024   # one block's `cols`: a quarter of a 1 MiB L2, leaving room for W and the output
CHAINS = 8

Geometry = Tuple[int, int, int, int, int, int, int, int, int, int]   # kh kw sh sw dh dw pt pl oh ow

_scratch = threading.local()


SCRATCH_KEEP_BYTES = 16 << 20   # larger buffers (one huge image's block) are not kept between calls


def scratch(n: int, dtype: np.dtype, slot: int = 0) -> np.ndarray:
    """A reusable 1-D buffer of at least `n` elements for this thread (grown, never shrunk, up
    to SCRATCH_KEEP_BYTES): a fresh multi-megabyte buffer per call costs page faults that
    rival the copy itself."""
    if n * np.dtype(dtype).itemsize > SCRATCH_KEEP_BYTES:
        return np.empty(n, dtype)
    key = (np.dtype(dtype).str, slot)
    buffers = getattr(_scratch, "buffers", None)
    if buffers is None:
        buffers = _scratch.buffers = {}
    buf = buffers.get(key)
    if buf is None or buf.size < n:
        buf = buffers[key] = np.empty(max(n, 1), dtype)
    return buf


def images_per_block(rows_per_image: int, k: int, itemsize: int) -> int:
    return max(1, BLOCK_BYTES // max(1, rows_per_image * k * itemsize))


def chain_bounds(n_images: int, per_block: int) -> np.ndarray:
    """Image index where each chain starts (and the end): whole blocks, at most CHAINS chains."""
    blocks = -(-n_images // per_block)
    chains = max(1, min(CHAINS, blocks))
    return np.array([min(n_images, (blocks * c // chains) * per_block) for c in range(chains + 1)], np.int64)


# -- im2col / col2im on a range of images -------------------------------------------------------------
@njit(cache=True, nogil=True)
def im2col_range(x, n0, n1, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols):
    """Rows for images n0..n1 of `x` into `cols` from row 0."""
    _, h_, w_, c_ = x.shape
    for n in range(n0, n1):
        for i in range(oh):
            for j in range(ow):
                row = ((n - n0) * oh + i) * ow + j
                for a in range(kh):
                    y = i * sh - pt + a * dh
                    for b in range(kw):
                        xx = j * sw - pl + b * dw
                        base = (a * kw + b) * c_
                        if 0 <= y < h_ and 0 <= xx < w_:
                            for c in range(c_):
                                cols[row, base + c] = x[n, y, xx, c]
                        else:
                            for c in range(c_):
                                cols[row, base + c] = 0


@njit(cache=True, nogil=True)
def col2im_range(cols, n0, n1, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, out):
    """Adds the rows of images n0..n1 (from row 0 of `cols`) onto `out[n0:n1]`."""
    _, h_, w_, c_ = out.shape
    for n in range(n0, n1):
        for i in range(oh):
            for j in range(ow):
                row = ((n - n0) * oh + i) * ow + j
                for a in range(kh):
                    y = i * sh - pt + a * dh
                    if y < 0 or y >= h_:
                        continue
                    for b in range(kw):
                        xx = j * sw - pl + b * dw
                        if xx < 0 or xx >= w_:
                            continue
                        base = (a * kw + b) * c_
                        for c in range(c_):
                            out[n, y, xx, c] += cols[row, base + c]


# -- blocked GEMM kernels (one call per chunk of images) ---------------------------------------------------
@njit(cache=True, nogil=True)
def forward_blocks(x, w2d, n0, n1, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols, out):
    """out[rows of n0..n1] = im2col(x) · w2d, `nb` images at a time through `cols`."""
    rows = oh * ow
    for b0 in range(n0, n1, nb):
        b1 = min(b0 + nb, n1)
        m = (b1 - b0) * rows
        im2col_range(x, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols)
        np.dot(cols[:m], w2d, out[b0 * rows:b1 * rows])


@njit(cache=True, nogil=True)
def input_grad_blocks(dy2d, w2d_t, n0, n1, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols, out):
    """out[n0:n1] = col2im(dy · Wᵀ), `nb` images at a time (out's images are zeroed here)."""
    rows = oh * ow
    for b0 in range(n0, n1, nb):
        b1 = min(b0 + nb, n1)
        m = (b1 - b0) * rows
        np.dot(dy2d[b0 * rows:b1 * rows], w2d_t, cols[:m])
        out[b0:b1] = 0
        col2im_range(cols, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, out)


@njit(cache=True, nogil=True)
def filter_grad_blocks(x, dy2d, n0, n1, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols, dyt, part, acc):
    """acc (O × K) = Σ over n0..n1 of dyᵀ · im2col(x), `nb` images at a time. The block of dy
    is transposed into `dyt` first: BLAS is ~10% faster on two row-major operands than on
    a transposed one here, and the copy is small (O × rows of the block)."""
    rows, o_ = oh * ow, dy2d.shape[1]
    acc[:] = 0
    for b0 in range(n0, n1, nb):
        b1 = min(b0 + nb, n1)
        m = (b1 - b0) * rows
        im2col_range(x, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols)
        d = dyt[:o_ * m].reshape((o_, m))
        src = dy2d[b0 * rows:b1 * rows]
        for r in range(m):
            sr = src[r]
            for o in range(o_):
                d[o, r] = sr[o]
        np.dot(d, cols[:m], part)
        acc += part


# -- small receptive fields: the transposed matrix ------------------------------------------------------
# With K = KH·KW·C of a few elements (a first layer on 1-3 channels) a row of `cols` is a
# handful of scattered elements and the copy costs several times the product. Transposed,
# (K, rows), one row of it for a filter tap and a channel is a run of output positions:
# for stride 1 and one channel, a contiguous copy of each input row. BLAS takes the
# transposed matrix as it is (a flag), in both directions.
@njit(cache=True, nogil=True)
def im2col_t_range(x, n0, n1, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols_t):
    """(K, rows) of images n0..n1: cols_t[(a·kw + b)·C + c, row] = x[n, y, x, c] (0 outside)."""
    _, h_, w_, c_ = x.shape
    for a in range(kh):
        for b in range(kw):
            for c in range(c_):
                dst = cols_t[(a * kw + b) * c_ + c]
                for n in range(n0, n1):
                    for i in range(oh):
                        y = i * sh - pt + a * dh
                        base = ((n - n0) * oh + i) * ow
                        if y < 0 or y >= h_:
                            for j in range(ow):
                                dst[base + j] = 0
                            continue
                        src = x[n, y]
                        for j in range(ow):
                            xx = j * sw - pl + b * dw
                            dst[base + j] = src[xx, c] if 0 <= xx < w_ else 0


@njit(cache=True, nogil=True)
def forward_t_blocks(x, w2d, n0, n1, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, buf, out):
    """out[rows of n0..n1] = im2col(x) · w2d through the transposed matrix, `nb` images at a time."""
    rows, k = oh * ow, w2d.shape[0]
    for b0 in range(n0, n1, nb):
        b1 = min(b0 + nb, n1)
        m = (b1 - b0) * rows
        cols_t = buf[:k * m].reshape((k, m))
        im2col_t_range(x, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols_t)
        np.dot(cols_t.T, w2d, out[b0 * rows:b1 * rows])


@njit(cache=True, nogil=True)
def filter_grad_t_blocks(x, dy2d, n0, n1, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, buf, part, acc):
    """acc (K × O) = Σ over n0..n1 of im2col(x)ᵀ · dy, `nb` images at a time."""
    rows, k = oh * ow, acc.shape[0]
    acc[:] = 0
    for b0 in range(n0, n1, nb):
        b1 = min(b0 + nb, n1)
        m = (b1 - b0) * rows
        cols_t = buf[:k * m].reshape((k, m))
        im2col_t_range(x, b0, b1, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols_t)
        np.dot(cols_t, dy2d[b0 * rows:b1 * rows], part)
        acc += part


# -- drivers ---------------------------------------------------------------------------------------------
def forward(x: np.ndarray, w2d: np.ndarray, g: Geometry) -> np.ndarray:
    """The convolution of C-contiguous NHWC `x` with `w2d` (K × O), as (N, OH, OW, O)."""
    kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = g
    n, k, o = x.shape[0], w2d.shape[0], w2d.shape[1]
    out2d = np.empty((n * oh * ow, o), x.dtype)
    nb = images_per_block(oh * ow, k, x.dtype.itemsize)

    def chunk(n0: int, n1: int) -> None:
        buf = scratch(nb * oh * ow * k, x.dtype)
        if k <= SMALL_K:
            forward_t_blocks(x, w2d, n0, n1, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, buf, out2d)
        else:
            cols = buf[:nb * oh * ow * k].reshape(nb * oh * ow, k)
            forward_blocks(x, w2d, n0, n1, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols, out2d)
    _run_blocks(chunk, n, nb)
    return out2d.reshape(n, oh, ow, o)


def input_grad(dy: np.ndarray, w2d: np.ndarray, in_hwc: Tuple[int, int, int], g: Geometry) -> np.ndarray:
    """The gradient with respect to the input of the convolution with `w2d` (K × O)."""
    kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = g
    n, k, o = dy.shape[0], w2d.shape[0], w2d.shape[1]
    out = np.empty((n,) + tuple(in_hwc), dy.dtype)
    dy2d = dy.reshape(n * oh * ow, o)
    w2d_t = np.ascontiguousarray(w2d.T)
    nb = images_per_block(oh * ow, k, dy.dtype.itemsize)

    def chunk(n0: int, n1: int) -> None:
        cols = scratch(nb * oh * ow * k, dy.dtype)[:nb * oh * ow * k].reshape(nb * oh * ow, k)
        input_grad_blocks(dy2d, w2d_t, n0, n1, nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow, cols, out)
    _run_blocks(chunk, n, nb)
    return out


def filter_grad(x: np.ndarray, dy: np.ndarray, k: int, g: Geometry) -> np.ndarray:
    """The gradient with respect to the filter, as a K × O matrix."""
    kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = g
    n, o = x.shape[0], dy.shape[3]
    small = k <= SMALL_K
    nb = images_per_block(oh * ow, k, x.dtype.itemsize)
    bounds = chain_bounds(n, nb)
    dy2d = dy.reshape(n * oh * ow, o)
    parts = np.empty((len(bounds) - 1,) + ((k, o) if small else (o, k)), x.dtype)

    def chunk(c0: int, c1: int) -> None:
        buf = scratch(nb * oh * ow * k, x.dtype)
        part = scratch(o * k, x.dtype, slot=1)[:o * k].reshape(parts.shape[1:])
        for c in range(c0, c1):
            if small:
                filter_grad_t_blocks(x, dy2d, bounds[c], bounds[c + 1], nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow,
                                     buf, part, parts[c])
            else:
                cols = buf[:nb * oh * ow * k].reshape(nb * oh * ow, k)
                dyt = scratch(nb * oh * ow * o, x.dtype, slot=2)
                filter_grad_blocks(x, dy2d, bounds[c], bounds[c + 1], nb, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow,
                                   cols, dyt, part, parts[c])
    cpu_parallel.run(chunk, len(parts))
    total = sum_in_order(parts)
    return total if small else np.ascontiguousarray(total.T)


def _run_blocks(chunk, n: int, nb: int) -> None:
    """Runs `chunk(n0, n1)` over the batch in whole blocks of `nb` images, one range per thread."""
    blocks = -(-n // nb)
    cpu_parallel.run(lambda b0, b1: chunk(b0 * nb, min(n, b1 * nb)), blocks)


def sum_in_order(parts: np.ndarray) -> np.ndarray:
    total = parts[0].copy()
    for p in parts[1:]:
        total += p
    return total
