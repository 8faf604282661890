"""Shape rules of the sparse ops that both their CPU kernels (`runtime/sparse`) and their CUDA
kernels (`runtime/backends`) apply, with TF's error texts. It lives in the ops stage because the
CUDA backend sits below the sparse package and may not import it."""
from __future__ import annotations

from typing import List, Sequence, Tuple

from jitflow.runtime.core.errors import InvalidArgumentError


def concat_shape(shapes: Sequence[Tuple[int, ...]], concat_dim: int,
                 expand_nonconcat_dims: bool) -> Tuple[int, List[int]]:
    """(the concat axis, the output dense shape) of `sparse.concat` over inputs of `shapes`.

    >>> concat_shape([(2, 3), (4, 3)], 0, False)
    (0, [6, 3])
    """
    rank = len(shapes[0])
    if any(len(s) != rank for s in shapes):
        raise InvalidArgumentError(f"sparse.concat: all inputs must have the same rank; got shapes "
                                   f"{[list(s) for s in shapes]}")
    axis = concat_dim % rank if rank else 0
    out_shape = list(shapes[0])
    for k, s in enumerate(shapes[1:], 1):
        for d in range(rank):
            if d != axis and s[d] != out_shape[d]:
                if not expand_nonconcat_dims:
                    raise InvalidArgumentError(
                        f"sparse.concat: input {k} has shape {list(s)}; dimension {d} must be {out_shape[d]} "
                        "(the first input's) unless expand_nonconcat_dims=True")
                out_shape[d] = max(out_shape[d], s[d])
    out_shape[axis] = sum(s[axis] for s in shapes)
    return axis, out_shape


__all__ = ["concat_shape"]
