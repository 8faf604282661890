"""Stage 7, extra kernel backends: the CUDA table (numba.cuda), which extends the CPU table of
every op, control flow and variable ops included. Registered here as a loader so that
numba.cuda is imported only on first use of a GPU.
"""

from jitflow.runtime.ops import registry


def _load_cuda_table() -> dict:
    from jitflow.runtime.backends import cuda_kernels  # lazy: imports numba.cuda, only once a GPU is used
    from jitflow.runtime.backends import cuda_extra_kernels  # lazy: imports numba.cuda, only once a GPU is used
    from jitflow.runtime.backends import cuda_nn_kernels  # lazy: imports numba.cuda, only once a GPU is used
    from jitflow.runtime.backends import cuda_sparse_kernels  # lazy: imports numba.cuda, only once a GPU is used
    from jitflow.runtime.backends import cuda_math_extra_kernels  # lazy: imports numba.cuda, only once a GPU is used
    return {**cuda_kernels.TABLE, **cuda_extra_kernels.OVERRIDES, **cuda_nn_kernels.OVERRIDES,
            **cuda_sparse_kernels.OVERRIDES, **cuda_math_extra_kernels.OVERRIDES}


registry.KERNEL_LOADERS["cuda"] = _load_cuda_table
