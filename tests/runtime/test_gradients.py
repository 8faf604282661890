"""Gradients: every registered gradient against central finite differences (float64), the
same gradients inside `jf.function`, and the GradientTape rules (nested, persistent, watch,
stop_recording, stop_gradient, unconnected sources).

`CASES` is driven by the registry: a gradient registered with `@gradient("Op")` and no case
here fails `test_every_registered_gradient_has_a_case`. Each case also checks that its op
was really recorded on the tape, so a case cannot silently test a different op.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import numpy as np
import pytest

import jitflow as jf
from jitflow.runtime.autodiff.tape import GRADIENTS

RNG = np.random.default_rng(20240606)


def r(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape)


def pos(*shape):
    return RNG.uniform(0.5, 2.0, size=shape)


def away(*shape):
    """Values at least 0.2 from zero (Abs, Relu: not at the kink)."""
    return RNG.uniform(0.2, 1.0, size=shape) * RNG.choice([-1.0, 1.0], size=shape)


def distinct(*shape):
    """A permutation of well-separated values: no ties for max/min/maximum."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 - n * 0.15).reshape(shape)


@dataclass
class Case:
    op: str
    fn: Callable
    inputs: List[np.ndarray]
    wrt: Optional[Sequence[int]] = None   # inputs to differentiate (default: the float ones)
    variables: bool = False               # feed the inputs as jf.Variables
    eps: float = 1e-6
    tol: float = 1e-6
    name: str = field(default="")

    def sources(self) -> List[int]:
        if self.wrt is not None:
            return list(self.wrt)
        return [i for i, x in enumerate(self.inputs) if np.asarray(x).dtype.kind == "f"]


@jf.custom_gradient
def _square_custom(x):
    return x * x, lambda dy: dy * 2.0 * x


