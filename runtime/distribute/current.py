"""Which strategy is current, and the hooks through which the lower stages consult it.

`get_strategy()` is the strategy whose `run` this thread is inside, else the one whose
`scope()` is open, else the default strategy (one replica, no distribution), as in TF.
The hooks: new variables join the current strategy (and must not appear inside a
replica: they would be one per replica); `apply_gradients` inside `strategy.run`
all-reduces the gradients and updates once; checkpoints are written by the chief only.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from jitflow.runtime.distribute import overlap as _overlap
from jitflow.runtime.distribute import replica as _replica
from jitflow.runtime.distribute import strategy as _strategy
from jitflow.runtime.distribute.values import ReduceOp, as_tensor
from jitflow.runtime.ops import array_ops as A
from jitflow.runtime.ops import math_ops as M
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.state import variables as _variables
from jitflow.runtime.state.variables import Variable
from jitflow.runtime.training import checkpoint as _checkpoint
from jitflow.runtime.training import optimizers as _optimizers


class _DefaultStrategy(_strategy.Strategy):
    """The strategy in effect when none is: one replica on the default device."""

    def __init__(self) -> None:
        super().__init__(["/device:CPU:0"])

    def _owns(self, var: Variable) -> bool:
        return True

    def __repr__(self) -> str:
        return "<jf.distribute default strategy>"


_DEFAULT = _DefaultStrategy()


def get_strategy() -> _strategy.Strategy:
    """The current strategy (TF's `tf.distribute.get_strategy`).

    >>> jf.distribute.get_strategy()                      # outside any scope: the default strategy
    <jf.distribute default strategy>
    """
    ctx = _replica.current_replica()
    if ctx is not None:
        return ctx.strategy
    merging = _replica.current_cross_replica()
    if merging is not None:
        return merging
    stack = _strategy._scope_stack
    return stack[-1] if stack else _DEFAULT


def has_strategy() -> bool:
    """True inside a strategy's `scope()` or `run` (TF's `tf.distribute.has_strategy`).

    >>> jf.distribute.has_strategy()
    False
    """
    return get_strategy() is not _DEFAULT


def in_cross_replica_context() -> bool:
    """True in a strategy's scope outside `run`, and in merge functions.

    >>> jf.distribute.in_cross_replica_context()   # no strategy scope here
    False
    """
    return has_strategy() and _replica.current_replica() is None


def get_replica_context() -> Optional[_replica.ReplicaContext]:
    """The `ReplicaContext` inside `strategy.run`; None in cross-replica context; outside any
    strategy, the default strategy's single replica (TF's rule).

    >>> jf.distribute.get_replica_context().num_replicas_in_sync
    1
    """
    ctx = _replica.current_replica()
    if ctx is not None:
        return ctx
    if has_strategy():
        return None
    return _replica.ReplicaContext(_DEFAULT, 0, None)


# -- hooks ----------------------------------------------------------------------------------
def _on_variable_created(var: Variable) -> None:
    ctx = _replica.current_replica()
    if ctx is not None and len(ctx.strategy._devices) > 1:
        raise RuntimeError(
            f"jf.Variable {var.name} was created inside strategy.run on replica "
            f"{ctx.replica_id_in_sync_group}: each replica would get its own copy. Create the model and "
            "optimizer variables in `with strategy.scope():` before calling strategy.run (build the model there).")
    strategy = get_strategy()
    if strategy is not _DEFAULT:
        strategy._track(var)


def _apply_gradients(optimizer: Any, pairs: List[Tuple[Any, Variable]], apply: Callable[[list], Any]) -> Any:
    ctx = _replica.current_replica()
    if ctx is None:  # cross-replica context, or no strategy: the gradients are already global
        return apply(pairs)
    strategy = ctx.strategy
    outside = [var.name for _, var in pairs if not strategy._owns(var)]
    if outside:
        raise ValueError(
            f"grads_and_vars: the variables {outside} were created outside `strategy.scope()` of {strategy!r} "
            "and are updated inside its strategy.run; create the model and optimizer in "
            "`with strategy.scope():` so every replica (and worker) holds the same copy")
    variables = [v for _, v in pairs]
    if strategy._num_workers > 1 and len(strategy._devices) == 1:
        summed = _overlap.take(strategy, [g for g, _ in pairs])   # started during the backward pass
        if summed is not None:
            return ctx._meet("apply_gradients", (summed, variables),
                             lambda per_replica: apply(list(zip(summed, variables))))
    grads = _weighted(ctx, [g for g, _ in pairs])

    def merge(per_replica: List[Any]) -> Any:
        names = [[v.name for v in vs] for _, vs in per_replica]
        if any(n != names[0] for n in names):
            raise ValueError(f"apply_gradients: replicas updated different variables: {names}")
        if any(len(g) != len(per_replica[0][0]) for g, _ in per_replica):
            raise ValueError("apply_gradients: replicas passed different numbers of gradients")
        reduced = strategy._reduce_lists(ReduceOp.SUM, [list(g) for g, _ in per_replica])
        return apply(list(zip(reduced, per_replica[0][1])))
    return ctx._meet("apply_gradients", (grads, variables), merge)


def _weighted(ctx: _replica.ReplicaContext, grads: List[Any]) -> List[Any]:
    """Inside Keras's `fit`, each replica's gradients weighted by its share of the global batch
    (`keras_support`), so that their sum is the gradient of the loss over the whole batch."""
    share = ctx._gradient_share
    if share is None or share == 1.0:
        return grads
    if share == 0.0:  # an empty shard (a last batch with fewer rows than replicas): its loss may be NaN
        return [A.zeros_like(g) for g in grads]
    return [M.multiply(g, convert_to_tensor(share, dtype=as_tensor(g).dtype)) for g in grads]


def _chief_writes() -> bool:
    stack = _strategy._scope_stack
    strategies = list(stack) + list(_strategy._live_multi_worker)
    return all(s._is_chief for s in strategies)


_variables._creation_hooks.append(_on_variable_created)
_optimizers.cross_replica_hook = _apply_gradients
_checkpoint.write_guards.append(_chief_writes)

__all__ = ["get_strategy", "has_strategy", "in_cross_replica_context", "get_replica_context"]
