"""Audio, video, boxed images and matplotlib figures, encoded as PyTorch's
`SummaryWriter` writes them (old-style `Summary.Audio` / `Summary.Image`
values, which TensorBoard turns into `audio` / `images` plugin data on load).

Encoders: WAV through the standard library's `wave` (16-bit PCM), GIF and box
drawing through Pillow, figures through matplotlib's Agg canvas; Pillow and
matplotlib are imported only when these are used.
"""

from __future__ import annotations

import io
import warnings
import wave
from typing import Any, Sequence

import numpy as np
from tensorboard.compat.proto import summary_pb2

from jitflow.summary.png import encode_png
from jitflow.summary.values import as_numpy, describe


# --- audio ------------------------------------------------------------------------

def check_sample_rate(sample_rate: Any) -> int:
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, float, np.integer, np.floating)) \
            or not 0 < sample_rate < 2 ** 31 or int(sample_rate) != sample_rate:
        raise ValueError(f"sample_rate: expected a positive whole number of Hz, got {describe(sample_rate)}")
    return int(sample_rate)


def encode_wav(samples: np.ndarray, sample_rate: int) -> bytes:
    """16-bit PCM WAV bytes of float samples in [-1, 1], shape [frames, channels]."""
    pcm = np.round(samples * 32767.0).astype("<i2")
    with io.BytesIO() as f:
        with wave.open(f, "wb") as w:
            w.setnchannels(samples.shape[1])
            w.setsampwidth(2)
            w.setframerate(sample_rate)
            w.writeframes(pcm.tobytes())
        return f.getvalue()


def audio_samples(snd: Any, name: str = "snd_tensor") -> np.ndarray:
    """[frames, channels] float64 in [-1, 1] from a [frames] / [frames, channels]
    (or [1, frames], PyTorch's squeezed form) array; louder samples are clipped
    with a warning."""
    a = as_numpy(snd, name)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected real-valued samples in [-1, 1], got {describe(a)}")
    a = a.astype(np.float64)
    if a.ndim == 2 and a.shape[0] == 1 and a.shape[1] > 2:
        a = a.reshape(-1)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[1] not in (1, 2) or a.shape[0] == 0:
        raise ValueError(f"{name}: expected a non-empty [frames] or [frames, channels] array with 1 or 2 "
                         f"channels, got {describe(a)}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: expected finite samples, got NaN or inf")
    peak = np.abs(a).max()
    if peak > 1:
        warnings.warn(f"{name}: audio amplitude {peak:g} is outside [-1, 1]; clipping", stacklevel=3)
        a = np.clip(a, -1, 1)
    return a


def audio_value(tag: str, samples: np.ndarray, sample_rate: int) -> summary_pb2.Summary.Value:
    audio = summary_pb2.Summary.Audio(sample_rate=sample_rate, num_channels=samples.shape[1],
                                      length_frames=samples.shape[0],
                                      encoded_audio_string=encode_wav(samples, sample_rate),
                                      content_type="audio/wav")
    return summary_pb2.Summary.Value(tag=tag, audio=audio)


# --- video (animated GIF) --------------------------------------------------------------

def video_frames(vid: Any, dataformats: str = "NTCHW", name: str = "vid_tensor") -> np.ndarray:
    """uint8 [T, H', W', C] frames: the N videos tiled in a grid (a power-of-two
    number of cells, as PyTorch lays them out)."""
    a = as_numpy(vid, name)
    fmt = dataformats.upper() if isinstance(dataformats, str) else dataformats
    if not isinstance(fmt, str) or sorted(fmt) != sorted("NTCHW"):
        raise ValueError(f"dataformats: expected a permutation of 'NTCHW', got {dataformats!r}")
    if a.ndim != 5:
        raise ValueError(f"{name}: expected a rank-5 video batch ({dataformats}), got {describe(a)}")
    if a.dtype != np.uint8 and a.dtype.kind != "f":
        raise TypeError(f"{name}: expected uint8 or float (in [0, 1]) pixels, got {describe(a)}")
    a = a.transpose([fmt.index(ch) for ch in "NTCHW"])
    b, t, c, h, w = a.shape
    if c not in (1, 3, 4) or 0 in a.shape:
        raise ValueError(f"{name}: expected a non-empty video with 1, 3 or 4 channels, got {describe(a)}")
    if a.dtype != np.uint8:
        with np.errstate(invalid="ignore"):
            a = np.clip(np.nan_to_num(a.astype(np.float32) * 255.0, nan=0.0), 0, 255).astype(np.uint8)
    cells = 1 << (b - 1).bit_length()  # pad the batch to a power of two
    if cells != b:
        a = np.concatenate([a, np.zeros((cells - b, t, c, h, w), np.uint8)])
    rows = 2 ** ((b.bit_length() - 1) // 2)
    cols = cells // rows
    a = a.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3)
    return np.ascontiguousarray(a.reshape(t, rows * h, cols * w, c))


