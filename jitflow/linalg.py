"""`jf.linalg`: the linear-algebra names of TensorFlow's `tf.linalg` that jitflow has.

    >>> import jitflow as jf
    >>> jf.linalg.matmul(jf.eye(2), [[1.0], [2.0]]).numpy().tolist()
    [[1.0], [2.0]]
"""
from jitflow.runtime.ops.array_extra_ops import einsum, eye
from jitflow.runtime.ops.clip_ops import global_norm
from jitflow.runtime.ops.constant_op import convert_to_tensor as jf_convert
from jitflow.runtime.ops.math_ops import matmul
from jitflow.runtime.ops.linalg_ops import det, diag, diag_part, inv, matrix_transpose, matvec, trace
from jitflow.runtime.ops.math_composite_ops import norm, tensordot
from jitflow.runtime.ops.nn_activation_ops import l2_normalize
from jitflow.runtime.ops.array_ops import transpose as _transpose


def adjoint(matrix, name=None):
    """The conjugate transpose of the last two dimensions (`tf.linalg.adjoint`).

    >>> import jitflow as jf
    >>> jf.linalg.adjoint(jf.constant([[1 + 1j, 2j]])).numpy()
    array([[1.-1.j],
           [0.-2.j]])
    """
    x = jf_convert(matrix)
    rank = x.ndim
    if rank is None or rank < 2:
        raise ValueError(f"matrix: expected a tensor of rank >= 2; got shape {x.shape}")
    perm = list(range(rank - 2)) + [rank - 1, rank - 2]
    return _transpose(x, perm, conjugate=True, name=name)


__all__ = ["adjoint", "einsum", "eye", "global_norm", "matmul", "inv", "det", "trace", "diag_part", "diag",
           "matvec", "matrix_transpose", "norm", "tensordot", "l2_normalize"]
