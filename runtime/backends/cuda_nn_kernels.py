"""CUDA kernels of the convolution, pooling, bias and activation ops (`nn_conv_ops`).

Imported by `cuda_kernels` once the CUDA table exists; adds its entries to
`KERNELS["cuda"]`. Direct kernels, one GPU thread per output element (grid-stride):

- `Conv2D`: a thread per output (n, i, j, o) sums its receptive field;
- `Conv2DBackpropInput`: a thread per input element gathers the outputs it fed (no atomics);
- `Conv2DBackpropFilter`: a thread per filter tap sums over the batch and positions;
- `DepthwiseConv2dNative` and its two gradients: the same three shapes of kernel, per channel;
- pooling: a thread per output window; the gradients scatter with atomic adds (the
  windows overlap when strides are smaller than the window).

Geometry and tie rules are the CPU kernels' (`nn_conv_kernels.geometry`, first maximum
wins), so results agree with the CPU within float rounding. float16 is computed in
float32. Bias and the smooth activations reuse the elementwise and reduction kernels.
"""
from __future__ import annotations

import math
from typing import Any

from numba import cuda

from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.backends import cuda_kernels as CK
from jitflow.runtime.ops import nn_conv_kernels as NK



# -- device code -------------------------------------------------------------------------------------------
@cuda.jit
def _conv_fwd(x, w, out, n_h, n_w, n_c, kh, kw, n_o, oh, ow, sh, sw, dh, dw, pt, pl):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        o = t % n_o
        r = t // n_o
        j = r % ow
        r //= ow
        i = r % oh
        n = r // oh
        acc = 0.0
        for a in range(kh):
            y = i * sh - pt + a * dh
            if y < 0 or y >= n_h:
                continue
            for b in range(kw):
                xx = j * sw - pl + b * dw
                if xx < 0 or xx >= n_w:
                    continue
                xb = ((n * n_h + y) * n_w + xx) * n_c
                wb = (a * kw + b) * n_c * n_o + o
                for c in range(n_c):
                    acc += x[xb + c] * w[wb + c * n_o]
        out[t] = acc


@cuda.jit
def _conv_bwd_input(w, g, out, n_h, n_w, n_c, kh, kw, n_o, oh, ow, sh, sw, dh, dw, pt, pl):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        c = t % n_c
        r = t // n_c
        x_ = r % n_w
        r //= n_w
        y = r % n_h
        n = r // n_h
        acc = 0.0
        for a in range(kh):
            iy = y + pt - a * dh
            if iy < 0 or iy % sh != 0 or iy // sh >= oh:
                continue
            i = iy // sh
            for b in range(kw):
                jx = x_ + pl - b * dw
                if jx < 0 or jx % sw != 0 or jx // sw >= ow:
                    continue
                j = jx // sw
                gb = ((n * oh + i) * ow + j) * n_o
                wb = ((a * kw + b) * n_c + c) * n_o
                for o in range(n_o):
                    acc += g[gb + o] * w[wb + o]
        out[t] = acc


@cuda.jit
def _conv_bwd_filter(x, g, out, n_n, n_h, n_w, n_c, kh, kw, n_o, oh, ow, sh, sw, dh, dw, pt, pl):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        o = t % n_o
        r = t // n_o
        c = r % n_c
        r //= n_c
        b = r % kw
        a = r // kw
        acc = 0.0
        for n in range(n_n):
            for i in range(oh):
                y = i * sh - pt + a * dh
                if y < 0 or y >= n_h:
                    continue
                for j in range(ow):
                    xx = j * sw - pl + b * dw
                    if xx < 0 or xx >= n_w:
                        continue
                    acc += x[((n * n_h + y) * n_w + xx) * n_c + c] * g[((n * oh + i) * ow + j) * n_o + o]
        out[t] = acc


@cuda.jit
def _depthwise_fwd(x, w, out, n_h, n_w, n_c, kh, kw, n_m, oh, ow, sh, sw, dh, dw, pt, pl):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        k = t % (n_c * n_m)
        c = k // n_m
        m = k % n_m
        r = t // (n_c * n_m)
        j = r % ow
        r //= ow
        i = r % oh
        n = r // oh
        acc = 0.0
        for a in range(kh):
            y = i * sh - pt + a * dh
            if y < 0 or y >= n_h:
                continue
            for b in range(kw):
                xx = j * sw - pl + b * dw
                if xx < 0 or xx >= n_w:
                    continue
                acc += x[((n * n_h + y) * n_w + xx) * n_c + c] * w[((a * kw + b) * n_c + c) * n_m + m]
        out[t] = acc


