"""`jf.keras.callbacks`: the runtime's callbacks and the `TensorBoard` callback.

    >>> tb = TensorBoard(log_dir="logs", histogram_freq=1, profile_batch=2)
"""
from __future__ import annotations

from jitflow.runtime.keras.callbacks import *  # noqa: F401,F403
from jitflow.runtime.keras.callbacks import __all__ as _runtime_all
from jitflow.summary.keras_callback import TensorBoard

__all__ = [*_runtime_all, "TensorBoard"]
