"""Transformations that work in background threads: parallel `map`, `prefetch`, `interleave`.

Threads, not processes: the traced map function runs jitflow kernels (numba, `nogil`),
Pillow codecs and file reads, all of which release the GIL, so threads use several cores
without copying elements between processes. Every background thread is bounded (a
fixed number of elements in flight), stops when its iterator is closed or collected, and
hands its exception to the consumer, which re-raises it at the element where it happened.
"""
from __future__ import annotations

import collections
import os
import queue
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Generator, Iterator, List, Optional, Tuple

from jitflow.runtime.data import structure as _s
from jitflow.runtime.data.dataset import AUTOTUNE, UNKNOWN_CARDINALITY, Dataset, DatasetSpec, Element, register
from jitflow.runtime.data.traced import TracedFunction
from jitflow.runtime.data.windows import ElementsDataset


def cores() -> int:
    """CPU cores this process may use (what AUTOTUNE parallelism scales to)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _parallelism(value: Any, what: str) -> int:
    if hasattr(value, "numpy"):
        value = value.numpy()
    if value == AUTOTUNE:
        return cores()
    if not isinstance(value, int) or value <= 0:
        raise ValueError(f"{what}: expected a positive int or jf.data.AUTOTUNE; got {value!r}")
    return value


@register("parallel_map")
class ParallelMapDataset(Dataset):
    _kind = "ParallelMapV2"

    def __init__(self, input_ds: Dataset, map_func: Callable, num_parallel_calls: Any,
                 deterministic: Optional[bool]) -> None:
        self._input = input_ds
        self._workers = _parallelism(num_parallel_calls, "num_parallel_calls")
        self._deterministic_arg = deterministic
        self._fn = TracedFunction(map_func, input_ds._template, "map")
        super().__init__(self._fn.out_template, [input_ds])

    def _settings(self) -> Tuple[int, bool]:
        """(threads, deterministic) after the pipeline's options (threadpool cap, deterministic default)."""
        options = self._pipeline_options
        workers = self._workers
        if options is not None and options._threadpool():
            workers = min(workers, options._threadpool())
        if self._deterministic_arg is not None:
            return workers, bool(self._deterministic_arg)
        return workers, options is None or options._deterministic()

    def _gen(self, name: str) -> Iterator[Element]:
        workers, deterministic = self._settings()
        if workers == 1:
            fn = self._fn
            for flat in self._input._iter_flat(name):
                yield fn(flat)
            return
        pool = ThreadPoolExecutor(workers, thread_name_prefix="jf.data.map")
        window = 2 * workers  # elements in flight: bounded memory
        pending: "collections.deque[Future]" = collections.deque()
        it = self._input._iter_flat(name)
        fn = self._fn
        try:
            for flat in it:
                pending.append(pool.submit(fn, flat))
                if len(pending) >= window:
                    yield self._take(pending, deterministic)
            while pending:
                yield self._take(pending, deterministic)
        finally:
            for f in pending:
                f.cancel()
            pool.shutdown(wait=True, cancel_futures=True)

    def _take(self, pending: "collections.deque[Future]", deterministic: bool) -> Element:
        if not deterministic:  # the first finished (waiting for one if none is), not the oldest
            wait(pending, return_when=FIRST_COMPLETED)
            for f in pending:
                if f.done():
                    pending.remove(f)
                    return f.result()
        return pending.popleft().result()

    def _cardinality(self) -> int:
        return self._input._cardinality()


_END = object()


class _Failure:
    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


def _produce(it: Iterator[Element], q: "queue.Queue", stop: threading.Event) -> None:
    """Background producer: pull from `it` into `q` until the end, an error, or `stop`."""
    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False
    try:
        for flat in it:
            if not put(flat):
                return
        put(_END)
    except BaseException as e:  # handed to the consumer, raised where the element was due
        put(_Failure(e))
    finally:
        close = getattr(it, "close", None)
        if close is not None:
            close()


def background(it: Iterator[Element], buffer_size: int, thread_name: str) -> Generator[Element, None, None]:
    """`it` produced by a daemon thread, at most `buffer_size` elements ahead."""
    q: "queue.Queue" = queue.Queue(maxsize=buffer_size)
    stop = threading.Event()
    t = threading.Thread(target=_produce, args=(it, q, stop), name=thread_name, daemon=True)
    t.start()
    try:
        while True:
            item = q.get()
            if item is _END:
                return
            if item.__class__ is _Failure:
                raise item.exc
            yield item
    finally:
        stop.set()


