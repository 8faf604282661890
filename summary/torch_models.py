"""`add_graph` for PyTorch models, through torch's own graph tracer (as
PyTorch's and tensorboardX's writers do). torch is never imported here unless
the caller already has: a model can only be a `torch.nn.Module` if torch is in
`sys.modules`.
"""

from __future__ import annotations

import sys
from typing import Any


def is_torch_module(model: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def graph_def_bytes(model: Any, input_to_model: Any, verbose: bool, use_strict_trace: bool) -> bytes:
    """Serialized GraphDef of `model` traced with `input_to_model` by
    `torch.utils.tensorboard._pytorch_graph.graph` (torch's own converter)."""
    if input_to_model is None:
        raise ValueError("input_to_model: a torch.nn.Module is traced by running it, so pass example "
                         "inputs (a tensor or a tuple of tensors)")
    try:
        from torch.utils.tensorboard._pytorch_graph import graph
    except ImportError as e:  # torch builds without tensorboard support
        raise ImportError(f"add_graph for torch models needs torch.utils.tensorboard ({e})") from None
    graph_def, _step_stats = graph(model, input_to_model, verbose, use_strict_trace)
    return graph_def.SerializeToString()
