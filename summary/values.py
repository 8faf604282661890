"""Input checks and conversions shared by both writer front ends.

Values may be Python numbers, numpy arrays and scalars, or anything with
`__array__` (jitflow, torch and JAX arrays). Errors name the argument, what was
expected and what was given.
"""

from __future__ import annotations

import operator
import re
import warnings
from typing import Any

import numpy as np

from jitflow.runtime.core.tensor import SymbolicTensor

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w\.]")
_WIDEN_TO_FLOAT32 = {"torch.bfloat16", "bfloat16"}
_PATH_SEPARATORS = re.compile(r"[/\\]")


def describe(x: Any) -> str:
    """Short description of a value for error messages."""
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return f"{type(x).__name__} of shape {tuple(x.shape)} and dtype {x.dtype}"
    r = repr(x)
    return f"{type(x).__name__} {r[:60] + '...' if len(r) > 60 else r}"


def as_numpy(x: Any, name: str) -> np.ndarray:
    """`x` as a numpy array (jitflow/torch/JAX arrays via `.numpy()`/`__array__`)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "numpy") and not isinstance(x, np.generic):
        # Tensor types: torch tensors that need grad or live on a GPU refuse
        # __array__ until detached and moved to the host; numpy has no bfloat16,
        # so those are widened to float32 (exact) first. torch is never imported here.
        try:
            y = x.detach() if hasattr(x, "detach") else x
            y = y.cpu() if hasattr(y, "cpu") else y
            if str(getattr(y, "dtype", "")) in _WIDEN_TO_FLOAT32 and hasattr(y, "float"):
                y = y.float()
            return np.asarray(y.numpy())
        except Exception:
            pass
    try:
        return np.asarray(x)
    except Exception as e:
        raise TypeError(f"{name}: expected an array-like value, got {describe(x)} ({e})") from None


def as_float(x: Any, name: str, squeeze: bool = False) -> float:
    """A real scalar as a Python float. `squeeze=True` also accepts arrays with
    one element (PyTorch's add_scalar does); TF's scalar wants rank 0."""
    t = type(x)
    if t is float:
        return x
    if t is int:
        return check_int_fits_float(x, name)
    if isinstance(x, (np.floating, np.integer, bool, np.bool_)):  # numpy scalars: common, cheap
        return float(x)
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{name}: expected a real number, got {describe(x)}")
    a = as_numpy(x, name)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real number, got {describe(x)}")
    if a.ndim != 0 and not (squeeze and a.size == 1):
        raise ValueError(f"{name}: expected a scalar (rank 0) value, got {describe(a)}")
    return float(a.reshape(()))


def check_int_fits_float(x: int, name: str) -> int:
    """`x` if it converts to a finite float64; a Python int beyond that (10**400)
    would otherwise be written as inf without a word."""
    try:
        float(x)
    except OverflowError:
        raise ValueError(f"{name}: expected a number within float64 range (|x| <= 1.8e308), "
                         f"got an int of {x.bit_length()} bits") from None
    return x


def as_step(step: Any, name: str = "step") -> int:
    """An int64 step. Floats and bools are refused even when integral."""
    if type(step) is not int:
        if isinstance(step, (bool, np.bool_, float, np.floating, str, bytes)):
            raise TypeError(f"{name}: expected an integer, got {describe(step)}")
        if isinstance(step, np.integer):
            step = int(step)
        elif hasattr(step, "__array__") or hasattr(step, "numpy"):
            a = as_numpy(step, name)
            if a.dtype.kind not in "iu" or a.ndim != 0:
                raise TypeError(f"{name}: expected an integer scalar, got {describe(a)}")
            step = int(a)
        else:
            try:
                step = operator.index(step)
            except TypeError:
                raise TypeError(f"{name}: expected an integer, got {describe(step)}") from None
    if not _INT64_MIN <= step <= _INT64_MAX:
        raise ValueError(f"{name}: expected a value that fits in int64, got {step}")
    return step


def check_default_step(step: Any, name: str = "step") -> Any:
    """A default step for `as_default(step=...)` / `set_step`: an int-like value
    checked now, or, inside a `jf.function` trace, an integer symbolic tensor
    (read when the summary ops run)."""
    if isinstance(step, SymbolicTensor):
        if not step.dtype.is_integer:
            raise TypeError(f"{name}: expected an integer tensor, got {step.dtype.name} tensor {step.name}")
        return step
    as_step(step, name)
    return step


def as_wall_time(t: Any, name: str = "walltime") -> float:
    if isinstance(t, (bool, str, bytes)) or not isinstance(t, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name}: expected seconds since the epoch as a number, got {describe(t)}")
    return float(t)


def clean_tag(tag: Any, name: str = "name") -> str:
    """TF's tag cleaning: characters outside `[-/\\w.]` become `_` and leading
    slashes are dropped, with a warning."""
    if not isinstance(tag, str):
        raise TypeError(f"{name}: expected a str tag, got {describe(tag)}")
    new = _INVALID_TAG_CHARACTERS.sub("_", tag).lstrip("/")
    if not new:
        raise ValueError(f"{name}: expected a non-empty tag, got {tag!r}")
    if new != tag:
        warnings.warn(f"summary name {tag!r} is illegal; using {new!r} instead", stacklevel=4)
    return new


def torch_tag(tag: Any, name: str = "tag") -> str:
    """A tag for the PyTorch-style writer: kept exactly as given, as PyTorch's
    `SummaryWriter` does (TensorBoard shows any non-empty string)."""
    if not isinstance(tag, str):
        raise TypeError(f"{name}: expected a str tag, got {describe(tag)}")
    if not tag:
        raise ValueError(f"{name}: expected a non-empty tag, got ''")
    return tag


def check_run_name(name: str, arg: str) -> str:
    """A sub-run directory name (`add_scalars` keys, `add_hparams` run names)
    that cannot leave the writer's log_dir: no `..` path component, no
    absolute path, no NUL. Plain `/` nesting stays allowed, as in PyTorch."""
    if not isinstance(name, str):
        raise TypeError(f"{arg}: expected a str, got {describe(name)}")
    parts = _PATH_SEPARATORS.split(name)
    if "\0" in name or ".." in parts or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        raise ValueError(f"{arg}: expected a run name that stays inside log_dir (no '..' "
                         f"component, no absolute path, no NUL), got {name!r}")
    return name


def as_strings(data: Any, name: str = "data") -> tuple[list[bytes], tuple[int, ...]]:
    """Text data (str, bytes, or an array of them) as UTF-8 bytes and a shape."""
    if isinstance(data, (str, bytes)):
        return [data.encode("utf-8") if isinstance(data, str) else data], ()
    a = as_numpy(data, name)
    if a.dtype.kind not in "USO":
        raise TypeError(f"{name}: expected str or bytes (or an array of them), got {describe(data)}")
    out = []
    for s in a.reshape(-1).tolist():
        if isinstance(s, str):
            out.append(s.encode("utf-8"))
        elif isinstance(s, bytes):
            out.append(s)
        else:
            raise TypeError(f"{name}: expected str or bytes elements, got an element {describe(s)}")
    return out, a.shape