@cuda.jit
def _depthwise_bwd_input(w, g, out, n_h, n_w, n_c, kh, kw, n_m, oh, ow, sh, sw, dh, dw, pt, pl):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        c = t % n_c
        r = t // n_c
        x_ = r % n_w
        r //= n_w
        y = r % n_h
        n = r // n_h
        acc = 0.0
        for a in range(kh):
            iy = y + pt - a * dh
            if iy < 0 or iy % sh != 0 or iy // sh >= oh:
                continue
            i = iy // sh
            for b in range(kw):
                jx = x_ + pl - b * dw
                if jx < 0 or jx % sw != 0 or jx // sw >= ow:
                    continue
                j = jx // sw
                for m in range(n_m):
                    acc += g[((n * oh + i) * ow + j) * n_c * n_m + c * n_m + m] * w[((a * kw + b) * n_c + c) * n_m + m]
        out[t] = acc


@cuda.jit
def _depthwise_bwd_filter(x, g, out, n_n, n_h, n_w, n_c, kh, kw, n_m, oh, ow, sh, sw, dh, dw, pt, pl):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        m = t % n_m
        r = t // n_m
        c = r % n_c
        r //= n_c
        b = r % kw
        a = r // kw
        acc = 0.0
        for n in range(n_n):
            for i in range(oh):
                y = i * sh - pt + a * dh
                if y < 0 or y >= n_h:
                    continue
                for j in range(ow):
                    xx = j * sw - pl + b * dw
                    if xx < 0 or xx >= n_w:
                        continue
                    acc += (x[((n * n_h + y) * n_w + xx) * n_c + c]
                            * g[((n * oh + i) * ow + j) * n_c * n_m + c * n_m + m])
        out[t] = acc


@cuda.jit(device=True)
def _window(t, n_c, oh, ow):
    c = t % n_c
    r = t // n_c
    j = r % ow
    r //= ow
    return r // oh, r % oh, j, c


@cuda.jit
def _max_pool(x, out, n_h, n_w, n_c, kh, kw, oh, ow, sh, sw, pt, pl):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        n, i, j, c = _window(t, n_c, oh, ow)
        best = -math.inf
        for a in range(kh):
            y = i * sh - pt + a
            if y < 0 or y >= n_h:
                continue
            for b in range(kw):
                xx = j * sw - pl + b
                if xx < 0 or xx >= n_w:
                    continue
                v = x[((n * n_h + y) * n_w + xx) * n_c + c]
                if v > best or v != v:
                    best = v
        out[t] = best


@cuda.jit
def _max_pool_grad(x, g, out, n_h, n_w, n_c, kh, kw, oh, ow, sh, sw, pt, pl):
    for t in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        n, i, j, c = _window(t, n_c, oh, ow)
        best = -math.inf
        at = -1
        for a in range(kh):
            y = i * sh - pt + a
            if y < 0 or y >= n_h:
                continue
            for b in range(kw):
                xx = j * sw - pl + b
                if xx < 0 or xx >= n_w:
                    continue
                k = ((n * n_h + y) * n_w + xx) * n_c + c
                if at < 0 or x[k] > best:
                    best = x[k]
                    at = k
        if at >= 0:
            cuda.atomic.add(out, at, g[t])


@cuda.jit
def _avg_pool(x, out, n_h, n_w, n_c, kh, kw, oh, ow, sh, sw, pt, pl):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        n, i, j, c = _window(t, n_c, oh, ow)
        y0, y1 = max(i * sh - pt, 0), min(i * sh - pt + kh, n_h)
        x0, x1 = max(j * sw - pl, 0), min(j * sw - pl + kw, n_w)
        acc = 0.0
        for y in range(y0, y1):
            for xx in range(x0, x1):
                acc += x[((n * n_h + y) * n_w + xx) * n_c + c]
        out[t] = acc / ((y1 - y0) * (x1 - x0))


@cuda.jit
def _avg_pool_grad(g, out, n_h, n_w, n_c, kh, kw, oh, ow, sh, sw, pt, pl):
    for t in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        n, i, j, c = _window(t, n_c, oh, ow)
        y0, y1 = max(i * sh - pt, 0), min(i * sh - pt + kh, n_h)
        x0, x1 = max(j * sw - pl, 0), min(j * sw - pl + kw, n_w)
        share = g[t] / ((y1 - y0) * (x1 - x0))
        for y in range(y0, y1):
            for xx in range(x0, x1):
                cuda.atomic.add(out, ((n * n_h + y) * n_w + xx) * n_c + c, share)


