"""Ops, op by op: the numba CPU kernels against the numpy reference kernels, and the
public functions eagerly against the same code inside `jf.function`.

`CASES` has one entry per registered op with data kernels: the dtype kinds the op accepts
and a few example inputs/attrs per dtype (broadcasting, 0-d, empty arrays, negative axes,
keepdims, transpose flags, batch broadcasting). The tests are generated from the registry,
so registering an op without an entry here fails `test_every_registered_op_has_a_case`.
Every example checks, for every accepted dtype:

- `KERNELS["cpu"][op]` equals `KERNELS["reference"][op]` (dtype, shape, values);
- both equal an independent numpy oracle where the entry gives one (required where the cpu
  kernel *is* the reference, e.g. the numpy shape ops);
- the kernel bound for a graph node (`bind_kernel`, what `jf.function` runs) agrees too;
- the op's shape/dtype inference predicts the output exactly.

Float inputs are multiples of 1/4, so sums and products are exact in every float dtype and
only transcendental functions need a tolerance.
"""
from __future__ import annotations

import operator
import warnings
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pytest

import jitflow as jf
import jitflow.runtime.distribute  # noqa: F401 - registers the collective ops NOT_HERE lists (lazy in jf)
from jitflow.runtime.ops.registry import KERNELS, OPS
from jitflow.runtime.ops import array_ops
from jitflow.runtime.ops.registry import bind_kernel, kernel_attrs

FLOATS = (jf.float16, jf.float32, jf.float64)
INTS = (jf.int8, jf.int16, jf.int32, jf.int64, jf.uint8)
ALL = FLOATS + INTS + (jf.bool_, jf.string)
KIND_DTYPES = {"f": FLOATS, "i": INTS, "b": (jf.bool_,), "s": (jf.string,)}

# Ops whose kernels are exercised elsewhere (not pure data kernels).
NOT_HERE = {
    **{op: "tests/runtime/test_nn_conv_ops.py (float tolerances of BLAS sums)" for op in (
        "Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad", "AvgPool",
        "AvgPoolGrad", "BiasAdd", "BiasAddGrad", "Softplus", "Elu", "LeakyRelu", "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter")},
    "CustomGradient": "tests/runtime/test_gradients.py (an identity whose gradient is the user's)",
    **{op: "tests/runtime/test_complex.py (complex dtypes, kernel against reference and numpy)" for op in (
        "Real", "Imag", "Conj", "Angle", "ComplexAbs", "Complex")},
    **{op: "tests/tf_api/snippets_api_gaps.txt (against TensorFlow) and tests/runtime/test_linalg.py" for op in (
        "MatrixInverse", "MatrixDeterminant")},
    "Placeholder": "fed at call time, never run",
    "Const": "returns its attr; covered by every traced test",
    "StatefulPartitionedCall": "tests/runtime/test_function.py",
    "If": "tests/runtime/test_autograph.py",
    "While": "tests/runtime/test_autograph.py",
    "ReadVariableOp": "test_variable_ops_read_and_update_in_place_of_the_python_api",
    "AssignVariableOp": "test_variable_ops_read_and_update_in_place_of_the_python_api",
    "AssignAddVariableOp": "test_variable_ops_read_and_update_in_place_of_the_python_api",
    "AssignSubVariableOp": "test_variable_ops_read_and_update_in_place_of_the_python_api",
    "ResourceStridedSliceAssign": "tests/tf_api/snippets_variables_more.txt (v[...].assign, against TensorFlow)",
    "GatherNd": "tests/tf_api/snippets_api_gaps.txt (gather_nd, against TensorFlow), tests/data/test_sparse.py "
                "(its gradient through to_dense) and tests/runtime/test_gather_nd.py",
    **{op: "tests/tf_api/snippets_api_gaps.txt (against TensorFlow: where/boolean_mask, unique, searchsorted, "
           "scatter)" for op in ("Where", "Unique", "SearchSorted", "TensorScatterAdd",
                                                     "SegmentSum", "Bincount")},
    "InitializeVariableOp": "tests/runtime/test_seeds.py (variables initialised from arguments)",
    "PrintV2": "tests/runtime/test_errors.py and test_function.py",
    "EagerPyFunc": "tests/runtime/test_errors.py and test_function.py",
    "RandomStandardNormal": "the random tests below",
    "RandomUniform": "the random tests below",
    "WriteScalarSummary": "tests/summary/test_summary_in_graph.py",
    "WriteHistogramSummary": "tests/summary/test_summary_in_graph.py",
    "WriteSummary": "tests/summary/test_summary_in_graph.py",
    "WriteImageSummary": "tests/summary/test_summary_in_graph.py",
    "WriteRawSummary": "tests/summary/test_summary_in_graph.py",
    "WriteAudioSummary": "tests/summary/test_summary_in_function.py",
    "JfCollectiveAllReduce": "tests/distribute/ (replica all-reduce in graphs)",
    "JfCollectiveAllGather": "tests/distribute/ (replica all-gather in graphs)",
    "JfCollectiveAllReduceStart": "tests/distribute/test_multi_worker.py (all-reduce started during tape.gradient)",
    "JfCollectiveAllReduceWait": "tests/distribute/test_multi_worker.py (waited for before apply_gradients)",
    "WriteRawProtoSummary": "tests/summary/test_summary_in_function.py",
    "CopyToDevice": "tests/cuda/test_cuda_function.py (copies between devices)",
    "CopyFromDevice": "tests/cuda/test_cuda_function.py (copies between devices)",
}

# Input-pipeline ops (issue 19) load with jf.data / jf.io / jf.image / jf.strings; they are
# tested in tests/data/, against TensorFlow's results where TF defines them.
import jitflow.runtime.data, jitflow.runtime.image, jitflow.runtime.strings  # noqa: E401,E402,F401
from jitflow.runtime.io import decode_ops, file_ops, image_codecs, parsing  # noqa: E402,F401
NOT_HERE.update({name: "tests/data/ (input pipelines)" for name in (
    "AnonymousIteratorV3", "IteratorGetNext", "IteratorHasNext", "AsString", "ConvertImageDtype", "DecodeCSV",
    "DecodeImage", "DecodeJpeg", "DecodePng", "DecodeRaw", "EncodeJpeg", "EncodePng", "ImageCrop", "ImageFlip",
    "ImageRot90", "ParseExampleV2", "ParseSequenceExampleV2", "ParseTensor", "PerImageStandardization",
    "RandomOffsets", "ReadFile", "ResizeBilinear", "ResizeNearestNeighbor", "ScaleAndTranslate", "SerializeTensor",
    "SliceBySize", "StaticRegexReplace", "StringCase", "StringFormat", "StringJoin", "StringLength",
    "StringSplitV2", "StringStrip", "StringToNumber", "WriteFile", "RGBToGrayscale", "GrayscaleToRGB",
    "AdjustImage")})

# jf.sparse ops (COO components in, COO components out): CPU kernels against numpy in
# tests/data/test_sparse.py and TensorFlow in test_sparse_tf.py; CUDA kernels against these CPU
# kernels in tests/cuda/test_cuda_sparse_ops.py.
NOT_HERE.update({name: "tests/data/test_sparse.py, test_sparse_tf.py, tests/cuda/test_cuda_sparse_ops.py"
                 for name in ("SparseAdd", "SparseConcat", "SparseDenseCwiseOp", "SparseExpandDims",
                              "SparseFillEmptyRows", "SparseFromDense", "SparseReduceSum", "SparseReorder",
                              "SparseReshape", "SparseRetain", "SparseSlice", "SparseTensorDenseAdd",
                              "SparseTensorDenseMatMul", "SparseToDense")})

WORDS = np.array([b"a", b"bc", b"", b"d\xc3\xa9", b"xyz", b"q"], dtype=object)


# -- sample data --------------------------------------------------------------------------
def sample(shape: Tuple[int, ...], dtype: jf.DType, domain: str = "any") -> np.ndarray:
    """Deterministic data of `dtype`. Domains: any, pos (> 0), nonzero, small (0..3 for
    ints: exponents), unit (|x| <= 1 for floats)."""
    rng = np.random.default_rng(zlib.crc32(repr((shape, dtype.name, domain)).encode()))
    if dtype.is_string:
        return rng.choice(WORDS, size=shape)
    if dtype.is_bool:
        return rng.random(shape) < 0.5
    npd = dtype.as_numpy_dtype
    if dtype.is_floating:
        lo, hi = {"any": (-12, 12), "pos": (1, 12), "nonzero": (1, 12), "small": (-8, 8),
                  "unit": (-4, 4)}[domain]
        out = rng.integers(lo, hi + 1, size=shape) / 4
        if domain == "nonzero":
            out = out * rng.choice([-1, 1], size=shape)
        return np.asarray(out, dtype=npd)
    lo, hi = {"any": (-5, 5), "pos": (1, 5), "nonzero": (1, 5), "small": (0, 3), "unit": (-1, 1)}[domain]
    if dtype.is_unsigned:
        lo = max(lo, 0)
    out = rng.integers(lo, hi + 1, size=shape)
    if domain == "nonzero" and not dtype.is_unsigned:
        out = out * rng.choice([-1, 1], size=shape)
    return np.asarray(out, dtype=npd)


def scalar(value, dtype: jf.DType) -> np.ndarray:
    return np.array(value, dtype=dtype.as_numpy_dtype)


def jf_dtype(arr: np.ndarray) -> jf.DType:
    return jf.string if arr.dtype == object else jf.as_dtype(arr.dtype)


# -- the case table -------------------------------------------------------------------------
Example = Tuple[tuple, Dict[str, Any]]


@dataclass
class Case:
    kinds: str                                   # dtype kinds accepted: f i b s
    examples: Callable[[jf.DType], List[Example]]
    oracle: Optional[Callable] = None            # independent numpy expectation
    typed: Optional[Tuple[int, ...]] = None      # inputs carrying the op's dtype (None: all)
    rejects: bool = True                         # dtypes outside `kinds` must fail inference


BIN_SHAPES = [((2, 3), (2, 3)), ((2, 3), (3,)), ((4, 1), (1, 3)), ((), ()), ((), (2, 2)),
              ((0, 3), (3,)), ((2, 1, 3), (4, 1))]
UN_SHAPES = [(2, 3), (), (0, 2), (2, 1, 3)]


def binary(domain_a: str = "any", domain_b: str = "any"):
    def examples(dt):
        return [((sample(a, dt, domain_a), sample(b, dt, domain_b)), {}) for a, b in BIN_SHAPES]
    return examples


def unary(domain: str = "any"):
    def examples(dt):
        return [((sample(s, dt, domain),), {}) for s in UN_SHAPES]
    return examples


def with_special(domain: str):
    """unary(domain) plus nan/inf/-inf/±0 for floats (where the op is defined for them)."""
    def examples(dt):
        out = unary(domain)(dt)
        if dt.is_floating:
            out.append(((np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.25], dt.as_numpy_dtype),), {}))
        return out
    return examples


REDUCE_AXES = [None, (0,), (2,), (-1,), (0, 2), (1, -1), ()]


def reduction(domain: str = "any"):
    def examples(dt):
        x = sample((2, 3, 4), dt, domain)
        out = [((x,), {"axis": a, "keepdims": k}) for a in REDUCE_AXES for k in (False, True)]
        out += [((sample((), dt, domain),), {"axis": None, "keepdims": False}),
                ((sample((), dt, domain),), {"axis": (), "keepdims": True}),
                ((sample((5,), dt, domain),), {"axis": (0,), "keepdims": False})]
        empty = sample((0, 3), dt, domain)
        out += [((empty,), {"axis": a, "keepdims": k}) for a in (None, (0,), (1,)) for k in (False, True)]
        return out
    return examples


def arg_reduction(dt):
    x = sample((2, 3, 4), dt)
    ties = np.array([[1, 3, 3, 0], [2, 2, 1, 2]], dt.as_numpy_dtype)  # first index wins, as TF
    return ([((x,), {"axis": a, "output_type": jf.int64}) for a in (0, 1, 2, -1, -3)]
            + [((ties,), {"axis": 1, "output_type": jf.int32}),
               ((ties,), {"axis": 0, "output_type": jf.int64}),
               ((sample((5,), dt),), {"axis": 0, "output_type": jf.int32}),
               ((sample((0, 3), dt),), {"axis": 1, "output_type": jf.int64})])


def softmax_examples(dt):
    x = sample((2, 3, 4), dt)
    big = np.array([[1000, 0, -1000], [-np.inf, 0, 1]], dt.as_numpy_dtype) if dt is not jf.float16 else \
        np.array([[60000, 0, -60000], [-np.inf, 0, 1]], np.float16)
    return ([((x,), {"axis": a}) for a in (-1, 0, 1, 2, -2)]
            + [((sample((5,), dt),), {"axis": 0}), ((sample((0, 3), dt),), {"axis": -1}),
               ((sample((2, 1), dt),), {"axis": 1}), ((big,), {"axis": -1})])


def matmul_examples(dt):
    a, b = sample((2, 3), dt), sample((3, 4), dt)
    out = [((a, b), {"transpose_a": False, "transpose_b": False}),
           ((a.T.copy(), b), {"transpose_a": True, "transpose_b": False}),
           ((a, b.T.copy()), {"transpose_a": False, "transpose_b": True}),
           ((a.T.copy(), b.T.copy()), {"transpose_a": True, "transpose_b": True}),
           ((a.T, b.T), {"transpose_a": True, "transpose_b": True}),  # non-contiguous views
           ((sample((0, 3), dt), sample((3, 2), dt)), {"transpose_a": False, "transpose_b": False}),
           ((sample((2, 0), dt), sample((0, 2), dt)), {"transpose_a": False, "transpose_b": False}),
           ((sample((1, 1), dt), sample((1, 1), dt)), {"transpose_a": False, "transpose_b": False})]
    return out


def batch_matmul_examples(dt):
    f = {"transpose_a": False, "transpose_b": False}
    return [((sample((2, 1, 2, 3), dt), sample((3, 3, 4), dt)), f),            # batch broadcasting
            ((sample((2, 1, 3, 2), dt), sample((3, 4, 3), dt)), {"transpose_a": True, "transpose_b": True}),
            ((sample((4, 2, 3), dt), sample((3, 5), dt)), f),                   # rank-2 b broadcasts
            ((sample((2, 3), dt), sample((4, 3, 2), dt)), f),
            ((sample((3, 2, 3), dt), sample((3, 2, 3), dt)), {"transpose_a": False, "transpose_b": True}),
            ((sample((0, 2, 3), dt), sample((3, 2), dt)), f),
            ((sample((2, 2, 0), dt), sample((2, 0, 3), dt)), f)]


def cast_examples(dt):
    out = []
    for dst in ALL:
        if dst.is_string:
            continue
        domain = "pos" if dst.is_unsigned else "any"
        x = sample((2, 3), dt, domain)
        if dt.is_floating:
            x = x + np.asarray(0.25, x.dtype) * (x >= 0) - np.asarray(0.25, x.dtype) * (x < 0)  # truncation
        out.append(((x,), {"DstT": dst, "SrcT": dt}))
    out.append(((sample((), dt),), {"DstT": jf.float32 if dt is not jf.float32 else jf.int32, "SrcT": dt}))
    out.append(((sample((0, 2), dt),), {"DstT": jf.int64 if dt is not jf.int64 else jf.int8, "SrcT": dt}))
    return out


def cast_oracle(x, DstT, SrcT):  # noqa: N803 - TF attr names
    if DstT.is_bool:
        return x != 0
    if x.dtype.kind == "f" and DstT.is_integer:
        return np.trunc(x).astype(DstT.as_numpy_dtype)  # toward zero, as TF
    return x.astype(DstT.as_numpy_dtype)


def range_examples(dt):
    triples = [(0, 5, 1), (1, 10, 3), (3, 3, 1), (2, 9, 2)]
    if not dt.is_unsigned:
        triples += [(5, -1, -2), (-3, 2, 1)]
    if dt.is_floating:
        triples += [(0, 1, 0.25), (1.5, -1, -0.5)]
    out = []
    for s, lim, d in triples:
        n = max(0, int(np.ceil((lim - s) / d)))
        out.append(((scalar(s, dt), scalar(lim, dt), scalar(d, dt)), {"_length": n}))
    return out


def slice_examples(dt):
    x = sample((3, 4, 2), dt)
    items = [(slice(1, None), slice(None, None, 2), None, Ellipsis), (0,), (-1, slice(None, None, -1)),
             (Ellipsis, 1), (slice(5, None),), (slice(None, None, -2), slice(-3, -1)), (None, 1, None),
             (slice(1, 2), Ellipsis, slice(None, None, -1)), (2, -1, 0)]
    out = [((x,), {"index": array_ops._index_spec(it)[0]}) for it in items]
    out += [((sample((), dt),), {"index": array_ops._index_spec((Ellipsis, None))[0]}),
            ((sample((0, 3), dt),), {"index": array_ops._index_spec((slice(None), 1))[0]})]
    return out


def _index_of(spec):
    key = []
    for kind, *args in spec:
        key.append({"int": lambda: args[0], "slice": lambda: slice(*args), "newaxis": lambda: None,
                    "ellipsis": lambda: Ellipsis}[kind]())
    return tuple(key)


def _scatter(x, g, key):
    out = np.zeros_like(x)
    out[key] = g
    return out


def string_join(a, b):
    out = np.empty(np.broadcast_shapes(np.shape(a), np.shape(b)), dtype=object)
    out[...] = np.frompyfunc(operator.add, 2, 1)(a, b)
    return out


def _top_k_oracle(x, k):
    """Descending, ties by lower index: a stable sort on the negated values (in float64)."""
    idx = np.argsort(-np.asarray(x, np.float64), axis=-1, kind="stable")[..., :k]
    return np.take_along_axis(x, idx, axis=-1), idx.astype(np.int32)


def _split_oracle(x, size_splits, axis):
    parts = [x.take(range(start, start + n), axis=axis) for start, n in
             zip(np.cumsum((0,) + tuple(size_splits))[:-1], size_splits)]
    return parts[0] if len(parts) == 1 else tuple(parts)


