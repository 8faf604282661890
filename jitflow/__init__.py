"""jitflow: a TensorFlow-2-style graph runtime on numba, with TensorBoard summaries,
tracing/profiling, and a panel that explains every retrace.

    import jitflow as jf

    @jf.function
    def f(x):
        return jf.reduce_sum(jf.tanh(x * 2.0 + 1.0))

Names mirror TensorFlow 2 so that `tf.` → `jf.` ports code.
"""
from __future__ import annotations

import types as _types

from jitflow.runtime import *  # noqa: F401,F403 - the public runtime API
from jitflow.runtime import dtypes, errors, trace_records  # noqa: F401
from jitflow.runtime import math_ops as _m
from jitflow.runtime import array_ops as _a
from jitflow.runtime import random_ops as _r
from jitflow.runtime import autograph as _autograph
from jitflow.runtime import autograph_ops as _autograph_ops
from jitflow.runtime.ops.math_ops import (abs, add, argmax, argmin, cos, divide, equal, exp,  # noqa: F401,A004
                                          floordiv, greater, greater_equal, is_finite, less,
                                          less_equal, log, logical_and, logical_not, logical_or,
                                          matmul, maximum, minimum, mod, multiply, negative,
                                          not_equal, pow, reduce_all, reduce_any, reduce_logsumexp,
                                          reduce_max, reduce_mean, reduce_min, reduce_prod,
                                          reduce_std, reduce_sum, reduce_variance, sigmoid, sign,
                                          sin, sqrt, square, subtract, tanh, truediv)

from jitflow.runtime.ops.array_ops import stop_gradient  # noqa: F401

from jitflow import summary  # noqa: E402,F401 - jf.summary
from jitflow.tracer import profiler  # noqa: E402,F401 - jf.profiler

__version__ = "0.1.0"


def _namespace(name: str, doc: str, **members) -> _types.SimpleNamespace:
    ns = _types.ModuleType(f"jitflow.{name}", doc)
    ns.__dict__.update(members)
    return ns


math = _namespace(
    "math", "Elementwise math and reductions (TF's tf.math).",
    **{n: getattr(_m, n) for n in (
        "abs", "add", "argmax", "argmin", "cos", "divide", "equal", "exp", "floordiv", "greater",
        "greater_equal", "is_finite", "less", "less_equal", "log", "logical_and", "logical_not",
        "logical_or", "maximum", "minimum", "multiply", "negative", "not_equal", "pow",
        "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min",
        "reduce_prod", "reduce_std", "reduce_sum", "reduce_variance", "sigmoid", "sign", "sin",
        "sqrt", "square", "subtract", "tanh", "truediv", "matmul")},
    floormod=_m.mod)
nn = _namespace("nn", "Neural-network ops (TF's tf.nn).", relu=_m.relu, softmax=_m.softmax,
                log_softmax=_m.log_softmax, sigmoid=_m.sigmoid, tanh=_m.tanh)
autograph = _namespace("autograph", "AutoGraph: Python control flow to graph ops.",
                       to_code=_autograph.to_code, do_not_convert=_autograph_ops.do_not_convert)
random = _namespace("random", "Random tensors with TF's seeding rules.", normal=_r.normal,
                    uniform=_r.uniform, set_seed=_r.set_seed)

# -- training: optimizers, losses, initializers, checkpoints (issue 6) ---------------------
from jitflow.runtime import checkpoint as _ckpt  # noqa: E402
from jitflow.runtime import initializers as _init  # noqa: E402
from jitflow.runtime import losses as _losses  # noqa: E402
from jitflow.runtime import optimizers as _opt  # noqa: E402
from jitflow.runtime.ops import indexing_ops as _idx  # noqa: E402
from jitflow.runtime.ops import nn_ops as _nn  # noqa: E402

nn.__dict__.update(sparse_softmax_cross_entropy_with_logits=_nn.sparse_softmax_cross_entropy_with_logits,
                   softmax_cross_entropy_with_logits=_nn.softmax_cross_entropy_with_logits)
math.__dict__.update(unsorted_segment_sum=_idx.unsorted_segment_sum)
optimizers = _namespace("optimizers", "Optimizers (TF's tf.keras.optimizers).",
                        **{n: getattr(_opt, n) for n in _opt.__all__})
losses = _namespace("losses", "Losses (TF's tf.keras.losses).", **{n: getattr(_losses, n) for n in _losses.__all__})
initializers = _namespace("initializers", "Initializers (TF's tf.initializers / tf.keras.initializers).",
                          **{n: getattr(_init, n) for n in _init.__all__})
train = _namespace("train", "Checkpoints (TF's tf.train).", Checkpoint=_ckpt.Checkpoint,
                   CheckpointManager=_ckpt.CheckpointManager, latest_checkpoint=_ckpt.latest_checkpoint)

# -- devices (issue 7): jf.config (+ jf.config.experimental) and jf.device ------------------
from jitflow.runtime import config  # noqa: E402,F401
from jitflow.runtime.devices import device  # noqa: E402,F401

# -- Keras-style layers, models and fit (issue 18): jf.keras; conv/pool ops in jf.nn ----------
from jitflow import keras  # noqa: E402,F401
from jitflow.runtime.ops import nn_conv_ops as _conv  # noqa: E402

nn.__dict__.update({n: getattr(_conv, n) for n in _conv.__all__})

# TF spells the boolean dtype `tf.bool`; set it last so this module never shadows the builtin.
globals()["bool"] = bool_  # noqa: F405
