"""MirroredStrategy on two logical CPU devices: same weights as one replica, collectives, errors."""
import threading

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.core import devices as _devices

import _models


@pytest.fixture(scope="module")
def two_cpus():
    _devices._reset_for_tests()
    cpu = jf.config.list_physical_devices("CPU")[0]
    jf.config.set_logical_device_configuration(cpu, [jf.config.LogicalDeviceConfiguration()] * 2)
    yield ["/cpu:0", "/cpu:1"]
    _devices._reset_for_tests()


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "jf.function"])
@pytest.mark.parametrize("optimizer", ["sgd_momentum", "adam"])
def test_two_replicas_train_like_one(two_cpus, traced, optimizer):
    make = {"sgd_momentum": lambda: jf.optimizers.SGD(0.1, momentum=0.9),
            "adam": lambda: jf.optimizers.Adam(0.05)}[optimizer]
    one, losses_one, it_one = _models.train(jf.distribute.MirroredStrategy(two_cpus[:1]), traced, make)
    two, losses_two, it_two = _models.train(jf.distribute.MirroredStrategy(two_cpus), traced, make)
    assert it_one == it_two == _models.STEPS          # one optimizer step per global batch, not per replica
    np.testing.assert_allclose(losses_two, losses_one, rtol=1e-5)
    for a, b in zip(one, two):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    # and the weights did move: the test compares trained models, not two initial states
    assert not np.allclose(one[0], _models.MLP().w1.numpy())


