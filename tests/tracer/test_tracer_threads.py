"""trace_on / trace_export from several threads at once, and profiles on a full disk."""
from __future__ import annotations

import glob
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np

import jitflow as jf
from jitflow.tracer import capture
from tracer_testutil import node_stats, read_tag

ROUNDS = 5
THREADS = 4


def _make(i: int):
    def body(x):
        with jf.name_scope(f"thread{i}"):
            return jf.tanh(x * float(i + 1))
    return jf.function(body, name=f"fn{i}")


def test_four_threads_trace_and_export_independently(tmp_path):
    """Each thread's trace holds its own function only, and every export is written."""
    functions = [_make(i) for i in range(THREADS)]
    x = jf.constant(np.ones(16, np.float32))
    barrier = threading.Barrier(THREADS)
    errors, written = [], []

    def work(i: int) -> None:
        try:
            writer = jf.summary.create_file_writer(str(tmp_path / f"t{i}"))
            for step in range(ROUNDS):
                barrier.wait()  # all four record at the same moment
                jf.summary.trace_on(graph=True, profiler=True, profiler_outdir=str(tmp_path / f"p{i}"))
                functions[i](x)
                barrier.wait()
                with writer.as_default():
                    written.append(jf.summary.trace_export(f"trace{i}", step=step))
            writer.close()
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert written == [True] * (ROUNDS * THREADS)
    for i in range(THREADS):
        for step in range(ROUNDS):
            meta, _, _ = read_tag(str(tmp_path / f"t{i}"), f"trace{i}", index=step)
            names = {ns.node_name for ns in node_stats(meta)}
            assert names and all(n.startswith(f"thread{i}/") for n in names), (i, names)
            (graph,) = [g.pre_optimization_graph for g in meta.function_graphs]
            assert {n.name for n in graph.node if n.op == "Tanh"} == {f"thread{i}/Tanh"}
        assert len(glob.glob(str(tmp_path / f"p{i}" / "plugins" / "profile" / "*" / "*.xplane.pb"))) == ROUNDS
    assert capture.recording() == []


@jf.function
def _plus_one(x):
    return x + 1.0


def test_trace_off_in_one_thread_leaves_the_others_recording(tmp_path):
    f = _plus_one
    x = jf.constant(np.ones(4, np.float32))
    jf.summary.trace_on(graph=True)
    other = {}

    def elsewhere():
        jf.summary.trace_on(graph=True)
        other["capture"] = capture.active()
        jf.summary.trace_off()

    t = threading.Thread(target=elsewhere)
    t.start()
    t.join()
    mine = capture.active()
    assert mine is not None and other["capture"] is not mine
    f(x)
    assert mine.runs and not other["capture"].runs
    jf.summary.trace_off()


def test_a_full_disk_never_leaves_a_truncated_profile(tmp_path):
    """RLIMIT_FSIZE stands in for a full disk: the export fails with a clear error and
    leaves neither a partial .xplane.pb / .trace.json.gz nor a temporary file."""
    script = textwrap.dedent(f"""
        import os, resource, signal, sys
        import numpy as np
        import jitflow as jf
        from jitflow.tracer import capture, profile
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        f = jf.function(lambda x: jf.reduce_sum(jf.tanh(x) * 2.0), jit_compile=False)
        x = jf.constant(np.ones(8, np.float32))
        f(x)
        c = capture.start()
        for _ in range(400):
            f(x)
        capture.stop(c)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, resource.RLIM_INFINITY))
        try:
            profile.write(c, {str(tmp_path)!r})
        except OSError as e:
            print("ERROR", e)
            sys.exit(3)
        print("WROTE")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "profiler_outdir: cannot write the profile under" in result.stdout
    left = [p for p in glob.glob(str(tmp_path / "plugins" / "profile" / "**" / "*"), recursive=True)
            if os.path.isfile(p)]
    assert left == [], left  # nothing half-written, no temporary file, no empty run directory listed
    assert glob.glob(str(tmp_path / "plugins" / "profile" / "*")) == []
