"""Issue #22 item 4: writers inherited through fork.

A forked child that writes through an inherited writer opens its own event file
(TensorBoard reads every event file of a run); the parent's queued records stay
with the parent, so nothing is lost and nothing is written twice. Children of
`multiprocessing` end with `os._exit`, which skips `atexit`: their files are
closed by multiprocessing's own exit finalizers.
"""

from __future__ import annotations

import multiprocessing
import os

import pytest
from writer_util import event_files, loaded_events, run_scalars, steps_of, whole_records
from writer_util import fresh_summary_defaults  # noqa: F401 (autouse fixture)

import jitflow.summary as s

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
N_CHILD = 100


def _tf_child(k: int) -> None:
    # Uses the default writer inherited from the parent; no flush, no close.
    for i in range(N_CHILD):
        assert s.scalar(f"child{k}", float(k * 1000 + i), step=i)


def _torch_child(writer: s.SummaryWriter, k: int, flush_and_report: bool, conn) -> None:
    for i in range(N_CHILD):
        writer.add_scalar(f"child{k}", float(k * 1000 + i), i)
    writer.add_scalars("pair", {f"c{k}": float(k)}, 0)
    if flush_and_report:
        writer.flush()
        conn.send(writer.file_writer.path)  # the child's own file, on disk now
        conn.close()


def _fork_ctx():
    return multiprocessing.get_context("fork")


def test_forked_children_of_a_tf_writer_lose_and_duplicate_nothing(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=50, flush_millis=10**9)
    w.set_as_default()
    for i in range(20):
        s.scalar("parent", float(i), step=i)  # queued in memory when the children fork
    parent_file = w.path
    procs = [_fork_ctx().Process(target=_tf_child, args=(k,)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    for i in range(20, 40):
        s.scalar("parent", float(i), step=i)
    w.close()

    files = event_files(tmp_path)
    assert len(files) == 5 and parent_file in files  # the parent's file and one per child
    scalars = run_scalars(tmp_path)  # TensorBoard's accumulator over all the run's files
    assert scalars["parent"] == [(i, float(i)) for i in range(40)]  # once each: no duplicates
    for k in range(4):
        assert scalars[f"child{k}"] == [(i, float(k * 1000 + i)) for i in range(N_CHILD)]
    for path in files:  # every file is whole; each holds one writer's records only
        events, torn = whole_records(path)
        assert torn == 0 and len(loaded_events(path)) == len(events)
        tags = {v.tag for e in events for v in e.summary.value}
        assert len(tags) <= 1
        if path == parent_file:
            assert tags == {"parent"}


def test_forked_children_of_a_torch_writer_flush_their_own_file(tmp_path):
    w = s.SummaryWriter(str(tmp_path), max_queue=1000, flush_secs=10**6)
    for i in range(30):
        w.add_scalar("parent", float(i), i)
    w.add_scalars("pair", {"p": 1.0}, 0)  # a sub-run writer, also inherited
    ctx = _fork_ctx()
    reader, sender = ctx.Pipe(duplex=False)
    flusher = ctx.Process(target=_torch_child, args=(w, 0, True, sender))
    flusher.start()
    child_file = reader.recv()  # the child flushed and is still running
    assert child_file != w.file_writer.path
    assert [e.step for e in loaded_events(child_file) if e.summary.value] == list(range(N_CHILD))
    flusher.join(60)
    quiet = ctx.Process(target=_torch_child, args=(w, 1, False, None))
    quiet.start()
    quiet.join(60)
    assert (flusher.exitcode, quiet.exitcode) == (0, 0)
    parent_file = w.file_writer.path
    w.close()
    assert w.file_writer is None  # PyTorch's writer drops its file writer on close too

    files = event_files(tmp_path)
    assert len(files) == 3
    assert steps_of(parent_file, "parent") == list(range(30))
    for k in range(2):
        (own,) = [f for f in files if steps_of(f, f"child{k}")]
        assert steps_of(own, f"child{k}") == list(range(N_CHILD))
    assert sum(len(steps_of(f, "parent")) for f in files) == 30
    sub_runs = sorted(p.name for p in tmp_path.iterdir() if p.is_dir())
    assert sub_runs == ["pair_c0", "pair_c1", "pair_p"]
    for name, value in [("pair_p", 1.0), ("pair_c0", 0.0), ("pair_c1", 1.0)]:
        assert run_scalars(tmp_path / name) == {"pair": [(0, value)]}
    # The parent's "pair_p" record went to its own file only, once.
    assert len(event_files(tmp_path / "pair_p")) == 1


def test_a_child_that_only_forks_writes_nothing(tmp_path):
    w = s.create_file_writer(str(tmp_path), max_queue=100, flush_millis=10**9)
    w.set_as_default()
    for i in range(10):
        s.scalar("parent", float(i), step=i)
    p = _fork_ctx().Process(target=w.flush)  # flush() in the child: none of its own records
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert len(event_files(tmp_path)) == 1
    assert steps_of_file(w.path) == []  # the child did not write the parent's queue
    w.close()
    assert steps_of_file(w.path) == list(range(10))


def steps_of_file(path) -> list[int]:
    return [e.step for e in whole_records(path)[0] if e.summary.value]


def test_writers_cannot_be_pickled_to_spawned_processes(tmp_path):
    import pickle

    w = s.create_file_writer(str(tmp_path))
    with pytest.raises(TypeError, match="cannot be sent to another process"):
        pickle.dumps(w)
    w.close()
