"""CPU (numba) and numpy reference kernels of the depthwise convolution and its gradients.

`DepthwiseConv2dNative` convolves each input channel c with its own filters
`filter[:, :, c, :]` (a channel multiplier m), giving output channel c·m + j. The
reduction per output is only kh·kw, so there is no matrix product to hand to BLAS: the
kernels loop directly, channels and multipliers innermost (contiguous). Geometry and
padding are `nn_conv_kernels.geometry`'s; the references sum strided slices of the padded
input, as the convolution references do.
"""
from __future__ import annotations

import numpy as np
from jitflow.runtime.core.lazyjit import njit

from jitflow.runtime.ops.nn_conv_kernels import _padded, _tap, _wide, geometry


@njit(cache=True)
def _depthwise(x, w, sh, sw, dh, dw, pt, pl, oh, ow, out):
    n_, h_, w_, c_ = x.shape
    kh, kw, _, m_ = w.shape
    for n in range(n_):
        for i in range(oh):
            for j in range(ow):
                for a in range(kh):
                    y = i * sh - pt + a * dh
                    if y < 0 or y >= h_:
                        continue
                    for b in range(kw):
                        xx = j * sw - pl + b * dw
                        if xx < 0 or xx >= w_:
                            continue
                        for c in range(c_):
                            v = x[n, y, xx, c]
                            for m in range(m_):
                                out[n, i, j, c * m_ + m] += v * w[a, b, c, m]


@njit(cache=True)
def _depthwise_input(w, g, sh, sw, dh, dw, pt, pl, out):
    n_, h_, w_, c_ = out.shape
    _, oh, ow, _ = g.shape
    kh, kw, _, m_ = w.shape
    for n in range(n_):
        for i in range(oh):
            for j in range(ow):
                for a in range(kh):
                    y = i * sh - pt + a * dh
                    if y < 0 or y >= h_:
                        continue
                    for b in range(kw):
                        xx = j * sw - pl + b * dw
                        if xx < 0 or xx >= w_:
                            continue
                        for c in range(c_):
                            acc = 0.0
                            for m in range(m_):
                                acc += g[n, i, j, c * m_ + m] * w[a, b, c, m]
                            out[n, y, xx, c] += acc


@njit(cache=True)
def _depthwise_filter(x, g, sh, sw, dh, dw, pt, pl, out):
    n_, h_, w_, c_ = x.shape
    _, oh, ow, _ = g.shape
    kh, kw, _, m_ = out.shape
    for n in range(n_):
        for i in range(oh):
            for j in range(ow):
                for a in range(kh):
                    y = i * sh - pt + a * dh
                    if y < 0 or y >= h_:
                        continue
                    for b in range(kw):
                        xx = j * sw - pl + b * dw
                        if xx < 0 or xx >= w_:
                            continue
                        for c in range(c_):
                            v = x[n, y, xx, c]
                            for m in range(m_):
                                out[a, b, c, m] += v * g[n, i, j, c * m_ + m]


def depthwise_conv2d(x, filter, strides, padding, dilations, data_format="NHWC"):  # noqa: A002
    dtype = x.dtype
    x, w = np.ascontiguousarray(_wide(x)), np.ascontiguousarray(_wide(filter))
    kh, kw, c, m = w.shape
    oh, ow, pt, pl = geometry(x.shape[1:3], (kh, kw), strides, dilations, padding)
    out = np.zeros((x.shape[0], oh, ow, c * m), x.dtype)
    if out.size:
        _depthwise(x, w, strides[1], strides[2], dilations[1], dilations[2], pt, pl, oh, ow, out)
    return out.astype(dtype, copy=False)


def depthwise_conv2d_backprop_input(filter, out_backprop, input_sizes, strides, padding, dilations,  # noqa: A002
                                    data_format="NHWC"):
    dtype = out_backprop.dtype
    w, g = np.ascontiguousarray(_wide(filter)), np.ascontiguousarray(_wide(out_backprop))
    h, wd, c = (int(d) for d in input_sizes[1:])
    _, _, pt, pl = geometry((h, wd), w.shape[:2], strides, dilations, padding)
    out = np.zeros((g.shape[0], h, wd, c), g.dtype)
    if g.size:
        _depthwise_input(w, g, strides[1], strides[2], dilations[1], dilations[2], pt, pl, out)
    return out.astype(dtype, copy=False)


def depthwise_conv2d_backprop_filter(x, out_backprop, filter_sizes, strides, padding, dilations,
                                     data_format="NHWC"):
    dtype = x.dtype
    x, g = np.ascontiguousarray(_wide(x)), np.ascontiguousarray(_wide(out_backprop))
    kh, kw, c, m = (int(d) for d in filter_sizes)
    _, _, pt, pl = geometry(x.shape[1:3], (kh, kw), strides, dilations, padding)
    out = np.zeros((kh, kw, c, m), x.dtype)
    if g.size:
        _depthwise_filter(x, g, strides[1], strides[2], dilations[1], dilations[2], pt, pl, out)
    return out.astype(dtype, copy=False)


def depthwise_conv2d_ref(x, filter, strides, padding, dilations, data_format="NHWC"):  # noqa: A002
    kh, kw, c, m = filter.shape
    xp, oh, ow, _, _ = _padded(x.astype(np.float64), kh, kw, strides, dilations, padding)
    out = np.zeros((x.shape[0], oh, ow, c, m))
    if oh and ow:
        for a in range(kh):
            for b in range(kw):
                out += _tap(xp, a, b, oh, ow, strides, dilations)[..., None] * filter[a, b].astype(np.float64)
    return out.reshape(x.shape[0], oh, ow, c * m).astype(x.dtype)


def depthwise_conv2d_backprop_input_ref(filter, out_backprop, input_sizes, strides, padding, dilations,  # noqa: A002
                                        data_format="NHWC"):
    n = out_backprop.shape[0]
    h, w, c = (int(d) for d in input_sizes[1:])
    kh, kw, _, m = filter.shape
    xp, oh, ow, pt, pl = _padded(np.zeros((n, h, w, c)), kh, kw, strides, dilations, padding)
    g = out_backprop.astype(np.float64).reshape(n, oh, ow, c, m)
    if oh and ow:
        for a in range(kh):
            for b in range(kw):
                _tap(xp, a, b, oh, ow, strides, dilations)[...] += (g * filter[a, b].astype(np.float64)).sum(-1)
    return xp[:, pt:pt + h, pl:pl + w, :].astype(out_backprop.dtype)


def depthwise_conv2d_backprop_filter_ref(x, out_backprop, filter_sizes, strides, padding, dilations,
                                         data_format="NHWC"):
    kh, kw, c, m = (int(d) for d in filter_sizes)
    xp, oh, ow, _, _ = _padded(x.astype(np.float64), kh, kw, strides, dilations, padding)
    g = out_backprop.astype(np.float64).reshape(x.shape[0], oh, ow, c, m)
    out = np.zeros((kh, kw, c, m))
    if oh and ow:
        for a in range(kh):
            for b in range(kw):
                out[a, b] = np.einsum("nhwc,nhwcm->cm", _tap(xp, a, b, oh, ow, strides, dilations), g)
    return out.astype(x.dtype)
