"""Small TF helpers about tensors themselves: `is_tensor`, `get_static_value`, `no_op`."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from jitflow.runtime.core.tensor import EagerTensor, SymbolicTensor, Tensor
from jitflow.runtime.ops.constant_op import TensorConvertible


def is_tensor(x: Any) -> bool:
    """True for a jitflow tensor or variable, not for numpy arrays or Python values (`tf.is_tensor`).

    >>> jf.is_tensor(jf.constant(1)), jf.is_tensor(jf.Variable(1.0)), jf.is_tensor(1)
    (True, True, False)
    """
    return isinstance(x, (Tensor, TensorConvertible))


def get_static_value(tensor: Any, partial: bool = False) -> Optional[np.ndarray]:
    """The value of `tensor` if it is known without running a graph, else None (`tf.get_static_value`).

    Eager tensors and variables have one; in a trace, constants and the shapes of tensors of
    known shape do.

    >>> jf.get_static_value(jf.constant([1, 2]))
    array([1, 2], dtype=int32)
    """
    if isinstance(tensor, TensorConvertible):
        value = tensor._as_tensor()
        return np.asarray(value.numpy()) if isinstance(value, EagerTensor) else None
    if isinstance(tensor, EagerTensor):
        return np.asarray(tensor.numpy())
    if isinstance(tensor, SymbolicTensor):
        node = tensor.node
        if node.op.tf_op == "Const":
            return np.asarray(node.attrs["value"])
        if node.op.tf_op == "Shape":
            dims = node.inputs[0]._dims
            if dims is not None and all(d is not None for d in dims):
                return np.asarray(dims, dtype=tensor.dtype.as_numpy_dtype)
        return None
    if isinstance(tensor, (np.ndarray, np.generic, int, float, bool, complex, list, tuple)):
        return np.asarray(tensor)
    raise TypeError(f"tensor: expected a tensor or a value convertible to one; got {type(tensor).__name__}")


def no_op(name: Optional[str] = None) -> None:
    """Does nothing (`tf.no_op`); eagerly and in jitflow's traces it returns None.

    >>> jf.no_op() is None
    True
    """
    return None


__all__ = ["is_tensor", "get_static_value", "no_op"]