CASES: Dict[str, Case] = {
    # ops added for TF 2 tutorials (runtime/ops/math_extra_ops.py, array_extra_ops.py)
    "Log1p": Case("f", with_special("pos")),
    "Expm1": Case("f", with_special("any")),
    "Erf": Case("f", with_special("any")),
    "Erfc": Case("f", with_special("any")),
    "Rsqrt": Case("f", with_special("pos")),
    "Reciprocal": Case("f", unary("nonzero")),
    "Floor": Case("f", with_special("any")),
    "Ceil": Case("f", with_special("any")),
    "Round": Case("f", with_special("any")),
    "Tan": Case("f", unary("unit")),
    "Atan": Case("f", with_special("any")),
    "Asin": Case("f", unary("unit")),
    "Acos": Case("f", unary("unit")),
    "Sinh": Case("f", unary("unit")),
    "Cosh": Case("f", unary("unit")),
    "Softsign": Case("f", with_special("any")),
    "Invert": Case("i", unary(), oracle=lambda x: (-x.astype(np.int64) - 1).astype(x.dtype)),
    "Cumsum": Case("fi", lambda dt: [((sample((3, 4), dt),), {"axis": 1, "exclusive": False, "reverse": False}),
                                     ((sample((3, 4), dt),), {"axis": 0, "exclusive": True, "reverse": True}),
                                     ((sample((2, 0), dt),), {"axis": -1, "exclusive": False, "reverse": False})]),
    "Cumprod": Case("fi", lambda dt: [((sample((3, 4), dt),), {"axis": 1, "exclusive": False, "reverse": False}),
                                     ((sample((3, 4), dt),), {"axis": 0, "exclusive": True, "reverse": True}),
                                     ((sample((2, 0), dt),), {"axis": -1, "exclusive": False, "reverse": False})]),
    "TopKV2": Case("fi", lambda dt: [((sample((3, 5), dt),), {"k": 2, "sorted": True}),
                                     ((sample((4,), dt),), {"k": 4, "sorted": True})],
                   oracle=lambda x, k, sorted: _top_k_oracle(x, k)),
    "LinSpace": Case("f", lambda dt: [((np.asarray(1.0, dt.as_numpy_dtype), np.asarray(3.0, dt.as_numpy_dtype)),
                                       {"num": n}) for n in (5, 1, 0)],
                     oracle=lambda a, b, num: np.linspace(a, b, num).astype(np.asarray(a).dtype)),
    "BroadcastTo": Case("fib", lambda dt: [((sample((3, 1), dt),), {"shape": (2, 3, 4)}),
                                           ((sample((), dt),), {"shape": (2,)})], rejects=False,
                        oracle=lambda x, shape: np.broadcast_to(x, shape).copy()),
    "Tile": Case("fib", lambda dt: [((sample((2, 3), dt),), {"multiples": (2, 1)}),
                                    ((sample((2, 3), dt),), {"multiples": (0, 3)})], rejects=False,
                 oracle=lambda x, multiples: np.tile(x, multiples)),
    "SplitV": Case("fib", lambda dt: [((sample((4, 3), dt),), {"size_splits": (1, 3), "axis": 0}),
                                      ((sample((4, 3), dt),), {"size_splits": (3,), "axis": 1})], rejects=False,
                   oracle=lambda x, size_splits, axis: _split_oracle(x, size_splits, axis)),
    "Einsum": Case("fi", lambda dt: [((sample((2, 3), dt), sample((3, 4), dt)), {"equation": "ij,jk->ik"}),
                                     ((sample((2, 3), dt),), {"equation": "ij->j"})],
                   oracle=lambda *xs, equation: np.einsum(equation, *xs).astype(xs[0].dtype)),
    # elementwise binary
    "AddV2": Case("fi", binary()),
    "Sub": Case("fi", binary()),
    "Mul": Case("fi", binary()),
    "RealDiv": Case("f", binary("any", "nonzero")),
    "FloorDiv": Case("fi", binary("any", "nonzero")),
    "FloorMod": Case("fi", binary("any", "nonzero")),
    "Pow": Case("fi", lambda dt: binary("pos" if dt.is_floating else "any", "small")(dt)),
    "Maximum": Case("fi", binary()),
    "Minimum": Case("fi", binary()),
    "Equal": Case("fibs", binary()),
    "NotEqual": Case("fibs", binary()),
    "Less": Case("fi", binary()),
    "LessEqual": Case("fi", binary()),
    "Greater": Case("fi", binary()),
    "GreaterEqual": Case("fi", binary()),
    "LogicalAnd": Case("b", binary()),
    "LogicalOr": Case("b", binary()),
    "Add": Case("s", binary(), oracle=lambda a, b: string_join(a, b)),
    # elementwise unary
    "LogicalNot": Case("b", unary()),
    "Neg": Case("fi", unary()),
    "Abs": Case("fi", with_special("any")),
    "Sign": Case("fi", with_special("any")),
    "Exp": Case("f", with_special("any")),
    "Log": Case("f", with_special("pos")),
    "Sqrt": Case("f", with_special("pos")),
    "Square": Case("fi", unary()),
    "Tanh": Case("f", with_special("any")),
    "Sigmoid": Case("f", with_special("any")),
    "Sin": Case("f", unary()),
    "Cos": Case("f", unary()),
    "Relu": Case("fi", with_special("any"), oracle=lambda x: np.where(x > 0, x, np.zeros_like(x)) if x.dtype.kind != "f"
                 else np.where((x > 0) | np.isnan(x), x, np.zeros_like(x))),
    "IsFinite": Case("f", with_special("any"), oracle=np.isfinite),
    # reductions
    "Sum": Case("fi", reduction()),
    "Prod": Case("fi", reduction("unit")),
    "Max": Case("fi", reduction()),
    "Min": Case("fi", reduction()),
    "Mean": Case("fi", reduction()),
    "All": Case("b", reduction()),
    "Any": Case("b", reduction()),
    "ArgMax": Case("fi", arg_reduction),
    "ArgMin": Case("fi", arg_reduction),
    "Softmax": Case("f", softmax_examples),
    "LogSoftmax": Case("f", softmax_examples),
    "MatMul": Case("fi", matmul_examples),
    "BatchMatMulV2": Case("fi", batch_matmul_examples),
    # data movement (the cpu kernel is numpy itself: each has an independent oracle)
    "Identity": Case("fibs", lambda dt: [((sample(s, dt),), {}) for s in UN_SHAPES], oracle=lambda x: x),
    "StopGradient": Case("fibs", lambda dt: [((sample(s, dt),), {}) for s in UN_SHAPES], oracle=lambda x: x),
    "Cast": Case("fib", cast_examples, oracle=cast_oracle, rejects=False),
    "Reshape": Case("fibs", lambda dt: [((sample((2, 3, 4), dt),), {"shape": s})
                                        for s in [(6, 4), (-1,), (4, -1, 2), (24, 1), (1, 2, 12)]]
                    + [((sample((), dt),), {"shape": (1, 1)}), ((sample((1, 1), dt),), {"shape": ()}),
                       ((sample((0, 3), dt),), {"shape": (3, 0)}), ((sample((0, 3), dt),), {"shape": (-1, 2)})],
                    oracle=lambda x, shape: np.reshape(x, shape)),
    "Transpose": Case("fibs", lambda dt: [((sample((2, 3, 4), dt),), {"perm": p})
                                          for p in [None, (1, 0, 2), (2, 0, 1), (0, 1, 2)]]
                      + [((sample((), dt),), {"perm": None}), ((sample((), dt),), {"perm": ()}),
                         ((sample((0, 3), dt),), {"perm": (1, 0)})],
                      oracle=lambda x, perm: np.transpose(x, perm)),
    "ExpandDims": Case("fibs", lambda dt: [((sample((2, 3), dt),), {"axis": a}) for a in (0, 1, 2, -1, -3)]
                       + [((sample((), dt),), {"axis": 0}), ((sample((), dt),), {"axis": -1}),
                          ((sample((0, 2), dt),), {"axis": 1})],
                       oracle=lambda x, axis: np.expand_dims(x, axis)),
    "Squeeze": Case("fibs", lambda dt: [((sample((1, 3, 1), dt),), {"squeeze_dims": a})
                                        for a in (None, (0,), (-1,), (0, 2), (2, -3))]
                    + [((sample((1,), dt),), {"squeeze_dims": None}), ((sample((0, 1), dt),), {"squeeze_dims": (1,)}),
                       ((sample((), dt),), {"squeeze_dims": None})],
                    oracle=lambda x, squeeze_dims: np.squeeze(x, squeeze_dims)),
    "ConcatV2": Case("fibs", lambda dt: [((sample((2, 3), dt), sample((2, 3), dt, "pos")), {"axis": a})
                                         for a in (0, 1, -1, -2)]
                     + [((sample((2, 3), dt), sample((2, 1), dt), sample((2, 2), dt)), {"axis": 1}),
                        ((sample((0, 3), dt), sample((2, 3), dt)), {"axis": 0}),
                        ((sample((0,), dt), sample((0,), dt)), {"axis": 0}),
                        ((sample((4,), dt), sample((1,), dt)), {"axis": -1})],
                     oracle=lambda *xs, axis: np.concatenate(xs, axis)),
    "Pack": Case("fibs", lambda dt: [((sample((2, 3), dt), sample((2, 3), dt, "pos")), {"axis": a})
                                     for a in (0, 1, 2, -1, -3)]
                 + [((sample((), dt), sample((), dt, "pos"), sample((), dt, "small")), {"axis": 0}),
                    ((sample((0, 2), dt), sample((0, 2), dt)), {"axis": 1}),
                    ((sample((3,), dt),), {"axis": 0})],
                 oracle=lambda *xs, axis: np.stack(xs, axis)),
    "Unpack": Case("fibs", lambda dt: [((sample((3, 2), dt),), {"num": 3, "axis": 0}),
                                       ((sample((2, 3, 4), dt),), {"num": 4, "axis": -1}),
                                       ((sample((2, 3, 4), dt),), {"num": 3, "axis": 1}),
                                       ((sample((1,), dt),), {"num": 1, "axis": 0}),
                                       ((sample((2, 0), dt),), {"num": 2, "axis": 0})],
                   oracle=lambda x, num, axis: tuple(np.moveaxis(x, axis, 0)[i] for i in range(num))),
    "StridedSlice": Case("fibs", slice_examples, oracle=lambda x, index: x[_index_of(index)]),
    "Shape": Case("fibs", lambda dt: [((sample(s, dt),), {"out_type": t})
                                      for s in UN_SHAPES for t in (jf.int32, jf.int64)],
                  oracle=lambda x, out_type: np.array(x.shape, dtype=out_type.as_numpy_dtype)),
    "Size": Case("fibs", lambda dt: [((sample(s, dt),), {"out_type": t})
                                     for s in UN_SHAPES for t in (jf.int32, jf.int64)],
                 oracle=lambda x, out_type: np.array(x.size, dtype=out_type.as_numpy_dtype)),
    "Fill": Case("fibs", lambda dt: [((sample((), dt),), {"dims": d}) for d in [(2, 3), (4,), (), (0, 2)]],
                 oracle=lambda value, dims: np.broadcast_to(value, dims).copy()),
    "ZerosLike": Case("fibs", lambda dt: [((sample(s, dt),), {}) for s in UN_SHAPES],
                      oracle=lambda x: np.full(x.shape, b"", dtype=object) if x.dtype == object else np.zeros_like(x)),
    "OnesLike": Case("fib", lambda dt: [((sample(s, dt),), {}) for s in UN_SHAPES], oracle=np.ones_like),
    "Range": Case("fi", range_examples, oracle=lambda start, limit, delta: np.array(
        [start + i * delta for i in range(max(0, int(np.ceil((limit - start) / delta))))], dtype=start.dtype)),
    "StridedSliceGrad": Case("f", lambda dt: [((sample((3, 4, 2), dt),
                                                sample(np.shape(sample((3, 4, 2), dt)[it]), dt, "pos")),
                                               {"index": array_ops._index_spec(it)[0]})
                                              for it in [(slice(1, None), slice(None, None, 2)), (0,), (Ellipsis, -1),
                                                         (slice(None, None, -1), None, 1), (slice(5, None),)]],
                             oracle=lambda x, g, index: _scatter(x, g, _index_of(index)), rejects=False),
    "SelectV2": Case("fibs", lambda dt: [((sample(c, jf.bool_), sample(a, dt), sample(b, dt, "pos")), {})
                                         for c, a, b in [((2, 3), (2, 3), (2, 3)), ((3,), (2, 3), ()),
                                                         ((), (2,), (2,)), ((2, 1), (1, 3), (3,)),
                                                         ((0, 3), (3,), (0, 1))]],
                     oracle=np.where, typed=(1, 2)),
    # gather / scatter / pad (runtime/ops/indexing_ops.py; TensorArray is built on them)
    "GatherV2": Case("fibs", lambda dt: [((sample((4, 3), dt), np.array(i, np.int32)), {"axis": a})
                                         for i, a in [([2, 0, 2], 0), ([[1], [3]], 0), (1, 0), ([2, 0], 1),
                                                      ([], 0), ([[0, 1]], -1)]],
                     oracle=lambda params, indices, axis: np.take(params, indices, axis=axis), typed=(0,)),
    "UnsortedSegmentSum": Case("fi", lambda dt: [
        ((sample((4, 3), dt), np.array([0, 2, 0, -1], np.int32), scalar(3, jf.int32)), {"_num": 3}),
        ((sample((2, 2), dt), np.array([[1, 1], [0, 1]], np.int32), scalar(2, jf.int32)), {"_num": 2}),
        ((sample((0, 2), dt), np.zeros(0, np.int32), scalar(2, jf.int32)), {"_num": 2})],
        oracle=lambda data, ids, n: _segment_sum(data, ids, n), typed=(0,)),
    "TensorScatterUpdate": Case("fibs", lambda dt: [
        ((sample((4, 2), dt), np.array([[3], [0]], np.int32), sample((2, 2), dt, "pos")), {}),
        ((sample((3,), dt), np.array([[1]], np.int32), sample((1,), dt, "pos")), {}),
        ((sample((3, 2), dt), np.zeros((0, 1), np.int32), sample((0, 2), dt)), {})],
        oracle=lambda x, ids, u: _scatter_rows(x, ids, u), typed=(0, 2)),
    "Pad": Case("fibs", lambda dt: [((sample((2, 3), dt), np.array(p, np.int32)), {"_paddings": [tuple(r) for r in p]})
                                    for p in [[[1, 0], [0, 2]], [[0, 0], [0, 0]], [[2, 1], [1, 1]]]]
                + [((sample((0, 2), dt), np.array([[1, 1], [0, 0]], np.int32)), {"_paddings": [(1, 1), (0, 0)]})],
                oracle=lambda x, paddings: np.pad(x, paddings, constant_values=b"" if x.dtype == object else 0),
                typed=(0,)),
}


