"""Initializers: shapes, dtypes, distributions (statistics) and seeding rules."""
from __future__ import annotations

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.training.initializers import compute_fans


def test_glorot_uniform_limits_and_variance():
    w = jf.initializers.glorot_uniform()(shape=[200, 300]).numpy()
    limit = np.sqrt(6.0 / 500)
    assert w.shape == (200, 300) and w.dtype == np.float32
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit
    assert np.var(w) == pytest.approx(2.0 / 500, rel=0.03)


def test_glorot_normal_is_truncated_with_variance_two_over_fans():
    w = jf.initializers.glorot_normal()(shape=[200, 300]).numpy()
    stddev = np.sqrt(2.0 / 500) / 0.87962566103423978
    assert np.abs(w).max() <= 2 * stddev
    assert np.var(w) == pytest.approx(2.0 / 500, rel=0.03)
    assert abs(np.mean(w)) < 0.002


def test_he_initializers_scale_by_fan_in():
    assert np.var(jf.initializers.HeNormal()([400, 50]).numpy()) == pytest.approx(2.0 / 400, rel=0.05)
    w = jf.initializers.HeUniform()([400, 50]).numpy()
    assert np.abs(w).max() <= np.sqrt(6.0 / 400)


def test_fans_follow_keras_for_every_rank():
    assert compute_fans(()) == (1.0, 1.0)
    assert compute_fans((5,)) == (5.0, 5.0)
    assert compute_fans((3, 4)) == (3.0, 4.0)
    assert compute_fans((3, 3, 8, 16)) == (72.0, 144.0)  # conv kernel: receptive field 9


def test_random_normal_and_uniform_initializers_tf_top_level_names():
    assert jf.random_normal_initializer(mean=0.0, stddev=0.05)(shape=[]).shape == ()
    w = jf.random_normal_initializer(mean=1.0, stddev=0.05)(shape=[100, 100]).numpy()
    assert np.mean(w) == pytest.approx(1.0, abs=0.002) and np.std(w) == pytest.approx(0.05, rel=0.03)
    u = jf.random_uniform_initializer(minval=-0.05, maxval=0.05)(shape=[100, 100]).numpy()
    assert u.min() >= -0.05 and u.max() < 0.05 and np.mean(u) == pytest.approx(0.0, abs=0.002)
    ints = jf.initializers.RandomUniform(0, 4)([1000], dtype=jf.int32).numpy()
    assert ints.dtype == np.int32 and set(np.unique(ints)) == {0, 1, 2, 3}
    t = jf.initializers.TruncatedNormal(stddev=1.0)([10000]).numpy()
    assert np.abs(t).max() <= 2.0


def test_constant_zeros_ones():
    np.testing.assert_array_equal(jf.initializers.Zeros()([2, 3]).numpy(), np.zeros((2, 3)))
    assert jf.zeros_initializer()([2], dtype=jf.int32).dtype is jf.int32
    np.testing.assert_array_equal(jf.initializers.Ones()([2]).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(jf.constant_initializer(7)([2, 2]).numpy(), np.full((2, 2), 7.0))
    np.testing.assert_array_equal(jf.initializers.Constant([1, 2, 3, 4])([2, 2]).numpy(), [[1, 2], [3, 4]])
    with pytest.raises(ValueError, match="elements"):
        jf.initializers.Constant([1, 2, 3])([2, 2])


def test_seeded_initializers_repeat_and_unseeded_follow_the_global_seed():
    a = jf.initializers.GlorotUniform(seed=3)([4, 5]).numpy()
    b = jf.initializers.GlorotUniform(seed=3)([4, 5]).numpy()
    c = jf.initializers.GlorotUniform(seed=4)([4, 5]).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    jf.random.set_seed(11)
    first = [jf.initializers.RandomNormal()([3]).numpy() for _ in range(2)]
    jf.random.set_seed(11)
    second = [jf.initializers.RandomNormal()([3]).numpy() for _ in range(2)]
    jf.random.set_seed(None)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first[0], first[1])


def test_dtype_and_get():
    assert jf.initializers.GlorotNormal()([2, 2], dtype=jf.float64).dtype is jf.float64
    with pytest.raises(TypeError, match="floating"):
        jf.initializers.GlorotNormal()([2, 2], dtype=jf.int32)
    assert isinstance(jf.initializers.get("glorot_uniform"), jf.initializers.GlorotUniform)
    with pytest.raises(ValueError, match="unknown initializer"):
        jf.initializers.get("nope")


def test_initializer_inside_a_jf_function_initialises_a_variable_once():
    holder = []

    @jf.function
    def f(x):
        if not holder:
            holder.append(jf.Variable(jf.initializers.GlorotUniform(seed=0)([3, 2])))
        return jf.matmul(x, holder[0])

    out = f(jf.ones([1, 3]))
    np.testing.assert_allclose(out.numpy(), jf.initializers.GlorotUniform(seed=0)([3, 2]).numpy().sum(0,
                                                                                                      keepdims=True),
                               rtol=1e-6)
    assert len(holder) == 1
