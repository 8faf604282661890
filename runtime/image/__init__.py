"""`jf.image`: resizing, rotation, flips, crops and dtype conversion of image tensors (TF's `tf.image`).

    ds = ds.map(lambda img, label: (jf.image.resize(img, [256, 256]) / 255.0, label))

Decoding lives in `jf.io` (`decode_jpeg`, `decode_png`, `decode_image`), re-exported here as
TF does.
"""
from __future__ import annotations

from jitflow.runtime.io.image_codecs import (decode_image, decode_jpeg, decode_png, encode_jpeg,
                                             encode_png)
from jitflow.runtime.image.color import (adjust_brightness, adjust_contrast, grayscale_to_rgb,
                                         random_brightness, random_contrast, rgb_to_grayscale)
from jitflow.runtime.image.resize import ResizeMethod, resize
from jitflow.runtime.image.transforms import (central_crop, convert_image_dtype,
                                              crop_to_bounding_box, flip_left_right, flip_up_down,
                                              per_image_standardization, random_crop,
                                              random_flip_left_right, random_flip_up_down, rot90)

__all__ = ["ResizeMethod", "adjust_brightness", "adjust_contrast", "grayscale_to_rgb", "random_brightness",
           "random_contrast", "rgb_to_grayscale", "central_crop", "convert_image_dtype", "crop_to_bounding_box",
           "decode_image",
           "decode_jpeg", "decode_png", "encode_jpeg", "encode_png", "flip_left_right", "flip_up_down",
           "per_image_standardization", "random_crop", "random_flip_left_right", "random_flip_up_down",
           "resize", "rot90"]
