"""jitflow's runtime: tensors, the op registry, graphs, `jf.function` and the training libraries.

The runtime is built in stages, each a subpackage that imports only from the stages
below it (`tests/architecture/test_import_structure.py` enforces this):

    core        dtypes, shapes, tensors, the graph IR, context, errors, devices
    ops         the op registry and the ops (CPU and numpy-reference kernels)
    execution   interpreter, numba compiler tier, placement, GPU memory, direct calls
    autodiff    GradientTape and the gradient rules
    state       Variable, Module
    tracing     jf.function, AutoGraph, control flow and its gradients
    backends    the CUDA kernel table, loaded on first use of a GPU
    training    optimizers, losses, initializers, checkpoints
    sparse      SparseTensor and the jf.sparse ops (loaded with jf.sparse / jf.io / jf.data)

Loading this package loads every stage, so that each op, kernel and gradient is
registered; the names below are what `jitflow` re-exports.
"""
from jitflow.runtime import backends as _backends  # noqa: F401 - registers the CUDA table loader
from jitflow.runtime.autodiff import gradients as _gradients  # noqa: F401 - registers op gradients
from jitflow.runtime.autodiff import gradients_nn as _gradients_nn  # noqa: F401 - conv/pool/activation gradients
from jitflow.runtime.autodiff import extra_gradients as _extra_gradients  # noqa: F401 - gradients of the extra ops
from jitflow.runtime.autodiff import complex_gradients as _complex_gradients  # noqa: F401 - complex-number op gradients
from jitflow.runtime.autodiff import linalg_gradients as _linalg_gradients  # noqa: F401 - inv/det gradients
from jitflow.runtime.autodiff import jacobians as _jacobians  # noqa: F401 - GradientTape.jacobian/batch_jacobian
from jitflow.runtime.autodiff.custom_gradient import UnconnectedGradients, custom_gradient
from jitflow.runtime.autodiff.tape import GradientTape
from jitflow.runtime.state.variable_options import VariableAggregation, VariableSynchronization
from jitflow.runtime.core import dtypes, errors
from jitflow.runtime.core.context import executing_eagerly, init_scope, name_scope
from jitflow.runtime.core.devices import device
from jitflow.runtime.core.dtypes import complex64, complex128
from jitflow.runtime.core.dtypes import (DType, as_dtype, bool_, double, float16, float32, float64,
                                         half, int8, int16, int32, int64, string, uint8)
from jitflow.runtime.core.graph import Graph
from jitflow.runtime.core.shapes import TensorShape
from jitflow.runtime.core.tensor import Tensor, TensorSpec
from jitflow.runtime.execution import config as _config  # noqa: F401 - jf.config is jitflow/config.py
from jitflow.runtime.ops import io_ops as _io_ops  # noqa: F401 - registers PyFunc/PrintV2
from jitflow.runtime.ops import nn_conv_ops as _nn_conv_ops  # noqa: F401 - registers conv/pool/activation ops
from jitflow.runtime.ops import nn_ops as _nn_ops  # noqa: F401 - registers the cross-entropy ops
from jitflow.runtime.ops.array_extra_ops import broadcast_to, einsum, eye, linspace, split, tile
from jitflow.runtime.ops.clip_ops import clip_by_global_norm, clip_by_norm, clip_by_value
from jitflow.runtime.ops.math_extra_ops import argsort, ceil, floor, round, rsqrt, sort
from jitflow.runtime.ops import nn_extra_ops as _nn_extra_ops  # noqa: F401 - jf.nn.dropout, l2_loss
from jitflow.runtime.ops.array_ops import (cast, concat, expand_dims, fill, identity, ones, ones_like,
                                           range, rank, reshape, shape, size, squeeze, stack,
                                           stop_gradient, transpose, unstack, zeros,
                                           zeros_like)
from jitflow.runtime.ops.complex_ops import complex
from jitflow.runtime.ops.math_composite_ops import add_n, gather_nd, identity_n, norm, reverse, tensordot
from jitflow.runtime.ops.selection_ops import (boolean_mask, scatter_nd, searchsorted, tensor_scatter_nd_add,
                                               unique, where)
from jitflow.runtime.autodiff import selection_gradients as _selection_gradients  # noqa: F401 - scatter-add
from jitflow.runtime.ops.tensor_utils import get_static_value, is_tensor, no_op
from jitflow.runtime.ops.array_composite_ops import (ensure_shape, meshgrid, repeat, roll, sequence_mask, slice,
                                                     strided_slice)
