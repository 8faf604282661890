"""GPU op timings in traces: CUDA-event times under the GPU's device in step stats, and a
GPU plane / process of their own in the XSpace and the Chrome trace, beside the host-side
launches. (The simulator's events carry no times; there the host times around each
synchronous launch stand in, so the assertions here are about structure and order.)"""
from __future__ import annotations

import json

import numpy as np

import jitflow as jf
from jitflow.tracer import capture, profile, run_metadata

GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


@jf.function
def layer(x, w):
    with jf.name_scope("dense"):
        y = jf.tanh(jf.matmul(x, w))
    with jf.device("/CPU:0"):
        z = y * 2.0
    return jf.reduce_sum(z)


X = np.ones((2, 3), np.float32)
W = np.full((3, 2), 0.5, np.float32)


def _captured(fn):
    fn()  # trace and warm up outside the capture
    cap = capture.start()
    try:
        fn()
    finally:
        capture.stop()
    return cap


def test_step_stats_list_gpu_ops_under_the_gpu():
    cap = _captured(lambda: layer(X, W))
    meta = run_metadata.build(cap)
    by_device = {d.device: {n.node_name: n for n in d.node_stats} for d in meta.step_stats.dev_stats}
    assert set(by_device) == {GPU0, CPU0}
    assert {"dense/MatMul", "dense/Tanh", "Sum"} <= set(by_device[GPU0])
    assert "mul" in by_device[CPU0]                       # the op placed on the CPU
    assert "dense/Tanh/CopyFromDevice" in by_device[CPU0]  # ... and the copy it needed
    assert "mul/CopyToDevice" in by_device[GPU0] and "x/CopyToDevice" in by_device[GPU0]
    matmul = by_device[GPU0]["dense/MatMul"]
    assert matmul.all_end_rel_nanos >= 0 and matmul.all_start_nanos > 0
    assert matmul.output[0].tensor_description.allocation_description.allocator_name == "GPU_0_bfc"
    assert list(d.size for d in matmul.output[0].tensor_description.shape.dim) == [2, 2]
    # GPU ops appear once, with their device times, not also as host launches
    assert not set(by_device[GPU0]) & set(by_device[CPU0])


def test_profile_has_a_gpu_plane_and_a_gpu_process():
    cap = _captured(lambda: layer(X, W))
    space = profile.build_xspace(cap, "testhost")
    planes = {p.name: p for p in space.planes}
    assert set(planes) == {profile.HOST_PLANE, "/device:GPU:0"}
    gpu = planes["/device:GPU:0"]
    (line,) = gpu.lines
    assert line.name == profile.GPU_LINE
    names = [gpu.event_metadata[e.metadata_id].name for e in line.events]
    assert "dense/MatMul:MatMul" in names and "dense/Tanh:Tanh" in names and "mul:Mul" not in names
    offsets = [e.offset_ps for e in line.events]
    assert offsets == sorted(offsets)
    host_names = {planes[profile.HOST_PLANE].event_metadata[e.metadata_id].name
                  for ln in planes[profile.HOST_PLANE].lines for e in ln.events}
    assert "dense/MatMul:MatMul" in host_names and "mul:Mul" in host_names  # host-side launches

    trace = profile.chrome_trace(cap)
    json.dumps(trace)
    processes = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"] if e.get("name") == "process_name"}
    assert sorted(processes.values()) == ["jitflow /device:GPU:0", "jitflow /host:CPU"]
    gpu_pid = next(p for p, n in processes.items() if n.endswith("GPU:0"))
    gpu_ops = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == gpu_pid]
    assert {e["name"] for e in gpu_ops} >= {"dense/MatMul:MatMul", "Sum:Sum"}
    assert all(e["args"]["device"] == GPU0 and e["dur"] >= 0 for e in gpu_ops)


def test_eager_gpu_ops_are_timed_on_the_gpu():
    x = jf.constant([1.0, 2.0])
    cap = _captured(lambda: jf.exp(x * 2.0))
    assert [e.op_type for e in cap.device] == ["Mul", "Exp"]
    assert all(e.device == GPU0 and e.end_ns >= e.start_ns for e in cap.device)
    assert {"CopyToDevice", "Mul", "Exp"} <= {e.op_type for e in cap.eager}
    space = profile.build_xspace(cap, "testhost")
    assert "/device:GPU:0" in [p.name for p in space.planes]


def test_trace_export_writes_gpu_stats(tmp_path):
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator
    from tensorboard.compat.proto import config_pb2
    layer(X, W)
    writer = jf.summary.create_file_writer(str(tmp_path))
    jf.summary.trace_on(graph=True, profiler=True, profiler_outdir=str(tmp_path))
    layer(X, W)
    with writer.as_default():
        assert jf.summary.trace_export("gpu", step=0)
    writer.close()
    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    meta = config_pb2.RunMetadata.FromString(acc.Tensors("gpu")[0].tensor_proto.string_val[0])
    devices = [d.device for d in meta.step_stats.dev_stats]
    assert GPU0 in devices
    nodes = {n.name: n.device for n in meta.function_graphs[0].pre_optimization_graph.node}
    assert nodes["dense/MatMul"] == GPU0 and nodes["mul"] == CPU0
    planes = list((tmp_path / "plugins" / "profile").glob("*/*.xplane.pb"))
    assert planes and b"/device:GPU:0" in planes[0].read_bytes()


def test_tracing_off_records_nothing():
    from jitflow.runtime.core import instrument
    assert not instrument.enabled
    layer(X, W)
    assert capture.active() is None
