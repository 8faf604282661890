"""Image decoding and encoding ops through Pillow: `decode_jpeg`, `decode_png`, `decode_image`,
`encode_jpeg`, `encode_png` (TF's `DecodeJpeg`, `DecodePng`, `DecodeImage`, `EncodeJpeg`,
`EncodePng`). RGB and grey JPEGs decode through `simplejpeg` when it is installed (the same
libjpeg-turbo, straight into a numpy array: about ten times less overhead per image than
going through a Pillow image object); everything else, and any JPEG simplejpeg declines,
goes through Pillow.

The codecs (libjpeg-turbo, zlib) release the GIL while they work, so
`Dataset.map(decode, num_parallel_calls=...)` decodes on several cores at once. Outputs
are `uint8` HxWxC arrays exactly as TF returns them (`channels=0`: the file's own count).
"""
from __future__ import annotations

import io
from typing import Any, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import check_kind
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.io.file_ops import as_bytes

_MODE_FOR_CHANNELS = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def _pil():
    from PIL import Image  # imported on first decode: `import jitflow` stays fast
    return Image


_SIMPLEJPEG: list = []


def _simplejpeg():
    """`simplejpeg` (libjpeg-turbo straight into numpy, GIL released), or None if absent."""
    if not _SIMPLEJPEG:
        try:
            import simplejpeg
        except ImportError:
            simplejpeg = None
        _SIMPLEJPEG.append(simplejpeg)
    return _SIMPLEJPEG[0]


def _fast_jpeg(data: bytes, channels: int) -> Optional[np.ndarray]:
    """Decode a baseline/progressive RGB or grey JPEG with simplejpeg; None means "use Pillow"
    (not a JPEG, CMYK, damaged data: Pillow then decodes or explains the error)."""
    sj = _simplejpeg()
    if sj is None or data[:2] != b"\xff\xd8" or channels not in (0, 1, 3):
        return None
    try:
        colorspace = sj.decode_jpeg_header(data)[2]
        if colorspace not in ("Gray", "YCbCr", "RGB"):
            return None
        grey = channels == 1 or (channels == 0 and colorspace == "Gray")
        arr = sj.decode_jpeg(data, colorspace="GRAY" if grey else "RGB")
    except (ValueError, OSError):
        return None
    return arr if arr.ndim == 3 else arr[:, :, None]


def _open(data: bytes, op: str):
    try:
        img = _pil().open(io.BytesIO(data))
        img.load()
    except Exception as e:  # Pillow raises OSError/SyntaxError/ValueError for bad data
        raise InvalidArgumentError(f"{op}: the contents are not a valid image ({e}); got "
                                   f"{len(data)} bytes starting {data[:8]!r}") from None
    return img


def _to_array(img, channels: int, op: str) -> np.ndarray:
    mode = img.mode
    if channels == 0:  # keep the file's channels; palettes/CMYK/16-bit become 8-bit RGB(A)/L
        if mode in ("L", "LA", "RGB", "RGBA"):
            target = mode
        elif mode == "P":
            target = "RGBA" if "transparency" in img.info else "RGB"
        elif mode in ("1", "I", "I;16", "I;16B", "F"):
            target = "L"
        elif mode == "PA":
            target = "RGBA"
        else:
            target = "RGB"
    else:
        target = _MODE_FOR_CHANNELS[channels]
    if mode in ("I;16", "I;16B", "I") and target == "L":  # 16-bit grey: TF scales to 8 bits
        arr = (np.asarray(img, dtype=np.uint32) >> 8).astype(np.uint8)
    else:
        arr = np.asarray(img if mode == target else img.convert(target))
    if arr.ndim == 2:
        arr = arr[:, :, None]
    return np.ascontiguousarray(arr, dtype=np.uint8)


def _check_channels(channels: Any, allowed: tuple, fn: str) -> int:
    if not isinstance(channels, (int, np.integer)) or int(channels) not in allowed:
        raise ValueError(f"{fn}: channels must be one of {allowed}; got {channels!r}")
    return int(channels)


def _decode_infer(fn: str, rank: Optional[int] = 3):
    def infer(specs, attrs):
        dims, dtype = specs[0]
        check_kind(dtype, "s", "contents")
        if dims is not None and dims != ():
            raise InvalidArgumentError(f"{fn}: contents must be a scalar string; got shape {list(dims)}")
        c = attrs.get("channels", 0) or None
        if rank is None:
            return [(None, attrs.get("dtype", _dt.uint8))]
        return [((None, None, c), attrs.get("dtype", _dt.uint8))]
    return infer


