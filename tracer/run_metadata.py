"""A capture → `RunMetadata` with function graphs and step stats for TensorBoard's graph view.

TensorBoard merges several `function_graphs` by prefixing each graph's nodes with
`graph_<i>/`; step stats use the same prefixes so that every `NodeExecStats.node_name`
names a node of the merged graph (that is how the view colours nodes by compute time
and memory). Eager ops have no graph node, so they go to the profile only. A node that
ran on a GPU is listed under that GPU with its kernel's CUDA-event times (its host-side
launch is in the profile).
"""
from __future__ import annotations

from typing import Dict, List

from tensorboard.compat.proto import (allocation_description_pb2, config_pb2, step_stats_pb2,
                                      tensor_description_pb2)

from jitflow.runtime.core import dtypes as _dt

from .capture import Capture, OpEvent
from .graph_def import shape_proto, to_graph_def


def _node_stats(event: OpEvent, name: str, capture: Capture) -> step_stats_pb2.NodeExecStats:
    start_ns = capture.wall_ns(event.start_ns)
    dur_ns = event.duration_ns
    stats = step_stats_pb2.NodeExecStats(
        node_name=name,
        all_start_micros=start_ns // 1000,
        op_start_rel_micros=0,
        op_end_rel_micros=dur_ns // 1000,
        all_end_rel_micros=dur_ns // 1000,
        all_start_nanos=start_ns,
        op_start_rel_nanos=0,
        op_end_rel_nanos=dur_ns,
        all_end_rel_nanos=dur_ns,
        thread_id=event.thread_id & 0xFFFFFFFF,
        timeline_label=f"{name} = {event.op_type}({', '.join(event.inputs)})",
    )
    total = 0
    allocator = f"GPU_{event.device.rsplit(':', 1)[1]}_bfc" if ":GPU:" in event.device else "cpu"
    for slot, (dtype_name, shape, nbytes) in enumerate(event.outputs):
        dtype = _dt.as_dtype(dtype_name) if dtype_name in ("float16", "float32", "float64", "int8", "int16",
                                                           "int32", "int64", "uint8", "bool", "string") else None
        stats.output.append(step_stats_pb2.NodeOutput(
            slot=slot,
            tensor_description=tensor_description_pb2.TensorDescription(
                dtype=dtype.tf_enum if dtype else 0,
                shape=shape_proto(shape),
                allocation_description=allocation_description_pb2.AllocationDescription(
                    requested_bytes=nbytes, allocated_bytes=nbytes, allocator_name=allocator))))
        total += nbytes
    if total:
        stats.memory.append(step_stats_pb2.AllocatorMemoryUsed(
            allocator_name=allocator, total_bytes=total, peak_bytes=total, live_bytes=0))
    return stats


def build(capture: Capture, include_graphs: bool = True) -> config_pb2.RunMetadata:
    """RunMetadata for everything `capture` saw run in jf.functions."""
    meta = config_pb2.RunMetadata()
    functions = capture.functions()
    prefix: Dict[int, str] = {}
    for i, concrete in enumerate(functions):
        prefix[id(concrete)] = "" if len(functions) == 1 else f"graph_{i + 1}/"
        if include_graphs:
            meta.function_graphs.add().pre_optimization_graph.CopyFrom(to_graph_def(concrete.graph))
    by_device: Dict[str, List[step_stats_pb2.NodeExecStats]] = {}
    for run in capture.runs:
        p = prefix[id(run.concrete)]
        on_gpu = run.device_events if run.device_ticks else []
        timed = {e.name for e in on_gpu}
        for event in run.events:
            if event.name not in timed:
                by_device.setdefault(event.device, []).append(_node_stats(event, p + event.name, capture))
        hosts = {e.name: e for e in run.events} if on_gpu else {}
        for event in on_gpu:
            host = hosts.get(event.name)
            if host is not None:
                event.outputs = host.outputs
            by_device.setdefault(event.device, []).append(_node_stats(event, p + event.name, capture))
    for device, stats in by_device.items():
        dev = meta.step_stats.dev_stats.add(device=device)
        dev.node_stats.extend(stats)
    return meta
