"""Gradients of the complex-number ops (`jf.complex`, `jf.math.real/imag/conj/angle`, |z|).

TF's convention: for a real loss L of z = x + iy the gradient is dL/dx + i·dL/dy, so a
real gradient g flowing into `real(z)` comes back as g + 0i, into `imag(z)` as 0 + gi.
"""
from __future__ import annotations

from jitflow.runtime.autodiff.tape import gradient
from jitflow.runtime.autodiff.gradients import unbroadcast
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import complex_ops as C
from jitflow.runtime.ops import math_ops as M


def _as_complex(g):
    return C.complex(g, A.zeros_like(g))


@gradient("Real")
def _real(rec, g):
    return [_as_complex(g)]


@gradient("Imag")
def _imag(rec, g):
    return [C.complex(A.zeros_like(g), g)]


@gradient("Conj")
def _conj(rec, g):
    return [C.conj(g)]


@gradient("Complex")
def _complex(rec, g):
    re, im = rec.inputs
    return [unbroadcast(C.real(g), re), unbroadcast(C.imag(g), im)]


@gradient("ComplexAbs")
def _complex_abs(rec, g):
    # g · z / |z| (0 where z = 0), TF's rule.
    z = rec.inputs[0]
    magnitude = rec.output()
    safe = A.where(M.equal(magnitude, 0), A.ones_like(magnitude), magnitude)
    scale = A.where(M.equal(magnitude, 0), A.zeros_like(g), M.divide(g, safe))
    return [M.multiply(_as_complex(scale), z)]


@gradient("Angle")
def _angle(rec, g):
    # -g / conj(i·z)... written as TF does: -complex(g, 0) / complex(imag(z), real(z)).
    z = rec.inputs[0]
    denominator = C.complex(C.imag(z), C.real(z))
    return [M.negative(M.divide(_as_complex(g), denominator))]
