"""Random tensors with TF's seeding rules, drawn from per-op xoroshiro128+ streams.

- No seeds set: every op and every call draws fresh values.
- `jf.random.set_seed(g)`: a program is reproducible; ops without their own seed get
  one from a counter, so two ops differ and repeated calls continue their stream.
- Inside a `jf.function`, each random node owns its stream and draws new values on
  every run (numpy's random, by contrast, is frozen at trace time: seed 000).
"""
from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional, Tuple

import numpy as np

from jitflow.runtime.core import context
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops.array_ops import _check_dims
from jitflow.runtime.ops.infer import check_kind
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.ops.constant_op import convert_to_tensor

_lock = threading.Lock()
_global_seed: Optional[int] = None
_op_counter = 0
_eager_streams: Dict[Tuple[int, int], "RandomStream"] = {}


class RandomStream:
    """The state of one xoroshiro128+ generator; advances as it draws."""

    __slots__ = ("state", "seed", "lock")

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.state = np.zeros(2, dtype=np.uint64)
        self.lock = threading.Lock()
        K.seed_state(np.uint64(seed & 0xFFFFFFFFFFFFFFFF), self.state)

    def __repr__(self) -> str:
        return f"RandomStream(seed={self.seed})"


def set_seed(seed: Optional[int]) -> None:
    """Set the global seed (TF's `tf.random.set_seed`); resets per-op streams.

    >>> jf.random.set_seed(42)
    >>> a = jf.random.normal([2])
    >>> jf.random.set_seed(42)
    >>> bool(jf.reduce_all(a == jf.random.normal([2])))
    True
    """
    global _global_seed, _op_counter
    if seed is not None and not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed: expected an int or None; got {seed!r}")
    with _lock:
        _global_seed = None if seed is None else int(seed)
        _op_counter = 0
        _eager_streams.clear()


def get_seed(op_seed: Optional[int]) -> Tuple[Optional[int], Optional[int]]:
    """(global seed, op seed) as TF derives them; (None, None) means nondeterministic."""
    global _op_counter
    if _global_seed is None:
        return (None, None) if op_seed is None else (0x5EED, int(op_seed))
    if op_seed is None:
        with _lock:
            _op_counter += 1
            op_seed = _op_counter
    return _global_seed, int(op_seed)


def _mix(global_seed: int, op_seed: int) -> int:
    return (global_seed * 0x9E3779B97F4A7C15 + op_seed * 0xBF58476D1CE4E5B9 + 1) & 0xFFFFFFFFFFFFFFFF


def _new_stream(op_seed: Optional[int], persistent: bool) -> RandomStream:
    g, o = get_seed(op_seed)
    if g is None:
        return RandomStream(int.from_bytes(os.urandom(8), "little"))
    assert o is not None  # get_seed gives an op seed whenever it gives a global one
    if not persistent:
        return RandomStream(_mix(g, o))
    key = (g, o)
    with _lock:
        stream = _eager_streams.get(key)
        if stream is None:
            stream = _eager_streams[key] = RandomStream(_mix(g, o))
    return stream


def _random_infer(specs, attrs):
    dtype = attrs["dtype"]
    check_kind(dtype, attrs.get("_kinds", "f"), "dtype")
    return [(attrs["shape"], dtype)]


def _draw(fill, stream: RandomStream, shape, dtype, a, b) -> np.ndarray:
    np_dtype = dtype.as_numpy_dtype
    out = np.empty(shape, np.float64 if np_dtype.kind == "f" else np_dtype)
    with stream.lock:
        fill(stream.state, out, a, b)
    return out.astype(np_dtype, copy=False)


def _normal_kernel(mean, stddev, shape, dtype, stream, seed, seed2):
    return _draw(K.fill_normal, stream, shape, dtype, float(mean), float(stddev))


def _uniform_kernel(minval, maxval, shape, dtype, stream, seed, seed2):
    if dtype.is_floating:
        out = _draw(K.fill_uniform, stream, shape, dtype, float(minval), float(maxval))
        if float(minval) < float(maxval):  # rounding to float32/float16 can reach maxval: keep it out
            top = np.nextafter(out.dtype.type(maxval), out.dtype.type(minval))
            np.minimum(out, top, out=out)
        return out
    lo, hi = int(minval), int(maxval)
    if lo >= hi:  # TF checks this when the op runs, for integer dtypes only
        raise InvalidArgumentError(f"jf.random.uniform: need minval < maxval for integer dtype "
                                   f"{dtype.name}; got minval={lo}, maxval={hi}")
    return _draw(K.fill_uniform_int, stream, shape, dtype, lo, hi)


register("RandomStandardNormal", _random_infer, cpu=_normal_kernel, public_name="random.normal",
         default_name="random_normal", stateful=True)
register("RandomUniform", _random_infer, cpu=_uniform_kernel, public_name="random.uniform",
         default_name="random_uniform", stateful=True)


def _check_dtype(dtype: Any, kinds: str, fn: str) -> _dt.DType:
    dtype = _dt.as_dtype(dtype)
    if not (dtype.is_floating or ("i" in kinds and dtype.is_integer)):
        allowed = "a floating-point or integer" if "i" in kinds else "a floating-point"
        raise TypeError(f"dtype: jf.random.{fn} needs {allowed} dtype; got {dtype.name}")
    return dtype


def _attrs(shape: Any, dtype: Any, seed: Optional[int], kinds: str) -> Dict[str, Any]:
    dtype = _dt.as_dtype(dtype)
    in_graph = context._state.graph is not None
    stream = _new_stream(seed, persistent=not in_graph and seed is not None)
    g, o = (stream.seed, seed or 0)
    return {"shape": _check_dims(shape), "dtype": dtype, "stream": stream, "seed": int(g & 0x7FFFFFFF),
            "seed2": int(o), "_kinds": kinds}


def normal(shape, mean=0.0, stddev=1.0, dtype=_dt.float32, seed=None, name=None):
    """Samples from N(mean, stddev²); a new draw on every eager call and every graph run.

    >>> jf.random.normal([2, 3], seed=1).shape
    TensorShape([2, 3])
    """
    attrs = _attrs(shape, _check_dtype(dtype, "f", "normal"), seed, "f")
    dt = attrs["dtype"]
    return apply("RandomStandardNormal", [convert_to_tensor(mean, dt), convert_to_tensor(stddev, dt)],
                 attrs, name=name)[0]


def uniform(shape, minval=0, maxval=None, dtype=_dt.float32, seed=None, name=None):
    """Samples from U[minval, maxval); for integer dtypes `maxval` is required.

    >>> x = jf.random.uniform([1000], minval=0, maxval=10, dtype=jf.int32, seed=1)
    >>> bool(jf.reduce_all((x >= 0) & (x < 10)))
    True
    """
    dt = _check_dtype(dtype, "fi", "uniform")
    if maxval is None:
        if dt.is_integer:
            raise ValueError(f"maxval: must be given for integer dtype {dt.name}")
        maxval = 1
    attrs = _attrs(shape, dt, seed, "fi")
    return apply("RandomUniform", [convert_to_tensor(minval, dt), convert_to_tensor(maxval, dt)],
                 attrs, name=name)[0]
