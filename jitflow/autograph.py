"""`jf.autograph`: how `jf.function` turns Python control flow into graph ops (`tf.autograph`).

    >>> import jitflow as jf
    >>> def f(x):
    ...     if x > 0:
    ...         x = x * 2
    ...     return x
    >>> print(jf.autograph.to_code(f))  # doctest: +SKIP
"""
from jitflow.runtime.tracing.autograph import to_code
from jitflow.runtime.tracing.autograph_ops import do_not_convert

__all__ = ["to_code", "do_not_convert"]
