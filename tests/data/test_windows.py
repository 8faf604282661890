"""`window`, `group_by_window`, `bucket_by_sequence_length` and `jf.data.Options`
(TF's documented results; test_windows_tf.py compares with TF itself)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

import jitflow as jf


def _windows(ds):
    return [[int(v) for v in w] for w in ds]


def test_window_sizes_shifts_strides_and_remainders():
    ds = jf.data.Dataset.range(7)
    assert _windows(ds.window(3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert _windows(ds.window(3, 1, drop_remainder=True)) == [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5], [4, 5, 6]]
    assert _windows(ds.window(3, 1))[-2:] == [[5, 6], [6]]
    assert _windows(ds.window(2, 3, 2)) == [[0, 2], [3, 5], [6]]
    assert _windows(ds.window(3, 2, 2)) == [[0, 2, 4], [2, 4, 6], [4, 6], [6]]
    assert [int(ds.window(*a).cardinality()) for a in ((3,), (3, 1), (2, 3, 2))] == [3, 7, 3]
    assert int(ds.window(3, 1, drop_remainder=True).cardinality()) == 5
    assert int(jf.data.Dataset.range(2).window(3, drop_remainder=True).cardinality()) == 0
    assert int(jf.data.Dataset.range(3).repeat().window(2).cardinality()) == jf.data.INFINITE_CARDINALITY
    with pytest.raises(ValueError, match="shift: expected a positive int; got 0"):
        ds.window(3, 0)


def test_window_of_structures_gives_structures_of_datasets():
    pairs = jf.data.Dataset.zip((jf.data.Dataset.range(5), jf.data.Dataset.range(5).map(lambda x: x * 10)))
    windows = pairs.window(2)
    assert isinstance(windows.element_spec, tuple) and isinstance(windows.element_spec[0], jf.data.DatasetSpec)
    batched = windows.flat_map(lambda x, y: jf.data.Dataset.zip((x.batch(2), y.batch(2))))
    assert [(a.tolist(), b.tolist()) for a, b in batched.as_numpy_iterator()] == [
        ([0, 1], [0, 10]), ([2, 3], [20, 30]), ([4], [40])]
    named = jf.data.Dataset.from_tensor_slices({"a": [1, 2, 3]}).window(2)
    assert repr(named.element_spec) == "{'a': DatasetSpec(TensorSpec(shape=(), dtype=jf.int32, name=None), " \
                                       "TensorShape([]))}"
    with pytest.raises(TypeError, match="as_numpy_iterator.* not supported"):
        list(named.as_numpy_iterator())
    with pytest.raises(TypeError, match="the elements are datasets"):
        named.map(lambda d: d)
    # Sliding windows of a sequence, the usual time-series recipe.
    series = jf.data.Dataset.range(6).window(4, shift=1, drop_remainder=True).flat_map(lambda w: w.batch(4))
    assert [w.tolist() for w in series.as_numpy_iterator()] == [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5]]


def test_group_by_window_order_and_sizes():
    ds = jf.data.Dataset.range(10).group_by_window(lambda x: x % 3, lambda k, w: w.batch(4), window_size=4)
    # A group is reduced as soon as it is full; the rest at the end, by increasing key.
    assert [b.tolist() for b in ds.as_numpy_iterator()] == [[0, 3, 6, 9], [1, 4, 7], [2, 5, 8]]
    sized = jf.data.Dataset.range(12).group_by_window(
        lambda x: x % 2, lambda k, w: w.batch(10), window_size_func=lambda k: k + 2)
    assert [b.tolist() for b in sized.as_numpy_iterator()] == [[0, 2], [1, 3, 5], [4, 6], [8, 10], [7, 9, 11]]
    keyed = jf.data.Dataset.range(6).group_by_window(
        lambda x: x // 3, lambda k, w: w.map(lambda v: v + 100 * k), window_size=3)
    assert list(keyed.as_numpy_iterator()) == [0, 1, 2, 103, 104, 105]
    with pytest.raises(TypeError, match="key_func: must return a single jf.int64 scalar"):
        jf.data.Dataset.range(3).group_by_window(lambda x: jf.cast(x, jf.int32), lambda k, w: w, window_size=2)
    with pytest.raises(ValueError, match="exactly one of window_size and window_size_func"):
        jf.data.Dataset.range(3).group_by_window(lambda x: x, lambda k, w: w)


def _rows(lengths):
    def gen():
        for n in lengths:
            yield np.arange(1, n + 1, dtype=np.int32)
    return jf.data.Dataset.from_generator(gen, output_signature=jf.TensorSpec([None], jf.int32))


def test_bucket_by_sequence_length_pads_within_buckets():
    lengths = [1, 5, 2, 6, 3, 7, 4, 8]
    ds = _rows(lengths).bucket_by_sequence_length(lambda x: jf.size(x), [4], [3, 3])
    batches = list(ds.as_numpy_iterator())
    # Lengths < 4 go to bucket 0, the others (4 too) to bucket 1; each batch pads to its longest.
    assert [b.shape for b in batches] == [(3, 3), (3, 7), (2, 8)]
    assert batches[0].tolist() == [[1, 0, 0], [1, 2, 0], [1, 2, 3]]
    boundary = _rows(lengths[:6]).bucket_by_sequence_length(lambda x: jf.size(x), [4, 9], [3, 3, 3],
                                                             pad_to_bucket_boundary=True)
    assert [b.shape for b in boundary.as_numpy_iterator()] == [(3, 3), (3, 8)]
    dropped = _rows(lengths).bucket_by_sequence_length(lambda x: jf.size(x), [4], [3, 3], drop_remainder=True,
                                                       padding_values=-1)
    out = list(dropped.as_numpy_iterator())
    assert [b.shape for b in out] == [(3, 3), (3, 7)] and out[0][0].tolist() == [1, -1, -1]
    same = _rows([2, 2, 2]).bucket_by_sequence_length(lambda x: jf.size(x), [4], [2, 2], no_padding=True)
    assert [b.shape for b in same.as_numpy_iterator()] == [(2, 2), (1, 2)]
    via_apply = _rows(lengths).apply(jf.data.experimental.bucket_by_sequence_length(
        lambda x: jf.size(x), [4], [3, 3]))
    assert [b.shape for b in via_apply.as_numpy_iterator()] == [b.shape for b in batches]
    with pytest.raises(ValueError, match="bucket_batch_sizes: must have len"):
        _rows(lengths).bucket_by_sequence_length(lambda x: jf.size(x), [4], [3])
    with pytest.raises(jf.errors.InvalidArgumentError, match="pad_to_bucket_boundary=True"):
        list(_rows([9]).bucket_by_sequence_length(lambda x: jf.size(x), [4], [1, 1], pad_to_bucket_boundary=True))


def test_options_fields_merging_and_validation():
    o = jf.data.Options()
    assert o.deterministic is None and o.threading.private_threadpool_size is None and o.autotune.enabled is None
    o.deterministic = False
    o.experimental_optimization.map_parallelization = True
    o.experimental_distribute.auto_shard_policy = jf.data.experimental.AutoShardPolicy.DATA
    with pytest.raises(AttributeError, match="Cannot set the property foo on Options"):
        o.foo = 1
    with pytest.raises(TypeError, match="Options.deterministic: expected bool or None; got str 'no'"):
        o.deterministic = "no"
    with pytest.raises(TypeError, match="private_threadpool_size: expected int"):
        o.threading.private_threadpool_size = 1.5
    later = jf.data.Options()
    later.deterministic = True
    later.threading.private_threadpool_size = 3
    ds = jf.data.Dataset.range(4).with_options(o).map(lambda x: x).with_options(later)
    merged = ds.options()
    assert merged.deterministic is True  # the later with_options wins
    assert merged.threading.private_threadpool_size == 3
    assert merged.experimental_optimization.map_parallelization is True
    zipped = jf.data.Dataset.zip((jf.data.Dataset.range(2).with_options(o), jf.data.Dataset.range(2)))
    assert zipped.options().deterministic is False
    assert list(ds.as_numpy_iterator()) == [0, 1, 2, 3]
    with pytest.raises(TypeError, match="options: expected jf.data.Options"):
        jf.data.Dataset.range(2).with_options({"deterministic": False})


def _slow_first(x):
    if int(x) == 0:
        time.sleep(0.3)
    return x


def test_options_are_honoured_by_parallel_map_and_prefetch():
    def pipeline(options):
        ds = jf.data.Dataset.range(6).map(lambda x: jf.py_function(_slow_first, [x], jf.int64),
                                          num_parallel_calls=4)
        return ds.with_options(options) if options is not None else ds

    assert list(pipeline(None).as_numpy_iterator()) == [0, 1, 2, 3, 4, 5]  # deterministic by default
    unordered = jf.data.Options()
    unordered.deterministic = False
    out = list(pipeline(unordered).as_numpy_iterator())
    assert sorted(out) == [0, 1, 2, 3, 4, 5] and out[0] != 0  # the slow element no longer holds the rest back
    # private_threadpool_size caps the map's threads.
    seen = set()

    def record(x):
        seen.add(threading.current_thread().name)
        time.sleep(0.01)
        return x
    capped = jf.data.Options()
    capped.threading.private_threadpool_size = 2
    ds = jf.data.Dataset.range(16).map(lambda x: jf.py_function(record, [x], jf.int64), num_parallel_calls=8)
    assert list(ds.with_options(capped).as_numpy_iterator()) == list(range(16))
    assert len(seen) <= 2
    # autotune.enabled=False: prefetch(AUTOTUNE) holds one element ahead.
    untuned = jf.data.Options()
    untuned.autotune.enabled = False
    pre = jf.data.Dataset.range(3).prefetch(jf.data.AUTOTUNE)
    it = iter(pre.with_options(untuned))
    next(it)
    assert pre._pipeline_options.autotune.enabled is False
    assert list(pre.with_options(untuned).as_numpy_iterator()) == [0, 1, 2]


def test_group_by_window_reduce_func_that_knows_only_its_keys():
    sizes = [2]  # only key 0 exists; probing key 1 must not break construction
    ds = jf.data.Dataset.range(5).group_by_window(lambda x: x * 0, lambda k, w: w.batch(sizes[int(k)]),
                                                  window_size=5)
    assert [b.tolist() for b in ds.as_numpy_iterator()] == [[0, 1], [2, 3], [4]]