@register("prefetch")
class PrefetchDataset(Dataset):
    _kind = "Prefetch"

    def __init__(self, input_ds: Dataset, buffer_size: Any) -> None:
        if hasattr(buffer_size, "numpy"):
            buffer_size = buffer_size.numpy()
        if buffer_size != AUTOTUNE and (not isinstance(buffer_size, int) or buffer_size < 0):
            raise ValueError(f"buffer_size: expected a non-negative int or jf.data.AUTOTUNE; got {buffer_size!r}")
        self._input = input_ds
        # AUTOTUNE: enough to overlap a step with the next element's production, no more.
        self._autotune = buffer_size == AUTOTUNE
        self._buffer = 2 if buffer_size == AUTOTUNE else buffer_size
        super().__init__(input_ds._template, [input_ds])

    def _gen(self, name: str) -> Iterator[Element]:
        it = self._input._iter_flat(name)
        buffer = self._buffer
        options = self._pipeline_options
        if self._autotune and options is not None and options.autotune.enabled is False:
            buffer = 1  # TF's untuned start value
        if buffer == 0:
            yield from it
            return
        yield from background(it, buffer, "jf.data.prefetch")

    def _cardinality(self) -> int:
        return self._input._cardinality()


@register("interleave")
class InterleaveDataset(Dataset):
    """TF's interleave order: `cycle_length` open inputs, `block_length` elements from each in
    turn, an exhausted input replaced by the next. With `num_parallel_calls` each open input
    is produced by a background thread (TF's ParallelInterleave), in the same order."""

    def __init__(self, input_ds: Dataset, map_func: Callable, cycle_length: Optional[int],
                 block_length: Optional[int], num_parallel_calls: Any) -> None:
        if not callable(map_func):
            raise TypeError(f"map_func: expected a callable returning a Dataset; got {type(map_func).__name__}")
        self._input = input_ds
        self._map_func = map_func
        self._cycle = cores() if cycle_length in (None, AUTOTUNE) else int(cycle_length)
        self._block = 1 if block_length is None else int(block_length)
        if self._cycle <= 0 or self._block <= 0:
            raise ValueError(f"cycle_length and block_length: expected positive ints; got "
                             f"{cycle_length!r}, {block_length!r}")
        self._parallel = num_parallel_calls is not None
        self._kind = "ParallelInterleaveV4" if self._parallel else "Interleave"
        first = self._open_template()
        super().__init__(first._template, [input_ds])

    def _open_template(self) -> Dataset:
        # map_func returns datasets, which need concrete values, so the output structure
        # comes from opening the dataset of the first input element (opening reads nothing).
        template = self._input._template
        if _s.has_datasets(template) and all(isinstance(leaf, DatasetSpec) for leaf in _s.flatten(template)):
            # Window elements: empty windows of the same structure say what map_func builds.
            element = _s.map_structure(lambda spec: ElementsDataset(spec.element_spec, []), template)
            args = element if isinstance(element, tuple) and not hasattr(element, "_fields") else (element,)
            ds = self._map_func(*args)
            if isinstance(ds, Dataset):
                return ds
        for flat in self._input._iter_flat("Iterator::Probe"):
            return self._open(flat)
        raise ValueError("interleave: the input dataset is empty, so the element structure of the "
                         "datasets map_func returns is unknown")

    def _open(self, flat: Element) -> Dataset:
        element = _s.to_tensors(self._input._template, flat, self._input._dtypes)
        args = element if isinstance(element, tuple) and not hasattr(element, "_fields") else (element,)
        ds = self._map_func(*args)
        if not isinstance(ds, Dataset):
            raise TypeError(f"interleave: map_func must return a Dataset; got {type(ds).__name__}")
        return ds

    def _gen(self, name: str) -> Iterator[Element]:
        # TF's InterleaveDatasetOp loop: slots open lazily as the cycle reaches them; an
        # exhausted slot is cleared and the cycle moves on (it refills on the next visit).
        inputs = self._input._iter_flat(name)
        cycle, block = self._cycle, self._block
        slots: List[Optional[Iterator[Element]]] = [None] * cycle
        index = block_index = num_open = 0
        end_of_input = False
        try:
            while not end_of_input or num_open > 0:
                it = slots[index]
                if it is not None:
                    try:
                        element = next(it)
                    except StopIteration:
                        slots[index] = None
                        num_open -= 1
                        index, block_index = (index + 1) % cycle, 0
                        continue
                    block_index += 1
                    if block_index == block:
                        index, block_index = (index + 1) % cycle, 0
                    yield element
                elif not end_of_input:
                    flat = next(inputs, None)
                    if flat is None:
                        end_of_input = True
                        continue
                    opened = self._open(flat)._iter_flat(name)
                    slots[index] = background(opened, 2 * block, "jf.data.interleave") if self._parallel else opened
                    num_open += 1
                else:
                    index, block_index = (index + 1) % cycle, 0
        finally:  # stop background producers of inputs still open
            for it in slots:
                close = getattr(it, "close", None)
                if close is not None:
                    close()

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY
