"""`jf.debugging`: TensorFlow's traceback-filtering switches and assertions (`tf.debugging`).

Errors raised inside a `jf.function` keep only the user's frames (and one filter frame),
as TF does; turn the filter off to see jitflow's own frames too.

    >>> jf.debugging.is_traceback_filtering_enabled()
    True
    >>> jf.debugging.disable_traceback_filtering()
    >>> jf.debugging.enable_traceback_filtering()
"""
from jitflow.runtime.core.traceback_filter import (disable_traceback_filtering, enable_traceback_filtering,
                                                   is_traceback_filtering_enabled)

from jitflow.runtime.ops.check_ops import (assert_equal, assert_greater, assert_less, assert_non_negative,
                                           check_numerics)

__all__ = ["enable_traceback_filtering", "disable_traceback_filtering", "is_traceback_filtering_enabled",
           "assert_equal", "assert_greater", "assert_less", "assert_non_negative", "check_numerics"]
