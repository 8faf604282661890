"""`jf.linalg`: the linear-algebra names of TensorFlow's `tf.linalg` that jitflow has.

    >>> import jitflow as jf
    >>> jf.linalg.matmul(jf.eye(2), [[1.0], [2.0]]).numpy().tolist()
    [[1.0], [2.0]]
"""
from jitflow.runtime.ops.array_extra_ops import einsum, eye
from jitflow.runtime.ops.clip_ops import global_norm
from jitflow.runtime.ops.math_ops import matmul

__all__ = ["einsum", "eye", "global_norm", "matmul"]