def _decode_kernel(contents, channels, op):
    return _to_array(_open(as_bytes(contents, "contents"), op), channels, op)


def _decode_jpeg_kernel(contents, channels, ratio=1):
    data = as_bytes(contents, "contents")
    if ratio == 1:
        arr = _fast_jpeg(data, channels)
        if arr is not None:
            return arr
    img = _open(data, "decode_jpeg")
    if ratio != 1:
        w, h = img.size
        img = img.reduce(ratio) if hasattr(img, "reduce") else img.resize((w // ratio, h // ratio))
    return _to_array(img, channels, "decode_jpeg")


register("DecodeJpeg", _decode_infer("decode_jpeg"), cpu=_decode_jpeg_kernel,
         public_name="io.decode_jpeg", default_name="DecodeJpeg")
register("DecodePng", _decode_infer("decode_png"),
         cpu=lambda contents, channels: _decode_kernel(contents, channels, "decode_png"),
         public_name="io.decode_png", default_name="DecodePng")


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1,
                dct_method: str = "", name: Optional[str] = None) -> Tensor:
    """Decode a JPEG into a `uint8` tensor of shape `[height, width, channels]` (TF's `tf.io.decode_jpeg`).

    `channels`: 0 keeps the file's channels, 1 grey, 3 RGB. `ratio` (1, 2, 4, 8) downscales
    while decoding. Pixel values can differ from TF's by up to three levels: both use
    libjpeg(-turbo) but may pick different IDCT and upsampling variants.

    >>> img = jf.io.decode_jpeg(jf.io.read_file("cat.jpg"), channels=3)   # doctest: +SKIP
    """
    channels = _check_channels(channels, (0, 1, 3), "decode_jpeg")
    if ratio not in (1, 2, 4, 8):
        raise ValueError(f"decode_jpeg: ratio must be 1, 2, 4 or 8; got {ratio!r}")
    return apply("DecodeJpeg", [convert_to_tensor(contents, dtype=_dt.string)],
                 {"channels": channels, "ratio": int(ratio)}, name=name)[0]


def decode_png(contents: Any, channels: int = 0, dtype: Any = _dt.uint8, name: Optional[str] = None) -> Tensor:
    """Decode a PNG into a `uint8` tensor `[height, width, channels]` (TF's `tf.io.decode_png`).

    `channels`: 0 keeps the file's channels, 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA.

    >>> img = jf.io.decode_png(jf.io.read_file("digit.png"))              # doctest: +SKIP
    """
    channels = _check_channels(channels, (0, 1, 2, 3, 4), "decode_png")
    if _dt.as_dtype(dtype) is not _dt.uint8:
        raise TypeError(f"decode_png: dtype must be jf.uint8 (jitflow has no uint16 dtype); got {dtype!r}")
    return apply("DecodePng", [convert_to_tensor(contents, dtype=_dt.string)],
                 {"channels": channels}, name=name)[0]


def _decode_image_kernel(contents, channels, dtype, expand_animations):
    data = as_bytes(contents, "contents")
    arr = _fast_jpeg(data, channels)
    if arr is not None:
        return arr if dtype is _dt.uint8 else arr.astype(dtype.as_numpy_dtype) / np.asarray(255, dtype.as_numpy_dtype)
    img = _open(data, "decode_image")
    if img.format not in ("JPEG", "PNG", "GIF", "BMP", "WEBP"):
        raise InvalidArgumentError(f"decode_image: unknown image format {img.format!r}; expected "
                                   "JPEG, PNG, GIF, BMP or WebP")
    if img.format == "GIF" and expand_animations:  # TF: GIFs decode to [frames, h, w, 3]
        frames = []
        for i in range(getattr(img, "n_frames", 1)):
            img.seek(i)
            frames.append(_to_array(img, 3, "decode_image"))
        arr = np.stack(frames)
    else:
        arr = _to_array(img, 3 if img.format == "GIF" and channels == 0 else channels, "decode_image")
    if dtype is not _dt.uint8:  # TF's convert_image_dtype: floats in [0, 1]
        arr = arr.astype(dtype.as_numpy_dtype) / np.asarray(255, dtype.as_numpy_dtype)
    return arr


def _decode_image_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "s", "contents")
    c = attrs["channels"] or None
    if attrs["expand_animations"]:
        return [(None, attrs["dtype"])]
    return [((None, None, c), attrs["dtype"])]


