"""`jf.VariableAggregation` and `jf.VariableSynchronization`: TF's enums for Variable options.

jitflow runs one replica, so these only matter to code that passes or inspects them; they
are validated like TF validates them, and kept on the variable.
"""
from __future__ import annotations

import enum
from typing import Any


class VariableSynchronization(enum.Enum):
    """When a distributed variable is synchronised (TF's `tf.VariableSynchronization`).

    >>> VariableSynchronization.AUTO.name
    'AUTO'
    """
    AUTO = 0
    NONE = 1
    ON_WRITE = 2
    ON_READ = 3


class VariableAggregation(enum.Enum):
    """How updates from replicas combine (TF's `tf.VariableAggregation`).

    >>> VariableAggregation.SUM.value
    1
    """
    NONE = 0
    SUM = 1
    MEAN = 2
    ONLY_FIRST_REPLICA = 3


def check_synchronization(value: Any) -> VariableSynchronization:
    if value is None:
        return VariableSynchronization.AUTO
    if not isinstance(value, VariableSynchronization):
        raise ValueError(f"synchronization: expected a jf.VariableSynchronization; got {value!r}")
    return value


def check_aggregation(value: Any) -> VariableAggregation:
    if value is None:
        return VariableAggregation.NONE
    if not isinstance(value, VariableAggregation):
        raise ValueError(f"aggregation: expected a jf.VariableAggregation; got {value!r}")
    return value


__all__ = ["VariableAggregation", "VariableSynchronization"]
