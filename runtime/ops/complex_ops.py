"""Complex numbers: `jf.complex`, `jf.math.real/imag/conj/angle` and |z| (TF's ComplexAbs).

Each op is an elementwise numba ufunc like the real math ops (`cpu_kernels.real_` & co.),
so the compiled tier fuses them too. For a real input, `real`/`conj` return the input,
`imag` zeros and `angle` 0 or pi, as TF's functions do (no op is added).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import cpu_kernels as K
from jitflow.runtime.ops.constant_op import binary_operands, convert_to_tensor
from jitflow.runtime.ops.infer import Spec, broadcast_dims, check_kind, same_dtype
from jitflow.runtime.ops.registry import apply, register

_REAL_OF = {"complex64": _dt.float32, "complex128": _dt.float64}
_COMPLEX_OF = {"float32": _dt.complex64, "float64": _dt.complex128}


def _to_real(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    dims, dtype = specs[0]
    check_kind(dtype, "c", "input")
    return [(dims, _REAL_OF[dtype.name])]


def _same_complex(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    check_kind(specs[0][1], "c", "input")
    return [specs[0]]


def _complex_infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
    (da, ta), (db, tb) = specs
    if ta.name not in _COMPLEX_OF:
        raise TypeError(f"real must be a float32 or float64 tensor; got dtype {ta.name}")
    same_dtype(ta, tb, ("real", "imag"))
    return [(broadcast_dims(da, db), _COMPLEX_OF[ta.name])]


def _bind(kernel, attrs, in_dtypes):
    return kernel.bind(attrs, in_dtypes)


# (TF op, public name, shape/dtype rule, output mode, scalar function, numpy reference)
_OPS: List[Tuple[str, str, Callable[..., Any], str, Callable[..., Any], Callable[..., Any]]] = [
    ("Real", "math.real", _to_real, "real", K.real_, np.real),
    ("Imag", "math.imag", _to_real, "real", K.imag_, np.imag),
    ("Conj", "math.conj", _same_complex, "same", K.conj_, np.conj),
    ("Angle", "math.angle", _to_real, "real", K.angle_, np.angle),
    ("ComplexAbs", "math.abs", _to_real, "real", K.complex_abs_, np.abs),
    ("Complex", "complex", _complex_infer, "complex", K.complex_, lambda re, im: re + 1j * im),
]
for _op, _pub, _infer, _out, _fn, _ref in _OPS:
    register(_op, _infer, cpu=K.UfuncKernel(_fn, _out, _op), reference=_ref, public_name=_pub,
             default_name=_op, bind=_bind)
# Elementwise op -> scalar function name, for the compiled tier's fused loops.
ELEMENTWISE_FUNCTIONS = {row[0]: row[4].__name__ for row in _OPS}


def complex(real, imag, name=None):  # noqa: A001 - TF's name
    """real + imag·i elementwise: float32 parts give complex64, float64 complex128 (`tf.complex`).

    >>> jf.complex([1.0, 2.0], [3.0, -1.0]).numpy()
    array([1.+3.j, 2.-1.j], dtype=complex64)
    """
    re, im = binary_operands(real, imag)
    return apply("Complex", [re, im], name=name)[0]


def real(input, name=None):  # noqa: A002 - TF's argument name
    """The real part of a complex tensor; a real tensor is returned as it is (`tf.math.real`).

    >>> jf.math.real(jf.constant([1 + 2j, 3 - 1j])).numpy()
    array([1., 3.])
    """
    x = convert_to_tensor(input)
    return apply("Real", [x], name=name)[0] if x._dtype.is_complex else x


def imag(input, name=None):  # noqa: A002
    """The imaginary part of a complex tensor; zeros for a real one (`tf.math.imag`).

    >>> jf.math.imag(jf.constant([1 + 2j, 3 - 1j], dtype=jf.complex64)).numpy()
    array([ 2., -1.], dtype=float32)
    """
    x = convert_to_tensor(input)
    return apply("Imag", [x], name=name)[0] if x._dtype.is_complex else apply("ZerosLike", [x])[0]


def conj(x, name=None):
    """The complex conjugate; a real tensor is returned as it is (`tf.math.conj`).

    >>> jf.math.conj(jf.constant([1 + 2j])).numpy()
    array([1.-2.j])
    """
    t = convert_to_tensor(x)
    return apply("Conj", [t], name=name)[0] if t._dtype.is_complex else t


def conj_if_complex(t: Tensor) -> Tensor:
    """`conj(t)` for a complex tensor, `t` itself otherwise (gradients use it on every dtype)."""
    return apply("Conj", [t])[0] if t._dtype.is_complex else t


def angle(input, name=None):  # noqa: A002
    """The argument atan2(imag, real) of each element; for reals 0 or pi (`tf.math.angle`).

    >>> jf.math.angle(jf.constant([1j, -1 + 0j], dtype=jf.complex64)).numpy()
    array([1.5707964, 3.1415927], dtype=float32)
    """
    x = convert_to_tensor(input)
    if x._dtype.is_complex:
        return apply("Angle", [x], name=name)[0]
    check_kind(x._dtype, "f", "input")
    negative = apply("Less", [x, convert_to_tensor(0, dtype=x._dtype)])[0]
    pi = apply("Mul", [apply("OnesLike", [x])[0], convert_to_tensor(np.pi, dtype=x._dtype)])[0]
    return apply("SelectV2", [negative, pi, apply("ZerosLike", [x])[0]], name=name)[0]


def complex_abs(x: Tensor, name: Optional[str] = None) -> Tensor:
    """|z| of a complex tensor (TF's ComplexAbs op, behind `jf.abs` for complex inputs)."""
    return apply("ComplexAbs", [x], name=name)[0]


__all__ = ["complex", "real", "imag", "conj", "angle"]
