"""jf.data.Dataset semantics, following TF's documented behaviour."""
from __future__ import annotations

import collections
import threading
import time

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.core import instrument

D = jf.data.Dataset


def values(ds):
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in ds.as_numpy_iterator()]


# -- order, shuffle, batch ---------------------------------------------------------------------
def test_shuffle_with_seed_is_a_reproducible_permutation():
    a = values(D.range(100).shuffle(100, seed=7))
    b = values(D.range(100).shuffle(100, seed=7))
    assert sorted(a) == list(range(100)) and a == b and a != list(range(100))
    assert values(D.range(100).shuffle(100, seed=8)) != a


def test_shuffle_reshuffles_each_iteration_unless_told_not_to():
    ds = D.range(50).shuffle(50, seed=3)
    first, second = values(ds), values(ds)
    assert sorted(first) == sorted(second) and first != second
    fixed = D.range(50).shuffle(50, seed=3, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)
    # shuffle then repeat: each epoch is a full permutation (TF's recommended order).
    epochs = values(D.range(10).shuffle(10, seed=1).repeat(3))
    assert all(sorted(epochs[i:i + 10]) == list(range(10)) for i in (0, 10, 20))


def test_shuffle_buffer_limits_how_far_elements_move():
    # With buffer_size=1 nothing moves; with buffer b, output i is one of the first i + b inputs.
    assert values(D.range(20).shuffle(1, seed=0)) == list(range(20))
    out = values(D.range(200).shuffle(5, seed=0))
    assert sorted(out) == list(range(200))
    assert all(v < i + 5 for i, v in enumerate(out))


def test_global_seed_makes_shuffle_reproducible():
    jf.random.set_seed(1234)
    a = values(D.range(30).shuffle(30))
    jf.random.set_seed(1234)
    b = values(D.range(30).shuffle(30))
    jf.random.set_seed(None)
    assert a == b and sorted(a) == list(range(30))


