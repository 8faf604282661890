"""Initializers: callables `init(shape, dtype=float32)` returning a tensor of initial values.

As in TF 2 (`tf.initializers`, `tf.keras.initializers`), seed 003:

    w = jf.Variable(jf.initializers.glorot_normal()(shape=[20, 30]))

Values are computed eagerly even inside a `jf.function` trace (TF lifts variable
initialisers out of function graphs the same way). Seeding follows Keras: an
initializer built with `seed=` gives the same values on every call; without one it
draws from jitflow's random streams, so `jf.random.set_seed` makes a program repeatable.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops import random_ops
from jitflow.runtime.ops.array_ops import _check_dims
from jitflow.runtime.core.tensor import EagerTensor, Tensor

_TRUNCATED_STDDEV = 0.87962566103423978  # stddev of a unit normal truncated to [-2, 2]


def _stream(seed: Optional[int]) -> random_ops.RandomStream:
    if seed is None:
        return random_ops._new_stream(None, persistent=False)
    return random_ops.RandomStream(random_ops._mix(0x5EED, int(seed)))


def _float_dtype(dtype: Any, who: str) -> _dt.DType:
    dt = _dt.as_dtype(dtype if dtype is not None else _dt.float32)
    if not dt.is_floating:
        raise TypeError(f"dtype: {who} needs a floating-point dtype; got {dt.name}")
    return dt


def _tensor(values: np.ndarray, dtype: _dt.DType) -> EagerTensor:
    return EagerTensor(np.array(values, dtype=dtype.as_numpy_dtype, order="C"), dtype)


def _normal(stream, shape: Tuple[int, ...], mean: float, stddev: float, truncated: bool) -> np.ndarray:
    out = np.empty(shape, np.float64)
    K.fill_normal(stream.state, out, 0.0, 1.0)
    if truncated:  # redraw everything outside two standard deviations
        bad = np.abs(out) > 2.0
        while bad.any():
            redo = np.empty(int(bad.sum()), np.float64)
            K.fill_normal(stream.state, redo, 0.0, 1.0)
            out[bad] = redo
            bad = np.abs(out) > 2.0
    return mean + stddev * out


def _uniform(stream, shape: Tuple[int, ...], low: float, high: float) -> np.ndarray:
    out = np.empty(shape, np.float64)
    K.fill_uniform(stream.state, out, low, high)
    return out


def compute_fans(shape: Tuple[int, ...]) -> Tuple[float, float]:
    """(fan_in, fan_out) as Keras computes them (conv kernels: receptive field × channels).

    >>> jf.initializers.compute_fans((3, 3, 16, 32))
    (144.0, 288.0)
    """
    if len(shape) == 0:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    if len(shape) == 2:
        return float(shape[0]), float(shape[1])
    receptive = float(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    """Base class: subclasses implement `__call__(shape, dtype=None)`.

    >>> class Twos(jf.initializers.Initializer):
    ...     def __call__(self, shape, dtype=None):
    ...         return jf.fill(shape, 2.0)
    >>> Twos()([2]).numpy()
    array([2., 2.], dtype=float32)
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:  # pragma: no cover
        raise NotImplementedError

    def get_config(self) -> Dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


class Zeros(Initializer):
    """All zeros.

    >>> jf.zeros_initializer()([2]).numpy()
    array([0., 0.], dtype=float32)
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        dt = _dt.as_dtype(dtype if dtype is not None else _dt.float32)
        return _tensor(np.zeros(_check_dims(shape)), dt)


class Ones(Initializer):
    """All ones.

    >>> jf.ones_initializer()([2]).numpy()
    array([1., 1.], dtype=float32)
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        dt = _dt.as_dtype(dtype if dtype is not None else _dt.float32)
        return _tensor(np.ones(_check_dims(shape)), dt)