@cuda.jit
def _leaky_relu(x, out, alpha):
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        v = x[t]
        out[t] = v if v > 0 else v * alpha


# -- host wrappers (the CPU kernels' signatures) ----------------------------------------------------------
def _launch(kernel: Any, n: int, *args: Any) -> None:
    if n:
        CK.launch(kernel, n, *args)


@CK._on_host_f16
def conv2d(x, filter, strides, padding, dilations, data_format="NHWC"):  # noqa: A002
    n, h, w, c = (int(d) for d in x.shape)
    kh, kw, _, o = (int(d) for d in filter.shape)
    oh, ow, pt, pl = NK.geometry((h, w), (kh, kw), strides, dilations, padding)
    out = CK.empty((n, oh, ow, o), x.dtype)
    _launch(_conv_fwd, out.size, CK.flat(x), CK.flat(filter), CK.flat(out), h, w, c, kh, kw, o, oh, ow,
            strides[1], strides[2], dilations[1], dilations[2], pt, pl)
    return out


@CK._on_host_f16
def conv2d_backprop_input(filter, out_backprop, input_sizes, strides, padding, dilations,  # noqa: A002
                          data_format="NHWC"):
    n, oh, ow, o = (int(d) for d in out_backprop.shape)
    h, w, c = (int(d) for d in input_sizes[1:])
    kh, kw = int(filter.shape[0]), int(filter.shape[1])
    _, _, pt, pl = NK.geometry((h, w), (kh, kw), strides, dilations, padding)
    out = CK.empty((n, h, w, c), out_backprop.dtype)
    _launch(_conv_bwd_input, out.size, CK.flat(filter), CK.flat(out_backprop), CK.flat(out), h, w, c, kh, kw, o,
            oh, ow, strides[1], strides[2], dilations[1], dilations[2], pt, pl)
    return out


@CK._on_host_f16
def conv2d_backprop_filter(x, out_backprop, filter_sizes, strides, padding, dilations, data_format="NHWC"):
    n, h, w, c = (int(d) for d in x.shape)
    kh, kw, _, o = (int(d) for d in filter_sizes)
    _, oh, ow, _ = (int(d) for d in out_backprop.shape)
    _, _, pt, pl = NK.geometry((h, w), (kh, kw), strides, dilations, padding)
    out = CK.empty((kh, kw, c, o), x.dtype)
    _launch(_conv_bwd_filter, out.size, CK.flat(x), CK.flat(out_backprop), CK.flat(out), n, h, w, c, kh, kw, o,
            oh, ow, strides[1], strides[2], dilations[1], dilations[2], pt, pl)
    return out


@CK._on_host_f16
def depthwise_conv2d(x, filter, strides, padding, dilations, data_format="NHWC"):  # noqa: A002
    n, h, w, c = (int(d) for d in x.shape)
    kh, kw, _, m = (int(d) for d in filter.shape)
    oh, ow, pt, pl = NK.geometry((h, w), (kh, kw), strides, dilations, padding)
    out = CK.empty((n, oh, ow, c * m), x.dtype)
    _launch(_depthwise_fwd, out.size, CK.flat(x), CK.flat(filter), CK.flat(out), h, w, c, kh, kw, m, oh, ow,
            strides[1], strides[2], dilations[1], dilations[2], pt, pl)
    return out


@CK._on_host_f16
def depthwise_conv2d_backprop_input(filter, out_backprop, input_sizes, strides, padding, dilations,  # noqa: A002
                                    data_format="NHWC"):
    n, oh, ow, _ = (int(d) for d in out_backprop.shape)
    h, w, c = (int(d) for d in input_sizes[1:])
    kh, kw, _, m = (int(d) for d in filter.shape)
    _, _, pt, pl = NK.geometry((h, w), (kh, kw), strides, dilations, padding)
    out = CK.empty((n, h, w, c), out_backprop.dtype)
    _launch(_depthwise_bwd_input, out.size, CK.flat(filter), CK.flat(out_backprop), CK.flat(out), h, w, c, kh, kw,
            m, oh, ow, strides[1], strides[2], dilations[1], dilations[2], pt, pl)
    return out


