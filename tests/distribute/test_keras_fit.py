"""Keras `fit` / `evaluate` / `predict` with a model built and compiled in `strategy.scope()`:
one replica, two replicas on logical CPUs, and two MPI workers train to the same weights and
report the same metrics on the same global batches."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.core import devices as _devices

import _models

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = 41   # batches of 10: the last has 1 row, so with 2 replicas one shard is empty; 10-row batches split 5/5


@pytest.fixture(scope="module")
def two_cpus():
    _devices._reset_for_tests()
    cpu = jf.config.list_physical_devices("CPU")[0]
    jf.config.set_logical_device_configuration(cpu, [jf.config.LogicalDeviceConfiguration()] * 2)
    yield ["/cpu:0", "/cpu:1"]
    _devices._reset_for_tests()


@pytest.fixture(scope="module")
def one_replica(two_cpus):
    return _models.keras_fit(jf.distribute.MirroredStrategy(two_cpus[:1]), rows=ROWS)


def assert_same_training(got, expected):
    weights, history, evaluated, predicted = expected
    for a, b in zip(got[0], weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert sorted(got[1]) == sorted(history) == ["binary_accuracy", "loss"]
    for key in history:
        np.testing.assert_allclose(got[1][key], history[key], rtol=1e-5)
    for key in evaluated:
        np.testing.assert_allclose(got[2][key], evaluated[key], rtol=1e-5)
    assert got[3].shape == predicted.shape == (ROWS, 1)
    np.testing.assert_allclose(got[3], predicted, rtol=1e-5, atol=1e-6)


def test_one_replica_trains_like_no_strategy(one_replica):
    assert_same_training(_models.keras_fit(jf.distribute.get_strategy(), rows=ROWS), one_replica)
    # the model did learn: the comparison is between trained models
    assert one_replica[1]["loss"][-1] < one_replica[1]["loss"][0]


@pytest.mark.parametrize("rows", [ROWS, 43], ids=["empty-shard", "uneven-shards"])
def test_two_replicas_fit_like_one(two_cpus, one_replica, rows):
    expected = one_replica if rows == ROWS else _models.keras_fit(jf.distribute.MirroredStrategy(two_cpus[:1]),
                                                                  rows=rows)
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    got = _models.keras_fit(strategy, rows=rows)
    if rows == ROWS:
        assert_same_training(got, expected)
    else:
        for a, b in zip(got[0], expected[0]):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_run_eagerly_two_replicas_fit_like_one(two_cpus):
    # eager steps: the replica threads take turns (they share the metric variables)
    expected = _models.keras_fit(jf.distribute.MirroredStrategy(two_cpus[:1]), rows=ROWS, run_eagerly=True)
    assert_same_training(_models.keras_fit(jf.distribute.MirroredStrategy(two_cpus), rows=ROWS, run_eagerly=True),
                         expected)


def test_model_remembers_its_strategy(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    x, y = _models.keras_data(20)
    with strategy.scope():
        model = jf.keras.Sequential([jf.keras.layers.Dense(1, input_shape=(3,))])
        model.compile("sgd", "mse")
    # fit outside the scope: the weights and optimizer slots made on the first batch still join the strategy
    model.fit(x, y, batch_size=10, epochs=1, verbose=0)
    assert all(strategy._owns(v) for v in model.optimizer.variables())
    assert int(model.optimizer.iterations.numpy()) == 2          # one update per global batch
    seen = []
    original = model.train_step

    def spying(data):
        seen.append((jf.distribute.get_replica_context().replica_id_in_sync_group, int(data[0].shape[0])))
        return original(data)
    model.train_step = spying
    model.compile("sgd", "mse")                                 # outside the scope: keeps the strategy
    model.fit(x, y, batch_size=10, epochs=1, verbose=0)
    assert sorted(set(seen)) == [(0, 5), (1, 5)]                # traced once per replica, 5 rows each


MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))


@pytest.mark.slow
@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec: pip install 'jitflow[mpi]' brings MPICH's")
@pytest.mark.parametrize("seeded", [True, False], ids=["seeded", "unseeded"])
def test_two_mpi_workers_fit_like_one_replica(one_replica, tmp_path, seeded):
    pytest.importorskip("mpi4py", reason="MultiWorkerMirroredStrategy needs mpi4py: pip install 'jitflow[mpi]'")
    out = tmp_path / "keras"
    board = tmp_path / "board"
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **({"TB_LOGDIR": str(board)} if seeded else {"NO_SEED": "1"})}
    proc = subprocess.run([MPIEXEC, "-n", "2", sys.executable, os.path.join(HERE, "mpi_worker.py"), "keras",
                           str(out), str(ROWS)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    views = []
    for rank in (0, 1):
        saved = np.load(f"{out}.{rank}.npz")
        assert int(saved["replicas"]) == 2
        views.append(([saved[f"arr_{i}"] for i in range(4)],
                      {k[len("history_"):]: saved[k].tolist() for k in saved.files if k.startswith("history_")},
                      {k[len("eval_"):]: float(saved[k]) for k in saved.files if k.startswith("eval_")},
                      saved["predicted"]))
    assert_same_training(views[1], views[0])          # every worker holds the same weights and global metrics
    if seeded:
        assert_same_training(views[0], one_replica)   # and they are one replica's on the same global batches
        # the TensorBoard callback: the chief writes Keras's layout under log_dir, worker 1 its own run
        assert _epoch_losses(board / "train") == pytest.approx(views[0][1]["loss"], rel=1e-6)
        assert _epoch_losses(board / "worker_1" / "train") == pytest.approx(views[1][1]["loss"], rel=1e-6)
        assert not (board / "worker_0").exists()
    else:  # unseeded: the chief's weights and one shared shuffle; it trained (a worker on its own would not agree)
        assert views[0][1]["loss"][-1] < views[0][1]["loss"][0]
        seeds = {line.split()[-1] for line in proc.stdout.splitlines() if "shuffle seed" in line}
        assert len(seeds) == 1, proc.stdout                                 # both workers printed the same one


def _epoch_losses(run_dir):
    from tensorboard.backend.event_processing import event_accumulator
    from tensorboard.util import tensor_util
    acc = event_accumulator.EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
    acc.Reload()
    return [float(tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors("epoch_loss")]


def _multi_output_fit(strategy):
    """A two-output functional model with per-output losses and sample weights."""
    jf.random.set_seed(1)
    with strategy.scope():
        inputs = jf.keras.Input((4,))
        model = jf.keras.Model(inputs, [jf.keras.layers.Dense(3, name="a")(inputs),
                                        jf.keras.layers.Dense(1, name="b")(inputs)])
        model.compile(optimizer="sgd", loss={"a": jf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                                             "b": "mse"})
    x = np.random.default_rng(0).random((30, 4), dtype=np.float32)
    targets = {"a": (np.arange(30) % 3).astype(np.int32), "b": x.sum(1, keepdims=True)}
    history = model.fit(x, targets, batch_size=10, epochs=2, verbose=0, shuffle=False,
                        sample_weight=np.linspace(0.1, 2.0, 30).astype(np.float32))
    return history.history, [w.numpy() for w in model.weights]


def test_multi_output_weighted_fit_on_two_replicas_like_one(two_cpus):
    history_one, weights_one = _multi_output_fit(jf.distribute.MirroredStrategy(two_cpus[:1]))
    history_two, weights_two = _multi_output_fit(jf.distribute.MirroredStrategy(two_cpus))
    assert sorted(history_two) == ["a_loss", "b_loss", "loss"]
    for key in history_one:
        np.testing.assert_allclose(history_two[key], history_one[key], rtol=1e-5)
    for a, b in zip(weights_two, weights_one):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert history_one["loss"][-1] < history_one["loss"][0]