def _segment_sum(data, ids, n):
    out = np.zeros((int(n),) + data.shape[ids.ndim:], data.dtype)
    for idx in np.ndindex(ids.shape):
        if ids[idx] >= 0:
            out[ids[idx]] += data[idx]
    return out


def _scatter_rows(x, ids, updates):
    out = x.copy()
    out[ids[..., 0]] = updates
    return out


def _dtypes_for(kinds: str):
    return [dt for k in kinds for dt in KIND_DTYPES[k]]


OP_DTYPES = [(op, dt) for op in sorted(CASES) for dt in _dtypes_for(CASES[op].kinds)]


def _tolerance(dtype: np.dtype):
    return {np.dtype(np.float16): (2e-3, 2e-3), np.dtype(np.float32): (2e-6, 1e-6),
            np.dtype(np.float64): (1e-12, 1e-12)}.get(np.dtype(dtype), (0, 0))


def assert_same(got: Any, want: Any, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if got.dtype.kind == "f":
        rtol, atol = _tolerance(got.dtype)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _outputs(result) -> list:
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _as_array(value: Any, dtype: jf.DType) -> np.ndarray:
    """A kernel's output as the runtime wraps it (a 0-d result may be a numpy scalar or bytes)."""
    return value if isinstance(value, np.ndarray) else np.asarray(value, dtype=dtype.as_numpy_dtype)


# -- the registry-driven tests ---------------------------------------------------------------
def test_every_registered_op_has_a_case():
    missing = sorted(set(OPS) - set(CASES) - set(NOT_HERE))
    assert not missing, (f"registered ops without an entry in tests/runtime/test_ops.py CASES: {missing}; "
                         "add example inputs (or name where they are tested in NOT_HERE)")
    stale = sorted((set(CASES) | set(NOT_HERE)) - set(OPS))
    assert not stale, f"test entries for ops that are no longer registered: {stale}"
    assert not set(CASES) & set(NOT_HERE)


def test_every_op_has_a_cpu_and_a_reference_kernel():
    for op in OPS:
        assert callable(KERNELS["cpu"][op]) and callable(KERNELS["reference"][op]), op


def test_cpu_kernels_that_are_the_reference_have_an_oracle():
    # Comparing a kernel with itself proves nothing: such cases need an independent oracle.
    same = [op for op in CASES if KERNELS["cpu"][op] is KERNELS["reference"][op] and CASES[op].oracle is None]
    assert not same


@pytest.mark.parametrize("op, dtype", OP_DTYPES, ids=[f"{op}-{dt.name}" for op, dt in OP_DTYPES])
def test_cpu_kernel_matches_reference(op, dtype):
    case = CASES[op]
    opdef = OPS[op]
    examples = case.examples(dtype)
    assert examples
    for n, (inputs, attrs) in enumerate(examples):
        what = f"{op}[{dtype.name}] example {n}: shapes {[np.shape(x) for x in inputs]} attrs {attrs}"
        kattrs = kernel_attrs(attrs)
        in_dtypes = [jf_dtype(np.asarray(x)) for x in inputs]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy's warnings on nan/inf inputs
            want = _outputs(KERNELS["reference"][op](*inputs, **kattrs))
            got = _outputs(KERNELS["cpu"][op](*inputs, **kattrs))
            bound = _outputs(bind_kernel(opdef, "cpu", attrs, in_dtypes)(*inputs))
            oracle = _outputs(case.oracle(*inputs, **kattrs)) if case.oracle else want
        specs = opdef.infer([(np.shape(x), dt) for x, dt in zip(inputs, in_dtypes)], attrs)
        assert len(got) == len(want) == len(bound) == len(oracle) == len(specs), what
        for i, (g, w, b, o, (dims, out_dtype)) in enumerate(zip(got, want, bound, oracle, specs)):
            g, w, b, o = (_as_array(v, out_dtype) for v in (g, w, b, o))
            assert_same(g, w, f"{what} output {i}: cpu vs reference")
            assert_same(b, w, f"{what} output {i}: graph-bound cpu kernel vs reference")
            assert_same(w, o, f"{what} output {i}: reference vs oracle")
            assert np.asarray(g).dtype == out_dtype.as_numpy_dtype, f"{what}: inferred dtype {out_dtype.name}"
            assert tuple(dims) == np.shape(g), f"{what}: inferred shape {dims} != {np.shape(g)}"


REJECT_CASES = [(op, dt) for op in sorted(CASES) if CASES[op].rejects
                for dt in ALL if dt not in _dtypes_for(CASES[op].kinds)]


@pytest.mark.parametrize("op, dtype", REJECT_CASES, ids=[f"{op}-{dt.name}" for op, dt in REJECT_CASES])
def test_op_rejects_dtypes_outside_its_kinds(op, dtype):
    """The table's dtype kinds are exactly what the op accepts: others fail inference."""
    case = CASES[op]
    inputs, attrs = case.examples(_dtypes_for(case.kinds)[0])[0]
    typed = case.typed if case.typed is not None else range(len(inputs))
    specs = [(np.shape(x), dtype if i in typed else jf_dtype(np.asarray(x))) for i, x in enumerate(inputs)]
    with pytest.raises(TypeError, match=dtype.name):
        OPS[op].infer(specs, attrs)


def test_variable_ops_read_and_update_in_place_of_the_python_api():
    v = jf.Variable([1.0, 2.0])
    KERNELS["cpu"]["AssignAddVariableOp"](v, np.array([1.0, 1.0], np.float32), dtype=jf.float32)
    np.testing.assert_array_equal(KERNELS["cpu"]["ReadVariableOp"](v, dtype=jf.float32), [2.0, 3.0])
    KERNELS["cpu"]["AssignSubVariableOp"](v, np.array([0.5, 0.5], np.float32), dtype=jf.float32)
    np.testing.assert_array_equal(v.numpy(), [1.5, 2.5])
    KERNELS["cpu"]["AssignVariableOp"](v, np.array([7.0, 8.0], np.float32), dtype=jf.float32)
    np.testing.assert_array_equal(v.numpy(), [7.0, 8.0])
    assert v.numpy().dtype == np.float32


# -- special values where cpu and reference must agree too ------------------------------------
def test_nan_propagates_through_maximum_minimum_and_reductions():
    nan = np.array([np.nan, 1.0, 2.0], np.float32)
    one = np.array([1.0, np.nan, 0.0], np.float32)
    assert np.isnan(KERNELS["cpu"]["Maximum"](nan, one)[:2]).all()
    assert np.isnan(KERNELS["cpu"]["Minimum"](nan, one)[:2]).all()
    for op in ("Max", "Min", "Sum", "Mean"):
        assert np.isnan(KERNELS["cpu"][op](nan, axis=None, keepdims=False)), op


def test_integer_arithmetic_stays_in_its_dtype_and_wraps_like_tf():
    # numpy's int8 + int8 wraps; a kernel computing in a wider type must wrap back.
    a = np.array([100, -100, 127], np.int8)
    got = KERNELS["cpu"]["AddV2"](a, a)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, (a.astype(np.int64) * 2).astype(np.int8))
    big = np.array([2**53 + 1], np.int64)
    assert KERNELS["cpu"]["Less"](big - 1, big)[0]  # no detour through float64
    assert KERNELS["cpu"]["Sub"](big, big - 1)[0] == 1


