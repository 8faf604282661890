"""`jf.debugging.assert_*` and `check_numerics`: checks that raise InvalidArgumentError.

Eagerly they check at once; inside a `jf.function` the check is a `py_function` node, so it
runs (and raises) each time the function runs, as TF's Assert ops do.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np

from jitflow.runtime.core import context
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops.constant_op import binary_operands, convert_to_tensor
from jitflow.runtime.ops.io_ops import py_function


def _check(values: list, ok: Callable[..., bool], describe: Callable[..., str], message: Optional[str]) -> None:
    def run(*tensors: Any) -> None:
        arrays = [np.asarray(t) for t in tensors]
        if not ok(*arrays):
            raise InvalidArgumentError(((message + "\n") if message else "") + describe(*arrays))
    if context.current_graph() is None:
        run(*values)
    else:
        py_function(run, values, Tout=[])


def _binary(x: Any, y: Any, predicate: Callable, word: str, message: Optional[str], summarize: Optional[int]) -> None:
    x, y = binary_operands(x, y)
    if x.ndim is not None and y.ndim is not None:  # a static mismatch fails at once, as TF's
        try:
            np.broadcast_shapes(*[tuple(d or 1 for d in t.shape.as_list()) for t in (x, y)])
        except ValueError:
            raise ValueError(f"x and y: shapes {x.shape} and {y.shape} are not broadcastable") from None
    limit = summarize or 3

    def describe(a: np.ndarray, b: np.ndarray) -> str:
        return (f"Condition x {word} y did not hold element-wise:\nx (shape={a.shape}) = "
                f"{a.ravel()[:limit].tolist()}\ny (shape={b.shape}) = {b.ravel()[:limit].tolist()}")
    _check([x, y], lambda a, b: bool(np.all(predicate(a, b))), describe, message)


def assert_equal(x, y, message=None, summarize=None, name=None):
    """Raise InvalidArgumentError unless x == y elementwise (`tf.debugging.assert_equal`).

    >>> jf.debugging.assert_equal(jf.constant([1, 2]), [1, 2]) is None
    True
    """
    _binary(x, y, np.equal, "==", message, summarize)


def assert_less(x, y, message=None, summarize=None, name=None):
    """Raise InvalidArgumentError unless x < y elementwise (`tf.debugging.assert_less`).

    >>> jf.debugging.assert_less([1, 2], 3) is None
    True
    """
    _binary(x, y, np.less, "<", message, summarize)


def assert_greater(x, y, message=None, summarize=None, name=None):
    """Raise InvalidArgumentError unless x > y elementwise (`tf.debugging.assert_greater`).

    >>> jf.debugging.assert_greater([3.0], 1.0) is None
    True
    """
    _binary(x, y, np.greater, ">", message, summarize)


def assert_non_negative(x, message=None, summarize=None, name=None):
    """Raise InvalidArgumentError unless x >= 0 elementwise (`tf.debugging.assert_non_negative`).

    >>> jf.debugging.assert_non_negative([0, 1]) is None
    True
    """
    t = convert_to_tensor(x)
    _binary(t, A.zeros_like(t), np.greater_equal, ">=", message, summarize)


def check_numerics(tensor, message, name=None):
    """`tensor` itself, after raising InvalidArgumentError if it holds a NaN or an infinity
    (`tf.debugging.check_numerics`).

    >>> jf.debugging.check_numerics(jf.constant([1.0]), "ok").numpy()
    array([1.], dtype=float32)
    """
    t = convert_to_tensor(tensor)
    if not t.dtype.is_floating:
        raise TypeError(f"tensor must be a floating-point tensor; got dtype {t.dtype.name}")

    def describe(a: np.ndarray) -> str:
        kind = "NaN" if np.isnan(a).any() else "Inf"
        return f"{message} : Tensor had {kind} values"
    _check([t], lambda a: bool(np.isfinite(a).all()), describe, None)
    return A.identity(t, name=name)


__all__ = ["assert_equal", "assert_less", "assert_greater", "assert_non_negative", "check_numerics"]
