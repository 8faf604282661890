"""MultiWorkerMirroredStrategy under a real `mpiexec -n 2`: same weights as one replica, a killed
worker makes the other fail fast, a raising worker ends the job, bad setups are refused."""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.distribute import cluster

import _models

pytest.importorskip("mpi4py", reason="MultiWorkerMirroredStrategy needs mpi4py: pip install 'jitflow[mpi]'")
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "mpi_worker.py")
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec: pip install 'jitflow[mpi]' brings MPICH's")]


def mpirun(*args, n=2, timeout=240, env=None, launcher=()):
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    start = time.monotonic()
    proc = subprocess.run([MPIEXEC, *launcher, "-n", str(n), sys.executable, WORKER, *args], capture_output=True,
                          text=True, timeout=timeout, env=full_env)
    return proc, time.monotonic() - start


@pytest.fixture(scope="module")
def one_replica():
    return _models.train(jf.distribute.MirroredStrategy(["/cpu:0"]), traced=True)


@pytest.mark.parametrize("clip", [False, True], ids=["overlapped", "clipped"])
@pytest.mark.parametrize("traced", [True, False], ids=["jf.function", "eager"])
def test_two_workers_train_like_one_replica(one_replica, tmp_path, traced, clip):
    out = tmp_path / "weights.npz"
    proc, _ = mpirun("train", str(out), *(["--traced"] if traced else []), *(["--clip"] if clip else []),
                     env={"CKPT_DIR": str(tmp_path / "ckpt")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the tape started the gradients' all-reduces as they became final (one bucket per step: a small model);
    # clipped gradients are other tensors: apply_gradients all-reduces those, the started ones are dropped
    started = {line.split()[3] for line in proc.stdout.splitlines() if "during the backward pass" in line}
    assert started == {str(_models.STEPS)}, proc.stdout
    got = np.load(out)
    assert int(got["replicas"]) == 2 and int(got["iterations"]) == _models.STEPS
    weights, losses, _ = one_replica
    np.testing.assert_allclose(got["losses"], losses, rtol=1e-5)
    for i, w in enumerate(weights):
        np.testing.assert_allclose(got[f"arr_{i}"], w, rtol=1e-5, atol=1e-6)
    # checkpoints: the chief wrote its two saves (keeping one); worker 1 wrote nothing at all
    assert sorted(os.listdir(tmp_path / "ckpt" / "worker_0")) == ["checkpoint", "ckpt-2.data-00000-of-00001",
                                                                  "ckpt-2.index"]
    assert not (tmp_path / "ckpt" / "worker_1").exists()


def test_collectives_broadcast_and_logdirs():
    proc, _ = mpirun("collectives", env={"BUCKET_BYTES": "64"})   # 64-byte buckets: many, split by dtype
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(line for line in proc.stdout.splitlines() if "buckets" in line) == [
        "worker 0 buckets ok", "worker 1 buckets ok"]
    lines = sorted(line for line in proc.stdout.splitlines() if line.startswith("worker ") and "buckets" not in line)
    assert lines == [
        f"worker {r} v=[1.0, 1.0, 1.0] sum=[3.0, 3.0, 3.0] mean=5.25 gather=[0.0, 1.0] "
        f"logdir={os.path.join('logs', f'worker_{r}')}" for r in (0, 1)]


def test_each_worker_logs_to_its_own_run(tmp_path, one_replica):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    proc, _ = mpirun("summaries", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["worker_0", "worker_1"]

    def scalars(path, tag):
        acc = EventAccumulator(str(path), size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        if tag in acc.Tags()["scalars"]:
            return [(e.step, e.value) for e in acc.Scalars(tag)]
        return [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in acc.Tensors(tag)]
    local = [scalars(tmp_path / f"worker_{r}", "local_loss") for r in (0, 1)]
    job = scalars(tmp_path, "loss")
    assert [s for s, _ in job] == list(range(_models.STEPS))
    # the job's loss is the sum of the workers' local losses, and equals the one-replica loss
    np.testing.assert_allclose([v for _, v in job], [a + b for (_, a), (_, b) in zip(*local)], rtol=1e-5)
    np.testing.assert_allclose([v for _, v in job], one_replica[1], rtol=1e-5)


def _survivor_report(proc, report):
    """What worker 0 said: its stderr, or the file it also writes (a dying job's stderr may be lost)."""
    path = f"{report}.0"
    return proc.stderr + (open(path).read() if os.path.exists(path) else "")


def test_killed_worker_makes_the_other_fail_fast(tmp_path):
    # With the launcher's cleanup off (as launchers that do not clean up behave), MPICH's mpiexec
    # signals the survivor (SIGUSR1) and jitflow's watchdog sees the dead process: either turns into
    # the clear UnavailableError. MPICH's own progress engine may also end the survivor first (its
    # message then goes to a stderr the dying launcher may not forward): what is guaranteed is that
    # no worker is left waiting -- the job ends within a bounded time, well before TIMEOUT.
    reported = []
    for attempt in range(3):
        report = tmp_path / f"report{attempt}"
        proc, elapsed = mpirun("die-after-steps", "6", "kill", timeout=120, launcher=("-disable-auto-cleanup",),
                               env={"TIMEOUT": "100", "REPORT_FILE": str(report)})
        assert "worker 1 killing itself" in proc.stdout
        assert proc.returncode != 0
        assert elapsed < 60, f"the surviving worker took {elapsed:.0f} s to stop"   # not the 100 s TIMEOUT
        said = _survivor_report(proc, report)
        if "UnavailableError" in said:
            assert "UnavailableError: worker 0:" in said, said
            assert "worker 1 (pid" in said or "reports that another worker of the job failed" in said, said
            reported.append(attempt)
            break
    if not reported:
        pytest.xfail("MPICH ended the surviving worker before jitflow reported (3 times); the job did not hang")


def test_worker_that_exits_mid_training_is_reported(tmp_path):
    # a worker that just exits (status 0: the launcher sees nothing wrong): only the watchdog can tell
    # The job always ends well before the collective TIMEOUT (asserted every time); on a busy
    # machine the launcher can end the survivor before it writes its report, so try 3 times.
    for attempt in range(3):
        report = tmp_path / f"report{attempt}"
        proc, elapsed = mpirun("die-after-steps", "6", "exit", timeout=120,
                               env={"TIMEOUT": "100", "REPORT_FILE": str(report)})
        assert "worker 1 exiting" in proc.stdout
        assert elapsed < 60   # (mpiexec's own exit status here depends on the launcher: rank 1 exited 0)
        said = _survivor_report(proc, report)
        if said:
            assert "UnavailableError: worker 0: all-reduce (collective #" in said, proc.stdout + proc.stderr
            assert "worker 1 (pid" in said and "exited during training" in said
            return
    pytest.xfail("the launcher ended the surviving worker before it reported (3 times); the job did not hang")


def test_killed_worker_with_the_launchers_cleanup():
    # default mpiexec: the job ends quickly one way or the other (the launcher's kill or the watchdog)
    proc, elapsed = mpirun("die-after-steps", "6", timeout=120, env={"TIMEOUT": "100"})
    assert "worker 1 killing itself" in proc.stdout
    assert proc.returncode != 0
    assert ("UnavailableError: worker 0" in proc.stderr) or ("BAD TERMINATION" in proc.stdout + proc.stderr)
    assert elapsed < 60


def test_worker_that_raises_ends_the_job():
    proc, elapsed = mpirun("raise-on-rank1", timeout=120)
    assert proc.returncode != 0
    assert "ValueError: worker 1 found bad data" in proc.stderr
    assert "aborting the job (MPI_Abort)" in proc.stderr
    assert "worker 0 all-reduced" not in proc.stdout


def test_strategy_created_twice():
    proc, _ = mpirun("twice")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("second strategy: MultiWorkerMirroredStrategy was already created") == 2


def test_tf_config_must_match_the_mpi_world():
    config = '{"cluster": {"worker": ["a:1", "b:1", "c:1"]}, "task": {"type": "worker", "index": 0}}'
    proc, _ = mpirun("twice", env={"TF_CONFIG": config})
    assert proc.returncode != 0
    assert "TF_CONFIG describes 3 tasks (chief + workers) but MPI started 2 processes" in proc.stderr


def test_tf_config_task_of_another_rank_stops_every_worker():
    # the same TF_CONFIG on both ranks: rank 1 is not task worker:0; rank 0 must not wait for it
    config = '{"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 0}}'
    proc, _ = mpirun("twice", env={"TF_CONFIG": config}, timeout=120)
    assert proc.returncode != 0
    assert proc.stderr.count("worker 1: TF_CONFIG: task worker:0 is MPI rank 0, but this process is MPI rank 1") == 2


def test_tf_config_mapping():
    two = '{"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "worker", "index": 0}}'
    resolver = cluster.resolve(1, 2, {"TF_CONFIG": two})
    assert (resolver.task_type, resolver.task_id, resolver.num_workers) == ("worker", 1, 2)
    assert resolver.cluster_spec() == {"chief": ["a:1"], "worker": ["b:1"]}
    with pytest.raises(ValueError, match="task worker:0 is MPI rank 1, but this process is MPI rank 0"):
        cluster.resolve(0, 2, {"TF_CONFIG": two})
    with pytest.raises(ValueError, match=r"cluster jobs \['ps'\] are not supported"):
        cluster.resolve(0, 2, {"TF_CONFIG": '{"cluster": {"worker": ["a:1"], "ps": ["b:1"]}}'})
    with pytest.raises(ValueError, match="TF_CONFIG: not valid JSON"):
        cluster.resolve(0, 1, {"TF_CONFIG": "{worker"})
    assert cluster.resolve(0, 3, {}).cluster_spec() == {"worker": ["mpi-rank-0", "mpi-rank-1", "mpi-rank-2"]}
