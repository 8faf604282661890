"""jitflow's runtime: tensors, the op registry, graphs and `jf.function`.

Import order matters only here: ops register themselves when their module loads.
"""
from . import dtypes, errors, instrument, trace_records
from .context import executing_eagerly, init_scope, name_scope
from .dtypes import (DType, as_dtype, bool_, double, float16, float32, float64, half, int8, int16,
                     int32, int64, string, uint8)
from .graph import Graph, Node
from .ops import array_ops, constant_op, io_ops, math_ops, random_ops
from .ops.array_ops import (cast, concat, expand_dims, fill, identity, ones, ones_like, rank,
                            reshape, shape, size, squeeze, stack, stop_gradient, transpose, unstack,
                            where, zeros, zeros_like)
from .ops.array_ops import range  # noqa: A004 - TF's name
from .ops.constant_op import constant, convert_to_tensor
from .ops.io_ops import print, py_function  # noqa: A004
from .ops.registry import KERNELS, OPS, OpDef
from .shapes import TensorShape
from .tensor import EagerTensor, SymbolicTensor, Tensor, TensorSpec
from .variables import Variable
from .ops import operators as _operators  # installs Python operators on Tensor/Variable
from .function import ConcreteFunction, Function, RetraceWarning, function
from .module import Module
from .control_flow import cond, while_loop
from .autodiff import GradientTape
from . import gradients as _gradients  # registers every op's gradient
from .ops import nn_conv_ops
from . import gradients_nn as _gradients_nn  # conv/pool/activation gradients
from . import autograph, autograph_ops

from .ops import indexing_ops, nn_ops
from .ops.indexing_ops import gather, one_hot, pad, tensor_scatter_nd_update
from .tensor_array import TensorArray
from . import checkpoint, initializers, losses, optimizers
from .checkpoint import Checkpoint, CheckpointManager, latest_checkpoint
from .initializers import (constant_initializer, ones_initializer, random_normal_initializer,
                           random_uniform_initializer, zeros_initializer)

# -- devices (issue 7): jf.config, jf.device; CUDA kernels load on first use of a GPU ------
from . import config, devices, placement
from .devices import device

__all__ = [name for name in dir() if not name.startswith("_")]