I = np.int32
CASES: List[Case] = [
    # elementwise binary, with broadcasting
    Case("AddV2", lambda x, y: x + y, [r(2, 3), r(3)]),
    Case("AddV2", lambda x, y: x + y, [r(3, 1), r(1, 4)]),
    Case("AddV2", lambda x, y: x + y, [r(), r(2, 2)]),
    Case("Sub", lambda x, y: x - y, [r(2, 3), r(2, 1)]),
    Case("Mul", lambda x, y: x * y, [r(2, 3), r(3)]),
    Case("Mul", lambda x, y: x * y, [r(4, 1), r(1, 3)]),
    Case("RealDiv", lambda x, y: x / y, [r(2, 3), pos(3)]),
    Case("RealDiv", lambda x, y: x / y, [pos(1), r(2, 2)], wrt=[0]),
    Case("FloorMod", lambda x, y: jf.math.floormod(x, y), [RNG.uniform(3.2, 5.8, (2, 3)), np.array(3.0)]),
    Case("Pow", lambda x, y: jf.pow(x, y), [pos(2, 3), r(2, 3)]),
    Case("Pow", lambda x: x ** 3.0, [r(4)]),
    Case("Maximum", jf.maximum, [distinct(2, 3), distinct(3) + 0.05]),
    Case("Minimum", jf.minimum, [distinct(2, 3), distinct(2, 1) + 0.05]),
    # elementwise unary
    Case("Neg", lambda x: -x, [r(3)]),
    Case("Abs", jf.abs, [away(2, 3)]),
    Case("Exp", jf.exp, [r(2, 3)]),
    Case("Log", jf.math.log, [pos(2, 3)]),
    Case("Sqrt", jf.sqrt, [pos(2, 3)]),
    Case("Square", jf.square, [r(2, 3)]),
    Case("Tanh", jf.tanh, [r(2, 3)]),
    Case("Sigmoid", jf.sigmoid, [r(2, 3)]),
    Case("Sin", jf.sin, [r(2, 3)]),
    Case("Cos", jf.cos, [r(2, 3)]),
    Case("Relu", jf.nn.relu, [away(2, 3)]),
    Case("Identity", lambda x: jf.identity(x) * x, [r(3)]),
    Case("ReadVariableOp", lambda v, w: v * w + v, [r(2, 3), r(3)], variables=True),
    Case("Cast", lambda x: jf.cast(jf.square(jf.cast(x, jf.float32)), jf.float64), [r(3)], eps=1e-3, tol=1e-3),
    # softmax
    Case("Softmax", lambda x: jf.nn.softmax(x), [r(2, 4)]),
    Case("Softmax", lambda x: jf.nn.softmax(x, axis=0), [r(3, 2)]),
    Case("LogSoftmax", lambda x: jf.nn.log_softmax(x), [r(2, 4)]),
    Case("LogSoftmax", lambda x: jf.nn.log_softmax(x, axis=0), [r(3, 2)]),
    # reductions with axes and keepdims
    Case("Sum", lambda x: jf.reduce_sum(x), [r(2, 3)]),
    Case("Sum", lambda x: jf.reduce_sum(x, axis=1, keepdims=True), [r(2, 3)]),
    Case("Sum", lambda x: jf.reduce_sum(x, axis=[0, 2]), [r(2, 3, 2)]),
    Case("Sum", lambda x: jf.reduce_sum(x, axis=-1), [r(2, 3)]),
    Case("Mean", lambda x: jf.reduce_mean(x), [r(2, 3)]),
    Case("Mean", lambda x: jf.reduce_mean(x, axis=0, keepdims=True), [r(2, 3)]),
    Case("Mean", lambda x: jf.reduce_mean(x, axis=[1, 2]), [r(2, 3, 2)]),
    Case("Max", lambda x: jf.reduce_max(x, axis=1), [distinct(2, 3)]),
    Case("Max", lambda x: jf.reduce_max(x), [distinct(2, 3)]),
    Case("Max", lambda x: jf.reduce_max(x, axis=0, keepdims=True), [distinct(3, 2)]),
    Case("Min", lambda x: jf.reduce_min(x, axis=-1), [distinct(2, 3)]),
    Case("Min", lambda x: jf.reduce_min(x, axis=[0, 1], keepdims=True), [distinct(2, 3)]),
    Case("Prod", lambda x: jf.reduce_prod(x, axis=1), [pos(2, 3)]),
    Case("Prod", lambda x: jf.reduce_prod(x), [pos(2, 2)]),
    # matmul with every transpose flag, batched with broadcasting
    Case("MatMul", lambda a, b: jf.matmul(a, b), [r(2, 3), r(3, 4)]),
    Case("MatMul", lambda a, b: jf.matmul(a, b, transpose_a=True), [r(3, 2), r(3, 4)]),
    Case("MatMul", lambda a, b: jf.matmul(a, b, transpose_b=True), [r(2, 3), r(4, 3)]),
    Case("MatMul", lambda a, b: jf.matmul(a, b, transpose_a=True, transpose_b=True), [r(3, 2), r(4, 3)]),
    Case("BatchMatMulV2", lambda a, b: jf.matmul(a, b), [r(2, 2, 3), r(3, 4)]),
    Case("BatchMatMulV2", lambda a, b: jf.matmul(a, b, transpose_b=True), [r(1, 2, 3), r(2, 2, 3)]),
    # shape ops
    Case("Reshape", lambda x: jf.reshape(x, [3, 2]) * jf.constant([[1.0, 2.0]] * 3, jf.float64), [r(2, 3)]),
    Case("Squeeze", lambda x: jf.squeeze(x, axis=[1]) * 2.0, [r(2, 1, 3)]),
    Case("ExpandDims", lambda x: jf.expand_dims(x, 1) * x, [r(2, 3)]),
    Case("Transpose", lambda x: jf.transpose(x, [1, 0, 2]), [r(2, 3, 2)]),
    Case("Transpose", lambda x: jf.transpose(x) * 2.0, [r(2, 3)]),
    Case("ConcatV2", lambda x, y: jf.concat([x, y, x], axis=0), [r(2, 3), r(1, 3)]),
    Case("ConcatV2", lambda x, y: jf.concat([x, y], axis=-1), [r(2, 1), r(2, 3)]),
    Case("Pack", lambda x, y: jf.stack([x, y, x]), [r(2), r(2)]),
    Case("Pack", lambda x, y: jf.stack([x, y], axis=1), [r(2, 3), r(2, 3)]),
    Case("Unpack", lambda x: jf.unstack(x, axis=1)[0] * 2.0 + jf.unstack(x, axis=1)[2], [r(2, 3)]),
    Case("StridedSlice", lambda x: x[1:, ::2], [r(3, 4)]),
    Case("StridedSlice", lambda x: x[-1] * x[0], [r(3, 2)]),
    Case("StridedSlice", lambda x: x[:, None, 1], [r(3, 4)]),
    Case("StridedSlice", lambda x: x[..., ::-1] * jf.constant([1.0, 2.0, 3.0], jf.float64), [r(2, 3)]),
    Case("SelectV2", lambda c, x, y: jf.where(c, x, y), [np.array([[True], [False]]), r(2, 3), r(3)]),
    Case("Fill", lambda x: jf.fill([2, 3], x) * jf.constant([[1.0, -2.0, 0.5]], jf.float64), [r()]),
    # gather / scatter / pad
    Case("GatherV2", lambda x, i: jf.gather(x, i), [r(4, 2), np.array([2, 0, 2], I)]),
    Case("GatherV2", lambda x, i: jf.gather(x, i, axis=1), [r(2, 3, 2), np.array([[1, 1], [0, 2]], I)]),
    Case("UnsortedSegmentSum", lambda x, i: jf.math.unsorted_segment_sum(x, i, 3),
         [r(4, 2), np.array([0, 2, 0, -1], I)]),
    Case("TensorScatterUpdate", lambda t, i, u: jf.tensor_scatter_nd_update(t, i, u),
         [r(4, 2), np.array([[3], [0]], I), r(2, 2)]),
    Case("Pad", lambda x: jf.pad(x, [[1, 0], [0, 2]]), [r(2, 3)]),
    # ops added for TF 2 tutorials (runtime/ops/math_extra_ops.py, array_extra_ops.py, custom_gradient)
    Case("Log1p", jf.math.log1p, [pos(2, 3)]),
    Case("Expm1", jf.math.expm1, [r(2, 3)]),
    Case("Erf", jf.math.erf, [r(2, 3)]),
    Case("Erfc", jf.math.erfc, [r(2, 3)]),
    Case("Cumprod", lambda x: jf.math.cumprod(x, axis=1), [pos(2, 3)]),
    Case("SegmentSum", lambda x, i: jf.math.segment_sum(x, i), [r(4, 2), np.array([0, 0, 2, 3], I)]),
    Case("Cumprod", lambda x: jf.math.cumprod(x, exclusive=True, reverse=True), [pos(3, 2)]),
    Case("TensorScatterAdd", lambda t, i, u: jf.tensor_scatter_nd_add(t, i, u),
         [r(4, 2), np.array([[3], [0], [3]], I), r(3, 2)]),
    Case("GatherNd", lambda p: jf.gather_nd(p, [[0], [2], [0]]), [r(3, 2)]),          # a repeated index
    Case("GatherNd", lambda p: jf.gather_nd(p, [[1, 0], [0, 2]]), [r(2, 3)]),
    Case("SparseToDense", lambda v: jf.sparse.to_dense(jf.sparse.SparseTensor([[0, 1], [1, 2]], v, [2, 3])),
         [r(2)]),
    Case("SparseTensorDenseMatMul", lambda v, w: jf.sparse.sparse_dense_matmul(
        jf.sparse.SparseTensor([[0, 1], [1, 0], [1, 2]], v, [2, 3]), w), [r(3), r(3, 2)]),
    Case("MatrixInverse", jf.linalg.inv, [r(3, 3) + 3 * np.eye(3)]),
    Case("MatrixInverse", lambda a: jf.linalg.inv(a, adjoint=True), [r(2, 3, 3) + 3 * np.eye(3)]),
    Case("MatrixDeterminant", jf.linalg.det, [r(2, 3, 3) + 2 * np.eye(3)]),
    Case("Rsqrt", jf.math.rsqrt, [pos(2, 3)]),
    Case("Reciprocal", jf.math.reciprocal, [pos(3)]),
    Case("Tan", jf.math.tan, [r(3)]),
    Case("Atan", jf.math.atan, [r(3)]),
    Case("Asin", jf.math.asin, [r(3) * 0.8]),
    Case("Acos", jf.math.acos, [r(3) * 0.8]),
    Case("Sinh", jf.math.sinh, [r(3)]),
    Case("Cosh", jf.math.cosh, [r(3)]),
    Case("Softsign", jf.nn.softsign, [away(3)]),
    Case("Cumsum", lambda x: jf.math.cumsum(x, axis=1, exclusive=True), [r(2, 3)]),
    Case("Cumsum", lambda x: jf.math.cumsum(x, axis=0, reverse=True), [r(3, 2)]),
    Case("TopKV2", lambda x: jf.math.top_k(x, k=2).values, [distinct(2, 4)]),
    Case("LinSpace", lambda a, b: jf.linspace(a, b, 4), [r(), r()]),
    Case("BroadcastTo", lambda x: jf.broadcast_to(x, [2, 3, 4]), [r(3, 1)]),
    Case("Tile", lambda x: jf.tile(x, [2, 3]), [r(2, 2)]),
    Case("SplitV", lambda x: jf.split(x, [1, 2], axis=1)[1], [r(2, 3)]),
    Case("Einsum", lambda x, y: jf.einsum("ij,jk->ik", x, y), [r(2, 3), r(3, 4)]),
    Case("Einsum", lambda x, y: jf.einsum("bij,bj->bi", x, y), [r(2, 3, 4), r(2, 4)]),
    Case("CustomGradient", lambda x: _square_custom(x), [r(2, 3)]),
]
IDS = [f"{c.op}-{i}" for i, c in enumerate(CASES)]


