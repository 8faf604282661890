"""CPU kernels (numba) and numpy reference kernels of the convolution and pooling ops.

Convolution is im2col + BLAS (`conv_cpu`): a compiled loop copies every receptive field
into one row of a (rows, KH·KW·C) matrix, a cache-sized block of images at a time, and
`np.dot` with the (KH·KW·C, O) filter does the arithmetic at BLAS speed, the blocks
spread over the CPU's cores. Its gradients reuse the same matrix: the filter gradient is
`dyᵀ · cols`, the input gradient is `dy · Wᵀ` scattered back by col2im. A 1×1 stride-1
convolution skips im2col (the input already is the matrix); a receptive field of a few
elements (a first layer) builds the matrix transposed. Pooling and the bias gradient also
split the batch over the cores (`cpu_parallel`).

The reference kernels are written differently on purpose (a sum over filter taps of
strided slices of the padded input, in plain numpy), so the fast kernels are checked
against an independent definition rather than against themselves.

Geometry follows TensorFlow (NHWC input, HWIO filter): `VALID` keeps whole windows,
`SAME` gives ceil(in / stride) outputs with the padding split low-first (the extra one,
if odd, at the end). Pooling counts only real elements: an average near a `SAME` border
divides by the number of in-bounds elements, and a max ignores the padding.
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np
from jitflow.runtime.core.lazyjit import njit

from jitflow.runtime.ops import conv_cpu as C
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops import cpu_parallel

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


# -- geometry --------------------------------------------------------------------------------------
def out_size(size: int, k: int, stride: int, dilation: int, padding: str) -> Tuple[int, int]:
    """(output size, padding before) of one spatial dimension, as TensorFlow computes them."""
    eff = (k - 1) * dilation + 1
    if padding == "VALID":
        return max((size - eff) // stride + 1, 0), 0
    out = -(-size // stride)
    total = max((out - 1) * stride + eff - size, 0)
    return out, total // 2


def geometry(in_hw: Sequence[int], k_hw: Sequence[int], strides: Sequence[int], dilations: Sequence[int],
             padding: str) -> Tuple[int, int, int, int]:
    """(oh, ow, pad_top, pad_left) for NHWC `strides`/`dilations` given as 4-tuples."""
    oh, pt = out_size(in_hw[0], k_hw[0], strides[1], dilations[1], padding)
    ow, pl = out_size(in_hw[1], k_hw[1], strides[2], dilations[2], padding)
    return oh, ow, pt, pl


def _wide(x: np.ndarray) -> np.ndarray:
    """float16 is computed in float32 (numba has no half arithmetic on the CPU)."""
    return x.astype(F32) if x.dtype == F16 else x


# -- Conv2D (im2col + BLAS in blocks, threaded: `conv_cpu`) -----------------------------------------------
def _geometry(in_hw, kh: int, kw: int, strides, dilations, padding) -> C.Geometry:
    oh, ow, pt, pl = geometry(in_hw, (kh, kw), strides, dilations, padding)
    return (kh, kw, strides[1], strides[2], dilations[1], dilations[2], pt, pl, oh, ow)


def _is_pointwise(kh, kw, strides) -> bool:
    """A 1×1 stride-1 convolution: the input already is the `cols` matrix."""
    return kh == 1 and kw == 1 and strides[1] == strides[2] == 1


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b through numba's BLAS binding (scipy's BLAS), as the MatMul kernel does."""
    if a.shape[0] == 0 or b.shape[1] == 0 or a.shape[1] == 0:
        return np.zeros((a.shape[0], b.shape[1]), np.result_type(a, b))
    return K.matmul_float_2d(a, b)


def conv2d(x, filter, strides, padding, dilations, data_format="NHWC"):  # noqa: A002 - TF's argument name
    dtype = x.dtype
    x, w = np.ascontiguousarray(_wide(x)), _wide(filter)
    kh, kw, c, o = w.shape
    w2d = np.ascontiguousarray(w).reshape(kh * kw * c, o)
    n, h, wd, _ = x.shape
    if _is_pointwise(kh, kw, strides):
        return _dot(x.reshape(n * h * wd, c), w2d).reshape(n, h, wd, o).astype(dtype, copy=False)
    g = _geometry((h, wd), kh, kw, strides, dilations, padding)
    if n * g[8] * g[9] * o == 0 or c == 0:
        return np.zeros((n, g[8], g[9], o), dtype)
    return C.forward(x, w2d, g).astype(dtype, copy=False)