@CK._on_host_f16
def depthwise_conv2d_backprop_filter(x, out_backprop, filter_sizes, strides, padding, dilations,
                                     data_format="NHWC"):
    n, h, w, c = (int(d) for d in x.shape)
    kh, kw, _, m = (int(d) for d in filter_sizes)
    _, oh, ow, _ = (int(d) for d in out_backprop.shape)
    _, _, pt, pl = NK.geometry((h, w), (kh, kw), strides, dilations, padding)
    out = CK.empty((kh, kw, c, m), x.dtype)
    _launch(_depthwise_bwd_filter, out.size, CK.flat(x), CK.flat(out_backprop), CK.flat(out), n, h, w, c, kh, kw,
            m, oh, ow, strides[1], strides[2], dilations[1], dilations[2], pt, pl)
    return out


def _pool_args(shape, ksize, strides, padding):
    n, h, w, c = (int(d) for d in shape)
    oh, ow, pt, pl = NK.geometry((h, w), ksize[1:3], strides, (1, 1, 1, 1), padding)
    return (n, oh, ow, c), (h, w, c, ksize[1], ksize[2], oh, ow, strides[1], strides[2], pt, pl)


@CK._on_host_f16
def max_pool(x, ksize, strides, padding, data_format="NHWC"):
    shape, args = _pool_args(x.shape, ksize, strides, padding)
    out = CK.empty(shape, x.dtype)
    _launch(_max_pool, out.size, CK.flat(x), CK.flat(out), *args)
    return out


@CK._on_host_f16
def max_pool_grad(orig_input, orig_output, grad, ksize, strides, padding, data_format="NHWC"):
    _, args = _pool_args(orig_input.shape, ksize, strides, padding)
    out = CK.fill(CK.empty(tuple(orig_input.shape), grad.dtype), 0)
    _launch(_max_pool_grad, grad.size, CK.flat(orig_input), CK.flat(grad), CK.flat(out), *args)
    return out


@CK._on_host_f16
def avg_pool(value, ksize, strides, padding, data_format="NHWC"):
    shape, args = _pool_args(value.shape, ksize, strides, padding)
    out = CK.empty(shape, value.dtype)
    _launch(_avg_pool, out.size, CK.flat(value), CK.flat(out), *args)
    return out


@CK._on_host_f16
def avg_pool_grad(grad, orig_input_shape, ksize, strides, padding, data_format="NHWC"):
    shape = (int(grad.shape[0]),) + tuple(int(d) for d in orig_input_shape[1:])
    _, args = _pool_args(shape, ksize, strides, padding)
    out = CK.fill(CK.empty(shape, grad.dtype), 0)
    _launch(_avg_pool_grad, grad.size, CK.flat(grad), CK.flat(out), *args)
    return out


_bias = CK.Elementwise(K.add_, "same", "BiasAdd")
_sum = CK._reduction("Sum")


def bias_add(value, bias, data_format="NHWC"):
    return _bias(value, bias)


def bias_add_grad(out_backprop, data_format="NHWC"):
    return _sum(out_backprop, axis=tuple(range(len(out_backprop.shape) - 1)), keepdims=False)


@CK._on_host_f16
def leaky_relu(features, alpha):
    out = CK.empty(tuple(features.shape), features.dtype)
    _launch(_leaky_relu, out.size, CK.flat(features), CK.flat(out), features.dtype.type(alpha))
    return out


OVERRIDES = {
    "Conv2D": conv2d, "Conv2DBackpropInput": conv2d_backprop_input, "Conv2DBackpropFilter": conv2d_backprop_filter,
    "DepthwiseConv2dNative": depthwise_conv2d,
    "DepthwiseConv2dNativeBackpropInput": depthwise_conv2d_backprop_input,
    "DepthwiseConv2dNativeBackpropFilter": depthwise_conv2d_backprop_filter,
    "MaxPool": max_pool, "MaxPoolGrad": max_pool_grad, "AvgPool": avg_pool, "AvgPoolGrad": avg_pool_grad,
    "BiasAdd": bias_add, "BiasAddGrad": bias_add_grad, "LeakyRelu": leaky_relu,
    "Softplus": CK.Elementwise(NK.softplus_, "same", "Softplus"), "Elu": CK.Elementwise(NK.elu_, "same", "Elu"),
}
# The backend loader (`runtime/backends/__init__.py`) adds OVERRIDES to the CUDA table.
