"""`jf.math`: elementwise math and reductions (TensorFlow's `tf.math`).

    >>> import jitflow as jf
    >>> jf.math.reduce_sum(jf.math.square(jf.constant([1.0, 2.0]))).numpy()
    np.float32(5.0)
"""
from jitflow.runtime.ops.indexing_ops import unsorted_segment_sum
from jitflow.runtime.ops.math_ops import (abs, add, argmax, argmin, cos, divide, equal, exp, floordiv,
                                          greater, greater_equal, is_finite, less, less_equal, log,
                                          logical_and, logical_not, logical_or, matmul, maximum,
                                          minimum, multiply, negative, not_equal, pow, reduce_all,
                                          reduce_any, reduce_logsumexp, reduce_max, reduce_mean,
                                          reduce_min, reduce_prod, reduce_std, reduce_sum,
                                          reduce_variance, sigmoid, sign, sin, sqrt, square,
                                          subtract, tanh, truediv)
from jitflow.runtime.ops.math_ops import mod as floormod
from jitflow.runtime.ops.math_extra_ops import (acos, argsort, asin, atan, ceil, cosh, cumprod, cumsum, erf, erfc,
                                                expm1, floor, log1p, reciprocal, reduce_euclidean_norm, round,
                                                rsqrt, sinh, softsign, sort, squared_difference, tan,
                                                top_k)
from jitflow.runtime.ops.math_ops import log_softmax, softmax  # TF also has tf.math.softmax
from jitflow.runtime.ops.complex_ops import angle, conj, imag, real
from jitflow.runtime.ops.math_composite_ops import (add_n, count_nonzero, divide_no_nan, is_inf, is_nan,
                                                    log_sigmoid, logical_xor, multiply_no_nan, polyval, rint,
                                                    xlogy)
from jitflow.runtime.ops.nn_activation_ops import l2_normalize
from jitflow.runtime.ops.selection_ops import bincount, segment_mean, segment_sum
from jitflow.runtime.ops.nn_conv_ops import softplus

__all__ = [
    "abs", "add", "argmax", "argmin", "cos", "divide", "equal", "exp", "floordiv", "floormod",
    "greater", "greater_equal", "is_finite", "less", "less_equal", "log", "logical_and",
    "logical_not", "logical_or", "matmul", "maximum", "minimum", "multiply", "negative",
    "not_equal", "pow", "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean",
    "reduce_min", "reduce_prod", "reduce_std", "reduce_sum", "reduce_variance", "sigmoid", "sign",
    "sin", "sqrt", "square", "subtract", "tanh", "truediv", "unsorted_segment_sum",
    "acos", "argsort", "asin", "atan", "ceil", "cosh", "cumprod", "cumsum", "erf", "erfc", "expm1", "floor", "log1p",
    "reciprocal", "reduce_euclidean_norm", "round", "rsqrt", "sinh", "softsign", "sort",
    "squared_difference", "tan", "top_k", "softmax", "log_softmax", "angle", "conj", "imag", "real",
    "add_n", "count_nonzero", "divide_no_nan", "is_inf", "is_nan", "log_sigmoid", "logical_xor",
    "multiply_no_nan", "xlogy", "l2_normalize", "softplus", "polyval", "rint", "bincount",
    "segment_mean", "segment_sum",
]