def test_is_finite_on_inf_and_nan_raises_no_floating_point_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # `inf - inf` in the kernel made numpy warn "invalid value"
        got = jf.math.is_finite(jf.constant([1.0, np.inf, -np.inf, np.nan]))
    assert got.numpy().tolist() == [True, False, False, False]


def test_float_division_by_zero_gives_inf_and_nan():
    x = np.array([1.0, -1.0, 0.0], np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = KERNELS["cpu"]["RealDiv"](x, np.zeros(3, np.float32))
    np.testing.assert_array_equal(got[:2], [np.inf, -np.inf])
    assert np.isnan(got[2])


# -- public functions: eager == traced, static spec == actual -----------------------------------
X = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 4 - 2.5
XI = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 7
ROWS = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.25]], np.float32)
COLS = np.array([[1.0, -1.0], [0.5, 2.0], [0.0, 3.0]], np.float32)
STR = np.array([b"ab", b"c"], dtype=object)


def _np_logsumexp(x, axis=None, keepdims=False):
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


# (id, function, argument arrays, numpy oracle or None)
PUBLIC = [
    ("add", jf.add, (ROWS, ROWS[0]), np.add),
    ("subtract", jf.subtract, (ROWS, ROWS[:, :1]), np.subtract),
    ("multiply", jf.multiply, (ROWS, ROWS), np.multiply),
    ("divide", jf.divide, (ROWS, ROWS + 4), np.divide),
    ("divide_int", jf.divide, (XI, np.full((4,), 2, np.int32)), lambda a, b: a / b),
    ("truediv_op", lambda a, b: a / b, (XI[0], XI[1] + 20), lambda a, b: a / b),
    ("floordiv", jf.floordiv, (XI, np.full((4,), 3, np.int32)), np.floor_divide),
    ("mod", jf.math.floormod, (XI, np.full((4,), 3, np.int32)), np.mod),
    ("pow", jf.pow, (ROWS + 2, ROWS), np.power),
    ("pow_op", lambda a: a ** 2, (XI,), lambda a: a ** 2),
    ("maximum", jf.maximum, (ROWS, ROWS[::-1]), np.maximum),
    ("minimum", jf.minimum, (ROWS, ROWS[::-1]), np.minimum),
    ("negative", jf.negative, (ROWS,), np.negative),
    ("abs", jf.abs, (XI,), np.abs),
    ("exp", jf.exp, (ROWS,), np.exp),
    ("log", jf.math.log, (ROWS + 2,), np.log),
    ("sqrt", jf.sqrt, (ROWS + 2,), np.sqrt),
    ("square", jf.square, (XI,), np.square),
    ("tanh", jf.tanh, (X,), np.tanh),
    ("sigmoid", jf.nn.sigmoid, (X,), lambda x: 1 / (1 + np.exp(-x))),
    ("sin", jf.sin, (X,), np.sin),
    ("cos", jf.cos, (X,), np.cos),
    ("sign", jf.sign, (X,), np.sign),
    ("relu", jf.nn.relu, (X,), lambda x: np.maximum(x, 0)),
    ("equal", jf.equal, (XI, XI[:, :1]), np.equal),
    ("not_equal", jf.not_equal, (XI, XI[:1]), np.not_equal),
    ("less", jf.less, (X, X[:, :, ::-1]), np.less),
    ("less_equal", jf.less_equal, (X, X[:, :, ::-1]), np.less_equal),
    ("greater", jf.greater, (X, np.float32(0)), np.greater),
    ("greater_equal", jf.greater_equal, (X, X[:1]), np.greater_equal),
    ("logical_and", jf.logical_and, (X > 0, X < 1), np.logical_and),
    ("logical_or", jf.logical_or, (X > 1, X < -1), np.logical_or),
    ("logical_not", jf.logical_not, (X > 0,), np.logical_not),
    ("operators", lambda a, b: (2 * a - 1) / (b + 3) + (-a) ** 2 + abs(b) % 2, (ROWS, ROWS[::-1]),
     lambda a, b: (2 * a - 1) / (b + 3) + (-a) ** 2 + np.abs(b) % 2),
    ("comparison_operators", lambda a: (a < 0) | (a >= 1) & (a != 0.5), (X,),
     lambda a: (a < 0) | (a >= 1) & (a != 0.5)),
    ("matmul", jf.matmul, (ROWS, COLS), np.matmul),
    ("matmul_op", lambda a, b: a @ b, (ROWS, COLS), np.matmul),
    ("matmul_transpose", lambda a, b: jf.matmul(a, b, transpose_a=True, transpose_b=True), (COLS, ROWS),
     lambda a, b: a.T @ b.T),
    ("matmul_batch", jf.matmul, (X, np.ones((2, 4, 2), np.float32)), np.matmul),
    ("matmul_batch_broadcast", jf.matmul, (X[:1], np.ones((3, 1, 4, 5), np.float32)), np.matmul),
    ("matmul_int", jf.matmul, (XI[0], XI[1].T.copy()), np.matmul),
    ("reshape", lambda x: jf.reshape(x, [4, -1]), (X,), lambda x: x.reshape(4, -1)),
    ("reshape_scalar", lambda x: jf.reshape(x, []), (X[:1, :1, :1],), lambda x: x.reshape(())),
    ("slice", lambda x: x[1:, ::2, None, ...], (X,), lambda x: x[1:, ::2, None, ...]),
    ("slice_negative", lambda x: x[-1, ::-1, -2:], (X,), lambda x: x[-1, ::-1, -2:]),
    ("slice_int_and_empty", lambda x: x[0, 5:, 1], (X,), lambda x: x[0, 5:, 1]),
    ("concat", lambda a, b: jf.concat([a, b], axis=-1), (ROWS, ROWS), lambda a, b: np.concatenate([a, b], -1)),
    ("concat_axis0", lambda a: jf.concat([a, a[:1], a], 0), (X,), lambda a: np.concatenate([a, a[:1], a], 0)),
    ("stack", lambda a, b: jf.stack([a, b], axis=1), (ROWS, ROWS), lambda a, b: np.stack([a, b], 1)),
    ("stack_python", lambda a: jf.stack([a[0, 0], 1.5, a[1, 1]]), (ROWS,), lambda a: np.array([a[0, 0], 1.5, a[1, 1]])),
    ("unstack", lambda a: jf.unstack(a, axis=-1), (X,), lambda a: tuple(np.moveaxis(a, -1, 0))),
    ("squeeze", lambda a: jf.squeeze(a), (X[:1, :, None],), np.squeeze),
    ("squeeze_axis", lambda a: jf.squeeze(a, [-1]), (X[..., :1],), lambda a: np.squeeze(a, -1)),
    ("expand_dims", lambda a: jf.expand_dims(a, -2), (X,), lambda a: np.expand_dims(a, -2)),
    ("transpose", jf.transpose, (X,), np.transpose),
    ("transpose_perm", lambda a: jf.transpose(a, [2, 0, 1]), (X,), lambda a: np.transpose(a, (2, 0, 1))),
    ("cast", lambda a: jf.cast(a, jf.int32), (X,), lambda a: np.trunc(a).astype(np.int32)),
    ("cast_bool", lambda a: jf.cast(a, jf.bool_), (X,), lambda a: a != 0),
    ("cast_float16", lambda a: jf.cast(a, jf.float16), (XI,), lambda a: a.astype(np.float16)),
    ("where", lambda c, a: jf.where(c, a, -a), (X > 0, X), lambda c, a: np.where(c, a, -a)),
    ("where_broadcast", lambda a: jf.where(a > 0, a, 0.0), (X,), lambda a: np.where(a > 0, a, np.float32(0))),
    ("range", lambda: jf.range(5), (), lambda: np.arange(5, dtype=np.int32)),
    ("range_start_limit_delta", lambda: jf.range(10, 1, -3), (), lambda: np.arange(10, 1, -3, dtype=np.int32)),
    ("range_float", lambda: jf.range(0.0, 1.0, 0.25), (), lambda: np.arange(0, 1, 0.25, dtype=np.float32)),
    ("range_dtype", lambda: jf.range(3, dtype=jf.int64), (), lambda: np.arange(3, dtype=np.int64)),
    ("fill", lambda: jf.fill([2, 3], 7), (), lambda: np.full((2, 3), 7, np.int32)),
    ("zeros", lambda: jf.zeros([2, 3]), (), lambda: np.zeros((2, 3), np.float32)),
    ("zeros_int", lambda: jf.zeros([2], jf.int8), (), lambda: np.zeros(2, np.int8)),
    ("ones", lambda: jf.ones([3, 1], jf.float64), (), lambda: np.ones((3, 1))),
    ("zeros_like", jf.zeros_like, (XI,), np.zeros_like),
    ("ones_like", jf.ones_like, (X,), np.ones_like),
    ("shape", jf.shape, (X,), lambda a: np.array(a.shape, np.int32)),
    ("size", jf.size, (X,), lambda a: np.array(a.size, np.int32)),
    ("rank", jf.rank, (X,), lambda a: np.array(a.ndim, np.int32)),
    ("identity", jf.identity, (X,), lambda a: a),
    ("reduce_sum", jf.reduce_sum, (X,), np.sum),
    ("reduce_sum_axes", lambda a: jf.reduce_sum(a, axis=[0, -1]), (X,), lambda a: np.sum(a, (0, 2))),
    ("reduce_sum_keepdims", lambda a: jf.reduce_sum(a, axis=1, keepdims=True), (XI,),
     lambda a: np.sum(a, 1, keepdims=True, dtype=np.int32)),
    ("reduce_mean", lambda a: jf.reduce_mean(a, -1), (X,), lambda a: np.mean(a, -1)),
    ("reduce_mean_int", lambda a: jf.reduce_mean(a, 0), (XI,), lambda a: np.trunc(np.sum(a, 0) / 2).astype(np.int32)),
    ("reduce_max", lambda a: jf.reduce_max(a, [1, 2]), (X,), lambda a: np.max(a, (1, 2))),
    ("reduce_min", lambda a: jf.reduce_min(a, -2, keepdims=True), (XI,), lambda a: np.min(a, -2, keepdims=True)),
    ("reduce_prod", lambda a: jf.reduce_prod(a, 0), (X,), lambda a: np.prod(a, 0)),
    ("reduce_all", lambda a: jf.reduce_all(a > -3, 1), (X,), lambda a: np.all(a > -3, 1)),
    ("reduce_any", lambda a: jf.reduce_any(a > 3), (X,), lambda a: np.any(a > 3)),
    ("reduce_std", jf.math.reduce_std, (X,), np.std),
    ("reduce_std_axis", lambda a: jf.math.reduce_std(a, axis=[0, 2], keepdims=True), (X,),
     lambda a: np.std(a, (0, 2), keepdims=True)),
    ("reduce_variance", lambda a: jf.math.reduce_variance(a, -1), (X,), lambda a: np.var(a, -1)),
    ("reduce_logsumexp", jf.reduce_logsumexp, (X,), _np_logsumexp),
    ("reduce_logsumexp_axis", lambda a: jf.reduce_logsumexp(a, axis=1), (X,), lambda a: _np_logsumexp(a, 1)),
    ("reduce_logsumexp_keepdims", lambda a: jf.reduce_logsumexp(a, axis=[0, -1], keepdims=True), (X,),
     lambda a: _np_logsumexp(a, (0, 2), keepdims=True)),
    ("reduce_logsumexp_inf", jf.reduce_logsumexp, (np.array([-np.inf, -np.inf], np.float32),),
     lambda a: np.array(-np.inf, np.float32)),
    ("argmax", lambda a: jf.argmax(a, axis=-1), (X,), lambda a: np.argmax(a, -1)),
    ("argmax_default_axis", jf.argmax, (XI,), lambda a: np.argmax(a, 0)),
    ("argmin", lambda a: jf.argmin(a, axis=1, output_type=jf.int32), (XI,), lambda a: np.argmin(a, 1).astype(np.int32)),
    ("softmax", jf.nn.softmax, (X,), lambda a: np.exp(a) / np.exp(a).sum(-1, keepdims=True)),
    ("softmax_axis0", lambda a: jf.nn.softmax(a, axis=0), (X,), lambda a: np.exp(a) / np.exp(a).sum(0, keepdims=True)),
    ("log_softmax", lambda a: jf.nn.log_softmax(a, axis=1), (X,),
     lambda a: a - np.log(np.exp(a).sum(1, keepdims=True))),
    ("string_add", lambda a, b: a + b, (STR, STR[::-1]), lambda a, b: np.array([b"abc", b"cab"], object)),
    ("string_add_python", lambda a: a + "!", (STR,), lambda a: np.array([b"ab!", b"c!"], object)),
    ("string_radd_python", lambda a: "<" + a, (STR,), lambda a: np.array([b"<ab", b"<c"], object)),
    ("string_equal", lambda a: jf.equal(a, "c"), (STR,), lambda a: np.array([False, True])),
]


