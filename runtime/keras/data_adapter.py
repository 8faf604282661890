"""What `fit`/`evaluate`/`predict` accept as data, turned into batches.

Arrays (numpy arrays, tensors, lists or dicts of them for several inputs or outputs) are cut into batches
of `batch_size` (shuffled per epoch when asked, with the last batch smaller); their
lengths must agree. Anything else iterable (a `jf.data.Dataset`, a generator
function's iterable, a list of `(x, y)` pairs) is used as it comes: one element is one
batch, `(x,)`, `(x, y)` or `(x, y, sample_weight)`. `validation_split` takes the last
fraction of the arrays before shuffling, as Keras does. `class_weight` (`{class: weight}`)
becomes per-example sample weights, for arrays and for each batch of a dataset.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.state.variables import Variable

Batch = Tuple[Any, Optional[Any], Optional[Any]]


def _is_array(x: Any) -> bool:
    if isinstance(x, dict):   # several named inputs (or outputs)
        return bool(x) and all(isinstance(v, (np.ndarray, Tensor, Variable)) for v in x.values())
    return isinstance(x, (np.ndarray, Tensor, Variable)) or (
        isinstance(x, (list, tuple)) and bool(x) and all(isinstance(v, (np.ndarray, Tensor, Variable)) for v in x))


def _numpy(x: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: _numpy(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)) and not isinstance(x, np.ndarray):
        if x and all(isinstance(v, (np.ndarray, Tensor, Variable)) for v in x):
            return [_numpy(v) for v in x]
        return np.asarray(x)
    if isinstance(x, (Tensor, Variable)):
        return x.numpy()
    x = np.asarray(x)
    if x.dtype == np.float64:  # Keras feeds float64 arrays as the model's float32
        x = x.astype(np.float32)
    return x


def _length(x: Any) -> int:
    if isinstance(x, dict):
        return len(next(iter(x.values())))
    return len(x[0]) if isinstance(x, list) else len(x)


def _lengths(x: Any) -> List[int]:
    return [len(v) for v in (x.values() if isinstance(x, dict) else x if isinstance(x, list) else [x])]


def _take(x: Any, index: Any) -> Any:
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: v[index] for k, v in x.items()}
    if isinstance(x, list):
        return [v[index] for v in x]
    return x[index]


def class_weight_to_sample_weight(y: Any, class_weight: Dict[Any, float]) -> np.ndarray:
    """Per-example weights from a `{class: weight}` map (Keras's rule): the class of an example is
    its label (rounded), or the argmax of one-hot labels; classes not in the map weigh 1."""
    if isinstance(y, (list, dict)):
        raise ValueError("fit: class_weight is only supported for models with a single output; got targets y "
                         f"with {len(y)} entries (pass per-output sample_weight instead)")
    y = np.asarray(y)
    if y.ndim > 1:
        y = np.argmax(y, axis=-1) if y.shape[-1] != 1 else np.squeeze(y, axis=-1)
    classes = np.round(y).astype(np.int64).reshape(-1)
    table = {int(k): float(v) for k, v in class_weight.items()}
    return np.array([table.get(int(c), 1.0) for c in classes], np.float32)


def check_class_weight(class_weight: Any) -> None:
    if not isinstance(class_weight, dict) or not all(
            isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in class_weight):
        raise ValueError("fit: class_weight must be a dict mapping integer class ids to weights, e.g. "
                         f"{{0: 1.0, 1: 5.0}}; got {class_weight!r}")


def unpack(data: Any) -> Batch:
    """`(x,)`, `(x, y)`, `(x, y, sample_weight)` or a bare `x` → (x, y, sample_weight)."""
    if isinstance(data, tuple):
        if len(data) == 1:
            return data[0], None, None
        if len(data) == 2:
            return data[0], data[1], None
        if len(data) == 3:
            return data
        raise ValueError(f"data: expected (x,), (x, y) or (x, y, sample_weight); got a tuple of {len(data)}")
    return data, None, None


class DataHandler:
    """Batches of one pass over the data; `steps` is known for arrays and sized datasets."""

    def __init__(self, x: Any, y: Any = None, sample_weight: Any = None, batch_size: Optional[int] = None,
                 shuffle: bool = False, steps: Optional[int] = None, who: str = "fit",
                 class_weight: Optional[Dict[Any, float]] = None) -> None:
        self.shuffle = shuffle
        if class_weight is not None:
            check_class_weight(class_weight)
            if sample_weight is not None:
                raise ValueError(f"{who}: you cannot pass class_weight and sample_weight at the same time")
        self.class_weight = class_weight
        self.arrays = False
        self.steps: Optional[int]  # None: an unsized dataset or generator, read until it ends
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(f"{who}: batch_size must be a positive integer; got {batch_size!r}")
        if _is_array(x) or y is not None:
            self.x, self.y, self.w = _numpy(x), _numpy(y), _numpy(sample_weight)
            if class_weight is not None and self.y is not None:
                self.w = class_weight_to_sample_weight(self.y, class_weight)
            sizes = {"x": _length(self.x)}
            if self.y is not None:
                sizes["y"] = _length(self.y)
            if self.w is not None:
                sizes["sample_weight"] = _length(self.w)
            for what, value in (("input", self.x), ("target", self.y), ("sample_weight", self.w)):
                if isinstance(value, (list, dict)) and len(set(_lengths(value))) > 1:
                    raise ValueError(f"{who}: Data cardinality is ambiguous: the {what} arrays have sizes "
                                     f"{_lengths(value)}; make sure all arrays contain the same number "
                                     "of samples")
            if len(set(sizes.values())) > 1:
                detail = ", ".join(f"{k} sizes: {v}" for k, v in sizes.items())
                raise ValueError(f"{who}: Data cardinality is ambiguous: {detail}. Make sure all arrays contain "
                                 "the same number of samples.")
            self.n = sizes["x"]
            self.batch_size = batch_size or 32
            self.steps = steps if steps is not None else max(math.ceil(self.n / self.batch_size), 0)
            self.arrays = True
        else:
            if batch_size is not None:
                raise ValueError(f"{who}: do not pass batch_size with a dataset or generator (it yields batches "
                                 "already); got batch_size={batch_size}")
            if not hasattr(x, "__iter__"):
                raise TypeError(f"{who}: x must be an array, a tensor, a list of them, or an iterable of batches; "
                                f"got {type(x).__name__}")
            self.data = x
            self.steps = steps if steps is not None else (len(x) if hasattr(x, "__len__") else None)

    def batches(self, rng: Optional[np.random.Generator] = None) -> Iterator[Batch]:
        if self.arrays:
            order = rng.permutation(self.n) if (self.shuffle and rng is not None) else None
            assert self.steps is not None, "arrays always know their step count"
            for step in range(self.steps):
                lo = step * self.batch_size
                if lo >= self.n:
                    return
                index = order[lo:lo + self.batch_size] if order is not None else slice(lo, lo + self.batch_size)
                yield _take(self.x, index), _take(self.y, index), _take(self.w, index)
        else:
            for step, element in enumerate(self.data):
                if self.steps is not None and step >= self.steps:
                    return
                x, y, w = unpack(element)
                y, w = _numpy(y), _numpy(w)
                if self.class_weight is not None and y is not None:
                    if w is not None:
                        raise ValueError("fit: you cannot use class_weight with a dataset that yields "
                                         "(x, y, sample_weight)")
                    w = class_weight_to_sample_weight(y, self.class_weight)
                yield _numpy(x), y, w


def split(x: Any, y: Any, sample_weight: Any, fraction: float) -> Tuple[Batch, Batch]:
    """(train, validation): the validation part is the last `fraction` of the arrays."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_split: must be in (0, 1); got {fraction}")
    if not _is_array(x):
        raise ValueError("validation_split is only supported for arrays and tensors; pass validation_data= for a "
                         f"dataset or generator (got x of type {type(x).__name__})")
    x, y, w = _numpy(x), _numpy(y), _numpy(sample_weight)
    n = _length(x)
    cut = int(math.floor(n * (1.0 - fraction)))
    if cut == 0 or cut == n:
        raise ValueError(f"validation_split={fraction} leaves no samples for training or validation out of {n}")
    head, tail = slice(0, cut), slice(cut, n)
    return (_take(x, head), _take(y, head), _take(w, head)), (_take(x, tail), _take(y, tail), _take(w, tail))


def concat(parts: Sequence[Any]) -> Any:
    """Per-batch outputs (arrays, or lists/dicts of arrays) joined along the batch."""
    first = parts[0]
    if isinstance(first, dict):
        return {k: np.concatenate([p[k] for p in parts]) for k in first}
    if isinstance(first, (list, tuple)):
        return [np.concatenate([p[i] for p in parts]) for i in range(len(first))]
    return np.concatenate(parts)


__all__: List[str] = []
