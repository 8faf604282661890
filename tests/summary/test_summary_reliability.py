"""Threads, killed processes, interpreter exit, failing disks, backpressure."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from summary_testutil import accumulate, event_files, load_events, read_records
from tensorboard.compat.proto import event_pb2
from tensorboard.util import tensor_util

import jitflow.summary as s
from jitflow.summary import event_file, record_writer


def scalar_points(path) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] of every whole record (CRCs checked)."""
    payloads, _ = read_records(path)
    out: dict[str, list] = {}
    for p in payloads:
        ev = event_pb2.Event.FromString(p)
        for v in ev.summary.value:
            if v.WhichOneof("value") == "simple_value":
                value = v.simple_value
            else:  # tensor scalars; other summaries are counted with value None
                value = v.tensor.float_val[0] if len(v.tensor.float_val) == 1 else None
            out.setdefault(v.tag, []).append((ev.step, value))
    return out


def test_many_threads_through_one_tf_writer(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=7)
    n_threads, n = 8, 1500
    errors = []

    def work(k):
        try:
            with w.as_default():
                for i in range(n):
                    assert s.scalar(f"t{k}", float(i * k), step=i)
                    if i % 500 == 0:
                        s.histogram(f"h{k}", np.arange(10.0), step=i)
                        w.flush()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    assert not errors
    (path,) = event_files(tmp_path)
    points = scalar_points(path)
    for k in range(n_threads):
        got = sorted(points[f"t{k}"])
        assert got == [(i, float(np.float32(i * k))) for i in range(n)]
    assert len(points) == 2 * n_threads  # t* and h* tags, nothing else
    assert all(len(points[f"h{k}"]) == 3 for k in range(n_threads))


def test_many_threads_through_one_torch_writer(tmp_path):
    w = s.SummaryWriter(str(tmp_path), max_queue=3)
    n_threads, n = 6, 1000

    def work(k):
        for i in range(n):
            w.add_scalar("shared", float(k * n + i), k * n + i)
            if i % 250 == 0:
                w.add_scalars("multi", {f"k{k}": float(i)}, i)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    w.close()
    (path,) = event_files(tmp_path)
    shared = sorted(scalar_points(path)["shared"])
    assert shared == [(j, float(j)) for j in range(n_threads * n)]
    for k in range(n_threads):
        (sub,) = event_files(tmp_path / f"multi_k{k}")
        assert sorted(scalar_points(sub)["multi"]) == [(i, float(i)) for i in range(0, n, 250)]


CHILD = textwrap.dedent("""
    import sys, time
    import jitflow.summary as s
    logdir, mode = sys.argv[1], sys.argv[2]
    w = s.create_file_writer(logdir, max_queue=50, flush_millis=10**9)
    w.set_as_default()
    for i in range(200):
        s.scalar("before", float(i), step=i)
    s.text("note", "flushed", step=0)
    w.flush()
    print("FLUSHED", flush=True)
    i = 0
    while True:  # keep writing, flushing now and then, until killed
        s.scalar("after", float(i), step=i)
        i += 1
        time.sleep(0.0002)  # keep the file small: TensorBoard's reader is slow
        if mode == "flushing" and i % 97 == 0:
            w.flush()
""")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["queued", "flushing"])
def test_sigkill_keeps_everything_flushed(tmp_path, mode):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path), mode],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "FLUSHED", proc.stderr.read()
        time.sleep(0.3)  # let it write (and flush) more, then kill mid-stream
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    (path,) = event_files(tmp_path)
    points = scalar_points(path)  # every whole record has valid CRCs
    assert points["before"] == [(i, float(i)) for i in range(200)]
    after = points.get("after", [])
    assert after == [(i, float(i)) for i in range(len(after))]  # a prefix, in order
    if mode == "flushing":
        assert len(after) >= 97  # flushed ones survived the kill
    # TensorBoard's own loader reads the file up to its last whole record.
    payloads, _ = read_records(path)
    assert len(load_events(path)) == len(payloads)
    acc = accumulate(tmp_path)
    assert len(acc.Tensors("before")) == 200
    assert tensor_util.make_ndarray(acc.Tensors("note")[0].tensor_proto).item() == b"flushed"


