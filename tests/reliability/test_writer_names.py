"""Issue #22 item 5: event file names are unique and an existing file is never
truncated (two writers in one second and process; a name already taken, e.g. by
a restarted container with the same host name and PID)."""

from __future__ import annotations

import itertools
import threading

import pytest
from writer_util import event_files, loaded_events, run_scalars
from writer_util import fresh_summary_defaults  # noqa: F401 (autouse fixture)

import jitflow.summary as s
from jitflow.summary import event_file


@pytest.fixture
def frozen_clock(monkeypatch):
    """Every writer opens its file in the same second."""
    monkeypatch.setattr(event_file.time, "time", lambda: 1_700_000_000.25)


def test_two_writers_in_one_second_and_process_keep_all_events(tmp_path, frozen_clock):
    a = s.create_file_writer(str(tmp_path), max_queue=7)
    b = s.SummaryWriter(str(tmp_path), max_queue=3, filename_suffix=".v2")
    assert a.path != b.file_writer.path

    def work_a():
        with a.as_default():
            for i in range(2000):
                s.scalar("a", float(i), step=i)

    t = threading.Thread(target=work_a)
    t.start()
    for i in range(2000):
        b.add_scalar("b", float(i), i)
    t.join()
    a.close()
    b.close()
    assert len(event_files(tmp_path)) == 2
    got = run_scalars(tmp_path)
    assert got["a"] == [(i, float(i)) for i in range(2000)]
    assert got["b"] == [(i, float(i)) for i in range(2000)]


def test_a_taken_name_is_skipped_not_truncated(tmp_path, frozen_clock, monkeypatch):
    other = s.create_file_writer(str(tmp_path / "other"), filename_suffix=".v2")
    with other.as_default(step=0):
        s.scalar("theirs", 1.0)
    other.close()
    before = open(other.path, "rb").read()
    # Our next name is exactly theirs (same second, host, PID and counter value).
    taken_counter = int(other.path.rsplit(".", 2)[-2])
    monkeypatch.setattr(event_file, "_file_counter", itertools.count(taken_counter))
    w = s.create_file_writer(str(tmp_path / "other"), filename_suffix=".v2")
    with w.as_default(step=0):
        s.scalar("ours", 2.0)
    w.close()
    assert w.path != other.path
    assert open(other.path, "rb").read() == before  # not truncated, not appended to
    assert len(loaded_events(other.path)) == 2  # header + their scalar
    assert run_scalars(tmp_path / "other") == {"theirs": [(0, 1.0)], "ours": [(0, 2.0)]}


def test_a_taken_name_is_skipped_on_fsspec_filesystems(frozen_clock, monkeypatch):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    logdir = "memory://jitflow-names-test"
    first = event_file.EventFileWriter(logdir)
    first.close()
    before = fs.cat(first.path)
    monkeypatch.setattr(event_file, "_file_counter",
                        itertools.count(int(first.path.rsplit(".", 1)[-1])))
    second = event_file.EventFileWriter(logdir)
    second.close()
    assert second.path != first.path and fs.cat(first.path) == before
    fs.rm("/jitflow-names-test", recursive=True)


def test_names_stay_unique_across_many_writers(tmp_path, frozen_clock):
    writers = [event_file.EventFileWriter(str(tmp_path)) for _ in range(50)]
    for w in writers:
        w.close()
    assert len({w.path for w in writers}) == 50 == len(event_files(tmp_path))
