"""Gradients of `If` and `While` in graphs: control flow differentiated as control flow.

A cond's gradient is a cond of its branches' gradients; a while loop's gradient replays
the loop saving its states in TensorArrays, then runs a backward loop of the body's VJPs.
They live here, above `jf.function` (they inline traced branch graphs), rather than with
the other gradient rules in `runtime.autodiff`.
"""
from __future__ import annotations

from jitflow.runtime.autodiff.tape import GradientTape
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor
from jitflow.runtime.tracing.control_flow import cond
from jitflow.runtime.tracing.control_flow import while_loop
from jitflow.runtime.tracing.function import inline_graph
from jitflow.runtime.tracing.tensor_array import TensorArray
from jitflow.runtime.ops.registry import gradient


@gradient("If")
def _if(rec, grads):
    """A cond's gradient is a cond of its branches' gradients.

    Each gradient branch replays its forward branch (so the tape sees every op) and
    differentiates it with respect to the values the branch captured; inputs the other
    branch captured get zeros, so both branches return the same structure.
    """
    then_b, else_b, n_then = rec.attrs["then_branch"], rec.attrs["else_branch"], rec.attrs["n_then"]
    captured = rec.inputs[1:]
    outs = rec.outputs
    seeds = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    seeds = [A.zeros_like(o) if g is None else g for g, o in zip(seeds, outs)]
    slots = [i for i, c in enumerate(captured)
             if isinstance(c, TensorConvertible) and c.dtype.is_floating
             or isinstance(c, Tensor) and c.dtype.is_floating]

    def zeros_for(c):
        return A.zeros_like(c.read_value() if isinstance(c, TensorConvertible) else c)

    def branch_grads(branch, lo, hi):
        def run():
            mine = captured[lo:hi]
            with GradientTape(persistent=True) as tape:
                tape.watch([c for c in mine if isinstance(c, (Tensor, TensorConvertible)) and c.dtype.is_floating])
                results = inline_graph(branch.graph, [ph for _, ph in branch.captures], mine, branch.outputs)
            float_results = [(r, s) for r, s in zip(results, seeds) if r.dtype.is_floating]
            targets = [r for r, _ in float_results]
            wanted = [captured[i] for i in slots if lo <= i < hi]
            found = tape.gradient(targets, wanted, output_gradients=[s for _, s in float_results]) if targets else []
            by_index = dict(zip([i for i in slots if lo <= i < hi], found))
            return [by_index.get(i) if by_index.get(i) is not None else zeros_for(captured[i]) for i in slots]
        return run

    if not slots:
        return [None] * len(rec.inputs)
    results = cond(rec.inputs[0], branch_grads(then_b, 0, n_then), branch_grads(else_b, n_then, len(captured)))
    results = results if isinstance(results, list) else [results]
    out = [None] * len(rec.inputs)
    for i, g in zip(slots, results):
        out[1 + i] = g
    return out


@gradient("While")
def _while(rec, grads):
    """A loop's gradient: replay the loop recording each iteration's state, then walk the
    iterations backwards, applying the body's vector-Jacobian product at each saved state.

    Both passes are `jf.while_loop`s themselves, so the backward pass stays a graph loop;
    states are kept in TensorArrays (one per loop variable).
    """
    n_vars, n_cond = rec.attrs["n_vars"], rec.attrs["n_cond"]
    cond_sub, body_sub, limit = rec.attrs["cond"], rec.attrs["body"], rec.attrs["maximum_iterations"]
    init = list(rec.inputs[:n_vars])
    cond_caps = list(rec.inputs[n_vars:n_vars + n_cond])
    body_caps = list(rec.inputs[n_vars + n_cond:])
    seeds = list(grads) if isinstance(grads, (list, tuple)) else [grads]
    seeds = [A.zeros_like(o) if g is None else g for g, o in zip(seeds, rec.outputs)]
    var_idx = [k for k, v in enumerate(init) if v.dtype.is_floating]
    cap_idx = [j for j, c in enumerate(body_caps) if isinstance(c, (Tensor, TensorConvertible)) and c.dtype.is_floating]
    if not var_idx:
        return [None] * len(rec.inputs)

    def run_cond(values):
        (go,) = inline_graph(cond_sub.graph, cond_sub.inputs + [ph for _, ph in cond_sub.captures],
                             list(values) + cond_caps, cond_sub.outputs)
        return go

    def run_body(values):
        return inline_graph(body_sub.graph, body_sub.inputs + [ph for _, ph in body_sub.captures],
                            list(values) + body_caps, body_sub.outputs)

    # 1. Forward replay, saving the state each iteration starts from.
    arrays = [TensorArray(v.dtype, size=0, dynamic_size=True, element_shape=v.shape) for v in init]

    def replay_cond(i, *rest):
        go = run_cond(rest[:n_vars])
        return go if limit is None else M.logical_and(go, M.less(i, limit))

    def replay_body(i, *rest):
        values, tas = rest[:n_vars], rest[n_vars:]
        tas = [ta.write(i, v) for ta, v in zip(tas, values)]
        return [i + 1] + list(run_body(values)) + tas

    replayed = while_loop(replay_cond, replay_body, [convert_to_tensor(0)] + init + arrays)
    count, saved = replayed[0], replayed[1 + n_vars:]

    # 2. Backward: from the last iteration to the first.
    def zeros_for(c):
        return A.zeros_like(c.read_value() if isinstance(c, TensorConvertible) else c)

    def back_body(k, *rest):
        g_vars, g_caps = rest[:len(var_idx)], rest[len(var_idx):]
        state = [ta.read(k) for ta in saved]
        watched_caps = [body_caps[j] for j in cap_idx]
        with GradientTape() as tape:
            tape.watch([state[i] for i in var_idx] + watched_caps)
            outs = run_body(state)
        found = tape.gradient([outs[i] for i in var_idx], [state[i] for i in var_idx] + watched_caps,
                              output_gradients=list(g_vars))
        new_vars = [g if g is not None else A.zeros_like(state[i]) for g, i in zip(found[:len(var_idx)], var_idx)]
        new_caps = [acc if g is None else M.add(acc, g) for acc, g in zip(g_caps, found[len(var_idx):])]
        return [k - 1] + new_vars + new_caps

    back = while_loop(lambda k, *rest: M.greater_equal(k, 0), back_body,
                      [count - 1] + [seeds[i] for i in var_idx] + [zeros_for(body_caps[j]) for j in cap_idx])
    out = [None] * len(rec.inputs)
    for slot, g in zip(var_idx, back[1:1 + len(var_idx)]):
        out[slot] = g
    for j, g in zip(cap_idx, back[1 + len(var_idx):]):
        out[n_vars + n_cond + j] = g
    return out