register("DecodeImage", _decode_image_infer, cpu=_decode_image_kernel, public_name="io.decode_image",
         default_name="DecodeImage")


def decode_image(contents: Any, channels: Optional[int] = None, dtype: Any = _dt.uint8,
                 name: Optional[str] = None, expand_animations: bool = True) -> Tensor:
    """Decode a JPEG, PNG, GIF, BMP or WebP image, detecting the format (TF's `tf.io.decode_image`).

    A GIF gives `[frames, height, width, 3]` unless `expand_animations=False`; float
    `dtype`s scale to [0, 1] as `convert_image_dtype` does.

    >>> jf.io.decode_image(jf.io.read_file("a.png"), channels=3)      # doctest: +SKIP
    """
    channels = _check_channels(channels or 0, (0, 1, 2, 3, 4), "decode_image")
    dt = _dt.as_dtype(dtype)
    if not (dt is _dt.uint8 or dt.is_floating):
        raise TypeError(f"decode_image: dtype must be jf.uint8 or a float dtype; got {dt.name}")
    return apply("DecodeImage", [convert_to_tensor(contents, dtype=_dt.string)],
                 {"channels": channels, "dtype": dt, "expand_animations": bool(expand_animations)},
                 name=name)[0]


# -- encoding -------------------------------------------------------------------------------
def _encode_infer(fn: str):
    def infer(specs, attrs):
        dims, dtype = specs[0]
        if dtype is not _dt.uint8:
            raise TypeError(f"{fn}: image must be a uint8 tensor; got dtype {dtype.name}")
        if dims is not None and len(dims) != 3:
            raise InvalidArgumentError(f"{fn}: image must be [height, width, channels]; got shape {list(dims)}")
        return [((), _dt.string)]
    return infer


def _encode(image: np.ndarray, fmt: str, fn: str, **save_args) -> np.ndarray:
    c = image.shape[-1]
    if c not in _MODE_FOR_CHANNELS or (fmt == "JPEG" and c not in (1, 3)):
        allowed = "1 or 3" if fmt == "JPEG" else "1, 2, 3 or 4"
        raise InvalidArgumentError(f"{fn}: image must have {allowed} channels; got {c}")
    arr = np.ascontiguousarray(image[:, :, 0] if c == 1 else image)
    buf = io.BytesIO()
    _pil().fromarray(arr, _MODE_FOR_CHANNELS[c]).save(buf, format=fmt, **save_args)
    out = np.empty((), dtype=object)
    out[()] = buf.getvalue()
    return out


register("EncodePng", _encode_infer("encode_png"),
         cpu=lambda image, compression: _encode(image, "PNG", "encode_png",
                                                compress_level=6 if compression < 0 else compression),
         public_name="io.encode_png", default_name="EncodePng")
register("EncodeJpeg", _encode_infer("encode_jpeg"),
         cpu=lambda image, quality: _encode(image, "JPEG", "encode_jpeg", quality=quality),
         public_name="io.encode_jpeg", default_name="EncodeJpeg")


def encode_png(image: Any, compression: int = -1, name: Optional[str] = None) -> Tensor:
    """PNG-encode a `uint8` `[height, width, channels]` image (TF's `tf.io.encode_png`).

    `compression`: zlib level 0-9, -1 for the default.

    >>> png = jf.io.encode_png(jf.zeros([4, 4, 3], jf.uint8))
    """
    if not isinstance(compression, int) or not -1 <= compression <= 9:
        raise ValueError(f"encode_png: compression must be an int in [-1, 9]; got {compression!r}")
    return apply("EncodePng", [convert_to_tensor(image)], {"compression": compression}, name=name)[0]


def encode_jpeg(image: Any, format: str = "", quality: int = 95, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """JPEG-encode a `uint8` `[height, width, 1 or 3]` image (TF's `tf.io.encode_jpeg`).

    >>> jpg = jf.io.encode_jpeg(jf.zeros([8, 8, 3], jf.uint8), quality=90)
    """
    if not isinstance(quality, int) or not 0 <= quality <= 100:
        raise ValueError(f"encode_jpeg: quality must be an int in [0, 100]; got {quality!r}")
    return apply("EncodeJpeg", [convert_to_tensor(image)], {"quality": quality}, name=name)[0]
