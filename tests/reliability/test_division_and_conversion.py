"""Issue #22 item 11: no wrong answers without an error.

Integer floordiv/mod by zero returned 0 in every tier (TF raises InvalidArgumentError),
INT64_MIN // -1 returned 0 (TF: INT64_MIN, two's complement wrap), and `constant([1, "a"])`
silently became a string tensor (TF raises ValueError).
"""
import numpy as np
import pytest

import jitflow as jf

TIERS = {
    "eager": lambda fn: fn,
    "interpreter": lambda fn: jf.function(fn, jit_compile=False),
    "compiled": lambda fn: jf.function(fn, jit_compile=True),
}
INT_DTYPES = [jf.int8, jf.int16, jf.int32, jf.int64, jf.uint8]


@pytest.mark.parametrize("tier", sorted(TIERS))
@pytest.mark.parametrize("op", [jf.math.floordiv, jf.math.floormod, lambda a, b: a // b, lambda a, b: a % b])
@pytest.mark.parametrize("dtype", INT_DTYPES, ids=lambda d: d.name)
def test_integer_division_by_zero_raises_in_every_tier(tier, op, dtype):
    fn = TIERS[tier](lambda a, b: op(a, b) + jf.ones_like(a))
    a = jf.constant([7, 3], dtype)
    b = jf.constant([2, 0], dtype)
    with pytest.raises(jf.errors.InvalidArgumentError, match="Integer division by zero"):
        fn(a, b)


@pytest.mark.parametrize("tier", sorted(TIERS))
def test_float_division_by_zero_still_gives_inf(tier):
    fn = TIERS[tier](lambda a, b: a // b)
    out = fn(jf.constant([1.0, -1.0]), jf.constant([0.0, 0.0])).numpy()
    np.testing.assert_array_equal(out, [np.inf, -np.inf])


@pytest.mark.parametrize("tier", sorted(TIERS))
@pytest.mark.parametrize("dtype, low", [(jf.int32, -2**31), (jf.int64, -2**63), (jf.int8, -128), (jf.int16, -2**15)],
                         ids=["int32", "int64", "int8", "int16"])
def test_min_floordiv_minus_one_wraps_like_tf(tier, dtype, low):
    fn = TIERS[tier](lambda a, b: (a // b, a % b))
    q, r = fn(jf.constant([low, 7, -7], dtype), jf.constant([-1, -2, -1], dtype))
    assert q.numpy().tolist() == [low, -4, 7]
    assert r.numpy().tolist() == [0, -1, 0]


@pytest.mark.parametrize("value", [[1, "a"], ["a", 1], [[1], ["a"]], [True, "x"], [1.5, b"a"], [None, "a"]])
def test_constant_refuses_numbers_mixed_with_strings(value):
    with pytest.raises(ValueError, match="mixed types"):
        jf.constant(value)


def test_constant_of_strings_still_works():
    assert jf.constant([["a"], [b"b"]]).numpy().tolist() == [[b"a"], [b"b"]]


@pytest.mark.tf
def test_same_behaviour_as_tensorflow():
    tf = pytest.importorskip("tensorflow")
    for mod in (tf, jf):
        with pytest.raises(mod.errors.InvalidArgumentError):
            mod.math.floordiv(mod.constant([1, 2]), mod.constant([0, 1]))
        with pytest.raises(mod.errors.InvalidArgumentError):
            mod.math.floormod(mod.constant([1, 2]), mod.constant([0, 1]))
        with pytest.raises(ValueError):
            mod.constant([1, "a"])
    want = (tf.constant(-2**63, tf.int64) // tf.constant(-1, tf.int64)).numpy()
    got = (jf.constant(-2**63, jf.int64) // jf.constant(-1, jf.int64)).numpy()
    assert got == want
