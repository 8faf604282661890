"""Stage 3, execution: the per-op interpreter, the numba compiler tier, device placement,
GPU memory, and the direct call path of `jf.function`.
"""