def test_torn_last_record_is_the_end_of_the_file(tmp_path):
    w = s.create_file_writer(str(tmp_path / "src"))
    with w.as_default():
        for i in range(5):
            s.scalar("x", float(i), step=i)
    w.close()
    (src,) = event_files(tmp_path / "src")
    good = open(src, "rb").read()
    extra = record_writer.frame(event_pb2.Event(step=99, wall_time=1.0).SerializeToString())
    for cut in [1, 8, 12, 13, len(extra) - 1]:
        path = tmp_path / f"events.out.tfevents.cut{cut}"
        path.write_bytes(good + extra[:cut])
        events = load_events(str(path))
        assert len(events) == 6 and events[-1].step == 4
        assert read_records(str(path))[1] == cut


ATEXIT_CHILD = textwrap.dedent("""
    import sys
    import jitflow.summary as s
    w = s.create_file_writer(sys.argv[1] + "/tf", max_queue=1000, flush_millis=10**9)
    with s.record_if(True):
        w.set_as_default(step=1)
        for i in range(50):
            s.scalar("x", float(i), step=i)
    t = s.SummaryWriter(sys.argv[1] + "/torch", max_queue=1000, flush_secs=10**6)
    for i in range(30):
        t.add_scalar("y", float(i), i)
    # no flush, no close: interpreter exit must write everything
""")


@pytest.mark.slow
def test_interpreter_exit_flushes(tmp_path):
    subprocess.run([sys.executable, "-c", ATEXIT_CHILD, str(tmp_path)], check=True, timeout=60)
    (tf_path,) = event_files(tmp_path / "tf")
    (torch_path,) = event_files(tmp_path / "torch")
    assert scalar_points(tf_path)["x"] == [(i, float(i)) for i in range(50)]
    assert scalar_points(torch_path)["y"] == [(i, float(i)) for i in range(30)]


class FailingFile:
    def __init__(self, real):
        self.real = real

    def write(self, data):
        raise OSError(28, "No space left on device")

    def flush(self):
        pass

    def close(self):
        self.real.close()


def test_background_error_is_raised_on_the_next_call(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=2)
    w.set_as_default(step=0)
    s.scalar("ok", 1.0)
    w.flush()
    sink = w._events._sink
    sink._file = FailingFile(sink._file)
    s.scalar("x", 1.0)
    with pytest.raises(OSError, match="No space left on device"):
        w.flush()
    with pytest.raises(OSError, match="No space left on device"):
        s.scalar("x", 2.0)
    with pytest.raises(OSError, match="No space left on device"):
        w.close()
    w.close()  # closed now; no second report
    assert len(accumulate(tmp_path).Tensors("ok")) == 1  # earlier data intact


class SlowFile:
    def __init__(self, real):
        self.real = real
        self.writes = 0

    def write(self, data):
        time.sleep(0.01)
        self.writes += 1
        return self.real.write(data)

    def flush(self):
        self.real.flush()

    def close(self):
        self.real.close()


def test_queue_is_bounded(tmp_path):
    ev = event_file.EventFileWriter(str(tmp_path), max_queue=20)
    ev._sink._file = SlowFile(ev._sink._file)
    worst = 0
    payload = event_pb2.Event(step=1).SerializeToString()
    for _ in range(300):
        ev.add(payload)
        worst = max(worst, len(ev._sink._queue))
    ev.close()
    assert worst <= 20  # a slow disk makes the caller wait, never the queue grow
    assert len(read_records(ev.path)[0]) == 301  # header + all of them


def test_flush_returns_only_when_on_disk(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=10**6, flush_millis=10**9)
    w.set_as_default()
    for i in range(1000):
        s.scalar("x", float(i), step=i)
    (path,) = event_files(tmp_path)
    assert len(read_records(path)[0]) == 1  # only the header so far
    w.flush()
    assert len(read_records(path)[0]) == 1001
    w.close()
