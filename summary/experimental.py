"""`jitflow.summary.experimental`: the default step, as in `tf.summary.experimental`.

Example:
    >>> import jitflow.summary as s
    >>> s.experimental.set_step(5)
    >>> s.experimental.get_step()
    5
    >>> s.experimental.set_step(None)
"""

from __future__ import annotations

from typing import Any

from jitflow.summary import context
from jitflow.summary.values import check_default_step


def set_step(step: Any) -> None:
    """Set the default step for summary calls (None clears it).

    `step` may be an int or something read at each call, like a jitflow
    variable; it is checked now. Inside `writer.as_default()` it applies to this
    thread until the block ends; elsewhere to every thread without its own.
    """
    if step is not None:
        check_default_step(step)
    context.set_step(step)


def get_step() -> Any:
    """The default step (this thread's, else the process-wide one), or None."""
    return context.get_step()


# TF keeps these under tf.summary.experimental too.
from jitflow.summary.writer import has_default_writer, summary_scope, write_raw_pb  # noqa: E402

__all__ = ["set_step", "get_step", "summary_scope", "write_raw_pb", "has_default_writer"]
