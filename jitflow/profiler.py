"""`jf.profiler`: profile without a summary writer, mark steps, and serve live captures.

As TensorFlow's `tf.profiler`: `start`/`stop`/`Profile` record into a logdir, `Trace`
marks a region (a training step with `step_num`), `server.start(port)` lets TensorBoard's
CAPTURE PROFILE button record from this process, `client.trace(...)` captures from one;
`jf.profiler.experimental` holds the same names under TF's module path.

    >>> import tempfile
    >>> with jf.profiler.Profile(tempfile.mkdtemp()):
    ...     for step in range(2):
    ...         with jf.profiler.Trace("train", step_num=step):
    ...             _ = jf.reduce_sum(jf.ones([4]))
"""
from jitflow.tracer import client as client
from jitflow.tracer import profiler_experimental as experimental
from jitflow.tracer import server as server
from jitflow.tracer.profiler import Profile, ProfilerOptions, Trace, start, stop

__all__ = ["start", "stop", "Profile", "Trace", "ProfilerOptions", "server", "client", "experimental"]