class Constant(Initializer):
    """A scalar broadcast to the shape, or values with exactly as many elements as the shape.

    >>> Constant([1, 2, 3, 4])([2, 2]).numpy()
    array([[1., 2.],
           [3., 4.]], dtype=float32)
    """

    def __init__(self, value: Any = 0) -> None:
        self.value = value

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        dt = _dt.as_dtype(dtype if dtype is not None else _dt.float32)
        dims = _check_dims(shape)
        arr = np.asarray(self.value)
        if arr.size == 1:
            return _tensor(np.full(dims, arr.reshape(())), dt)
        if arr.size != int(np.prod(dims, dtype=np.int64)):
            raise ValueError(f"Constant: value has {arr.size} elements but shape {list(dims)} needs "
                             f"{int(np.prod(dims, dtype=np.int64))} (or pass a scalar)")
        return _tensor(arr.reshape(dims), dt)

    def get_config(self) -> Dict[str, Any]:
        return {"value": self.value}


class RandomNormal(Initializer):
    """Normal samples N(mean, stddev²).

    >>> jf.random_normal_initializer(stddev=0.1, seed=1)([2, 2]).shape
    TensorShape([2, 2])
    """

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: Optional[int] = None) -> None:
        self.mean, self.stddev, self.seed = float(mean), float(stddev), seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        dt = _float_dtype(dtype, type(self).__name__)
        return _tensor(_normal(_stream(self.seed), _check_dims(shape), self.mean, self.stddev, False), dt)

    def get_config(self) -> Dict[str, Any]:
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class TruncatedNormal(RandomNormal):
    """Normal samples, redrawn when more than two standard deviations from the mean.

    >>> jf.initializers.TruncatedNormal(stddev=0.05, seed=1)([2, 2]).shape
    TensorShape([2, 2])
    """

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        dt = _float_dtype(dtype, type(self).__name__)
        return _tensor(_normal(_stream(self.seed), _check_dims(shape), self.mean, self.stddev, True), dt)


class RandomUniform(Initializer):
    """Uniform samples in [minval, maxval) (integers too, for integer dtypes).

    >>> jf.random_uniform_initializer(-1.0, 1.0, seed=1)([3]).shape
    TensorShape([3])
    """

    def __init__(self, minval: float = -0.05, maxval: float = 0.05, seed: Optional[int] = None) -> None:
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        dt = _dt.as_dtype(dtype if dtype is not None else _dt.float32)
        dims = _check_dims(shape)
        stream = _stream(self.seed)
        if dt.is_integer:
            out = np.empty(dims, dt.as_numpy_dtype)
            K.fill_uniform_int(stream.state, out, int(self.minval), int(self.maxval))
            return _tensor(out, dt)
        _float_dtype(dt, type(self).__name__)
        values = _uniform(stream, dims, float(self.minval), float(self.maxval))
        top = np.nextafter(np.dtype(dt.as_numpy_dtype).type(self.maxval), -np.inf)  # rounding may reach maxval
        return _tensor(np.minimum(values, top), dt)

    def get_config(self) -> Dict[str, Any]:
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


class VarianceScaling(Initializer):
    """Samples scaled to the layer's fan: variance = scale / n, n = fan_in, fan_out or their mean.

    >>> jf.initializers.VarianceScaling(scale=2.0, seed=1)([4, 3]).shape
    TensorShape([4, 3])
    """

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "truncated_normal",
                 seed: Optional[int] = None) -> None:
        if scale <= 0:
            raise ValueError(f"scale: must be > 0; got {scale}")
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"mode: expected 'fan_in', 'fan_out' or 'fan_avg'; got {mode!r}")
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in ("truncated_normal", "untruncated_normal", "uniform"):
            raise ValueError(f"distribution: expected 'truncated_normal', 'untruncated_normal' or 'uniform'; "
                             f"got {distribution!r}")
        self.scale, self.mode, self.distribution, self.seed = float(scale), mode, distribution, seed

    def __call__(self, shape: Any, dtype: Any = None, **kwargs: Any) -> Tensor:
        dt = _float_dtype(dtype, type(self).__name__)
        dims = _check_dims(shape)
        fan_in, fan_out = compute_fans(dims)
        n = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2.0}[self.mode]
        variance = self.scale / max(1.0, n)
        stream = _stream(self.seed)
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * variance)
            return _tensor(_uniform(stream, dims, -limit, limit), dt)
        truncated = self.distribution == "truncated_normal"
        stddev = math.sqrt(variance) / (_TRUNCATED_STDDEV if truncated else 1.0)
        return _tensor(_normal(stream, dims, 0.0, stddev, truncated), dt)

    def get_config(self) -> Dict[str, Any]:
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution, "seed": self.seed}


