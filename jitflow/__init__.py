"""jitflow: a TensorFlow-2-style graph runtime on numba, with TensorBoard summaries,
tracing/profiling, and a panel that explains every retrace.

    >>> import jitflow as jf
    >>> @jf.function
    ... def f(x):
    ...     return jf.reduce_sum(jf.tanh(x * 2.0 + 1.0))
    >>> round(float(f(jf.constant([0.0, 1.0]))), 4)
    1.7565

Names mirror TensorFlow 2 so that `tf.` → `jf.` ports code. `__all__` below is the whole
public API; internals stay importable by their full path (`jitflow.runtime.ops.registry`)
but are not `jf.<name>`.
"""
from jitflow import runtime as _runtime
from jitflow.runtime import *  # noqa: F401,F403 - the runtime's __all__
from jitflow import autograph, config, initializers, losses, math, nn, optimizers, random, train  # noqa: E402
from jitflow import linalg, test, types  # noqa: E402
from jitflow import summary  # noqa: E402
from jitflow.tracer import profiler  # noqa: E402

__version__ = "0.1.0"

# TF spells the boolean dtype `tf.bool`; bound through globals() so that no code in this
# module ever sees the builtin shadowed.
globals()["bool"] = _runtime.bool_

__all__ = sorted(set(_runtime.__all__) | {
    "bool", "autograph", "config", "initializers", "losses", "math", "nn", "optimizers", "random",
    "train", "summary", "profiler", "linalg", "test", "types", "__version__",
} - {"__version__"})


def __dir__() -> list:
    """`dir(jf)` is the public API; the parts (`jitflow.runtime`, ...) are importable by full path."""
    return sorted(__all__) + ["__version__"]
