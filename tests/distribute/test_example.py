"""examples/distributed_training.py runs as the seed's MirroredStrategy program and under mpiexec,
with the same losses, and writes one TensorBoard run per worker plus the job's run."""
import os
import shutil
import subprocess
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "distributed_training.py")


def _losses(logdir, tag):
    acc = EventAccumulator(str(logdir), size_guidance={"tensors": 0, "scalars": 0})
    acc.Reload()
    if tag in acc.Tags()["scalars"]:
        return [e.value for e in acc.Scalars(tag)]
    return [float(tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]


def _run(cmd, cwd):
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.slow
def test_example_mirrored_and_multi_worker(tmp_path):
    (tmp_path / "a").mkdir()
    out = _run([sys.executable, SCRIPT], tmp_path / "a")
    assert "2 replicas in sync" in out and "step 30: loss" in out
    mirrored = _losses(tmp_path / "a" / "runs" / "distributed", "loss")
    assert len(mirrored) == 30 and mirrored[-1] < mirrored[0]

    pytest.importorskip("mpi4py", reason="the multi-worker half needs mpi4py: pip install 'jitflow[mpi]'")
    mpiexec = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    if mpiexec is None:
        pytest.skip("no mpiexec: pip install 'jitflow[mpi]'")
    (tmp_path / "b").mkdir()
    _run([mpiexec, "-n", "2", sys.executable, SCRIPT, "--multi-worker"], tmp_path / "b")
    logdir = tmp_path / "b" / "runs" / "distributed"
    assert sorted(p.name for p in logdir.iterdir() if p.is_dir()) == ["ckpt", "worker_0", "worker_1"]
    assert _losses(logdir, "loss") == pytest.approx(mirrored, rel=1e-5)   # 2 workers = 2 replicas
    assert len(_losses(logdir / "worker_1", "local_loss")) == 30
    assert sorted(os.listdir(logdir / "ckpt")) == ["checkpoint", "ckpt-2.data-00000-of-00001", "ckpt-2.index",
                                                   "ckpt-3.data-00000-of-00001", "ckpt-3.index"]
