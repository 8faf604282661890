"""jitflow's tracer: capture what ran (graphs, per-op timing) and export it.

- `capture`: the runtime's instrumentation sink (events while tracing is on; several
  captures at once, per thread or process-wide)
- `attribution`: how a compiled segment's time is split among the ops it fused
- `graph_def`: jitflow graphs → TensorFlow GraphDef (shared with the summary writer)
- `run_metadata`: RunMetadata with function graphs and step stats (TensorBoard Graphs)
- `xplane` / `profile`: XSpace and Chrome trace files (TensorBoard Profile, Perfetto)
- `profiler` / `profiler_experimental`: `jf.profiler` and `jf.profiler.experimental`
- `service_protos` / `server` / `client`: TensorFlow's ProfilerService over gRPC, so
  TensorBoard's CAPTURE PROFILE (and `jitflow capture`) can profile a running job
"""
from . import (attribution, capture, client, graph_def, profile, profiler, profiler_experimental, run_metadata,
               server, service_protos, xplane)

__all__ = ["attribution", "capture", "client", "graph_def", "profile", "profiler", "profiler_experimental",
           "run_metadata", "server", "service_protos", "xplane"]