def encode_gif(frames: np.ndarray, fps: float) -> bytes:
    """An endlessly looping animated GIF of uint8 [T, H, W, C] frames (Pillow;
    RGB frames get an adaptive 256-colour palette each; alpha is dropped)."""
    from PIL import Image
    c = frames.shape[3]
    # uint8 arrays of shape (H, W) and (H, W, 3) open as modes L and RGB.
    if c == 1:
        images = [Image.fromarray(np.ascontiguousarray(f[:, :, 0])) for f in frames]
    else:
        images = [Image.fromarray(np.ascontiguousarray(f[:, :, :3])) for f in frames]
    with io.BytesIO() as out:
        images[0].save(out, format="GIF", save_all=True, append_images=images[1:],
                       duration=max(1, int(round(1000.0 / fps))), loop=0, optimize=False)
        return out.getvalue()


def check_fps(fps: Any) -> float:
    if isinstance(fps, bool) or not isinstance(fps, (int, float, np.integer, np.floating)) or not 0 < fps <= 1000:
        raise ValueError(f"fps: expected a number of frames per second in (0, 1000], got {describe(fps)}")
    return float(fps)


def video_value(tag: str, frames: np.ndarray, fps: float) -> summary_pb2.Summary.Value:
    t, h, w, c = frames.shape
    image = summary_pb2.Summary.Image(height=h, width=w, colorspace=c,
                                      encoded_image_string=encode_gif(frames, fps))
    return summary_pb2.Summary.Value(tag=tag, image=image)


# --- images with boxes ------------------------------------------------------------------

_MAX_PIXELS = 1 << 26  # 8192 x 8192: TensorBoard's image dashboard is not for larger

def draw_boxes(hwc: np.ndarray, boxes: Any, labels: Sequence[str] | None, rescale: float) -> np.ndarray:
    """`hwc` (uint8) scaled by `rescale` with red [xmin, ymin, xmax, ymax] boxes
    (in the original image's pixels) and their labels drawn on it."""
    from PIL import Image, ImageDraw, ImageFont
    b = as_numpy(boxes, "box_tensor")
    if b.dtype.kind not in "biuf" or b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"box_tensor: expected [N, 4] numbers (xmin, ymin, xmax, ymax), got {describe(b)}")
    if labels is not None:
        if isinstance(labels, str):
            labels = [labels]
        labels = list(labels)
        if len(labels) != b.shape[0] or not all(isinstance(x, str) for x in labels):
            raise ValueError(f"labels: expected one str per box ({b.shape[0]}), got {labels!r}")
    img = Image.fromarray(hwc)
    if rescale != 1:
        size = int(hwc.shape[1] * rescale) * int(hwc.shape[0] * rescale)
        if size > _MAX_PIXELS:
            raise ValueError(f"rescale: a {hwc.shape[1]}x{hwc.shape[0]} image scaled by {rescale} would have "
                             f"{size:,} pixels; at most {_MAX_PIXELS:,} are written")
        img = img.resize((max(1, int(hwc.shape[1] * rescale)), max(1, int(hwc.shape[0] * rescale))),
                         Image.Resampling.LANCZOS)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default()
    for i, (x0, y0, x1, y1) in enumerate(b.astype(np.float64) * rescale):
        draw.line([(x0, y0), (x0, y1), (x1, y1), (x1, y0), (x0, y0)], width=2, fill="red")
        if labels is not None and labels[i]:
            left, top, right, bottom = font.getbbox(labels[i])
            th = bottom - top
            margin = np.ceil(0.05 * th)
            draw.rectangle([(x0, y1 - th - 2 * margin), (x0 + right - left, y1)], fill="red")
            draw.text((x0 + margin, y1 - th - margin), labels[i], fill="black", font=font)
    return np.asarray(img)


def check_rescale(rescale: Any) -> float:
    if (isinstance(rescale, bool) or not isinstance(rescale, (int, float, np.integer, np.floating))
            or not 0 < rescale <= 64):
        raise ValueError(f"rescale: expected a scale factor in (0, 64], got {describe(rescale)}")
    return float(rescale)


# --- matplotlib figures ------------------------------------------------------------------

def figure_to_chw(figure: Any, close: bool = True) -> np.ndarray:
    """uint8 [3, H, W] pixels of a matplotlib figure, drawn on an Agg canvas."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError("add_figure needs matplotlib: pip install matplotlib") from None
    if not isinstance(figure, Figure):
        raise TypeError(f"figure: expected a matplotlib Figure (or a list of them), got {describe(figure)}")
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())
    if close:
        import matplotlib.pyplot as plt
        plt.close(figure)
    return np.ascontiguousarray(rgba[:, :, :3].transpose(2, 0, 1))


def png_image_value(tag: str, hwc: np.ndarray) -> summary_pb2.Summary.Value:
    h, w, c = hwc.shape
    return summary_pb2.Summary.Value(tag=tag, image=summary_pb2.Summary.Image(
        height=h, width=w, colorspace=c, encoded_image_string=encode_png(hwc)))


