"""`jf.linalg`: matrix inverse and determinant (ops with numpy/LAPACK kernels) and the
functions TF composes from other ops (`trace`, `diag_part`, `diag`, `matvec`,
`matrix_transpose`). Batched over leading dimensions, as TF's.
"""
from __future__ import annotations

import string
from typing import Any, Dict, List

import numpy as np

from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.core.shapes import format_dims
from jitflow.runtime.ops import array_extra_ops as AX
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import Spec, check_kind
from jitflow.runtime.ops.registry import apply, register


def _square_infer(out_rank_drop: int):
    def infer(specs: List[Spec], attrs: Dict[str, Any]) -> List[Spec]:
        dims, dtype = specs[0]
        check_kind(dtype, "fc", "input")
        if dims is None:
            return [(None, dtype)]
        if len(dims) < 2 or (dims[-1] is not None and dims[-2] is not None and dims[-1] != dims[-2]):
            raise InvalidArgumentError(f"input must be a (batch of) square matrices; got shape {format_dims(dims)}")
        return [(tuple(dims[:len(dims) - out_rank_drop]), dtype)]
    return infer


def _inverse_kernel(x, adjoint):
    x = np.asarray(x)
    if adjoint:
        x = np.conj(np.swapaxes(x, -1, -2))
    try:
        return np.linalg.inv(x).astype(x.dtype, copy=False)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError("Input is not invertible.") from None


def _det_kernel(x):
    x = np.asarray(x)
    return np.asarray(np.linalg.det(x)).astype(x.dtype, copy=False)


register("MatrixInverse", _square_infer(0), cpu=_inverse_kernel, reference=_inverse_kernel,
         public_name="linalg.inv", default_name="MatrixInverse")
register("MatrixDeterminant", _square_infer(2), cpu=_det_kernel, reference=_det_kernel,
         public_name="linalg.det", default_name="MatrixDeterminant")


def inv(input, adjoint=False, name=None):  # noqa: A002 - TF's names
    """The inverse of each square matrix in the last two dimensions (`tf.linalg.inv`).

    A singular matrix raises InvalidArgumentError, as TF's.

    >>> jf.linalg.inv([[2.0, 0.0], [0.0, 4.0]]).numpy()
    array([[0.5 , 0.  ],
           [0.  , 0.25]], dtype=float32)
    """
    return apply("MatrixInverse", [convert_to_tensor(input)], {"adjoint": bool(adjoint)}, name=name)[0]


def det(input, name=None):  # noqa: A002
    """The determinant of each square matrix in the last two dimensions (`tf.linalg.det`).

    >>> float(jf.linalg.det([[1.0, 2.0], [3.0, 4.0]]))
    -2.0
    """
    return apply("MatrixDeterminant", [convert_to_tensor(input)], name=name)[0]


def _batch_letters(rank: int, what: str) -> str:
    if rank < 2:
        raise ValueError(f"{what}: expected a tensor of rank >= 2; got rank {rank}")
    return string.ascii_letters[:rank - 2]


def _known_rank(x: Any, what: str) -> int:
    if x.ndim is None:
        raise ValueError(f"{what}: needs a tensor of known rank")
    return x.ndim


def trace(x, name=None):
    """The sum of the main diagonal of each matrix in the last two dimensions (`tf.linalg.trace`).

    >>> int(jf.linalg.trace([[1, 2], [3, 4]]))
    5
    """
    t = convert_to_tensor(x)
    b = _batch_letters(_known_rank(t, "x"), "x")
    return AX.einsum(f"{b}yy->{b}", t, name=name)


def diag_part(input, name=None):  # noqa: A002
    """The main diagonal of each matrix in the last two dimensions (`tf.linalg.diag_part`, square).

    >>> jf.linalg.diag_part([[1, 2], [3, 4]]).numpy()
    array([1, 4], dtype=int32)
    """
    t = convert_to_tensor(input)
    dims = t.shape.as_list() if t.ndim is not None else None
    if dims and dims[-1] is not None and dims[-2] is not None and dims[-1] != dims[-2]:
        raise ValueError(f"input: diag_part of non-square matrices is not supported; got shape {t.shape}")
    b = _batch_letters(_known_rank(t, "input"), "input")
    return AX.einsum(f"{b}yy->{b}y", t, name=name)


def diag(diagonal, name=None):
    """Square matrices with `diagonal` (last axis) on their main diagonal, zeros elsewhere (`tf.linalg.diag`).

    >>> jf.linalg.diag([1, 2]).numpy()
    array([[1, 0],
           [0, 2]], dtype=int32)
    """
    v = convert_to_tensor(diagonal)
    if _known_rank(v, "diagonal") < 1:
        raise ValueError("diagonal: expected a tensor of rank >= 1")
    idx = A.range(A.shape(v)[-1])
    eye = A.cast(M.equal(A.expand_dims(idx, 1), A.expand_dims(idx, 0)), v.dtype)
    return M.multiply(A.expand_dims(v, -1), eye, name=name)


def matvec(a, b, transpose_a=False, adjoint_a=False, name=None):
    """Matrix times vector over the last dimensions: a @ b[..., None] squeezed (`tf.linalg.matvec`).

    >>> jf.linalg.matvec([[1.0, 2.0], [3.0, 4.0]], [1.0, 1.0]).numpy()
    array([3., 7.], dtype=float32)
    """
    out = M.matmul(a, A.expand_dims(convert_to_tensor(b), -1), transpose_a=transpose_a, adjoint_a=adjoint_a)
    return A.squeeze(out, [-1], name=name)


def matrix_transpose(a, name="matrix_transpose", conjugate=False):
    """Transpose the last two dimensions (conjugating with `conjugate`) (`tf.linalg.matrix_transpose`).

    >>> jf.linalg.matrix_transpose(jf.zeros([2, 3, 4])).shape
    TensorShape([2, 4, 3])
    """
    t = convert_to_tensor(a)
    rank = _known_rank(t, "a")
    _batch_letters(rank, "a")
    return A.transpose(t, list(range(rank - 2)) + [rank - 1, rank - 2], conjugate=conjugate, name=name)


__all__ = ["inv", "det", "trace", "diag_part", "diag", "matvec", "matrix_transpose"]
