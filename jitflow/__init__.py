"""jitflow: a TensorFlow-2-style graph runtime on numba, with TensorBoard summaries,
tracing/profiling, and a panel that explains every retrace.

    >>> import jitflow as jf
    >>> @jf.function
    ... def f(x):
    ...     return jf.reduce_sum(jf.tanh(x * 2.0 + 1.0))
    >>> print(f"{float(f(jf.constant([0.0, 1.0]))):.4f}")
    1.7566

Names mirror TensorFlow 2 so that `tf.` → `jf.` ports code. `__all__` below is the whole
public API; internals stay importable by their full path (`jitflow.runtime.ops.registry`)
but are not `jf.<name>`.
"""
import importlib as _importlib
import os as _os

from jitflow import runtime as _runtime
from jitflow.runtime import *  # noqa: F401,F403 - the runtime's __all__

# The public submodules (`jf.math`, ...): `import x as x` marks each as re-exported.
from jitflow import autograph as autograph
from jitflow import config as config
from jitflow import debugging as debugging
from jitflow import initializers as initializers
from jitflow import linalg as linalg
from jitflow import losses as losses
from jitflow import math as math
from jitflow import nest as nest
from jitflow import nn as nn
from jitflow import optimizers as optimizers
from jitflow import random as random
from jitflow import types as types
from jitflow.runtime.core import traceback_filter as _traceback_filter

# Frames in the parts above the runtime are jitflow's too: filtered out of user tracebacks.
for _part in ("tracer", "summary", "webui"):
    _traceback_filter.register_internal_path(_os.path.join(_os.path.dirname(_os.path.dirname(
        _os.path.abspath(_runtime.__file__))), _part))

# These load on first use: TensorBoard's protobufs, Pillow and the input-pipeline machinery
# are not needed by a program that only runs ops (and `import jitflow` stays fast).
_LAZY_MODULES = {"summary": "jitflow.summary", "profiler": "jitflow.profiler",
                 "data": "jitflow.runtime.data", "io": "jitflow.runtime.io", "image": "jitflow.runtime.image",
                 "strings": "jitflow.runtime.strings", "sparse": "jitflow.runtime.sparse",
                 "saved_model": "jitflow.runtime.saved_model",
                 "keras": "jitflow.keras", "distribute": "jitflow.distribute",
                 "train": "jitflow.train", "test": "jitflow.test"}


# Top-level names that live in a lazy module (TF's `tf.SparseTensor` is `tf.sparse.SparseTensor`).
_LAZY_NAMES = {"SparseTensor": "jitflow.runtime.sparse", "SparseTensorSpec": "jitflow.runtime.sparse",
               **{name: "jitflow.runtime.training.checkpoint"
                  for name in ("Checkpoint", "CheckpointManager", "latest_checkpoint")}}


def __getattr__(name: str):
    if name in _LAZY_NAMES:
        value = getattr(_importlib.import_module(_LAZY_NAMES[name]), name)
        globals()[name] = value
        return value
    target = _LAZY_MODULES.get(name)
    if target is None:
        raise AttributeError(f"module 'jitflow' has no attribute {name!r}")
    module = _importlib.import_module(target)
    globals()[name] = module
    return module


__version__ = "0.1.0"

# TF spells the boolean dtype `tf.bool`; bound through globals() so that no code in this
# module ever sees the builtin shadowed.
globals()["bool"] = _runtime.bool_

__all__ = sorted(set(_runtime.__all__) | {
    "bool", "autograph", "config", "debugging", "initializers", "keras", "losses", "math", "nn", "optimizers", "random",
    "train", "summary", "profiler", "data", "io", "image", "strings", "sparse", "SparseTensor", "SparseTensorSpec",
    "saved_model", "distribute", "linalg", "test", "nest", "Checkpoint", "CheckpointManager", "latest_checkpoint",
    "types", "__version__",
} - {"__version__"})


def __dir__() -> list:
    """`dir(jf)` is the public API; the parts (`jitflow.runtime`, ...) are importable by full path."""
    return sorted(__all__) + ["__version__"]
