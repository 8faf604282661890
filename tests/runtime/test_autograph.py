"""AutoGraph: tensor `if`/`while`/`for` become graph ops; Python control flow stays Python."""
import numpy as np
import pytest

import jitflow as jf


@jf.function
def square_if_positive(x):
    if x > 0:
        x = x * x
    else:
        x = 0.0
    return x


def test_tensor_if_becomes_one_cond_node():
    assert square_if_positive(jf.constant(3.0)).numpy() == 9.0
    assert square_if_positive(jf.constant(-3.0)).numpy() == 0.0
    assert square_if_positive.tracing_count == 1
    types = [n.type for n in square_if_positive.get_concrete_function(jf.constant(1.0)).graph.nodes]
    assert types.count("If") == 1


def test_to_code_shows_the_converted_source():
    code = jf.autograph.to_code(square_if_positive)
    assert code.startswith("def tf__square_if_positive(x):")  # TF names the converted function tf__<name>
    assert "ag__.if_stmt(ag__.ld(x) > 0, if_body, else_body, get_state, set_state, ('x',), 1)" in code
    assert "nonlocal x" in code


def test_python_condition_stays_python():
    @jf.function
    def f(x, training):
        if training:
            x = x * 2
        return x

    assert f(jf.constant(1.0), True).numpy() == 2.0
    assert f(jf.constant(1.0), False).numpy() == 1.0
    graph = f.get_concrete_function(jf.constant(1.0), True).graph
    assert "If" not in [n.type for n in graph.nodes]


def test_for_over_range_is_one_while_node_and_python_range_unrolls():
    @jf.function
    def graph_loop(n):
        total = jf.constant(0)
        for i in jf.range(n):
            total += i
        return total

    @jf.function
    def unrolled():
        total = jf.constant(0)
        for i in range(4):
            total += i
        return total

    assert graph_loop(jf.constant(5)).numpy() == 10
    assert unrolled().numpy() == 6
    loop_types = [n.type for n in graph_loop.get_concrete_function(jf.constant(5)).graph.nodes]
    assert loop_types.count("While") == 1
    unrolled_types = [n.type for n in unrolled.get_concrete_function().graph.nodes]
    assert "While" not in unrolled_types and unrolled_types.count("AddV2") == 4


def test_for_over_a_tensor_iterates_rows():
    @jf.function
    def f(m):
        acc = jf.zeros([3])
        for row in m:
            acc = acc + row
        return acc

    m = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_allclose(f(jf.constant(m)).numpy(), m.sum(0))


def test_while_on_tensor_condition():
    @jf.function
    def collatz_steps(n):
        steps = jf.constant(0)
        while n != 1:
            if n % 2 == 0:
                n = n // 2
            else:
                n = 3 * n + 1
            steps += 1
        return steps

    assert collatz_steps(jf.constant(6)).numpy() == 8
    assert collatz_steps(jf.constant(27)).numpy() == 111
    assert collatz_steps.tracing_count == 1


def test_break_continue_and_return_inside_tensor_loops():
    @jf.function
    def odd_sum_until(n, stop):
        s = 0
        for i in jf.range(n):
            if i % 2 == 0:
                continue
            if i > stop:
                break
            s += i
        return s

    @jf.function
    def first_above(x, limit):
        for i in jf.range(limit):
            if i * i > x:
                return i
        return -1

    assert odd_sum_until(jf.constant(20), jf.constant(7)).numpy() == 1 + 3 + 5 + 7
    assert first_above(jf.constant(10), jf.constant(100)).numpy() == 4
    assert first_above(jf.constant(10 ** 6), jf.constant(100)).numpy() == -1
    assert first_above.tracing_count == 1


def test_return_inside_tensor_if():
    @jf.function
    def sign_word(x):
        if x > 0:
            return jf.constant("positive")
        return jf.constant("not positive")

    assert sign_word(jf.constant(2)).numpy() == b"positive"
    assert sign_word(jf.constant(-2)).numpy() == b"not positive"


def test_boolean_operators_on_tensors():
    @jf.function
    def in_range(x):
        return jf.cast(x > 0 and x < 10 and not x == 5, jf.int32)

    assert [int(in_range(jf.constant(v))) for v in (-1, 3, 5, 12)] == [0, 1, 0, 0]


def test_variable_assigned_in_one_branch_only_is_an_error():
    @jf.function
    def f(x):
        if x > 0:
            y = x * 2
        return y

    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        f(jf.constant(1.0))


def test_loop_variable_changing_dtype_is_an_error():
    @jf.function
    def f(n):
        x = jf.constant(0)
        for _ in jf.range(n):
            x = jf.cast(x, jf.float32) + 0.5
        return x

    with pytest.raises(TypeError, match="x has dtype int32 before the loop but float32 after one iteration"):
        f(jf.constant(3))


def test_loop_variable_changing_shape_needs_set_shape():
    @jf.function
    def grows(n):
        x = jf.zeros([1])
        for _ in jf.range(n):
            x = jf.concat([x, jf.zeros([1])], axis=0)
        return x

    with pytest.raises(ValueError, match=r"x has shape \(1,\) before the loop but \(2,\) after one "
                                         r"iteration.*set_shape"):
        grows(jf.constant(3))


def test_shape_invariants_relax_a_loop_variable():
    def body(i, x):
        return i + 1, jf.concat([x, jf.zeros([1])], axis=0)

    @jf.function
    def grows(n):
        _, x = jf.while_loop(lambda i, x: i < n, body, (0, jf.zeros([1])),
                             shape_invariants=(jf.TensorShape([]), jf.TensorShape([None])))
        return x

    assert grows(jf.constant(3)).shape == (4,)


def test_nested_user_functions_are_converted_too():
    def clip(x):
        if x > 1.0:
            return jf.constant(1.0)
        return x

    @jf.function
    def f(x):
        return clip(x) * 2

    assert f(jf.constant(5.0)).numpy() == 2.0
    assert f(jf.constant(0.25)).numpy() == 0.5


def test_side_effects_inside_converted_branches_run_each_call(capsys):
    v = jf.Variable(0)

    @jf.function
    def f(x):
        if x > 0:
            v.assign_add(1)
            jf.print("positive")
        else:
            jf.print("not positive")

    f(jf.constant(1))
    f(jf.constant(-1))
    f(jf.constant(2))
    assert capsys.readouterr().out == "positive\nnot positive\npositive\n"
    assert v.numpy() == 2


def test_cond_and_while_loop_run_eagerly_too():
    assert jf.cond(jf.constant(True), lambda: 1, lambda: 2) == 1
    i, s = jf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i), (0, 0))
    assert (i, s) == (4, 6)


def test_cond_branches_with_different_dtypes_fail_with_names():
    @jf.function
    def f(x):
        return jf.cond(x > 0, lambda: jf.constant(1), lambda: jf.constant(1.0))

    with pytest.raises(TypeError, match="int32 in the true branch but float32"):
        f(jf.constant(1.0))
