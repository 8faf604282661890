"""Gradients of `jf.linalg.inv` and `jf.linalg.det` (TF's `linalg_grad.py` rules)."""
from __future__ import annotations

from jitflow.runtime.autodiff.tape import gradient
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import linalg_ops as L
from jitflow.runtime.ops import math_ops as M


@gradient("MatrixInverse")
def _inverse(rec, g):
    # d(A⁻¹) = -A⁻¹ dA A⁻¹, so dL/dA = -A⁻ᴴ g A⁻ᴴ (the inverse of the adjoint when `adjoint`).
    ainv = rec.output()
    grad = M.negative(M.matmul(ainv, M.matmul(g, ainv, adjoint_b=True), adjoint_a=True))
    return [L.matrix_transpose(grad, conjugate=True) if rec.attrs["adjoint"] else grad]


@gradient("MatrixDeterminant")
def _determinant(rec, g):
    # d det(A) / dA = det(A) · A⁻ᵀ: the incoming gradient times det, times inv(A)ᴴ.
    a = rec.inputs[0]
    scale = A.expand_dims(A.expand_dims(M.multiply(g, rec.output()), -1), -1)
    return [M.multiply(scale, L.inv(a, adjoint=True))]
