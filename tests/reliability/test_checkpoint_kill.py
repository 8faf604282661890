"""Issue 22 item 2: a kill must never destroy the only checkpoint.

Two tests: a deterministic one that "kills" a forked writer (`os._exit`, no cleanup, like
SIGKILL) at every file-system step of a rewrite of the same prefix, and a random one that
SIGKILLs real writer processes at random moments while they rewrite the same prefix and the
same `CheckpointManager` checkpoint number. After every kill the last completed checkpoint
must restore (all variables from one save, never older than the last acknowledged save),
and the next save must leave no temp file behind.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.training import atomic_files

N = 50_000  # floats per variable: big enough that a write takes a while


def make_vars():
    return {"a": jf.Variable(np.zeros(N, np.float32)), "b": jf.Variable(np.zeros(7, np.int64)),
            "c": jf.Variable(0.0, dtype=jf.float64)}


def fill(variables, k):
    variables["a"].assign(np.full(N, k, np.float32))
    variables["b"].assign(np.full(7, k, np.int64))
    variables["c"].assign(float(k))


def restored_generation(prefix):
    """The generation k of the checkpoint at `prefix`, checking every variable holds the same k."""
    variables = make_vars()
    # Not assert_consumed: a checkpoint only ever `write`n holds no save_counter (as TF's).
    jf.train.Checkpoint(**variables).restore(prefix).assert_nontrivial_match()
    k = float(variables["c"].numpy())
    assert np.all(variables["a"].numpy() == k) and np.all(variables["b"].numpy() == int(k)), "mixed generations"
    return k


def temp_files(directory):
    return [f for f in os.listdir(directory) if f.endswith(".tmp")]


DYING_WRITER = textwrap.dedent('''
    import os, sys
    sys.path.insert(0, {here!r})
    from test_checkpoint_kill import make_vars, fill
    import jitflow as jf
    prefix, generation, step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    variables = make_vars()
    fill(variables, generation)
    ckpt = jf.train.Checkpoint(**variables)
    counter = [0]

    def dying(real):
        def op(*args, **kwargs):
            if counter[0] == step:
                os._exit(17)  # like SIGKILL: no cleanup, no finally blocks
            counter[0] += 1
            return real(*args, **kwargs)
        return op

    os.replace, os.fsync, os.unlink = dying(os.replace), dying(os.fsync), dying(os.unlink)
    ckpt.write(prefix)
    os._exit(0)
''')


def test_a_kill_at_every_step_of_a_rewrite_keeps_a_restorable_checkpoint(tmp_path):
    """Each run dies at the next file-system step (fsync, rename, unlink) of rewriting one prefix."""
    prefix = str(tmp_path / "c")
    variables = make_vars()
    fill(variables, 1)
    jf.train.Checkpoint(**variables).write(prefix)
    script = DYING_WRITER.format(here=os.path.dirname(os.path.abspath(__file__)))
    step, generation = 0, 1
    while True:
        code = subprocess.run([sys.executable, "-c", script, prefix, str(generation + 1), str(step)],
                              timeout=120).returncode
        assert code in (0, 17)
        got = restored_generation(prefix)
        if code == 0:  # it got past its last step
            assert got == generation + 1
            break
        assert got in (generation, generation + 1), f"killed at step {step}: restored generation {got}"
        generation = int(got)
        step += 1
    assert step >= 4  # data fsync, data rename, index fsync, index rename (and directory fsyncs)
    fill(variables, 99)
    jf.train.Checkpoint(**variables).write(prefix)
    assert restored_generation(prefix) == 99
    assert temp_files(tmp_path) == []  # the leftovers of the killed writers are gone


WRITER = textwrap.dedent('''
    import sys, numpy as np
    import jitflow as jf
    sys.path.insert(0, {here!r})
    from test_checkpoint_kill import make_vars, fill
    prefix, directory, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
    variables = make_vars()
    ckpt = jf.train.Checkpoint(**variables)
    manager = jf.train.CheckpointManager(ckpt, directory, max_to_keep=2)
    k = start
    print("ready", flush=True)
    while True:
        k += 1
        fill(variables, k)
        ckpt.write(prefix)
        manager.save(checkpoint_number=1)     # the same number every time
        print(k, flush=True)
''')


@pytest.mark.slow
def test_random_sigkills_during_repeated_saves_never_lose_the_last_checkpoint(tmp_path):
    rng = random.Random(2026)
    prefix, directory = str(tmp_path / "same"), str(tmp_path / "managed")
    variables = make_vars()
    fill(variables, 0)
    jf.train.Checkpoint(**variables).write(prefix)
    jf.train.CheckpointManager(jf.train.Checkpoint(**variables), directory, max_to_keep=2).save(checkpoint_number=1)
    acknowledged, start, kills, mid_write = 0, 0, 0, 0
    script = WRITER.format(here=os.path.dirname(os.path.abspath(__file__)))
    while kills < 20:
        proc = subprocess.Popen([sys.executable, "-c", script, prefix, directory, str(start)],
                                stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        kills += 1
        done = [int(line) for line in out.split() if line.isdigit()]
        if done:
            acknowledged = done[-1]
        same = restored_generation(prefix)
        managed = restored_generation(jf.train.latest_checkpoint(directory))
        assert same >= acknowledged and managed >= acknowledged
        mid_write += same > acknowledged or managed > acknowledged  # killed between write and ack
        start = int(max(same, managed))
    assert kills == 20
    fill(variables, 1000)
    jf.train.Checkpoint(**variables).write(prefix)
    # The next save of each kind removes what the killed writers left behind.
    jf.train.CheckpointManager(jf.train.Checkpoint(**variables), directory, max_to_keep=2).save(checkpoint_number=1)
    assert restored_generation(prefix) == 1000
    assert restored_generation(jf.train.latest_checkpoint(directory)) == 1000
    assert temp_files(tmp_path) == [] and temp_files(directory) == []
    assert sorted(os.listdir(directory)) == ["checkpoint", "ckpt-1.data-00000-of-00001", "ckpt-1.index"]


def test_stale_temps_of_live_writers_are_kept(tmp_path):
    target = str(tmp_path / "x.index")
    mine = atomic_files.temp_path(target)
    open(mine, "w").close()
    dead = os.path.join(str(tmp_path), ".x.index.999999999.abcd1234.tmp")  # no such pid
    open(dead, "w").close()
    assert atomic_files.remove_stale_temps(target) == 1
    assert os.path.exists(mine) and not os.path.exists(dead)
    os.remove(mine)
    # a writer killed while saving ckpt-4 leaves temps that the save of ckpt-5 removes
    stale = [os.path.join(str(tmp_path), f".ckpt-4{suffix}.999999999.0badc0de.tmp")
             for suffix in (".index", ".data-00000-of-00001")]
    for path in stale:
        open(path, "w").close()
    jf.train.CheckpointManager(jf.train.Checkpoint(v=jf.Variable(1.0)), str(tmp_path), max_to_keep=1).save(
        checkpoint_number=5)
    assert temp_files(tmp_path) == []
