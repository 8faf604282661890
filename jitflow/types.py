"""`jf.types`: the type protocols of TensorFlow's `tf.types` that jitflow honours.

`jf.types.experimental.TraceType` is the base of custom trace types: an argument whose
class defines `__tf_tracing_type__` is keyed by that type instead of by identity.

    >>> import jitflow as jf
    >>> issubclass(jf.types.experimental.TraceType, object)
    True
"""
import types as _types

from jitflow.runtime.tracing.trace_types import TraceType

experimental = _types.ModuleType("jitflow.types.experimental", "TF's tf.types.experimental names.")
experimental.__dict__.update(TraceType=TraceType, __all__=["TraceType"])

__all__ = ["experimental"]