def _flat(result) -> list:
    return list(result) if isinstance(result, (list, tuple)) else [result]


@pytest.mark.filterwarnings("ignore::jitflow.RetraceWarning")
@pytest.mark.parametrize("fn, args, oracle", [p[1:] for p in PUBLIC], ids=[p[0] for p in PUBLIC])
def test_public_function_eager_equals_traced(fn, args, oracle):
    eager = _flat(fn(*[jf.constant(a) for a in args]))
    static: list = []

    def body(*xs):
        out = fn(*xs)
        static.extend((o.shape, o.dtype) for o in _flat(out))
        return out

    traced = _flat(jf.function(body)(*[jf.constant(a) for a in args]))
    assert len(eager) == len(traced) == len(static)
    want = _flat(oracle(*args)) if oracle is not None else None
    for i, (e, g, (shape, dtype)) in enumerate(zip(eager, traced, static)):
        assert isinstance(e, jf.Tensor) and isinstance(g, jf.Tensor)
        assert g.dtype == e.dtype == dtype, f"output {i}: traced {g.dtype}, eager {e.dtype}, static {dtype}"
        assert shape == g.shape == e.shape, f"output {i}: static {shape}, traced {g.shape}, eager {e.shape}"
        assert e.numpy().dtype == e.dtype.as_numpy_dtype and g.numpy().dtype == g.dtype.as_numpy_dtype
        np.testing.assert_array_equal(np.asarray(g.numpy()), np.asarray(e.numpy()))
        if want is not None:
            w = np.asarray(want[i])
            assert np.shape(e.numpy()) == w.shape, f"output {i}: shape {np.shape(e.numpy())} != numpy {w.shape}"
            if w.dtype.kind == "f" or e.dtype.is_floating:
                np.testing.assert_allclose(np.asarray(e.numpy(), np.float64), w.astype(np.float64),
                                           rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(e.numpy(), w)


def test_public_dtypes_follow_tf_rules():
    assert jf.constant(1).dtype == jf.int32 and jf.constant(2**40).dtype == jf.int64
    assert jf.constant(1.0).dtype == jf.float32 and jf.constant(True).dtype == jf.bool_
    assert jf.constant("s").dtype == jf.string and jf.constant([]).dtype == jf.float32
    assert jf.constant(np.float64(1)).dtype == jf.float64
    assert (jf.constant([1, 2], jf.int8) + 1).dtype == jf.int8  # the Python value follows the tensor
    assert (2.0 * jf.constant([1.0], jf.float16)).dtype == jf.float16
    assert jf.divide(jf.constant([1], jf.int8), jf.constant([2], jf.int8)).dtype == jf.float32
    assert jf.divide(jf.constant([1], jf.int64), jf.constant([2], jf.int64)).dtype == jf.float64
    assert jf.argmax(jf.constant([1.0, 2.0])).dtype == jf.int64


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: d.name)
def test_elementwise_results_keep_the_tensor_dtype_in_any_order(dtype):
    # Regression: a numba ufunc with several loops ran int8 data through a float32 loop
    # registered earlier, returning float32 values inside an "int8" tensor.
    for dt in (jf.float32, dtype, jf.int16, dtype):
        x = jf.constant([1, 2, 3], dt)
        for out in (x + x, x * x, -x, abs(x), jf.maximum(x, x), jf.square(x), x // x, x % x):
            assert out.numpy().dtype == dt.as_numpy_dtype, (dt, out)
        assert (x < x).numpy().dtype == np.bool_


# -- random ------------------------------------------------------------------------------------
@pytest.fixture
def no_global_seed():
    yield
    jf.random.set_seed(None)


def test_set_seed_makes_eager_draws_reproducible(no_global_seed):
    jf.random.set_seed(7)
    a1, a2 = jf.random.normal([4]), jf.random.uniform([4])
    a3 = jf.random.normal([4], seed=3)
    jf.random.set_seed(7)
    b1, b2 = jf.random.normal([4]), jf.random.uniform([4])
    b3 = jf.random.normal([4], seed=3)
    for a, b in ((a1, b1), (a2, b2), (a3, b3)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a1.numpy(), jf.random.normal([4]).numpy())
    jf.random.set_seed(8)
    assert not np.array_equal(a1.numpy(), jf.random.normal([4]).numpy())


def test_each_eager_call_draws_fresh_values(no_global_seed):
    for seed in (None, 11):
        jf.random.set_seed(seed)
        draws = [jf.random.normal([3], seed=5).numpy() for _ in range(3)]
        draws += [jf.random.uniform([3]).numpy() for _ in range(2)]
        assert len({d.tobytes() for d in draws}) == len(draws)


def test_each_graph_run_draws_fresh_values_and_a_seeded_retrace_repeats_them(no_global_seed):
    def make():
        @jf.function
        def draw():
            return jf.random.normal([3]), jf.random.uniform([2], 0, 100, dtype=jf.int32)
        return draw

    jf.random.set_seed(5)
    f = make()
    first, second = f(), f()
    assert f.tracing_count == 1
    assert not np.array_equal(first[0].numpy(), second[0].numpy())
    assert not np.array_equal(first[0].numpy(), first[1].numpy()[:1])
    jf.random.set_seed(5)
    again = make()()
    np.testing.assert_array_equal(again[0].numpy(), first[0].numpy())
    np.testing.assert_array_equal(again[1].numpy(), first[1].numpy())


def test_numpy_random_inside_a_function_is_frozen_at_trace_time():
    @jf.function
    def f():
        return jf.constant(np.random.uniform(size=3).astype(np.float32)) + jf.random.uniform([3])

    a, b = f(), f()
    assert f.tracing_count == 1 and not np.array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
def test_normal_has_dtype_shape_mean_and_std(dtype, no_global_seed):
    jf.random.set_seed(1)
    x = jf.random.normal([100, 200], mean=2.0, stddev=3.0, dtype=dtype)
    assert x.dtype == dtype and x.shape == (100, 200) and x.numpy().dtype == dtype.as_numpy_dtype
    v = x.numpy().astype(np.float64)
    assert abs(v.mean() - 2.0) < 0.05 and abs(v.std() - 3.0) < 0.05
    assert np.isfinite(v).all()
    assert jf.random.normal([]).shape == () and jf.random.normal([0, 3]).shape == (0, 3)
    assert jf.random.normal([3]).numpy().shape == (3,)  # odd sizes fill every element
    assert np.all(jf.random.normal([5], stddev=0.0).numpy() == 0.0)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=lambda d: d.name)
