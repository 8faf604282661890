"""`for element in dataset:` inside a `jf.function`: a graph loop over an iterator, as TF's AutoGraph makes.

Three stateful ops (TF's names): `AnonymousIteratorV3` makes a fresh iterator each time
the graph runs, `IteratorHasNext` (TF: `IteratorGetNextAsOptional` + `OptionalHasValue`)
pulls the next element into the iterator's one-element buffer and says whether there was
one, and `IteratorGetNext` hands that element to the loop body. The loop itself is
AutoGraph's tensor loop (`jf.while_loop`), so loop variables, `break` and `return` work as
in any converted loop. The dataset's Python code never runs at trace time.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence

import numpy as np

from jitflow.runtime.tracing import autograph_ops
from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import OutOfRangeError
from jitflow.runtime.ops.math_ops import logical_and
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.data import structure as _s
from jitflow.runtime.data.dataset import Dataset, Element


class _IteratorResource:
    """One run's iterator over a dataset, with a one-element look-ahead buffer."""

    __slots__ = ("it", "buffered")

    def __init__(self, dataset: Dataset) -> None:
        self.it: Iterator[Element] = dataset._iter_flat()
        self.buffered: Optional[Element] = None

    def has_next(self) -> bool:
        if self.buffered is None:
            self.buffered = next(self.it, None)
        return self.buffered is not None

    def get_next(self) -> Element:
        if not self.has_next():
            raise OutOfRangeError("End of sequence")
        element, self.buffered = self.buffered, None
        assert element is not None  # has_next() buffered it
        return element


def _make_iterator(dataset):
    out = np.empty((), dtype=object)
    out[()] = _IteratorResource(dataset)
    return out


register("AnonymousIteratorV3", lambda specs, attrs: [((), _dt.resource)], cpu=_make_iterator,
         public_name="data.Dataset.__iter__", default_name="AnonymousIteratorV3", stateful=True)
register("IteratorHasNext", lambda specs, attrs: [((), _dt.bool_)],
         cpu=lambda handle: np.asarray(handle[()].has_next()),
         public_name="data.Iterator.has_next", default_name="IteratorGetNextAsOptional", stateful=True)


def _get_next_kernel(handle, n):
    element = handle[()].get_next()
    return element[0] if n == 1 else tuple(element)


register("IteratorGetNext", lambda specs, attrs: [(s._dims, s._dtype) for s in attrs["_specs"]],
         cpu=_get_next_kernel, public_name="data.Iterator.get_next", default_name="IteratorGetNext",
         stateful=True)


def dataset_for(dataset: Dataset, extra_test: Optional[Callable[[], Any]], body: Callable[[Any], None],
                get_state: Callable[[], tuple], set_state: Callable[[tuple], None], names: Sequence[str],
                opts: dict) -> None:
    """AutoGraph's `for` over a Dataset while tracing: a `While` pulling from an iterator op."""
    handle = apply("AnonymousIteratorV3", [], {"dataset": dataset})[0]
    specs = dataset._specs

    def test() -> Any:
        more = apply("IteratorHasNext", [handle])[0]
        extra = extra_test() if extra_test is not None else None
        return more if extra is None else logical_and(more, extra)

    def run_body() -> None:
        flat = apply("IteratorGetNext", [handle], {"n": len(specs), "_specs": tuple(specs)})
        body(_s.pack(dataset._template, flat))

    autograph_ops._tensor_loop(test, run_body, get_state, set_state, names, opts)


autograph_ops.register_iterable(Dataset, dataset_for)
