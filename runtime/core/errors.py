"""Error classes mirroring `tf.errors`, so `except jf.errors.InvalidArgumentError` works.

Each also derives from the built-in exception a Python user would expect
(`InvalidArgumentError` is a `ValueError`), so code written either way catches it.
"""
from __future__ import annotations


class OpError(Exception):
    """Base class for errors raised while running an op or a graph."""


class InvalidArgumentError(OpError, ValueError):
    """An op received an argument it cannot work with (shape, value, dtype)."""


class InputSignatureError(InvalidArgumentError, TypeError):
    """A value does not match a concrete function's input signature.

    Both an `InvalidArgumentError` (what TF 2.0 raised, seed 002) and a `TypeError`
    (what current TF raises), so either `except` clause catches it.
    """


class ResourceExhaustedError(OpError, MemoryError):
    """A device allocator ran out of its memory limit."""


class FailedPreconditionError(OpError, RuntimeError):
    """An op ran in a state where it cannot (e.g. reading an uninitialised value)."""


class UnimplementedError(OpError, NotImplementedError):
    """An op has no kernel for the requested device or dtype."""


class OutOfRangeError(OpError, IndexError):
    """An index or iteration went past the end (e.g. a TensorArray read beyond its size)."""


class NotFoundError(OpError, FileNotFoundError):
    """A file or object that was asked for does not exist (e.g. a checkpoint path)."""


class DataLossError(OpError, ValueError):
    """Stored data is truncated or corrupt (e.g. a checkpoint file that fails its checksum)."""


class UnavailableError(OpError, RuntimeError):
    """A peer the operation needs is gone (e.g. a worker of a multi-worker job died)."""


class AbortedError(OpError, RuntimeError):
    """The operation was aborted because another participant failed (e.g. a replica raised)."""


class DeadlineExceededError(OpError, TimeoutError):
    """The operation did not complete in time (e.g. a collective whose peers never arrived)."""


__all__ = ["OpError", "InvalidArgumentError", "InputSignatureError", "ResourceExhaustedError",
           "FailedPreconditionError", "UnimplementedError", "OutOfRangeError", "NotFoundError", "DataLossError",
           "UnavailableError", "AbortedError", "DeadlineExceededError"]
