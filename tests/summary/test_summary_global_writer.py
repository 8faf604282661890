"""GlobalSummaryWriter: steps numbered per tag across threads and forked worker
processes, every value written once, read back with TensorBoard's loaders."""

from __future__ import annotations

import multiprocessing as mp
import threading

import numpy as np
import pytest
from summary_testutil import accumulate, event_files
from tensorboard.util import tensor_util

import jitflow.summary as s

_writer = None


def _work(i: int) -> None:
    _writer.add_scalar("pool/x", float(i))


def test_steps_are_global_across_forked_workers_and_threads(tmp_path):
    global _writer
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("needs the fork start method")
    _writer = s.GlobalSummaryWriter(str(tmp_path))
    try:
        _writer.add_scalar("pool/x", -1.0)  # the parent writes too
        with mp.get_context("fork").Pool(3) as pool:
            pool.map(_work, range(30))
        threads = [threading.Thread(target=_work, args=(100 + i,)) for i in range(5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        _writer.add_text("note", "done")
        _writer.add_histogram("h", np.arange(10.0))
    finally:
        _writer.close()
    assert len(event_files(tmp_path)) >= 2  # the parent's file and the workers' own
    acc = accumulate(tmp_path)
    points = [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors("pool/x")]
    assert sorted(p[0] for p in points) == list(range(36))  # each step once, none lost
    assert sorted(p[1] for p in points) == sorted([-1.0] + [float(i) for i in range(30)]
                                                  + [100.0 + i for i in range(5)])
    assert [e.step for e in acc.Tensors("note/text_summary")] == [0]
    assert [e.step for e in acc.Tensors("h")] == [0]


def test_get_summary_writer_is_one_instance(tmp_path, monkeypatch):
    from jitflow.summary import global_writer
    monkeypatch.setattr(global_writer, "_default", None)
    a = s.GlobalSummaryWriter.getSummaryWriter(log_dir=str(tmp_path))
    try:
        assert s.GlobalSummaryWriter.getSummaryWriter() is a
        a.add_scalar("x", 1.0)
        a.add_scalar("x", 2.0)
    finally:
        a.close()
    assert [e.step for e in accumulate(tmp_path).Tensors("x")] == [0, 1]
