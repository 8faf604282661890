"""Keras's side of distribution: `fit`/`evaluate`/`predict` under the model's strategy.

A model compiled in `strategy.scope()` remembers the strategy (TF's
`model.distribute_strategy`); its `fit`, `evaluate` and `predict` then run in that scope
(so weights and optimizer slots created lazily on the first batch belong to the strategy)
and their step functions run once per replica. The work is done by the `distribute`
stage through `training.strategy_hooks.keras_support`, since `keras` may not import it.
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Optional

from jitflow.runtime.training import strategy_hooks as _hooks


def current_strategy() -> Optional[Any]:
    """The strategy in effect (None: the default one replica, or no `distribute` loaded)."""
    support = _hooks.keras_support
    return None if support is None else support.current()


def _support() -> Any:
    """The distribute package's Keras support (registered when a strategy module is imported,
    which it is whenever a model has a strategy)."""
    support = _hooks.keras_support
    if support is None:
        raise RuntimeError("a model has a distribution strategy but jitflow.runtime.distribute is not loaded; "
                           "create the strategy through jf.distribute")
    return support


def model_strategy(model: Any) -> Optional[Any]:
    """The strategy `model` was compiled under, else the one in effect now."""
    return getattr(model, "_distribution_strategy", None) or current_strategy()


def records_strategy(compile_method: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates `Model.compile`: remember the strategy whose scope is open (TF does the same)."""
    @functools.wraps(compile_method)
    def compile(model: Any, *args: Any, **kwargs: Any) -> Any:
        out = compile_method(model, *args, **kwargs)
        strategy = current_strategy()
        if strategy is not None:
            model._distribution_strategy = strategy
        return out
    return compile


def in_model_scope(method: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates `fit`/`evaluate`/`predict`: run them in the model's strategy scope, if it has one."""
    @functools.wraps(method)
    def run(model: Any, *args: Any, **kwargs: Any) -> Any:
        strategy = model_strategy(model)
        scope = contextlib.nullcontext() if strategy is None else _support().scope(strategy)
        with scope:
            return method(model, *args, **kwargs)
    return run


def wrap_step(model: Any, step: Callable[[Any], Any], kind: str) -> Callable[[Any], Any]:
    """`step` once per replica of the model's strategy (unchanged without one)."""
    strategy = model_strategy(model)
    if strategy is None:
        return step
    return _support().wrap_step(model, strategy, step, kind)


def shuffle_seed(model: Any, seed: Optional[int]) -> Optional[int]:
    """The shuffling seed: `seed`, or with several workers and no seed, one they all share."""
    strategy = model_strategy(model)
    if strategy is None:
        return seed
    return _support().shuffle_seed(strategy, seed)


__all__ = ["current_strategy", "model_strategy", "records_strategy", "in_model_scope", "wrap_step", "shuffle_seed"]
