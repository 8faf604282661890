"""Stage 2, the ops: one registry (TF op name, shape rule, kernels per backend, gradient) and
the user-facing op functions built on it. The CPU kernels and numpy references live here;
other backends extend the CPU table from `runtime.backends`.
"""
