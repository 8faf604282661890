"""Geometric and value transforms of images: `rot90`, flips, crops, `convert_image_dtype`,
`per_image_standardization` (TF's `tf.image` names and semantics).

Every op works on `[h, w, c]` or `[n, h, w, c]` tensors, eagerly or traced. Random
variants draw from `jf.random.uniform` so they follow TF's seeding rules and draw anew
on every call of a traced function.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import random_ops
from jitflow.runtime.ops.array_ops import where
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor


def _image_dims(dims: Any, fn: str) -> None:
    if dims is not None and len(dims) not in (3, 4):
        raise InvalidArgumentError(f"{fn}: image must be 3-D [height, width, channels] or 4-D [batch, "
                                   f"height, width, channels]; got shape {list(dims)}")


def _hw_axes(x: np.ndarray) -> tuple:
    return (x.ndim - 3, x.ndim - 2)


# -- rot90 ---------------------------------------------------------------------------------
def _rot90_infer(specs, attrs):
    dims, dtype = specs[0]
    _image_dims(dims, "rot90")
    if dims is None or attrs["k"] % 2 == 0:
        return [(dims, dtype)]
    d = list(dims)
    d[-3], d[-2] = d[-2], d[-3]
    return [(tuple(d), dtype)]


register("ImageRot90", _rot90_infer, cpu=lambda image, k: np.ascontiguousarray(np.rot90(image, k, _hw_axes(image))),
         public_name="image.rot90", default_name="rot90")


def rot90(image: Any, k: int = 1, name: Optional[str] = None) -> Tensor:
    """Rotate counter-clockwise by `k` quarter turns (TF's `tf.image.rot90`).

    >>> jf.image.rot90(jf.zeros([2, 3, 1])).shape
    TensorShape([3, 2, 1])
    """
    if not isinstance(k, (int, np.integer)):
        raise TypeError(f"rot90: k must be a Python int; got {k!r}")
    return apply("ImageRot90", [convert_to_tensor(image)], {"k": int(k) % 4}, name=name)[0]


# -- flips ---------------------------------------------------------------------------------
def _same_image(fn: str):
    def infer(specs, attrs):
        _image_dims(specs[0][0], fn)
        return [specs[0]]
    return infer


def _flip_kernel(image, axis):
    return np.ascontiguousarray(np.flip(image, image.ndim - 3 + axis))


register("ImageFlip", _same_image("flip"), cpu=_flip_kernel, public_name="image.flip_left_right",
         default_name="ReverseV2")


def flip_left_right(image: Any, name: Optional[str] = None) -> Tensor:
    """Mirror horizontally (TF's `tf.image.flip_left_right`).

    >>> jf.image.flip_left_right(jf.constant([[[1], [2]]])).numpy()[0, :, 0]
    array([2, 1], dtype=int32)
    """
    return apply("ImageFlip", [convert_to_tensor(image)], {"axis": 1}, name=name)[0]


def flip_up_down(image: Any, name: Optional[str] = None) -> Tensor:
    """Mirror vertically (TF's `tf.image.flip_up_down`).

    >>> jf.image.flip_up_down(jf.constant([[[1]], [[2]]])).numpy()[:, 0, 0]
    array([2, 1], dtype=int32)
    """
    return apply("ImageFlip", [convert_to_tensor(image)], {"axis": 0}, name=name)[0]


def _random_flip(image: Any, axis: int, seed: Optional[int]) -> Tensor:
    image = convert_to_tensor(image)
    flipped = apply("ImageFlip", [image], {"axis": axis})[0]
    coin = random_ops.uniform([], seed=seed) < 0.5
    return where(coin, flipped, image)


def random_flip_left_right(image: Any, seed: Optional[int] = None) -> Tensor:
    """Mirror horizontally with probability 1/2 (TF's `tf.image.random_flip_left_right`).

    >>> ds = ds.map(lambda x: jf.image.random_flip_left_right(x, seed=1))   # doctest: +SKIP
    """
    return _random_flip(image, 1, seed)


def random_flip_up_down(image: Any, seed: Optional[int] = None) -> Tensor:
    """Mirror vertically with probability 1/2 (TF's `tf.image.random_flip_up_down`).

    >>> jf.image.random_flip_up_down(jf.zeros([4, 4, 3]), seed=1).shape
    TensorShape([4, 4, 3])
    """
    return _random_flip(image, 0, seed)


# -- crops ---------------------------------------------------------------------------------
def _crop_infer(specs, attrs):
    dims, dtype = specs[0]
    _image_dims(dims, "crop")
    h, w = attrs["size"]
    if dims is None:
        return [(None, dtype)]
    if (dims[-3] is not None and h > dims[-3]) or (dims[-2] is not None and w > dims[-2]):
        raise InvalidArgumentError(f"crop size [{h}, {w}] is larger than the image {list(dims)}")
    return [(dims[:-3] + (h, w, dims[-1]), dtype)]


def _crop_kernel(image, offsets, size):
    oy, ox = (int(v) for v in np.asarray(offsets).reshape(-1))
    h, w = size
    if oy < 0 or ox < 0 or oy + h > image.shape[-3] or ox + w > image.shape[-2]:
        raise InvalidArgumentError(f"crop [{oy}:{oy + h}, {ox}:{ox + w}] does not fit the image of "
                                   f"shape {list(image.shape)}")
    return np.ascontiguousarray(image[..., oy:oy + h, ox:ox + w, :])


register("ImageCrop", _crop_infer, cpu=_crop_kernel, public_name="image.crop_to_bounding_box",
         default_name="crop")


def crop_to_bounding_box(image: Any, offset_height: int, offset_width: int, target_height: int,
                         target_width: int) -> Tensor:
    """The `target_height x target_width` window at the given offsets (TF's name).

    >>> jf.image.crop_to_bounding_box(jf.zeros([4, 4, 1]), 1, 1, 2, 2).shape
    TensorShape([2, 2, 1])
    """
    offsets = convert_to_tensor(np.array([offset_height, offset_width], dtype=np.int32))
    return apply("ImageCrop", [convert_to_tensor(image), offsets],
                 {"size": (int(target_height), int(target_width))})[0]


def central_crop(image: Any, central_fraction: float) -> Tensor:
    """The central `central_fraction` of each side (TF's `tf.image.central_crop`, same rounding).

    >>> jf.image.central_crop(jf.zeros([10, 10, 3]), 0.5).shape   # start = int(2.5) = 2, as in TF
    TensorShape([6, 6, 3])
    """
    if not 0.0 < central_fraction <= 1.0:
        raise ValueError(f"central_fraction must be in (0, 1]; got {central_fraction!r}")
    image = convert_to_tensor(image)
    dims = image._dims
    _image_dims(dims, "central_crop")
    if dims is None or dims[-3] is None or dims[-2] is None:
        raise ValueError("central_crop: the image's height and width must be known when traced; "
                         f"got shape {image.shape}")
    if central_fraction == 1.0:
        return image
    h, w = dims[-3], dims[-2]
    # TF: start = int((size - size * fraction) / 2), crop size = size - 2 * start
    oy = int((h - h * central_fraction) / 2)
    ox = int((w - w * central_fraction) / 2)
    return crop_to_bounding_box(image, oy, ox, h - 2 * oy, w - 2 * ox)


def random_crop(value: Any, size: Any, seed: Optional[int] = None, name: Optional[str] = None) -> Tensor:
    """A random `size` window of `value`, all dimensions (TF's `tf.image.random_crop`).

    `size` covers every dimension of `value` (e.g. `[24, 24, 3]` for a `[32, 32, 3]`
    image); the offsets draw uniformly from the positions where the window fits.

    >>> jf.image.random_crop(jf.zeros([32, 32, 3]), [24, 24, 3], seed=1).shape
    TensorShape([24, 24, 3])
    """
    value = convert_to_tensor(value)
    size = tuple(int(s) for s in np.asarray(size).reshape(-1))
    dims = value._dims
    if dims is None or None in dims or len(dims) != len(size):
        raise ValueError(f"random_crop: size {list(size)} must give one length per dimension of a "
                         f"value with a known shape; got {value.shape}")
    if any(s > d or s < 0 for s, d in zip(size, dims)):
        raise InvalidArgumentError(f"random_crop: size {list(size)} does not fit in shape {list(dims)}")
    limits = np.array([d - s + 1 for d, s in zip(dims, size)], dtype=np.float32)
    u = random_ops.uniform([len(size)], seed=seed)
    offsets = apply("RandomOffsets", [u], {"limits": tuple(int(v) for v in limits)})[0]
    return apply("SliceBySize", [value, offsets], {"size": size}, name=name)[0]


register("RandomOffsets", lambda specs, attrs: [((len(attrs["limits"]),), _dt.int32)],
         cpu=lambda u, limits: np.minimum((u * np.asarray(limits, np.float32)).astype(np.int32),
                                          np.asarray(limits, np.int32) - 1),
         public_name="image.random_crop", default_name="offsets")
register("SliceBySize", lambda specs, attrs: [(attrs["size"], specs[0][1])],
         cpu=lambda x, begin, size: np.ascontiguousarray(
             x[tuple(slice(int(b), int(b) + s) for b, s in zip(begin, size))]),
         public_name="image.random_crop", default_name="Slice")


# -- values --------------------------------------------------------------------------------
def _convert_kernel(image, dtype, saturate):
    src = image.dtype
    dst = dtype.as_numpy_dtype
    if src == dst:
        return image
    src_int, dst_int = np.issubdtype(src, np.integer), np.issubdtype(dst, np.integer)
    if src_int and dst_int:  # rescale by the ratio of the ranges, as TF does (shifts)
        smax, dmax = np.iinfo(src).max, np.iinfo(dst).max
        if smax > dmax:
            return (image.astype(np.int64) // ((smax + 1) // (dmax + 1))).astype(dst)
        return (image.astype(np.int64) * ((dmax + 1) // (smax + 1))).astype(dst)
    if src_int:  # int -> float: divide by the int's max
        return (image.astype(dst) / np.asarray(np.iinfo(src).max, dst)).astype(dst)
    if dst_int:  # float -> int: scale by (max + 0.5) and truncate, as TF does
        scale = np.iinfo(dst).max + 0.5
        x = image * scale
        if saturate:
            x = np.clip(x, np.iinfo(dst).min, np.iinfo(dst).max)
        return x.astype(dst)
    return image.astype(dst)


def _convert_infer(specs, attrs):
    dims, dtype = specs[0]
    if not (dtype.is_floating or dtype.is_integer):
        raise TypeError(f"convert_image_dtype: image must be numeric; got dtype {dtype.name}")
    return [(dims, attrs["dtype"])]


register("ConvertImageDtype", _convert_infer, cpu=_convert_kernel, public_name="image.convert_image_dtype",
         default_name="convert_image")


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False, name: Optional[str] = None) -> Tensor:
    """Convert between image dtypes, rescaling: ints span their range, floats span [0, 1].

    >>> jf.image.convert_image_dtype(jf.constant([[[255]]], jf.uint8), jf.float32).numpy()[0, 0, 0]
    np.float32(1.0)
    """
    dt = _dt.as_dtype(dtype)
    if not (dt.is_floating or dt.is_integer):
        raise TypeError(f"dtype: expected an integer or float dtype; got {dt.name}")
    return apply("ConvertImageDtype", [convert_to_tensor(image)], {"dtype": dt, "saturate": bool(saturate)},
                 name=name)[0]


def _standardize_kernel(image):
    x, squeeze = (image[None], True) if image.ndim == 3 else (image, False)
    x = x.astype(np.float32)
    n = np.float32(np.prod(x.shape[1:]))
    mean = x.mean(axis=(1, 2, 3), keepdims=True, dtype=np.float32)
    std = x.std(axis=(1, 2, 3), keepdims=True, dtype=np.float32)
    adjusted = np.maximum(std, np.float32(1.0) / np.sqrt(n))
    out = ((x - mean) / adjusted).astype(np.float32)
    return out[0] if squeeze else out


register("PerImageStandardization", lambda specs, attrs: [(specs[0][0], _dt.float32)],
         cpu=_standardize_kernel, public_name="image.per_image_standardization",
         default_name="per_image_standardization")


def per_image_standardization(image: Any) -> Tensor:
    """Scale each image to mean 0 and variance 1: `(x - mean) / max(std, 1/sqrt(N))` (TF's rule).

    >>> jf.image.per_image_standardization(jf.ones([2, 2, 1])).numpy().ravel()
    array([0., 0., 0., 0.], dtype=float32)
    """
    image = convert_to_tensor(image)
    _image_dims(image._dims, "per_image_standardization")
    return apply("PerImageStandardization", [image])[0]
