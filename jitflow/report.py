"""`jitflow inspect LOGDIR`: a terminal summary of a logdir.

Runs, scalar tags with their last values, functions with their traces and retrace
reasons, and the slowest ops of each exported trace — read with TensorBoard's loaders
through the panel's logdir model, so the terminal and the panel agree.
"""
from __future__ import annotations

import os
from typing import List, TextIO

from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.util import tensor_util


def _last_scalars(path: str) -> List[tuple]:
    acc = pea.EventAccumulator(path, size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    out = []
    for tag in sorted(acc.Tags().get("tensors", [])):
        if acc.SummaryMetadata(tag).plugin_data.plugin_name != "scalars":
            continue
        events = acc.Tensors(tag)
        if events:
            value = tensor_util.make_ndarray(events[-1].tensor_proto)
            out.append((tag, events[-1].step, float(value)))
    for tag in sorted(acc.Tags().get("scalars", [])):
        events = acc.Scalars(tag)
        if events:
            out.append((tag, events[-1].step, float(events[-1].value)))
    return out


def report(logdir: str, stream: TextIO, top_ops: int = 5) -> int:
    """Write the summary of `logdir` to `stream`; returns the number of runs found."""
    from jitflow.webui.charts import plural  # lazy: TensorBoard loaders, for `jitflow inspect`
    from jitflow.webui.logdir import Logdir  # lazy: TensorBoard loaders, for `jitflow inspect`
    from jitflow.webui.model import functions, op_profile  # lazy: TensorBoard loaders, for `jitflow inspect`

    runs = Logdir(logdir).runs()
    if not runs:
        stream.write(f"no runs with event files under {os.path.abspath(logdir)}\n")
        return 0
    for run in runs:
        stream.write(f"run {run.name}  " + ("(no steps)" if run.last_step is None else f"(last step {run.last_step})")
                     + "\n")
        for error in run.errors:
            stream.write(f"  ! {error}\n")
        scalars = _last_scalars(run.path)
        if scalars:
            stream.write("  scalars (last value):\n")
            for tag, step, value in scalars:
                stream.write(f"    {tag:<30} {value:>12.6g}  @ step {step}\n")
        fns = functions(run.records)
        if fns:
            stream.write("  functions:\n")
            for fn in fns:
                warn = "  [retraces often]" if fn["warning"] else ""
                calls = "" if fn["calls"] is None else plural(fn["calls"], "call") + ", "
                compiled = ("" if fn["compile_seconds"] is None
                            else f", {fn['compile_seconds'] * 1e3:.1f} ms compiling")
                stream.write(f"    {fn['function']}: {calls}{plural(fn['traces'], 'trace')}, "
                             f"{plural(fn['retraces'], 'retrace')}, "
                             f"{fn['trace_seconds'] * 1e3:.1f} ms tracing{compiled}{warn}\n")
                for trace in fn["retrace_list"]:
                    stream.write(f"      #{trace['trace_number']}: {trace['reason']}\n")
        for ref in run.profiles:
            if not ref.has_step_stats:
                continue
            prof = op_profile(run.run_metadata(ref))
            stream.write(f"  trace {ref.tag!r} @ step {ref.step}: {prof['node_executions']} op runs, "
                         f"{prof['total_us'] / 1e3:.2f} ms; top ops:\n")
            for row in prof["by_op"][:top_ops]:
                stream.write(f"    {row['name']:<28} {row['count']:>5}x  {row['total_us'] / 1e3:>9.3f} ms  "
                             f"{row['share'] * 100:5.1f}%\n")
    return len(runs)