from jitflow.runtime.ops import linalg_ops as _linalg_ops  # noqa: F401 - registers MatrixInverse/MatrixDeterminant
from jitflow.runtime.ops.constant_op import constant, convert_to_tensor
from jitflow.runtime.ops.indexing_ops import gather, one_hot, pad, tensor_scatter_nd_update
from jitflow.runtime.ops.io_ops import print, py_function
from jitflow.runtime.ops.math_ops import (abs, add, argmax, argmin, cos, divide, equal, exp, floordiv,
                                          greater, greater_equal, is_finite, less, less_equal, log,
                                          logical_and, logical_not, logical_or, matmul, maximum,
                                          minimum, mod, multiply, negative, not_equal, pow,
                                          reduce_all, reduce_any, reduce_logsumexp, reduce_max,
                                          reduce_mean, reduce_min, reduce_prod, reduce_std,
                                          reduce_sum, reduce_variance, sigmoid, sign, sin, sqrt,
                                          square, subtract, tanh, truediv)
from jitflow.runtime.state.module import Module
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.tracing import control_flow_grad as _control_flow_grad  # noqa: F401 - If/While gradients
from jitflow.runtime.tracing import trace_records
from jitflow.runtime.tracing.control_flow import cond, while_loop
from jitflow.runtime.tracing.function import ConcreteFunction, Function, RetraceWarning, function
from jitflow.runtime.tracing.tensor_array import TensorArray
from jitflow.runtime.tracing.map_fn import map_fn
from jitflow.runtime.training.initializers import (constant_initializer, ones_initializer,
                                                   random_normal_initializer,
                                                   random_uniform_initializer, zeros_initializer)

# TF also spells cast `tf.dtypes.cast`; the dtypes module sits below the ops, so it is bound here.
dtypes.cast = cast

__all__ = [
    # types
    "DType", "as_dtype", "bool_", "double", "float16", "float32", "float64", "half", "int8", "int16",
    "int32", "int64", "string", "uint8", "complex64", "complex128", "Tensor", "TensorSpec", "TensorShape", "Variable",
    "Module",
    "Graph", "dtypes", "errors",
    # execution context
    "executing_eagerly", "init_scope", "name_scope", "device",
    # tensors
    "constant", "convert_to_tensor", "cast", "concat", "expand_dims", "fill", "identity", "ones",
    "ones_like", "range", "rank", "reshape", "shape", "size", "squeeze", "stack", "stop_gradient",
    "transpose", "unstack", "where", "zeros", "zeros_like", "gather", "one_hot", "pad",
    "tensor_scatter_nd_update", "print", "py_function", "TensorArray", "complex", "add_n", "identity_n",
    "boolean_mask", "scatter_nd", "searchsorted", "tensor_scatter_nd_add", "unique",
    "gather_nd", "norm", "reverse", "tensordot", "get_static_value", "is_tensor", "no_op",
    "ensure_shape", "meshgrid", "repeat", "roll", "sequence_mask", "slice", "strided_slice",
    "broadcast_to", "einsum", "eye",
    "linspace", "split", "tile", "clip_by_global_norm", "clip_by_norm", "clip_by_value", "argsort",
    "sort",
    # math
    "abs", "add", "argmax", "argmin", "cos", "divide", "equal", "exp", "floordiv", "greater",
    "greater_equal", "is_finite", "less", "less_equal", "log", "logical_and", "logical_not",
    "logical_or", "matmul", "maximum", "minimum", "mod", "multiply", "negative", "not_equal", "pow",
    "reduce_all", "reduce_any", "reduce_logsumexp", "reduce_max", "reduce_mean", "reduce_min",
    "reduce_prod", "reduce_std", "reduce_sum", "reduce_variance", "sigmoid", "sign", "sin", "sqrt",
    "square", "subtract", "tanh", "truediv", "ceil", "floor", "round", "rsqrt",
    # functions, control flow, gradients
    "function", "Function", "ConcreteFunction", "RetraceWarning", "trace_records", "cond", "while_loop", "map_fn",
    "GradientTape", "custom_gradient", "UnconnectedGradients", "VariableAggregation",
    "VariableSynchronization",
    # training
    "constant_initializer", "ones_initializer",
    "random_normal_initializer", "random_uniform_initializer", "zeros_initializer",
]


# Checkpoints load on first use (their tensor-bundle and protobuf machinery is not needed by a
# program that only runs ops); `jf.train.Checkpoint` and `jf.Checkpoint` reach them by name.
_LAZY_CHECKPOINT_NAMES = ("Checkpoint", "CheckpointManager", "latest_checkpoint")


def __getattr__(name: str):
    if name in _LAZY_CHECKPOINT_NAMES:
        from jitflow.runtime.training import checkpoint  # lazy: tensor bundle + protobufs, on first use
        value = getattr(checkpoint, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'jitflow.runtime' has no attribute {name!r}")