def conv2d_backprop_input(filter, out_backprop, input_sizes, strides, padding, dilations, data_format="NHWC"):  # noqa: A002
    dtype = out_backprop.dtype
    w, dy = _wide(filter), np.ascontiguousarray(_wide(out_backprop))
    n = dy.shape[0]
    h, wd, c = (int(d) for d in input_sizes[1:])
    kh, kw, _, o = w.shape
    w2d = np.ascontiguousarray(w).reshape(kh * kw * c, o)
    if _is_pointwise(kh, kw, strides):
        return _dot(dy.reshape(n * h * wd, o), w2d.T).reshape(n, h, wd, c).astype(dtype, copy=False)
    g = _geometry((h, wd), kh, kw, strides, dilations, padding)
    if dy.size == 0 or c == 0:
        return np.zeros((n, h, wd, c), dtype)
    return C.input_grad(dy, w2d, (h, wd, c), g).astype(dtype, copy=False)


def conv2d_backprop_filter(x, out_backprop, filter_sizes, strides, padding, dilations, data_format="NHWC"):
    dtype = x.dtype
    x, dy = np.ascontiguousarray(_wide(x)), np.ascontiguousarray(_wide(out_backprop))
    kh, kw, c, o = (int(d) for d in filter_sizes)
    n, h, wd, _ = x.shape
    if _is_pointwise(kh, kw, strides):
        # (dyᵀ · x)ᵀ: BLAS's fast shape (a short, wide left operand) for a tall x.
        dw = _dot(dy.reshape(-1, o).T, x.reshape(n * h * wd, c)).T
        return np.ascontiguousarray(dw).reshape(kh, kw, c, o).astype(dtype, copy=False)
    g = _geometry((h, wd), kh, kw, strides, dilations, padding)
    if dy.size == 0 or kh * kw * c * o == 0:
        return np.zeros((kh, kw, c, o), dtype)
    return C.filter_grad(x, dy, kh * kw * c, g).reshape(kh, kw, c, o).astype(dtype, copy=False)


# -- reference convolution: a sum over taps of strided slices of the padded input -------------------
def _padded(x, kh, kw, strides, dilations, padding, fill=0.0):
    n, h, w, c = x.shape
    oh, ow, pt, pl = geometry((h, w), (kh, kw), strides, dilations, padding)
    need_h = (oh - 1) * strides[1] + (kh - 1) * dilations[1] + 1 if oh else 0
    need_w = (ow - 1) * strides[2] + (kw - 1) * dilations[2] + 1 if ow else 0
    ph, pw = max(need_h - h - pt, 0), max(need_w - w - pl, 0)
    xp = np.full((n, h + pt + ph, w + pl + pw, c), fill, x.dtype)
    xp[:, pt:pt + h, pl:pl + w, :] = x
    return xp, oh, ow, pt, pl


def _tap(xp, a, b, oh, ow, strides, dilations):
    y0, x0 = a * dilations[1], b * dilations[2]
    return xp[:, y0:y0 + (oh - 1) * strides[1] + 1:strides[1], x0:x0 + (ow - 1) * strides[2] + 1:strides[2], :]


def conv2d_ref(x, filter, strides, padding, dilations, data_format="NHWC"):  # noqa: A002
    kh, kw, c, o = filter.shape
    xp, oh, ow, _, _ = _padded(x.astype(np.float64), kh, kw, strides, dilations, padding)
    out = np.zeros((x.shape[0], oh, ow, o))
    if oh and ow:
        for a in range(kh):
            for b in range(kw):
                out += _tap(xp, a, b, oh, ow, strides, dilations) @ filter[a, b].astype(np.float64)
    return out.astype(x.dtype)


