"""jitflow's tracer: capture what ran (graphs, per-op timing) and export it.

- `capture`: the runtime's instrumentation sink (events while tracing is on)
- `graph_def`: jitflow graphs → TensorFlow GraphDef (shared with the summary writer)
- `run_metadata`: RunMetadata with function graphs and step stats (TensorBoard Graphs)
- `xplane` / `profile`: XSpace and Chrome trace files (TensorBoard Profile, Perfetto)
- `profiler`: `jf.profiler.start/stop/Profile/Trace`
"""
from . import capture, graph_def, profile, profiler, run_metadata, xplane

__all__ = ["capture", "graph_def", "profile", "profiler", "run_metadata", "xplane"]