def _feed(case: Case):
    if case.variables:
        return [jf.Variable(x) for x in case.inputs]
    return [jf.constant(x) for x in case.inputs]


def _weights(case: Case) -> np.ndarray:
    out = np.asarray(case.fn(*[jf.constant(x) for x in case.inputs]))
    return np.random.default_rng(len(out.shape) + out.size).uniform(0.5, 1.5, size=out.shape)


def _taped(case: Case, xs, w):
    with jf.GradientTape() as tape:
        if not case.variables:
            tape.watch([xs[i] for i in case.sources()])
        loss = jf.reduce_sum(case.fn(*xs) * w)
    ops = {rec.op for rec in tape._records}
    return tape.gradient(loss, [xs[i] for i in case.sources()]), ops


def _numeric(case: Case, w: np.ndarray) -> List[np.ndarray]:
    def loss(arrays):
        return float(np.sum(np.asarray(case.fn(*[jf.constant(a) for a in arrays])) * w))
    grads = []
    for i in case.sources():
        x = np.array(case.inputs[i], dtype=np.float64)
        g = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            arrays = [np.array(a) for a in case.inputs]
            arrays[i] = x.copy()
            arrays[i][idx] += case.eps
            up = loss(arrays)
            arrays[i][idx] -= 2 * case.eps
            down = loss(arrays)
            g[idx] = (up - down) / (2 * case.eps)
        grads.append(g)
    return grads