def test_uniform_has_dtype_shape_and_range(dtype, no_global_seed):
    jf.random.set_seed(2)
    lo, hi = (-1.5, 2.5) if dtype.is_floating else ((3, 250) if dtype.is_unsigned else (-4, 5))
    x = jf.random.uniform([20000], lo, hi, dtype=dtype)
    assert x.dtype == dtype and x.shape == (20000,) and x.numpy().dtype == dtype.as_numpy_dtype
    v = x.numpy()
    assert v.min() >= lo and v.max() < hi  # [minval, maxval), also after rounding to float16
    assert abs(v.astype(np.float64).mean() - (lo + hi - (0 if dtype.is_floating else 1)) / 2) < 0.05 * (hi - lo)
    if dtype.is_integer:
        assert set(np.unique(v)) == set(range(lo, hi))


def test_uniform_int64_covers_a_range_wider_than_half_of_int64(no_global_seed):
    lo, hi = -2**62, 2**62
    v = jf.random.uniform([2000], lo, hi, dtype=jf.int64).numpy()
    assert v.min() >= lo and v.max() < hi
    assert v.min() < -2**60 and v.max() > 2**60


def test_uniform_default_range_and_random_dtype_errors():
    x = jf.random.uniform([1000])
    assert x.dtype == jf.float32 and 0 <= x.numpy().min() and x.numpy().max() < 1
    with pytest.raises(ValueError, match="maxval"):
        jf.random.uniform([2], dtype=jf.int32)
    with pytest.raises(TypeError, match="dtype.*floating-point.*got int32"):
        jf.random.normal([2], dtype=jf.int32)
    with pytest.raises(TypeError, match="dtype.*got bool"):
        jf.random.uniform([2], dtype=jf.bool_)
    with pytest.raises(jf.errors.InvalidArgumentError, match="minval < maxval.*minval=5, maxval=1"):
        jf.random.uniform([2], 5, 1, dtype=jf.int32)
    with pytest.raises(TypeError, match="seed"):
        jf.random.set_seed("1")
