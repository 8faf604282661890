"""Where the stages below `distribute` ask about a distribution strategy.

Keras (`fit`, `evaluate`, `predict`) must run its steps once per replica when the model was
built in `strategy.scope()`, but `keras` sits below `distribute` and may not import it. So
`distribute` registers an object here when it is imported (`keras_support`); with no
strategy module loaded, or no strategy in effect, Keras runs as on one device.

What the object offers (see `jitflow.runtime.distribute.keras_support`):

* `current()` → the strategy in effect, or None for the default (one replica);
* `scope(strategy)` → a context manager that makes it current (variables join it);
* `wrap_step(model, strategy, step, kind)` → `step` run once per replica on its share of
  the global batch, gradients all-reduced, metrics combined over replicas and workers
  (`kind` is "train", "test" or "predict");
* `shuffle_seed(strategy, seed)` → a seed every worker agrees on, so that all workers
  shuffle the data the same way and take disjoint shards of each global batch.
"""
from __future__ import annotations

from typing import Any, Optional

keras_support: Optional[Any] = None

__all__ = ["keras_support"]