# Ops that only exist in graphs (eagerly a cond is a Python `if`): tested below by name.
GRAPH_ONLY = {"If": "test_cond_gradient_in_a_graph_matches_finite_differences",
              "While": "test_loop_gradient_in_a_graph_matches_finite_differences"}


# Convolution, pooling and activation gradients: their finite-difference cases live there.
ELSEWHERE = {op: "tests/runtime/test_nn_conv_ops.py" for op in (
    "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "AvgPool", "AvgPoolGrad", "BiasAdd",
    "BiasAddGrad", "Softplus", "Elu", "LeakyRelu", "DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
    "DepthwiseConv2dNativeBackpropFilter")}
# Complex-number ops: finite differences in both the real and imaginary direction (TF's convention).
ELSEWHERE.update({op: "tests/runtime/test_complex.py" for op in (
    "Real", "Imag", "Conj", "Angle", "ComplexAbs", "Complex")})


def test_every_registered_gradient_has_a_case():
    missing = sorted(set(GRADIENTS) - {c.op for c in CASES} - set(GRAPH_ONLY) - set(ELSEWHERE))
    assert not missing, f"gradients without a finite-difference case in test_gradients.py: {missing}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_matches_finite_differences(case):
    w = _weights(case)
    grads, ops = _taped(case, _feed(case), jf.constant(w))
    assert case.op in ops, f"the case for {case.op} recorded {sorted(ops)}"
    for i, (got, want) in zip(case.sources(), zip(grads, _numeric(case, w))):
        assert got is not None, f"input {i}: no gradient"
        assert got.shape == np.shape(case.inputs[i]), f"input {i}: gradient shape {got.shape}"
        np.testing.assert_allclose(got.numpy(), want, rtol=case.tol, atol=case.tol, err_msg=f"input {i}")


@pytest.mark.filterwarnings("ignore::jitflow.runtime.tracing.function.RetraceWarning")  # one function per case
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_gradient_inside_jf_function_equals_eager(case):
    w = jf.constant(_weights(case))
    eager, _ = _taped(case, _feed(case), w)
    if case.variables:
        xs = _feed(case)
        traced = jf.function(lambda: _taped(case, xs, w)[0])()
    else:
        traced = jf.function(lambda *xs: _taped(case, list(xs), w)[0])(*_feed(case))
    for a, b in zip(eager, traced):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12, atol=1e-12)


