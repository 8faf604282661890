"""`jf.profiler.experimental`: TensorFlow's `tf.profiler.experimental` names.

`start`, `stop`, `Profile`, `Trace`, `ProfilerOptions` (see `profiler`), `server`
(the gRPC profiler service TensorBoard captures from) and `client` (the capture client).
"""
from __future__ import annotations

from . import client, server
from .profiler import Profile, ProfilerOptions, Trace, start, stop

__all__ = ["start", "stop", "Profile", "Trace", "ProfilerOptions", "server", "client"]
