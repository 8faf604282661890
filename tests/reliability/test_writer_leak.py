"""Issue #22 item 8: writers dropped without close() leak nothing.

A writer that is garbage-collected closes its file (writing what it queued);
all writers of a process share one background thread. 300 dropped writers must
not grow the thread count or the open descriptors, and a process limited to 64
descriptors must be able to create and drop them all.
"""

from __future__ import annotations

import gc
import os
import threading
import time

import pytest
from writer_util import event_files, loaded_events, run_child, run_scalars
from writer_util import fresh_summary_defaults  # noqa: F401 (autouse fixture)

import jitflow.summary as s
from jitflow.summary import context

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts fds in /proc/self/fd")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _settle(baseline_fds: int) -> int:
    # Writers collected while their lock was held are closed by the flusher thread.
    deadline = time.monotonic() + 10
    while _open_fds() > baseline_fds and time.monotonic() < deadline:
        gc.collect()
        time.sleep(0.01)
    return _open_fds()


def _drop_writers(root, n: int) -> None:
    for k in range(n):
        kind = k % 3
        if kind == 0:
            w = s.create_file_writer(str(root / f"tf{k}"), max_queue=100)
            w.set_as_default(step=k)  # replaces (and so drops) the previous default
            s.scalar("x", float(k))  # queued only
        elif kind == 1:
            w = s.SummaryWriter(str(root / f"torch{k}"), max_queue=100)
            w.add_scalar("x", float(k), k)
            w.add_scalars("pair", {"a": float(k)}, k)  # and a sub-run file
        else:
            w = s.SummaryWriter(str(root / f"cycle{k}"), max_queue=100)
            w.add_scalar("x", float(k), k)
            w.me = w  # only the cycle collector frees this one
        del w
    context.set_global_writer(None)


def test_dropped_writers_close_and_leak_no_threads_or_fds(tmp_path):
    warm = s.create_file_writer(str(tmp_path / "warm"))  # starts the shared thread
    warm.close()
    gc.collect()
    threads, fds = set(threading.enumerate()), _open_fds()
    _drop_writers(tmp_path, 300)
    assert _settle(fds) == fds
    # no thread left behind (a background thread of an earlier test, e.g. jitflow loading numba
    # or compiling a function, may end meanwhile: compare sets of live threads, not counts)
    assert [t.name for t in set(threading.enumerate()) - threads if t.is_alive()] == []
    # Every dropped writer wrote what it had queued when it was collected.
    for k in range(300):
        kind = ("tf", "torch", "cycle")[k % 3]
        (path,) = event_files(tmp_path / f"{kind}{k}")
        assert run_scalars(tmp_path / f"{kind}{k}") == {"x": [(k, float(k))]}
        assert len(loaded_events(path)) == 2
        if kind == "torch":
            assert run_scalars(tmp_path / f"{kind}{k}" / "pair_a") == {"pair": [(k, float(k))]}


def test_many_live_writers_share_one_thread(tmp_path):
    before = threading.active_count()
    writers = [s.SummaryWriter(str(tmp_path / f"r{k % 5}")) for k in range(50)]
    assert threading.active_count() <= max(before, 1) + 1
    for w in writers:
        w.close()


@pytest.mark.slow
def test_dropping_300_writers_under_a_64_descriptor_limit(tmp_path):
    r = run_child("""
        import resource, sys
        import jitflow.summary as s
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        for k in range(300):
            w = s.create_file_writer(sys.argv[1] + f"/run{k}")
            w.set_as_default(step=k)
            s.scalar("x", float(k))
            del w  # the next set_as_default drops the last reference
        print("OK")
    """, tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "OK", r.stderr
    assert len(list(tmp_path.iterdir())) == 300
    assert run_scalars(tmp_path / "run299") == {"x": [(299, 299.0)]}


def test_adds_racing_close_are_written_or_raise(tmp_path):
    # Threads keep adding while another closes: every call either returned
    # (and its summary is in the file) or raised; nothing vanishes.
    for attempt in range(3):
        w = s.SummaryWriter(str(tmp_path / f"race{attempt}"), max_queue=3)
        returned = [0] * 4

        def work(k):
            try:
                for i in range(100000):
                    w.add_scalar(f"t{k}", float(i), i)
                    returned[k] += 1
            except RuntimeError as e:
                assert "closed" in str(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        time.sleep(0.01)
        w.close()
        for t in threads:
            t.join()
        got = run_scalars(tmp_path / f"race{attempt}")
        for k in range(4):
            steps = [step for step, _ in got.get(f"t{k}", [])]
            assert steps == list(range(returned[k]))