def test_backward_pass_is_graph_nodes_under_a_gradients_scope():
    w = jf.Variable(np.ones((3, 2), np.float32))

    @jf.function
    def step(x):
        with jf.GradientTape() as tape:
            loss = jf.reduce_sum(jf.nn.relu(jf.matmul(x, w)))
        return tape.gradient(loss, w)

    g = step(jf.ones([4, 3]))
    np.testing.assert_allclose(g.numpy(), np.full((3, 2), 4.0))
    names = [n.name for n in step.get_concrete_function(jf.ones([4, 3])).graph.nodes]
    assert any(n.startswith("gradients/") and "MatMul" in n for n in names), names


def test_dynamic_slice_index_gradient_inside_a_loop_free_function():
    @jf.function
    def f(x, i):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = x[i] * 3.0
        return tape.gradient(y, x)

    np.testing.assert_array_equal(f(jf.constant([1.0, 2.0, 3.0]), jf.constant(1)).numpy(), [0.0, 3.0, 0.0])


# -- tape rules ------------------------------------------------------------------------------------
def test_persistent_tape_watching_a_constant_seed_003():
    x = jf.constant(3.0)
    with jf.GradientTape(persistent=True) as t:
        t.watch(x)
        y = x * x
        z = y * y
    assert t.gradient(z, x).numpy() == 108.0  # 4 x³ at 3
    assert t.gradient(y, x).numpy() == 6.0


def test_non_persistent_tape_allows_one_gradient_call():
    x = jf.Variable(2.0)
    with jf.GradientTape() as t:
        y = x * x
    assert t.gradient(y, x).numpy() == 4.0
    with pytest.raises(RuntimeError, match="persistent"):
        t.gradient(y, x)


def test_nested_tapes_give_second_derivatives():
    x = jf.Variable(1.0)
    with jf.GradientTape() as t2:
        with jf.GradientTape() as t1:
            y = x * x * x
        dy_dx = t1.gradient(y, x)
    d2y_dx2 = t2.gradient(dy_dx, x)
    assert dy_dx.numpy() == 3.0
    assert d2y_dx2.numpy() == 6.0


def test_second_derivative_of_x_to_the_fourth_inside_jf_function():
    @jf.function
    def second(x):
        with jf.GradientTape() as outer:
            outer.watch(x)
            with jf.GradientTape() as inner:
                inner.watch(x)
                y = x ** 4.0
            dy = inner.gradient(y, x)
        return dy, outer.gradient(dy, x)

    dy, d2y = second(jf.constant(3.0))
    assert dy.numpy() == pytest.approx(108.0)
    assert d2y.numpy() == pytest.approx(108.0)  # 12 x² at 3


def test_constants_are_not_watched_unless_asked():
    x = jf.constant(2.0)
    with jf.GradientTape() as t:
        y = x * x
    assert t.gradient(y, x) is None


def test_watch_accessed_variables_false_watches_only_what_is_watched():
    a, b = jf.Variable(2.0), jf.Variable(3.0)
    with jf.GradientTape(watch_accessed_variables=False) as t:
        t.watch(a)
        y = a * b
    ga, gb = t.gradient(y, [a, b])
    assert ga.numpy() == 3.0
    assert gb is None
    assert t.watched_variables() == (a,)


def test_stop_recording_hides_operations_from_the_tape():
    x = jf.Variable(3.0)
    with jf.GradientTape(persistent=True) as t:
        y = x * x
        with t.stop_recording():
            z = x * x * x
    assert t.gradient(y, x).numpy() == 6.0
    assert t.gradient(z, x) is None


def test_stop_gradient_blocks_one_path():
    x = jf.Variable(3.0)
    with jf.GradientTape() as t:
        y = jf.stop_gradient(x) * x
    assert t.gradient(y, x).numpy() == 3.0


def test_unconnected_gradients_are_none_or_zero():
    x, unused = jf.Variable([1.0, 2.0]), jf.Variable([5.0])
    with jf.GradientTape(persistent=True) as t:
        y = jf.reduce_sum(x * 2.0)
    gx, gu = t.gradient(y, [x, unused])
    np.testing.assert_array_equal(gx.numpy(), [2.0, 2.0])
    assert gu is None
    zero = t.gradient(y, unused, unconnected_gradients="zero")
    np.testing.assert_array_equal(zero.numpy(), [0.0])


