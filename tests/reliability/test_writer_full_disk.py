"""Issue #22 item 6: a full disk is never silent.

A child process gets a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored, so a
write past it fails with EFBIG as on a full disk). The error must surface on
the next call, on flush() and close(), and, when it first happens at
interpreter exit (or at the end of a multiprocessing child, or in the
process-wide flusher thread with no call after it), as a loud report on stderr
and a non-zero exit status. The file keeps every record written before.
"""

from __future__ import annotations

import errno
import json
import re

import pytest
from writer_util import event_files, loaded_events, run_child, whole_records

resource = pytest.importorskip("resource")
pytestmark = pytest.mark.slow

PRELUDE = """
    import errno, json, multiprocessing, resource, signal, sys, time
    import jitflow.summary as s

    def limit_file_size(nbytes):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a core dump
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    logdir, mode = sys.argv[1], sys.argv[2]
"""

NEXT_CALL = PRELUDE + """
    limit_file_size(2000)
    w = s.create_file_writer(logdir, max_queue=5)
    w.set_as_default()
    seen = []
    written = 0
    for i in range(1000):
        try:
            s.scalar("x", float(i), step=i)
            written += 1
        except OSError as e:
            seen.append(["scalar", e.errno, str(e)])
            break
    for call in (lambda: s.scalar("x", 1.0, step=0), w.flush, w.close):
        try:
            call()
            seen.append(["ok"])
        except OSError as e:
            seen.append(["raised", e.errno, str(e)])
    w.close()  # closed now: nothing more to report
    print(json.dumps({"seen": seen, "path": w.path, "returned_true": written}))
"""


def test_write_error_surfaces_on_the_next_call_flush_and_close(tmp_path):
    r = run_child(NEXT_CALL, tmp_path, "next")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    seen = out["seen"]
    assert seen[0][:2] == ["scalar", errno.EFBIG] and out["path"] in seen[0][2]
    assert [x[:2] for x in seen[1:]] == [["raised", errno.EFBIG]] * 3  # next call, flush, close
    assert "SUMMARY DATA LOST" not in r.stderr  # the program saw the error: no report at exit
    events, _ = whole_records(out["path"])  # what was written stays readable
    assert len(loaded_events(out["path"])) == len(events) > 5
    steps = [e.step for e in events if e.summary.value]
    assert steps == list(range(len(steps))) and len(steps) <= out["returned_true"]


AT_EXIT = PRELUDE + """
    w = s.create_file_writer(logdir, max_queue=1000, flush_millis=10**9)
    w.set_as_default()
    limit_file_size(600)  # the header and a few records fit
    for i in range(128):
        assert s.scalar("x", float(i), step=i)
    if mode == "flusher":  # the process-wide thread hits the error; nobody calls afterwards
        w._events._sink._flush_secs = 0.05
        from jitflow.summary import lifecycle; lifecycle._wake.set()
        time.sleep(1.0)
    print(json.dumps({"path": w.path}), flush=True)
    # no flush, no close: interpreter exit writes (and fails)
"""


@pytest.mark.parametrize("mode", ["exit", "flusher"])
def test_write_error_first_seen_at_exit_is_loud_and_fails_the_process(tmp_path, mode):
    r = run_child(AT_EXIT, tmp_path, mode)
    path = json.loads(r.stdout.splitlines()[0])["path"]
    assert r.returncode != 0, r.stderr
    assert "SUMMARY DATA LOST" in r.stderr and path in r.stderr and "File too large" in r.stderr
    reported = int(re.search(r"(\d+) summaries could not be written", r.stderr).group(1))
    steps = [e.step for e in whole_records(path)[0] if e.summary.value]
    assert steps == list(range(len(steps)))  # what made it is whole and in order
    assert reported + len(steps) == 128  # the report counts exactly what is missing
    assert len(loaded_events(path)) == len(steps) + 1


MP_CHILD = PRELUDE + """
    def child():
        limit_file_size(600)
        for i in range(128):
            s.scalar("x", float(i), step=i)  # queued; the child ends without flush()

    if __name__ == "__main__":
        w = s.create_file_writer(logdir, max_queue=1000, flush_millis=10**9)
        w.set_as_default()
        p = multiprocessing.get_context("fork").Process(target=child)
        p.start()
        p.join()
        w.close()
        print(json.dumps({"exitcode": p.exitcode}))
"""


def test_write_error_at_the_end_of_a_multiprocessing_child_fails_the_child(tmp_path):
    r = run_child(MP_CHILD, tmp_path, "mp")
    assert r.returncode == 0, r.stderr  # the parent lost nothing
    assert json.loads(r.stdout)["exitcode"] == 1
    assert "SUMMARY DATA LOST" in r.stderr and "File too large" in r.stderr
    assert len(event_files(tmp_path)) == 2  # the parent's and the child's own


FLUSHER_THEN_CALL = PRELUDE + """
    w = s.SummaryWriter(logdir, max_queue=1000, flush_secs=0.05)
    limit_file_size(600)
    for i in range(128):
        w.add_scalar("x", float(i), i)
    deadline = time.monotonic() + 30
    while w.file_writer._sink._error is None and time.monotonic() < deadline:
        time.sleep(0.01)  # the shared flusher thread writes (and fails) within flush_secs
    seen = []
    for call in (lambda: w.add_scalar("x", 1.0, 0), w.flush, w.close, w.close):
        try:
            call()
            seen.append("ok")
        except OSError as e:
            seen.append(e.errno)
    print(json.dumps(seen))
"""


def test_write_error_in_the_flusher_thread_surfaces_on_the_next_call(tmp_path):
    r = run_child(FLUSHER_THEN_CALL, tmp_path, "flusher-next")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [errno.EFBIG, errno.EFBIG, errno.EFBIG, "ok"]
    assert "SUMMARY DATA LOST" not in r.stderr  # seen by the program: nothing to report