def conv2d_backprop_input_ref(filter, out_backprop, input_sizes, strides, padding, dilations, data_format="NHWC"):  # noqa: A002
    n = out_backprop.shape[0]
    h, w, c = (int(d) for d in input_sizes[1:])
    kh, kw, _, o = filter.shape
    xp, oh, ow, pt, pl = _padded(np.zeros((n, h, w, c)), kh, kw, strides, dilations, padding)
    dy = out_backprop.astype(np.float64)
    if oh and ow:
        for a in range(kh):
            for b in range(kw):
                _tap(xp, a, b, oh, ow, strides, dilations)[...] += dy @ filter[a, b].astype(np.float64).T
    return xp[:, pt:pt + h, pl:pl + w, :].astype(out_backprop.dtype)


def conv2d_backprop_filter_ref(x, out_backprop, filter_sizes, strides, padding, dilations, data_format="NHWC"):
    kh, kw, c, o = (int(d) for d in filter_sizes)
    xp, oh, ow, _, _ = _padded(x.astype(np.float64), kh, kw, strides, dilations, padding)
    out = np.zeros((kh, kw, c, o))
    if oh and ow:
        for a in range(kh):
            for b in range(kw):
                out[a, b] = np.einsum("nhwc,nhwo->co", _tap(xp, a, b, oh, ow, strides, dilations),
                                      out_backprop.astype(np.float64))
    return out.astype(x.dtype)


# -- pooling (ksize/strides are NHWC 4-tuples); images n0..n1 per call, a range per thread --------------
@njit(cache=True, nogil=True)
def _max_pool(x, n0, n1, kh, kw, sh, sw, pt, pl, oh, ow, out):
    _, h_, w_, c_ = x.shape
    for n in range(n0, n1):
        for i in range(oh):
            for j in range(ow):
                for c in range(c_):
                    out[n, i, j, c] = -np.inf
                for a in range(kh):
                    y = i * sh - pt + a
                    if y < 0 or y >= h_:
                        continue
                    for b in range(kw):
                        xx = j * sw - pl + b
                        if xx < 0 or xx >= w_:
                            continue
                        for c in range(c_):
                            v = x[n, y, xx, c]
                            if v > out[n, i, j, c] or v != v:
                                out[n, i, j, c] = v


@njit(cache=True, nogil=True)
def _max_pool_tiled(x, n0, n1, kh, kw, oh, ow, out):
    # Windows that tile the image (stride = window, VALID): rows of channels, the first
    # element of a window starting the maximum (what -inf and the rule below give it).
    _, h_, w_, c_ = x.shape
    for n in range(n0, n1):
        xn = x[n].reshape((h_ * w_, c_))
        on = out[n].reshape((oh * ow, c_))
        for i in range(oh):
            for j in range(ow):
                p0 = i * kh * w_ + j * kw
                r = on[i * ow + j]
                first = xn[p0]
                for c in range(c_):
                    r[c] = first[c]
                for a in range(kh):
                    for b in range(kw):
                        if a or b:
                            row = xn[p0 + a * w_ + b]
                            for c in range(c_):
                                v = row[c]
                                cur = r[c]
                                r[c] = v if (v > cur or v != v) else cur


@njit(cache=True, nogil=True)
def _max_pool_grad(x, g, n0, n1, kh, kw, sh, sw, pt, pl, oh, ow, out):
    # The gradient goes to the first maximum of each window in row-major order (as TF): the
    # window's first in-bounds element starts the running maximum of every channel, a later
    # one replaces it only when strictly greater (selects, no branches: vectorised over the
    # channels), and `at` keeps its flat position so the scatter needs no division.
    _, h_, w_, c_ = x.shape
    best = np.empty(c_, x.dtype)
    at = np.empty(c_, np.int64)
    for n in range(n0, n1):
        xn = x[n].reshape((h_ * w_, c_))
        on = out[n].reshape((h_ * w_, c_))
        on[:] = 0
        for i in range(oh):
            for j in range(ow):
                first = True
                for a in range(kh):
                    y = i * sh - pt + a
                    if y < 0 or y >= h_:
                        continue
                    for b in range(kw):
                        xx = j * sw - pl + b
                        if xx < 0 or xx >= w_:
                            continue
                        p = y * w_ + xx
                        row = xn[p]
                        if first:
                            for c in range(c_):
                                best[c] = row[c]
                                at[c] = p
                            first = False
                        else:
                            for c in range(c_):
                                v = row[c]
                                take = v > best[c]
                                best[c] = v if take else best[c]
                                at[c] = p if take else at[c]
                if not first:
                    gr = g[n, i, j]
                    for c in range(c_):
                        on[at[c], c] += gr[c]