def test_run_reduce_and_replica_context(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    assert strategy.num_replicas_in_sync == 2

    def fn():
        ctx = jf.distribute.get_replica_context()
        rid = ctx.replica_id_in_sync_group
        x = jf.constant([float(rid), 1.0])
        total = ctx.all_reduce(jf.distribute.ReduceOp.SUM, {"x": x, "n": jf.constant(1.0)})
        mean = ctx.all_reduce("mean", x)
        gathered = ctx.all_gather(jf.reshape(x, [1, 2]), axis=0)
        return rid, x, total, mean, gathered, threading.current_thread().name

    rids, xs, totals, means, gathered, threads = strategy.run(fn)
    assert tuple(rids) == (0, 1)
    assert len(set(threads)) == 2                       # replicas run in their own threads
    for i in range(2):
        np.testing.assert_allclose(totals["x"][i].numpy(), [1.0, 2.0])   # a dict of PerReplica leaves
        assert float(totals["n"][i]) == 2.0
        np.testing.assert_allclose(means[i].numpy(), [0.5, 1.0])
        np.testing.assert_allclose(gathered[i].numpy(), [[0.0, 1.0], [1.0, 1.0]])
    assert isinstance(xs, jf.distribute.PerReplica)
    assert float(strategy.reduce("sum", xs, axis=None)[0]) == 1.0
    assert float(strategy.reduce("sum", xs, axis=0)) == 3.0
    assert float(strategy.reduce("mean", xs, axis=0)) == 0.75      # over the 4 elements of both replicas
    assert [t.numpy().tolist() for t in strategy.experimental_local_results(xs)] == [[0.0, 1.0], [1.0, 1.0]]


def test_merge_call_and_strategy_queries(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    assert not jf.distribute.has_strategy()
    seen = []

    def merge_fn(s, value):
        seen.append((s is strategy, jf.distribute.in_cross_replica_context(), len(value.values)))
        return sum(value.values)

    def fn():
        ctx = jf.distribute.get_replica_context()
        assert jf.distribute.get_strategy() is strategy and jf.distribute.has_strategy()
        return ctx.merge_call(merge_fn, args=(ctx.replica_id_in_sync_group + 1,))

    assert tuple(strategy.run(fn)) == (3, 3)
    assert seen == [(True, True, 2)]                    # merged once, in cross-replica context
    with strategy.scope():
        assert jf.distribute.get_strategy() is strategy
        assert jf.distribute.get_replica_context() is None
    assert jf.distribute.get_replica_context().num_replicas_in_sync == 1


def test_distribute_dataset_splits_batches_in_replica_order(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    batches = [{"x": x, "y": jf.constant(np.arange(5, dtype=np.int64))}]
    (element,) = list(strategy.experimental_distribute_dataset(batches))
    np.testing.assert_array_equal(element["x"][0].numpy(), x[:3])   # uneven: the first replica takes 3 rows
    np.testing.assert_array_equal(element["x"][1].numpy(), x[3:])
    assert element["y"][1].dtype == jf.int64
    with pytest.raises(ValueError, match="batch the dataset first"):
        list(strategy.experimental_distribute_dataset([jf.constant(1.0)]))
    with pytest.raises(TypeError, match="dataset: expected an iterable"):
        strategy.experimental_distribute_dataset(3)

    def dataset_fn(ctx):
        assert ctx.num_replicas_in_sync == 2 and ctx.get_per_replica_batch_size(8) == 4
        return [np.full((4, 1), i, np.float32) for i in range(4)]
    pulled = list(strategy.distribute_datasets_from_function(dataset_fn))
    assert [[float(v.numpy()[0, 0]) for v in e] for e in pulled] == [[0.0, 1.0], [2.0, 3.0]]


def test_per_replica_arguments_do_not_retrace(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    traces = []

    @jf.function
    def step(x):
        traces.append(1)
        return strategy.reduce("sum", strategy.run(lambda v: jf.reduce_sum(v), args=(x,)), axis=None)

    total = 0.0
    for x in strategy.experimental_distribute_dataset([np.ones((4, 2), np.float32) * i for i in range(3)]):
        total += float(step(x))
    assert total == 8.0 * (0 + 1 + 2)
    assert len(traces) <= 2                                      # one trace (+ the variable-check retrace)


def test_replica_that_raises_stops_the_others(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    before = set(threading.enumerate())

    def fn():
        ctx = jf.distribute.get_replica_context()
        if ctx.replica_id_in_sync_group == 1:
            raise KeyError("replica 1 failed")
        return ctx.all_reduce("sum", jf.constant(1.0))          # replica 0 would wait here forever

    with pytest.raises(KeyError, match="replica 1 failed"):
        strategy.run(fn)
    # no replica thread is left behind (threads of earlier tests may end meanwhile: compare sets)
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []


def test_replicas_making_different_collectives(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)

    def fn():
        ctx = jf.distribute.get_replica_context()
        if ctx.replica_id_in_sync_group == 0:
            return ctx.all_reduce("sum", jf.constant(1.0))
        return jf.constant(0.0)

    with pytest.raises(ValueError, match=r"different collective calls \(replica 0 called all_reduce\(SUM\), "
                                         r"replica 1 called return\)"):
        strategy.run(fn)


def test_variables_created_outside_the_scope(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    outside = jf.Variable([1.0, 2.0], name="outside")
    optimizer = jf.optimizers.SGD(0.1)

    def fn():
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(outside * outside)
        optimizer.apply_gradients([(tape.gradient(loss, outside), outside)])

    with pytest.raises(ValueError, match=r"variables \['outside:0'\] were created outside `strategy.scope\(\)`"):
        strategy.run(fn)
    np.testing.assert_array_equal(outside.numpy(), [1.0, 2.0])  # nothing was updated


def test_variable_created_inside_run(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    with pytest.raises(RuntimeError, match="created inside strategy.run"):
        strategy.run(lambda: jf.Variable(1.0))


def test_bad_arguments(two_cpus):
    with pytest.raises(ValueError, match=r"devices: \['/device:CPU:7'\] do not exist"):
        jf.distribute.MirroredStrategy(["/cpu:0", "/cpu:7"])
    with pytest.raises(ValueError, match="more than once"):
        jf.distribute.MirroredStrategy(["/cpu:0", "/cpu:0"])
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    other = jf.distribute.MirroredStrategy(two_cpus)
    with strategy.scope():
        with pytest.raises(RuntimeError, match="Mixing different jf.distribute.Strategy objects"):
            with other.scope():
                pass
    with pytest.raises(ValueError, match="reduce_op: expected jf.distribute.ReduceOp.SUM"):
        strategy.reduce("max", jf.constant(1.0))
    with pytest.raises(ValueError, match="cannot be reduced with SUM over 2 replicas"):
        strategy.reduce("sum", jf.constant(1.0))
    assert float(strategy.reduce("mean", jf.constant(4.0))) == 4.0
    with pytest.raises(TypeError, match="fn: expected a callable"):
        strategy.run(3)


def test_worker_logdir_and_chief():
    assert jf.distribute.worker_logdir("logs/run", rank=3).endswith("worker_3")
    assert jf.distribute.worker_logdir("memory://bucket/run", rank=1) == "memory://bucket/run/worker_1"
    assert jf.distribute.worker_logdir("logs") .endswith("worker_0")  # one process: worker 0
    assert jf.distribute.is_chief()
    with pytest.raises(ValueError, match="rank: expected a worker index"):
        jf.distribute.worker_logdir("logs", rank=-1)


def test_docstring_examples_run():
    import doctest
    import importlib

    names = ["jitflow.distribute"] + [f"jitflow.runtime.distribute.{m}" for m in (
        "values", "replica", "input", "strategy", "current", "mirrored", "cluster", "logdirs", "multi_worker")]
    for name in names:
        module = importlib.import_module(name)
        failed, attempted = doctest.testmod(module, extraglobs={"jf": jf, "np": np}, verbose=False,
                                            optionflags=doctest.ELLIPSIS)
        assert failed == 0, f"{name}: {failed} of {attempted} examples failed"


def test_failures_while_tracing_release_every_replica(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    before = set(threading.enumerate())

    def raising():
        ctx = jf.distribute.get_replica_context()
        if ctx.replica_id_in_sync_group == 1:
            raise KeyError("replica 1 failed while tracing")
        return ctx.all_reduce("sum", jf.constant(1.0))

    with pytest.raises(KeyError, match="replica 1 failed while tracing"):
        jf.function(lambda: strategy.run(raising))()
    # no replica thread is left behind (threads of earlier tests may end meanwhile: compare sets)
    assert [t.name for t in set(threading.enumerate()) - before if t.is_alive()] == []

    # the strategy (and a fresh trace) still works afterwards: nobody holds the build lock
    @jf.function
    def ok():
        return strategy.run(lambda: jf.distribute.get_replica_context().all_reduce("sum", jf.constant(2.0)))
    assert [float(v) for v in ok()] == [4.0, 4.0]


def test_name_scopes_stay_per_replica_while_tracing(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)

    def fn():
        ctx = jf.distribute.get_replica_context()
        with jf.name_scope(f"replica_{ctx.replica_id_in_sync_group}"):
            x = jf.constant(1.0) * 2.0
            total = ctx.all_reduce("sum", x)      # the other replica builds nodes meanwhile
            return jf.identity(total, name="after")

    concrete = jf.function(lambda: strategy.run(fn)).get_concrete_function()
    names = [node.name for node in concrete.graph.nodes] if hasattr(concrete.graph, "nodes") else []
    after = [n for n in names if n.endswith("after")]
    assert sorted(after) == ["replica_0/after", "replica_1/after"], names


def test_gather_and_values_from_function(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    values = strategy.experimental_distribute_values_from_function(
        lambda ctx: jf.fill([1, 2], float(ctx.replica_id_in_sync_group)))
    assert isinstance(values, jf.distribute.PerReplica) and len(values) == 2
    assert strategy.gather(values, axis=0).numpy().tolist() == [[0.0, 0.0], [1.0, 1.0]]
    doubled = strategy.run(lambda v: v * 2.0, args=(values,))
    assert strategy.gather(doubled, axis=1).numpy().tolist() == [[0.0, 0.0, 2.0, 2.0]]
    assert strategy.cluster_resolver is None
    with pytest.raises(ValueError, match="expected a PerReplica of 2 values; got 3"):
        strategy.gather(jf.distribute.PerReplica(1.0, 2.0, 3.0), axis=0)


def test_run_of_a_jf_function_traces_the_whole_step(two_cpus):
    strategy = jf.distribute.MirroredStrategy(two_cpus)
    with strategy.scope():
        w = jf.Variable([1.0, -1.0])
        optimizer = jf.optimizers.SGD(0.5)
    traces = []

    @jf.function
    def step(x):
        traces.append(1)
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(w * x)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])
        return loss

    for _ in range(3):
        x = strategy.experimental_distribute_values_from_function(
            lambda ctx: jf.constant([1.0, float(ctx.replica_id_in_sync_group)]))
        losses = strategy.run(step, args=(x,))
    # gradients summed over the replicas: [1, 0] + [1, 1] per step
    np.testing.assert_allclose(w.numpy(), [1.0 - 3 * 0.5 * 2.0, -1.0 - 3 * 0.5 * 1.0])
    assert len(losses) == 2 and int(optimizer.iterations.numpy()) == 3
    assert len(traces) <= 4                # traced with the replicas inside, not per call or per replica