def test_integer_tensors_carry_no_gradient():
    i = jf.constant(3)
    with jf.GradientTape() as t:
        t.watch(i)
        y = i * i
    assert t.gradient(y, i) is None


def test_gradients_keep_the_structure_of_sources():
    a, b = jf.Variable(1.0), jf.Variable(2.0)
    with jf.GradientTape() as t:
        y = a * b
    grads = t.gradient(y, {"a": a, "pair": (b, a)})
    assert set(grads) == {"a", "pair"}
    assert grads["a"].numpy() == 2.0
    assert [g.numpy() for g in grads["pair"]] == [1.0, 2.0]


def test_output_gradients_weight_the_targets():
    x = jf.Variable([1.0, 2.0])
    with jf.GradientTape() as t:
        y = x * x
    g = t.gradient(y, x, output_gradients=jf.constant([10.0, 1.0]))
    np.testing.assert_array_equal(g.numpy(), [20.0, 4.0])


def test_gradient_through_a_jf_function_call():
    @jf.function
    def f(x):
        return jf.reduce_sum(jf.tanh(x) * 2.0)

    x = jf.Variable([0.5, -0.25])
    with jf.GradientTape() as t:
        y = f(x.read_value())
    np.testing.assert_allclose(t.gradient(y, x).numpy(), 2.0 * (1 - np.tanh([0.5, -0.25]) ** 2), rtol=1e-6)


def test_cond_gradient_in_a_graph_matches_finite_differences():
    w = jf.Variable(np.float64(1.5))

    def loss(x):
        if jf.reduce_sum(x) > 0:
            y = jf.reduce_sum(x * x) * w
        else:
            y = jf.reduce_sum(jf.sin(x)) - w
        return y

    @jf.function
    def grads(x):
        with jf.GradientTape() as tape:
            tape.watch(x)
            y = loss(x)
        return tape.gradient(y, [x, w])

    for x0 in (np.array([0.3, 0.9, -0.2]), np.array([-0.7, 0.1, -0.4])):
        gx, gw = grads(jf.constant(x0))
        eps = 1e-6
        num = []
        for i in range(3):
            up, down = x0.copy(), x0.copy()
            up[i] += eps
            down[i] -= eps
            num.append((float(loss(jf.constant(up))) - float(loss(jf.constant(down)))) / (2 * eps))
        np.testing.assert_allclose(gx.numpy(), num, rtol=1e-6, atol=1e-6)
        expected_gw = np.sum(x0 * x0) if x0.sum() > 0 else -1.0
        np.testing.assert_allclose(gw.numpy(), expected_gw, rtol=1e-12)
    graph = grads.get_concrete_function(jf.constant(np.zeros(3))).graph
    assert [n.type for n in graph.nodes].count("If") == 2  # forward cond and its gradient cond


def test_loop_gradient_in_a_graph_matches_finite_differences():
    w = jf.Variable(np.float64(1.1))

    def run(x, n):
        y = x
        for _ in jf.range(n):
            y = y * w + jf.sin(y)
        return jf.reduce_sum(y)

    @jf.function
    def grads(x, n):
        with jf.GradientTape() as tape:
            tape.watch(x)
            loss = run(x, n)
        return loss, tape.gradient(loss, [x, w])

    x0 = np.array([0.3, -0.8, 1.2])
    for n in (0, 1, 4):
        loss, (gx, gw) = grads(jf.constant(x0), jf.constant(n))
        eps = 1e-6
        num_x = []
        for i in range(3):
            up, down = x0.copy(), x0.copy()
            up[i] += eps
            down[i] -= eps
            num_x.append((float(run(jf.constant(up), n)) - float(run(jf.constant(down), n))) / (2 * eps))
        np.testing.assert_allclose(gx.numpy(), num_x, rtol=1e-6, atol=1e-9)
        w.assign(1.1 + eps)
        up_w = float(run(jf.constant(x0), n))
        w.assign(1.1 - eps)
        down_w = float(run(jf.constant(x0), n))
        w.assign(1.1)
        np.testing.assert_allclose(gw.numpy(), (up_w - down_w) / (2 * eps), rtol=1e-6, atol=1e-9)
    assert grads.tracing_count == 1
    types = [n.type for n in grads.get_concrete_function(jf.constant(x0), jf.constant(1)).graph.nodes]
    assert types.count("While") >= 3  # forward, replay and backward loops
