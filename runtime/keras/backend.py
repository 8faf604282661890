"""Keras's session-wide state: unique layer names (`dense`, `dense_1`, ...) and `clear_session`.

Keras names every layer from a per-prefix counter so that two `Dense` layers become
`dense` and `dense_1` and their variables `dense/kernel:0` and `dense_1/kernel:0`;
`clear_session()` restarts the counters (seed 001 calls it before building a model).
"""
from __future__ import annotations

import re
import threading
from collections import defaultdict
from typing import Dict

_lock = threading.Lock()
_uids: Dict[str, int] = defaultdict(int)


def unique_name(prefix: str) -> str:
    """`prefix` the first time, then `prefix_1`, `prefix_2`, ... (per session)."""
    with _lock:
        n = _uids[prefix]
        _uids[prefix] += 1
    return prefix if n == 0 else f"{prefix}_{n}"


def to_snake_case(name: str) -> str:
    """Keras's layer-name rule: `Conv2D` → `conv2d`, `MaxPooling2D` → `max_pooling2d`."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def clear_session() -> None:
    """Forget the layer names handed out so far (TF's `tf.keras.backend.clear_session`).

    >>> clear_session(); unique_name("dense"), unique_name("dense")
    ('dense', 'dense_1')
    """
    with _lock:
        _uids.clear()


def epsilon() -> float:
    """The fuzz factor Keras adds to denominators and clips probabilities with."""
    return 1e-7


__all__ = ["unique_name", "to_snake_case", "clear_session", "epsilon"]
