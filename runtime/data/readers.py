"""File-reading datasets: `TFRecordDataset` and `TextLineDataset`.

`TFRecordDataset` reads through `jf.io`'s record reader (one framing module for event
files and data files) and raises `DataLossError` naming the file and offset of a
corrupt or truncated record, as TF does; it never skips one silently. With
`num_parallel_reads` the files are read by that many background threads and their
records interleaved in TF's order (one record from each open file in turn).
"""
from __future__ import annotations

import abc
import os
from typing import Any, Generator, Iterator, List, Optional

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.io.tfrecord import normalise_compression, open_reader, read_records
from jitflow.runtime.core.tensor import TensorSpec
from jitflow.runtime.data.dataset import AUTOTUNE, Dataset, Element
from jitflow.runtime.data.parallel import background, cores


def _filenames(value: Any) -> List[str]:
    if isinstance(value, Dataset):
        return [f.decode("utf-8") if isinstance(f, bytes) else str(f) for f in value.as_numpy_iterator()]
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, (str, bytes, os.PathLike)):
        value = [value]
    out = []
    for v in np.asarray(value, dtype=object).reshape(-1):
        if isinstance(v, bytes):
            v = v.decode("utf-8")
        if isinstance(v, os.PathLike):
            v = os.fspath(v)
        if not isinstance(v, str):
            raise TypeError(f"filenames: expected a path, a list of paths, a string tensor or a dataset of "
                            f"paths; got {value!r}")
        out.append(v)
    if not out:
        raise ValueError("filenames: no files given")
    return out


def _scalar(payload: bytes) -> Element:
    arr = np.empty((), dtype=object)
    arr[()] = payload
    return (arr,)


class _FileDataset(Dataset):
    def __init__(self, filenames: Any, compression_type: Any, buffer_size: Optional[int],
                 num_parallel_reads: Optional[int]) -> None:
        self._files = _filenames(filenames)
        self._compression = normalise_compression(compression_type)
        self._buffer_size = buffer_size
        if num_parallel_reads == AUTOTUNE:
            num_parallel_reads = cores()
        if num_parallel_reads is not None and (not isinstance(num_parallel_reads, int) or num_parallel_reads <= 0):
            raise ValueError(f"num_parallel_reads: expected a positive int or jf.data.AUTOTUNE; got "
                             f"{num_parallel_reads!r}")
        self._parallel = num_parallel_reads or 1
        super().__init__(TensorSpec((), _dt.string))

    @abc.abstractmethod
    def _read(self, path: str) -> Iterator[bytes]:
        """The record payloads of one file."""

    def _gen(self, name: str) -> Iterator[Element]:
        if self._parallel == 1:
            for path in self._files:
                for payload in self._read(path):
                    yield _scalar(payload)
            return
        # TF's order for num_parallel_reads: interleave with cycle_length = reads, block 1.
        pending = list(self._files)
        slots: List[Generator[Element, None, None]] = []  # closed in `finally` to stop their threads
        try:
            while pending and len(slots) < self._parallel:
                slots.append(background(map(_scalar, self._read(pending.pop(0))), 64, "jf.data.read"))
            i = 0
            while slots:
                try:
                    yield next(slots[i])
                    i = (i + 1) % len(slots)
                except StopIteration:
                    if pending:
                        slots[i] = background(map(_scalar, self._read(pending.pop(0))), 64, "jf.data.read")
                    else:
                        slots.pop(i)
                        if slots:
                            i %= len(slots)
        finally:  # stop the reader threads of files still open (an early break, an error)
            for it in slots:
                it.close()


class TFRecordDataset(_FileDataset):
    """The records of one or more TFRecord files, as scalar strings (TF's `tf.data.TFRecordDataset`).

    >>> raw = jf.data.TFRecordDataset(["a.tfrecords", "b.tfrecords"], num_parallel_reads=2)  # doctest: +SKIP
    >>> ds = raw.map(lambda s: jf.io.parse_single_example(s, description))               # doctest: +SKIP
    """

    _kind = "TFRecord"

    def __init__(self, filenames: Any, compression_type: Optional[str] = None, buffer_size: Optional[int] = None,
                 num_parallel_reads: Optional[int] = None, name: Optional[str] = None) -> None:
        super().__init__(filenames, compression_type, buffer_size, num_parallel_reads)

    def _read(self, path: str) -> Iterator[bytes]:
        return read_records(path, self._compression, self._buffer_size)


class TextLineDataset(_FileDataset):
    """The lines of one or more text files, without their newlines (TF's `tf.data.TextLineDataset`).

    >>> ds = jf.data.TextLineDataset("labels.csv").skip(1)      # doctest: +SKIP
    """

    _kind = "TextLine"

    def __init__(self, filenames: Any, compression_type: Optional[str] = None, buffer_size: Optional[int] = None,
                 num_parallel_reads: Optional[int] = None, name: Optional[str] = None) -> None:
        super().__init__(filenames, compression_type, buffer_size, num_parallel_reads)

    def _read(self, path: str) -> Iterator[bytes]:
        f = open_reader(path, self._compression, self._buffer_size)
        try:
            pending = b""
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                lines = (pending + chunk).split(b"\n")
                pending = lines.pop()
                for line in lines:
                    yield line[:-1] if line.endswith(b"\r") else line
            if pending:
                yield pending[:-1] if pending.endswith(b"\r") else pending
        finally:
            f.close()