@njit(cache=True, nogil=True)
def _max_pool_grad_tiled(x, g, n0, n1, kh, kw, oh, ow, out):
    # Windows that tile the image (stride = window, VALID: the usual 2×2 pooling): every
    # element lies in at most one window, so each is written once (its window's gradient
    # or 0) instead of zeroing the image and adding into it. Same first-maximum rule.
    _, h_, w_, c_ = x.shape
    best = np.empty(c_, x.dtype)
    at = np.empty(c_, np.int64)
    for n in range(n0, n1):
        xn = x[n].reshape((h_ * w_, c_))
        on = out[n].reshape((h_ * w_, c_))
        for y in range(h_):   # the rows and columns no window covers
            for xx in range(ow * kw if y < oh * kh else 0, w_):
                on[y * w_ + xx] = 0
        for i in range(oh):
            for j in range(ow):
                p0 = i * kh * w_ + j * kw
                for c in range(c_):
                    best[c] = xn[p0, c]
                    at[c] = p0
                for a in range(kh):
                    for b in range(kw):
                        if a or b:
                            p = p0 + a * w_ + b
                            row = xn[p]
                            for c in range(c_):
                                v = row[c]
                                take = v > best[c]
                                best[c] = v if take else best[c]
                                at[c] = p if take else at[c]
                gr = g[n, i, j]
                for a in range(kh):
                    for b in range(kw):
                        p = p0 + a * w_ + b
                        row = on[p]
                        for c in range(c_):
                            row[c] = gr[c] if at[c] == p else 0


@njit(cache=True, nogil=True)
def _avg_pool(x, n0, n1, kh, kw, sh, sw, pt, pl, oh, ow, out):
    _, h_, w_, c_ = x.shape
    for n in range(n0, n1):
        for i in range(oh):
            y0, y1 = max(i * sh - pt, 0), min(i * sh - pt + kh, h_)
            for j in range(ow):
                x0, x1 = max(j * sw - pl, 0), min(j * sw - pl + kw, w_)
                count = (y1 - y0) * (x1 - x0)
                for c in range(c_):
                    out[n, i, j, c] = 0
                for y in range(y0, y1):
                    for xx in range(x0, x1):
                        for c in range(c_):
                            out[n, i, j, c] += x[n, y, xx, c]
                for c in range(c_):
                    out[n, i, j, c] /= count


@njit(cache=True, nogil=True)
def _avg_pool_grad(g, n0, n1, kh, kw, sh, sw, pt, pl, oh, ow, out):
    _, h_, w_, c_ = out.shape
    for n in range(n0, n1):
        out[n] = 0
        for i in range(oh):
            y0, y1 = max(i * sh - pt, 0), min(i * sh - pt + kh, h_)
            for j in range(ow):
                x0, x1 = max(j * sw - pl, 0), min(j * sw - pl + kw, w_)
                count = (y1 - y0) * (x1 - x0)
                for y in range(y0, y1):
                    for xx in range(x0, x1):
                        for c in range(c_):
                            out[n, y, xx, c] += g[n, i, j, c] / count


def _pool_geometry(shape, ksize, strides, padding):
    return geometry(shape[1:3], ksize[1:3], strides, (1, 1, 1, 1), padding)


def _per_image(kernel, first, n, *args) -> None:
    """`kernel(first, n0, n1, *args)` over the batch, a range of images per thread."""
    if n:
        cpu_parallel.run(lambda n0, n1: kernel(first, n0, n1, *args), n)


