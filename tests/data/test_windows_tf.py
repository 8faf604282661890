"""`window`, `group_by_window`, `bucket_by_sequence_length` and `Options` against TensorFlow:
the same pipelines give the same elements, in the same order, with the same element specs.

Run with `.venv-tf/bin/python -m pytest -m tf tests/data/test_windows_tf.py` (see PREAMBLE).
"""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")


def _both(build):
    ours, theirs = build(jf), build(tf)
    assert repr(ours.element_spec) == repr(theirs.element_spec).replace("tf.", "jf.")
    a, b = list(ours.as_numpy_iterator()), list(theirs.as_numpy_iterator())
    assert len(a) == len(b), (a, b)
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            for u, v in zip(x, y):
                np.testing.assert_array_equal(u, v)
        else:
            np.testing.assert_array_equal(x, y)
    assert int(ours.cardinality()) == int(theirs.cardinality())


@pytest.mark.parametrize("args", [(3,), (3, 1), (3, 1, 1, True), (2, 3, 2), (3, 2, 2), (3, 2, 2, True), (4, 5),
                                  (1,), (10,), (10, 1, 1, True)])
def test_window_matches_tf(args):
    _both(lambda m: m.data.Dataset.range(9).window(*args).flat_map(lambda w: w.batch(10)))


def test_window_of_pairs_and_specs_match_tf():
    def build(m):
        pairs = m.data.Dataset.zip((m.data.Dataset.range(5), m.data.Dataset.range(5).map(lambda x: x * 10)))
        return pairs.window(2, 1)
    assert repr(build(jf).element_spec) == repr(build(tf).element_spec).replace("tf.", "jf.")
    _both(lambda m: build(m).flat_map(lambda x, y: m.data.Dataset.zip((x.batch(2), y.batch(2)))))


@pytest.mark.parametrize("window", [1, 3, 4, 100])
def test_group_by_window_matches_tf(window):
    _both(lambda m: m.data.Dataset.range(23).group_by_window(
        lambda x: (x * 7) % 4, lambda k, w: w.batch(window), window_size=window))
    _both(lambda m: m.data.Dataset.range(23).group_by_window(
        lambda x: x % 3, lambda k, w: w.map(lambda v: v * 10 + k).batch(2), window_size_func=lambda k: k + window))


@pytest.mark.parametrize("kwargs", [{}, {"pad_to_bucket_boundary": True}, {"drop_remainder": True},
                                    {"no_padding": True, "bucket_batch_sizes": [1, 1, 1]},
                                    {"padding_values": -1}, {"padded_shapes": [12]}])
def test_bucket_by_sequence_length_matches_tf(kwargs):
    lengths = [3, 8, 1, 5, 9, 2, 7, 4, 11, 6, 10, 3]

    def build(m):
        def gen():
            for n in lengths:  # no_padding batches need equal lengths
                yield np.arange(2, dtype=np.int32) if "no_padding" in kwargs else np.arange(1, n + 1, dtype=np.int32)
        ds = m.data.Dataset.from_generator(gen, output_signature=m.TensorSpec([None], m.int32))
        args = dict(kwargs)
        sizes = args.pop("bucket_batch_sizes", [2, 3, 2])
        return ds.bucket_by_sequence_length(lambda x: m.size(x), [4, 12], sizes, **args)
    _both(build)

    def build_apply(m):
        ds = m.data.Dataset.from_generator(lambda: (np.ones(n, np.int32) for n in lengths),
                                           output_signature=m.TensorSpec([None], m.int32))
        return ds.apply(m.data.experimental.bucket_by_sequence_length(lambda x: m.size(x), [5], [3, 3]))
    _both(build_apply)


def test_options_merge_like_tf():
    def build(m):
        a, b = m.data.Options(), m.data.Options()
        a.deterministic = False
        a.threading.private_threadpool_size = 2
        b.deterministic = True
        b.autotune.enabled = False
        ds = m.data.Dataset.range(3).with_options(a).map(lambda x: x + 1).with_options(b)
        o = ds.options()
        return o.deterministic, o.threading.private_threadpool_size, o.autotune.enabled, list(ds.as_numpy_iterator())
    assert build(jf) == build(tf)
    for m in (jf, tf):
        with pytest.raises(AttributeError, match="Cannot set the property foo on Options"):
            m.data.Options().foo = 1
