"""Stage 6, tracing: `jf.function` (trace keys, retrace records, concrete functions),
AutoGraph, control flow (`cond`, `while_loop`, `TensorArray`) and their gradients.
"""
