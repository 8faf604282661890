"""Stage 1, the core types: dtypes, shapes, tensors, the graph IR, context, errors, devices.

Everything else in the runtime builds on these; nothing here imports from a stage above.
Where the core needs behaviour defined higher up (running an op, capturing a variable),
it offers a hook that the higher stage fills in when it loads.
"""
