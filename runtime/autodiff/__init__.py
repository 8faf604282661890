"""Stage 4, autodiff: `GradientTape` (recording ops as they run) and the gradient rules of the
ops. Gradients of control-flow ops live with control flow in `runtime.tracing`.
"""
