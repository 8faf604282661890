"""Keras's order of a functional graph's operations (`keras/src/ops/function.py` `map_graph`).

A depth-first walk from the outputs numbers each operation (input or layer) when first
reached; every node's depth is its longest distance to an output; operations are sorted
deepest first, then by that number. `Model.layers`, `get_weights`, `summary` and the
`.keras` file's layer groups follow this order, as in TF's Keras, so weights copied
between the two (`set_weights(tf_model.get_weights())`) land on the same layers.
"""
from __future__ import annotations

from typing import Any, Dict, List, Tuple

from jitflow.runtime.keras.layers.functional_node import KerasTensor, flatten


def operations(model: Any) -> List[Any]:
    """The functional model's operations in Keras's order: input KerasTensors and layers."""
    inputs, outputs, _ = model._functional
    return keras_order(inputs, outputs)


def keras_order(inputs: Any, outputs: Any) -> List[Any]:
    """The operations between `inputs` and `outputs`: input KerasTensors and layers."""
    ins = flatten(inputs)
    index: Dict[int, int] = {}
    ops: Dict[int, Any] = {}
    post: List[Tuple[int, List[int]]] = []   # (node key, parent node keys) in finishing order
    node_op: Dict[int, int] = {}
    finished = set()

    def op_of(t: KerasTensor) -> Any:
        return t if t.node is None or any(t is i for i in ins) else t.node.layer

    def visit(t: KerasTensor) -> None:
        op = op_of(t)
        key = id(t.node) if op is not t else id(t)
        if key in finished:
            return
        if id(op) not in index:
            index[id(op)] = len(index)
            ops[id(op)] = op
        parents: List[int] = []
        if op is not t and t.node is not None:   # a layer's output (op_of gave its layer)
            for p in flatten(t.node.inputs):
                if isinstance(p, KerasTensor):
                    visit(p)
                    parents.append(id(p.node) if op_of(p) is not p else id(p))
        finished.add(key)
        node_op[key] = id(op)
        post.append((key, parents))

    for t in flatten(outputs):
        visit(t)
    node_depth: Dict[int, int] = {}
    op_depth: Dict[int, int] = {}
    for key, parents in reversed(post):
        depth = max(node_depth.setdefault(key, 0), op_depth.get(node_op[key], 0))
        op_depth[node_op[key]] = depth
        node_depth[key] = depth
        for parent in parents:
            node_depth[parent] = max(depth + 1, node_depth.get(parent, 0))
    for t in ins:   # an input no output depends on still belongs to the model
        if id(t) not in op_depth:
            op_depth[id(t)], index[id(t)], ops[id(t)] = 0, -1, t
    return [ops[k] for k in sorted(op_depth, key=lambda k: (-op_depth[k], index[k]))]



__all__: List[str] = []
