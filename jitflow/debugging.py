"""`jf.debugging`: TensorFlow's traceback-filtering switches (`tf.debugging`).

Errors raised inside a `jf.function` keep only the user's frames (and one filter frame),
as TF does; turn the filter off to see jitflow's own frames too.

    >>> jf.debugging.is_traceback_filtering_enabled()
    True
    >>> jf.debugging.disable_traceback_filtering()
    >>> jf.debugging.enable_traceback_filtering()
"""
from jitflow.runtime.core.traceback_filter import (disable_traceback_filtering, enable_traceback_filtering,
                                                   is_traceback_filtering_enabled)

__all__ = ["enable_traceback_filtering", "disable_traceback_filtering", "is_traceback_filtering_enabled"]