class GlorotUniform(VarianceScaling):
    """Xavier uniform: U(-limit, limit), limit = sqrt(6 / (fan_in + fan_out)).

    >>> jf.initializers.GlorotUniform(seed=1)([4, 3]).shape
    TensorShape([4, 3])
    """

    def __init__(self, seed: Optional[int] = None) -> None:
        super().__init__(1.0, "fan_avg", "uniform", seed)

    def get_config(self) -> Dict[str, Any]:
        return {"seed": self.seed}


class GlorotNormal(VarianceScaling):
    """Xavier normal: truncated normal with variance 2 / (fan_in + fan_out).

    >>> jf.initializers.GlorotNormal(seed=1)([4, 3]).shape
    TensorShape([4, 3])
    """

    def __init__(self, seed: Optional[int] = None) -> None:
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)

    def get_config(self) -> Dict[str, Any]:
        return {"seed": self.seed}


class HeNormal(VarianceScaling):
    """He normal: truncated normal with variance 2 / fan_in.

    >>> jf.initializers.HeNormal(seed=1)([4, 3]).shape
    TensorShape([4, 3])
    """

    def __init__(self, seed: Optional[int] = None) -> None:
        super().__init__(2.0, "fan_in", "truncated_normal", seed)

    def get_config(self) -> Dict[str, Any]:
        return {"seed": self.seed}


class HeUniform(VarianceScaling):
    """He uniform: U(-limit, limit), limit = sqrt(6 / fan_in).

    >>> jf.initializers.HeUniform(seed=1)([4, 3]).shape
    TensorShape([4, 3])
    """

    def __init__(self, seed: Optional[int] = None) -> None:
        super().__init__(2.0, "fan_in", "uniform", seed)

    def get_config(self) -> Dict[str, Any]:
        return {"seed": self.seed}


# Keras's snake_case aliases (`tf.initializers.glorot_uniform()(shape=[20, 30])`).
zeros = Zeros
ones = Ones
constant = Constant
random_normal = RandomNormal
random_uniform = RandomUniform
truncated_normal = TruncatedNormal
variance_scaling = VarianceScaling
glorot_uniform = GlorotUniform
glorot_normal = GlorotNormal
he_normal = HeNormal
he_uniform = HeUniform

_BY_NAME = {name: cls for name, cls in globals().items()
            if isinstance(cls, type) and issubclass(cls, Initializer) and cls is not Initializer}


def get(identifier: Any) -> Initializer:
    """An initializer from a name (`"glorot_uniform"`), a class, or an initializer itself.

    >>> type(jf.initializers.get('glorot_uniform')).__name__
    'GlorotUniform'
    """
    if isinstance(identifier, Initializer):
        return identifier
    if isinstance(identifier, type) and issubclass(identifier, Initializer):
        return identifier()
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]()
    if callable(identifier):
        return identifier
    raise ValueError(f"unknown initializer {identifier!r}; expected one of {sorted(_BY_NAME)}")


# TF 2's top-level names (`tf.random_normal_initializer(mean=0.0, stddev=0.05)`).
random_normal_initializer = RandomNormal
random_uniform_initializer = RandomUniform
zeros_initializer = Zeros
ones_initializer = Ones
constant_initializer = Constant

__all__ = ["Initializer", "Zeros", "Ones", "Constant", "RandomNormal", "TruncatedNormal", "RandomUniform",
           "VarianceScaling", "GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform", "get", "compute_fans",
           *sorted(_BY_NAME.keys() - {cls.__name__ for cls in _BY_NAME.values()}),
           "random_normal_initializer", "random_uniform_initializer", "zeros_initializer", "ones_initializer",
           "constant_initializer"]
