"""Issue #22 item 7: `max_queue` bounds what a SIGKILL loses.

A child writes scalars as fast as it can and, after each call returns, stores
how many calls returned in a shared page. The parent stops it (SIGSTOP), reads
that count `c`, and kills it (SIGKILL). At most `max_queue` summaries may wait
in memory, so the file must hold at least `c - max_queue` of them, whole, in
order, readable by TensorBoard.
"""

from __future__ import annotations

import mmap
import signal
import struct
import subprocess
import sys
import textwrap
import time

import pytest
from writer_util import event_files, loaded_events, whole_records

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent("""
    import mmap, struct, sys
    import jitflow.summary as s
    logdir, style, max_queue, counter_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    with open(counter_path, "r+b") as f:
        page = mmap.mmap(f.fileno(), 8)
    pack = struct.Struct("<q").pack_into
    if style == "tf":
        w = s.create_file_writer(logdir, max_queue=max_queue, flush_millis=10**9)
        w.set_as_default()
        add = lambda i: s.scalar("x", float(i), step=i)
    else:
        w = s.SummaryWriter(logdir, max_queue=max_queue, flush_secs=10**6)
        add = lambda i: w.add_scalar("x", float(i), i)
    i = 0
    while True:
        add(i)
        i += 1
        pack(page, 0, i)  # calls that returned
""")


def _kill_after(tmp_path, style: str, max_queue: int, at_least: int) -> tuple[int, list[int]]:
    counter = tmp_path / "counter"
    counter.write_bytes(b"\0" * 8)
    logdir = tmp_path / "logs"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(logdir), style, str(max_queue), str(counter)],
                            stderr=subprocess.PIPE, text=True)
    try:
        with open(counter, "r+b") as f:
            page = mmap.mmap(f.fileno(), 8)
        deadline = time.monotonic() + 60
        while struct.unpack_from("<q", page)[0] < at_least:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the child wrote too slowly"
            time.sleep(0.005)
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.05)  # let the stop land
        returned = struct.unpack_from("<q", page)[0]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    (path,) = event_files(logdir)
    events, _ = whole_records(path)  # every whole record has valid CRCs
    steps = [e.step for e in events if e.summary.value]
    assert len(loaded_events(path)) == len(events)  # TensorBoard reads all of them
    return returned, steps


@pytest.mark.parametrize("style,max_queue", [("tf", 10), ("tf", 0), ("torch", 10), ("torch", 200)])
def test_sigkill_loses_at_most_max_queue_summaries(tmp_path, style, max_queue):
    for attempt, at_least in enumerate([1000, 4000]):
        run = tmp_path / f"kill{attempt}"
        run.mkdir()
        returned, steps = _kill_after(run, style, max_queue, at_least)
        assert steps == list(range(len(steps)))  # a prefix, in order, nothing twice
        assert len(steps) >= returned - max_queue, \
            f"{returned} calls returned, {len(steps)} on disk: more than max_queue={max_queue} lost"
        assert len(steps) <= returned + 1  # at most the call in progress besides