def max_pool(x, ksize, strides, padding, data_format="NHWC"):
    dtype = x.dtype
    x = np.ascontiguousarray(_wide(x))
    oh, ow, pt, pl = _pool_geometry(x.shape, ksize, strides, padding)
    out = np.empty((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    if out.size and padding == "VALID" and tuple(ksize[1:3]) == tuple(strides[1:3]):
        _per_image(_max_pool_tiled, x, x.shape[0], ksize[1], ksize[2], oh, ow, out)
    elif out.size:
        _per_image(_max_pool, x, x.shape[0], ksize[1], ksize[2], strides[1], strides[2], pt, pl, oh, ow, out)
    return out.astype(dtype, copy=False)


def max_pool_grad(orig_input, orig_output, grad, ksize, strides, padding, data_format="NHWC"):
    dtype = orig_input.dtype
    x, g = np.ascontiguousarray(_wide(orig_input)), np.ascontiguousarray(_wide(grad))
    oh, ow, pt, pl = _pool_geometry(x.shape, ksize, strides, padding)
    if not g.size:
        return np.zeros(orig_input.shape, dtype)
    out = np.empty(x.shape, x.dtype)

    tiled = padding == "VALID" and tuple(ksize[1:3]) == tuple(strides[1:3])

    def chunk(n0: int, n1: int) -> None:
        if tiled:
            _max_pool_grad_tiled(x, g, n0, n1, ksize[1], ksize[2], oh, ow, out)
        else:
            _max_pool_grad(x, g, n0, n1, ksize[1], ksize[2], strides[1], strides[2], pt, pl, oh, ow, out)
    cpu_parallel.run(chunk, x.shape[0])
    return out.astype(dtype, copy=False)


def avg_pool(value, ksize, strides, padding, data_format="NHWC"):
    dtype = value.dtype
    x = np.ascontiguousarray(_wide(value))
    oh, ow, pt, pl = _pool_geometry(x.shape, ksize, strides, padding)
    out = np.empty((x.shape[0], oh, ow, x.shape[3]), x.dtype)
    if out.size:
        _per_image(_avg_pool, x, x.shape[0], ksize[1], ksize[2], strides[1], strides[2], pt, pl, oh, ow, out)
    return out.astype(dtype, copy=False)


def avg_pool_grad(grad, orig_input_shape, ksize, strides, padding, data_format="NHWC"):
    dtype = grad.dtype
    g = np.ascontiguousarray(_wide(grad))
    shape = (g.shape[0],) + tuple(int(d) for d in orig_input_shape[1:])
    oh, ow, pt, pl = _pool_geometry(shape, ksize, strides, padding)
    if not g.size:
        return np.zeros(shape, dtype)
    out = np.empty(shape, g.dtype)
    _per_image(_avg_pool_grad, g, g.shape[0], ksize[1], ksize[2], strides[1], strides[2], pt, pl, oh, ow, out)
    return out.astype(dtype, copy=False)


def _pool_taps(x, ksize, strides, padding, fill):
    kh, kw = ksize[1], ksize[2]
    xp, oh, ow, pt, pl = _padded(x, kh, kw, strides, (1, 1, 1, 1), padding, fill)
    return [_tap(xp, a, b, oh, ow, strides, (1, 1, 1, 1)) for a in range(kh) for b in range(kw)], xp, pt, pl


def max_pool_ref(x, ksize, strides, padding, data_format="NHWC"):
    taps, _, _, _ = _pool_taps(x.astype(np.float64), ksize, strides, padding, -np.inf)
    return np.max(np.stack(taps), axis=0).astype(x.dtype)


def max_pool_grad_ref(orig_input, orig_output, grad, ksize, strides, padding, data_format="NHWC"):
    x = orig_input.astype(np.float64)
    taps, xp, pt, pl = _pool_taps(x, ksize, strides, padding, -np.inf)
    best = np.max(np.stack(taps), axis=0)
    dxp = np.zeros(xp.shape)
    taken = np.zeros(best.shape, bool)
    kw = ksize[2]
    oh, ow = best.shape[1:3]
    for t, tap in enumerate(taps):
        hit = (tap == best) & ~taken
        taken |= hit
        _tap(dxp, t // kw, t % kw, oh, ow, strides, (1, 1, 1, 1))[...] += np.where(hit, grad, 0.0)
    h, w = x.shape[1:3]
    return dxp[:, pt:pt + h, pl:pl + w, :].astype(orig_input.dtype)


def avg_pool_ref(value, ksize, strides, padding, data_format="NHWC"):
    x = value.astype(np.float64)
    taps, _, _, _ = _pool_taps(x, ksize, strides, padding, 0.0)
    counts, _, _, _ = _pool_taps(np.ones(x.shape[:3] + (1,)), ksize, strides, padding, 0.0)
    return (np.sum(np.stack(taps), axis=0) / np.sum(np.stack(counts), axis=0)).astype(value.dtype)


def avg_pool_grad_ref(grad, orig_input_shape, ksize, strides, padding, data_format="NHWC"):
    shape = (grad.shape[0],) + tuple(int(d) for d in orig_input_shape[1:])
    kh, kw = ksize[1], ksize[2]
    ones_p, oh, ow, pt, pl = _padded(np.ones(shape[:3] + (1,)), kh, kw, strides, (1, 1, 1, 1), padding)
    counts = sum(_tap(ones_p, a, b, oh, ow, strides, (1, 1, 1, 1)) for a in range(kh) for b in range(kw))
    dxp, _, _, _, _ = _padded(np.zeros(shape), kh, kw, strides, (1, 1, 1, 1), padding)
    share = grad.astype(np.float64) / counts
    for a in range(kh):
        for b in range(kw):
            _tap(dxp, a, b, oh, ow, strides, (1, 1, 1, 1))[...] += share
    return dxp[:, pt:pt + shape[1], pl:pl + shape[2], :].astype(grad.dtype)


# -- bias and activations ------------------------------------------------------------------------------
def bias_add(value, bias, data_format="NHWC"):
    return value + bias


def bias_add_ref(value, bias, data_format="NHWC"):
    return (value.astype(np.float64) + bias.astype(np.float64).reshape((1,) * (value.ndim - 1) + (-1,))
            ).astype(value.dtype)


@njit(cache=True, nogil=True)
def _column_sums(g2d):
    # A matrix-vector product with ones: BLAS streams the rows at memory speed, where
    # numpy's sum over axis 0 adds one short row at a time (10x slower for 32 channels).
    return np.dot(np.ones(g2d.shape[0], g2d.dtype), g2d)


def bias_add_grad(out_backprop, data_format="NHWC"):
    g = np.ascontiguousarray(_wide(out_backprop))
    g2 = g.reshape(-1, g.shape[-1])
    if g2.shape[0] == 0 or g2.shape[1] == 0:
        return np.zeros(g2.shape[1], out_backprop.dtype)
    return _column_sums(g2).astype(out_backprop.dtype)


def bias_add_grad_ref(out_backprop, data_format="NHWC"):
    return out_backprop.astype(np.float64).sum(axis=tuple(range(out_backprop.ndim - 1))).astype(out_backprop.dtype)


def softplus_(a):
    # log(1 + e^a) without overflow: a + log1p(e^-a) for a > 0.
    return a + math.log1p(math.exp(-a)) if a > 0 else math.log1p(math.exp(a))


def elu_(a):
    return a if a > 0 else math.expm1(a)


def softplus_ref(x):
    return np.logaddexp(0.0, x.astype(np.float64)).astype(x.dtype)


def elu_ref(x):
    x64 = x.astype(np.float64)
    return np.where(x64 > 0, x64, np.expm1(np.minimum(x64, 0))).astype(x.dtype)


def leaky_relu(features, alpha):
    x = _wide(features)
    return np.where(x > 0, x, x * x.dtype.type(alpha)).astype(features.dtype, copy=False)


def leaky_relu_ref(features, alpha):
    x = features.astype(np.float64)
    return np.where(x > 0, x, alpha * x).astype(features.dtype)

