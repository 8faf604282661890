"""Colour and brightness ops: `rgb_to_grayscale`, `grayscale_to_rgb`, `adjust_brightness`,
`adjust_contrast` and their random forms (TF's `tf.image` rules).

Brightness and contrast work in float: integer images are converted to float in [0, 1],
adjusted, and converted back (saturating), exactly as TF does.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import random_ops
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.image.transforms import convert_image_dtype

_GREY_WEIGHTS = np.array([0.2989, 0.5870, 0.1140], dtype=np.float32)  # TF's rgb_to_grayscale


def _grey_kernel(images):
    grey = np.tensordot(images, _GREY_WEIGHTS.astype(images.dtype), axes=([-1], [0]))[..., None]
    return grey.astype(images.dtype)


def _channels_infer(n_in: int, n_out: int, fn: str):
    def infer(specs, attrs):
        dims, dtype = specs[0]
        if dims is not None and (not dims or dims[-1] not in (None, n_in)):
            raise InvalidArgumentError(f"{fn}: images must have {n_in} channel(s) in the last dimension; "
                                       f"got shape {list(dims)}")
        return [(None if dims is None else dims[:-1] + (n_out,), dtype)]
    return infer


register("RGBToGrayscale", _channels_infer(3, 1, "rgb_to_grayscale"), cpu=_grey_kernel,
         public_name="image.rgb_to_grayscale", default_name="rgb_to_grayscale")
register("GrayscaleToRGB", _channels_infer(1, 3, "grayscale_to_rgb"),
         cpu=lambda images: np.ascontiguousarray(np.repeat(images, 3, axis=-1)),
         public_name="image.grayscale_to_rgb", default_name="grayscale_to_rgb")


def rgb_to_grayscale(images: Any, name: Optional[str] = None) -> Tensor:
    """Weighted sum of R, G, B (0.2989, 0.5870, 0.1140) keeping a last dimension of 1.

    >>> jf.image.rgb_to_grayscale(jf.ones([2, 2, 3])).shape
    TensorShape([2, 2, 1])
    """
    images = convert_to_tensor(images)
    if images.dtype.is_integer:  # TF converts to float, weights, converts back
        flt = convert_image_dtype(images, _dt.float32)
        return convert_image_dtype(apply("RGBToGrayscale", [flt], name=name)[0], images.dtype)
    return apply("RGBToGrayscale", [images], name=name)[0]


def grayscale_to_rgb(images: Any, name: Optional[str] = None) -> Tensor:
    """Repeat the single channel three times.

    >>> jf.image.grayscale_to_rgb(jf.ones([2, 2, 1])).shape
    TensorShape([2, 2, 3])
    """
    return apply("GrayscaleToRGB", [convert_to_tensor(images)], name=name)[0]


def _adjust_kernel(images, delta, kind):
    x = images
    if kind == "brightness":
        return (x + np.asarray(delta, x.dtype)).astype(x.dtype)
    mean = x.mean(axis=(-3, -2), keepdims=True, dtype=x.dtype)  # per image and channel
    return ((x - mean) * np.asarray(delta, x.dtype) + mean).astype(x.dtype)


def _adjust_infer(specs, attrs):
    dims, dtype = specs[0]
    if not dtype.is_floating:
        raise TypeError(f"image must be floating point here; got dtype {dtype.name}")
    return [specs[0]]


register("AdjustImage", _adjust_infer, cpu=_adjust_kernel, public_name="image.adjust_brightness",
         default_name="adjust")


def _adjust(image: Any, delta: Any, kind: str) -> Tensor:
    image = convert_to_tensor(image)
    original = image.dtype
    if not original.is_floating:
        image = convert_image_dtype(image, _dt.float32)
    delta = convert_to_tensor(delta, dtype=image.dtype) if not isinstance(delta, Tensor) else delta
    out = apply("AdjustImage", [image, delta], {"kind": kind})[0]
    return out if original.is_floating else convert_image_dtype(out, original, saturate=True)


def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """Add `delta` to every pixel (in [0, 1] units for integer images), as TF does.

    >>> jf.image.adjust_brightness(jf.zeros([1, 1, 3]), 0.25).numpy().ravel()
    array([0.25, 0.25, 0.25], dtype=float32)
    """
    return _adjust(image, delta, "brightness")


def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """`(x - mean) * contrast_factor + mean`, the mean taken per image and channel (TF's rule).

    >>> jf.image.adjust_contrast(jf.constant([[[0.0], [1.0]]]), 2.0).numpy().ravel()
    array([-0.5,  1.5], dtype=float32)
    """
    return _adjust(images, contrast_factor, "contrast")


def random_brightness(image: Any, max_delta: float, seed: Optional[int] = None) -> Tensor:
    """`adjust_brightness` by a delta drawn uniformly from [-max_delta, max_delta).

    >>> ds = ds.map(lambda x: jf.image.random_brightness(x, 0.2))    # doctest: +SKIP
    """
    if max_delta < 0:
        raise ValueError(f"max_delta must be non-negative; got {max_delta!r}")
    return _adjust(image, random_ops.uniform([], -max_delta, max_delta, seed=seed), "brightness")


def random_contrast(image: Any, lower: float, upper: float, seed: Optional[int] = None) -> Tensor:
    """`adjust_contrast` by a factor drawn uniformly from [lower, upper).

    >>> ds = ds.map(lambda x: jf.image.random_contrast(x, 0.8, 1.2))  # doctest: +SKIP
    """
    if not 0 <= lower < upper:
        raise ValueError(f"lower and upper: need 0 <= lower < upper; got {lower!r}, {upper!r}")
    return _adjust(image, random_ops.uniform([], lower, upper, seed=seed), "contrast")