def test_batch_remainder_and_cardinality():
    assert values(D.range(7).batch(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert values(D.range(7).batch(3, drop_remainder=True)) == [[0, 1, 2], [3, 4, 5]]
    assert int(D.range(7).batch(3, drop_remainder=True).cardinality()) == 2
    assert int(D.range(7).batch(3).cardinality()) == 3
    assert D.range(7).batch(3, drop_remainder=True).element_spec.shape.as_list() == [3]
    assert D.range(7).batch(3).element_spec.shape.as_list() == [None]
    assert len(D.range(7).batch(3)) == 3


def test_repeat_take_skip_cardinalities():
    assert values(D.range(3).repeat().take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert int(D.range(3).repeat().cardinality()) == jf.data.INFINITE_CARDINALITY
    assert int(D.range(3).repeat().take(7).cardinality()) == 7
    assert int(D.range(10).skip(4).cardinality()) == 6
    assert int(D.range(10).filter(lambda x: x > 3).cardinality()) == jf.data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(D.range(3).repeat())
    assert values(D.range(3).repeat(0)) == []


def test_batch_with_different_shapes_names_component_and_element():
    def gen():
        yield [1, 2]
        yield [1, 2, 3]
    ds = D.from_generator(gen, output_signature=jf.TensorSpec([None], jf.int32)).batch(2)
    with pytest.raises(jf.errors.InvalidArgumentError, match=r"component 0.*shape \[2\].*element 1.*\[3\]"):
        list(ds)


# -- structures, map, filter -------------------------------------------------------------------
def test_nested_structures_and_map_unpacking():
    ds = D.from_tensor_slices({"x": np.arange(4, dtype=np.float32), "y": ["a", "b", "c", "d"]})
    assert set(ds.element_spec) == {"x", "y"}
    out = values(ds.map(lambda d: {"x2": d["x"] * 2.0, "y": d["y"]}).batch(2))
    assert out[0]["x2"].tolist() == [0.0, 2.0] and out[1]["y"].tolist() == [b"c", b"d"]
    pairs = D.from_tensor_slices(([1, 2], [10, 20])).map(lambda a, b: a + b)
    assert values(pairs) == [11, 22]


def test_map_function_is_traced_once():
    traces = []

    def f(x):
        traces.append(1)  # Python side effects run at trace time only, as in TF
        return x + 1
    ds = D.range(5).map(f)
    assert values(ds) == [1, 2, 3, 4, 5] and values(ds) == [1, 2, 3, 4, 5]
    assert len(traces) == 1


def test_map_uses_autograph_for_tensor_control_flow():
    def f(x):
        if x % 2 == 0:
            y = x * 10
        else:
            y = -x
        return y
    assert values(D.range(4).map(f)) == [0, -1, 20, -3]


def test_filter_needs_bool_scalar():
    assert values(D.range(6).filter(lambda x: x % 2 == 0)) == [0, 2, 4]
    with pytest.raises(TypeError, match="scalar bool"):
        D.range(3).filter(lambda x: x)


def test_from_tensor_slices_validates_first_dimension():
    with pytest.raises(jf.errors.InvalidArgumentError, match="component 0 has 2 and component 1 has 3"):
        D.from_tensor_slices(([1, 2], [1, 2, 3]))


def test_from_generator_checks_output_signature():
    def gen():
        yield 1.5
    ds = D.from_generator(gen, output_signature=jf.TensorSpec([2], jf.float32))
    with pytest.raises(TypeError, match=r"element 0.*shape \[\].*expects"):
        list(ds)


# -- threads: parallel map, prefetch, interleave -------------------------------------------------
def test_parallel_map_keeps_order_and_really_runs_concurrently():
    active, peak = [0], [0]
    lock = threading.Lock()

    def slow(x):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.02)  # releases the GIL, as jitflow kernels do
        with lock:
            active[0] -= 1
        return x * 2
    ds = D.range(24).map(lambda x: jf.py_function(slow, [x], jf.int64), num_parallel_calls=4)
    assert values(ds) == [2 * i for i in range(24)]
    assert peak[0] >= 2


def test_parallel_map_error_surfaces_at_its_element():
    def f(x):
        return jf.io.read_file(jf.strings.join(["/nonexistent/", jf.strings.as_string(x)]))
    it = iter(D.range(5).map(f, num_parallel_calls=2))
    with pytest.raises(jf.errors.NotFoundError, match="/nonexistent/0"):
        next(it)


def test_prefetch_is_bounded_and_propagates_errors():
    produced = []

    def gen():
        for i in range(100):
            produced.append(i)
            yield i
    ds = D.from_generator(gen, output_signature=jf.TensorSpec([], jf.int64)).prefetch(3)
    it = iter(ds)
    assert int(next(it)) == 0
    time.sleep(0.2)
    assert len(produced) <= 1 + 3 + 2  # one taken, a full buffer, one blocked in put
    it.close()

    def bad():
        yield 1
        raise RuntimeError("generator broke")
    failing = D.from_generator(bad, output_signature=jf.TensorSpec([], jf.int64)).prefetch(2)
    with pytest.raises(RuntimeError, match="generator broke"):
        list(failing)


def test_interleave_matches_tf_documented_order():
    ds = D.range(1, 6).interleave(lambda x: D.from_tensors(x).repeat(6), cycle_length=2, block_length=4)
    assert values(ds) == [1, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 3, 3, 4, 4,
                          5, 5, 5, 5, 5, 5]
    par = D.range(1, 6).interleave(lambda x: D.from_tensors(x).repeat(6), cycle_length=2, block_length=4,
                                   num_parallel_calls=2)
    assert values(par) == values(ds)


# -- cache ---------------------------------------------------------------------------------------
def test_memory_cache_runs_the_input_once():
    calls = []

    def note(x):
        calls.append(int(x))
        return x
    ds = D.range(4).map(lambda x: jf.py_function(note, [x], jf.int64)).cache()
    assert values(ds) == values(ds) == [0, 1, 2, 3]
    assert calls == [0, 1, 2, 3]


def test_file_cache_survives_and_partial_pass_leaves_nothing(tmp_path):
    path = str(tmp_path / "cache")
    ds = D.range(5).map(lambda x: (x, jf.strings.as_string(x))).cache(path)
    it = iter(ds)
    next(it)
    it.close()
    assert not list(tmp_path.glob("cache.jfcache"))
    assert values(ds) == [(i, str(i).encode()) for i in range(5)]
    assert (tmp_path / "cache.jfcache").exists()
    again = D.range(5).map(lambda x: (x * 100, jf.strings.as_string(x))).cache(path)
    assert [v[0] for v in values(again)] == [0, 1, 2, 3, 4]  # read back from the file


# -- jf.function ---------------------------------------------------------------------------------
def test_dataset_in_jf_function_for_loop():
    @jf.function
    def total(ds):
        s = jf.constant(0, jf.int64)
        for batch in ds:
            s += jf.reduce_sum(batch)
        return s
    ds = D.range(1, 11).batch(4)
    assert int(total(ds)) == 55 and int(total(ds)) == 55  # a fresh iterator per call

    @jf.function
    def first_over(ds, limit):
        out = jf.constant(-1, jf.int64)
        for x in ds:
            if x > limit:
                out = x
                break
        return out
    assert int(first_over(D.range(100).shuffle(100, seed=1).take(50), jf.constant(90, jf.int64))) > 90


def test_owned_iterator_get_next_raises_out_of_range():
    it = iter(D.range(1))
    assert int(it.get_next()) == 0
    with pytest.raises(jf.errors.OutOfRangeError):
        it.get_next()


# -- profiling -----------------------------------------------------------------------------------
class _RecordingSink:
    def __init__(self):
        self.regions = []

    def eager_op(self, *a):
        pass

    def graph_run(self, *a):
        pass

    def region(self, name, start, end, thread_id, args):
        self.regions.append((name, args))


def test_iterator_events_use_tf_names():
    sink = _RecordingSink()
    instrument.install(sink)
    try:
        ds = D.range(8).map(lambda x: x * 2, num_parallel_calls=2).batch(4).prefetch(1)
        assert len(list(ds)) == 2
    finally:
        instrument.uninstall()
    names = collections.Counter(n for n, _ in sink.regions)
    assert names["IteratorGetNext"] == 3  # two elements and the call that finds the end
    assert names["Iterator::Root::Prefetch"] == 3  # two elements and the end
    assert names["Iterator::Root::Prefetch::BatchV2"] == 3
    assert names["Iterator::Root::Prefetch::BatchV2::ParallelMapV2"] == 9
    assert names["Iterator::Root::Prefetch::BatchV2::ParallelMapV2::Range"] == 9


# -- files, zip, concatenate ----------------------------------------------------------------------
def test_text_lines_and_list_files(tmp_path):
    (tmp_path / "a.csv").write_bytes(b"h\n1,x\r\n2,y")
    (tmp_path / "b.csv").write_bytes(b"h\n3,z\n")
    files = D.list_files(str(tmp_path / "*.csv"), shuffle=False)
    assert values(files) == [str(tmp_path / "a.csv").encode(), str(tmp_path / "b.csv").encode()]
    lines = files.interleave(lambda f: jf.data.TextLineDataset(f).skip(1), cycle_length=1)
    assert values(lines) == [b"1,x", b"2,y", b"3,z"]
    shuffled = D.list_files(str(tmp_path / "*.csv"), seed=3)
    assert sorted(values(shuffled)) == values(files)
    with pytest.raises(jf.errors.InvalidArgumentError, match="no files match"):
        D.list_files(str(tmp_path / "*.nothing"))


def test_zip_dicts_and_concatenate_checks():
    z = D.zip({"a": D.range(3), "b": D.from_tensor_slices(["x", "y"])})
    assert values(z) == [{"a": 0, "b": b"x"}, {"a": 1, "b": b"y"}]
    assert int(z.cardinality()) == 2
    assert values(D.range(2).concatenate(D.range(5, 6))) == [0, 1, 5]
    with pytest.raises(TypeError, match="same structure and dtypes"):
        D.range(2).concatenate(D.from_tensor_slices([1.0]))
    with pytest.raises(ValueError, match="batch_size: expected a positive int"):
        D.range(2).batch(0)
    with pytest.raises(ValueError, match="num_parallel_calls"):
        D.range(2).map(lambda x: x, num_parallel_calls=0)


def test_shard_reduce_single_element():
    assert values(D.range(10).shard(3, 1)) == [1, 4, 7]
    assert int(D.range(10).shard(3, 0).cardinality()) == 4 and int(D.range(10).shard(3, 2).cardinality()) == 3
    total = D.range(1, 5).map(lambda x: (x, jf.cast(x, jf.float32))).reduce(
        (jf.constant(0, jf.int64), jf.constant(1.0)), lambda s, e: (s[0] + e[0], s[1] * e[1]))
    assert int(total[0]) == 10 and float(total[1]) == 24.0
    with pytest.raises(TypeError, match="structure and dtypes"):
        D.range(3).reduce(jf.constant(0), lambda s, x: x)
    assert D.from_tensors([1, 2]).get_single_element().numpy().tolist() == [1, 2]
    with pytest.raises(jf.errors.InvalidArgumentError, match="more than one"):
        D.range(2).get_single_element()


def test_generator_args_are_numpy_and_iter_in_graph_is_refused():
    def gen(n, word):
        assert isinstance(n, np.integer) and isinstance(word, bytes)  # TF passes numpy values
        for i in range(int(n)):
            yield word + str(i).encode()
    ds = D.from_generator(gen, args=(3, "w"), output_signature=jf.TensorSpec([], jf.string))
    assert values(ds) == [b"w0", b"w1", b"w2"]

    @jf.function(autograph=False)
    def first(ds):
        return next(iter(ds))
    with pytest.raises(TypeError, match="for element in dataset"):
        first(D.range(3))


def test_background_threads_stop_after_an_early_break(tmp_path):
    files = []
    for k in range(3):
        path = str(tmp_path / f"f{k}.tfrecord")
        with jf.io.TFRecordWriter(path) as w:
            for _ in range(500):
                w.write(b"x" * 10)
        files.append(path)
    ds = (jf.data.TFRecordDataset(files, num_parallel_reads=3)
          .interleave(lambda r: D.from_tensors(r).repeat(2), cycle_length=2, num_parallel_calls=2)
          .map(jf.strings.length, num_parallel_calls=2).prefetch(4))
    for i, _ in enumerate(ds):
        if i == 5:
            break

    def ours():
        return [t for t in threading.enumerate() if t.name.startswith("jf.data")]
    deadline = time.time() + 5
    while ours() and time.time() < deadline:
        time.sleep(0.05)
    assert not ours(), [t.name for t in ours()]


def test_scan_and_sample_from_datasets():
    cumsum = D.range(5).scan(jf.constant(0, jf.int64), lambda s, x: (s + x, s + x))
    assert values(cumsum) == [0, 1, 3, 6, 10] and values(cumsum) == [0, 1, 3, 6, 10]
    with pytest.raises(TypeError, match=r"\(new_state, output\)"):
        D.range(3).scan(jf.constant(0, jf.int64), lambda s, x: s + x)
    a, b = D.range(0, 100), D.range(1000, 1100)
    mixed = values(D.sample_from_datasets([a, b], weights=[0.8, 0.2], seed=4))
    assert sorted(mixed) == list(range(100)) + list(range(1000, 1100))  # both drained completely
    first = mixed[:50]
    assert sum(v < 1000 for v in first) > 30  # the 0.8 weight shows
    assert [v for v in mixed if v < 1000] == list(range(100))  # each input keeps its order
    assert values(D.sample_from_datasets([a, b], seed=4)) == values(D.sample_from_datasets([a, b], seed=4))
    short = values(D.sample_from_datasets([D.range(3), D.range(100, 200)], seed=1, stop_on_empty_dataset=True))
    assert len(short) < 103 and sum(v < 3 for v in short) == 3
