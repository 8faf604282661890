"""TFRecord files: `TFRecordWriter`, `TFRecordOptions` and the plain reader `tf_record_iterator`.

The record format and CRC are `records.py`'s (shared with event files). Compression wraps
the whole stream as TF does: "ZLIB" is a zlib stream, "GZIP" a gzip member; TF reads
ours and we read TF's (tests/data/test_tf_interop.py).
"""
from __future__ import annotations

import gzip
import os
import zlib
from typing import Any, BinaryIO, Iterator, Optional, Protocol

from jitflow.runtime.core.errors import DataLossError, NotFoundError
from jitflow.runtime.io import records

_COMPRESSIONS = ("", "ZLIB", "GZIP")


class TFRecordOptions:
    """How a TFRecord file is compressed (TF's `tf.io.TFRecordOptions`).

    >>> opts = jf.io.TFRecordOptions(compression_type="GZIP")
    >>> w = jf.io.TFRecordWriter("/tmp/a.tfrecord.gz", opts)   # doctest: +SKIP
    """

    def __init__(self, compression_type: Optional[str] = None, flush_mode: Any = None,
                 input_buffer_size: Any = None, output_buffer_size: Any = None,
                 window_bits: Any = None, compression_level: Optional[int] = None,
                 compression_method: Any = None, mem_level: Any = None,
                 compression_strategy: Any = None) -> None:
        self.compression_type = normalise_compression(compression_type)
        if compression_level is not None and not (isinstance(compression_level, int)
                                                  and -1 <= compression_level <= 9):
            raise ValueError(f"compression_level: expected an int in [-1, 9]; got {compression_level!r}")
        self.compression_level = -1 if compression_level is None else compression_level

    def __repr__(self) -> str:
        return f"TFRecordOptions(compression_type={self.compression_type!r})"


def normalise_compression(value: Any) -> str:
    """"" / "ZLIB" / "GZIP" from what users pass (None, a string, TFRecordOptions)."""
    if value is None:
        return ""
    if isinstance(value, TFRecordOptions):
        return value.compression_type
    if isinstance(value, bytes):
        value = value.decode()
    if not isinstance(value, str) or value.upper() not in _COMPRESSIONS:
        raise ValueError(f"compression_type: expected None, '', 'ZLIB' or 'GZIP'; got {value!r}")
    return value.upper()


def _path(value: Any, what: str = "path") -> str:
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str):
        raise TypeError(f"{what}: expected a file path (str, bytes, os.PathLike or a scalar string "
                        f"tensor); got {type(value).__name__}")
    return value


class _ZlibWriter:
    def __init__(self, f: BinaryIO, level: int) -> None:
        self._f = f
        self._z = zlib.compressobj(level)

    def write(self, data: bytes) -> None:
        self._f.write(self._z.compress(data))

    def flush(self) -> None:
        self._f.write(self._z.flush(zlib.Z_SYNC_FLUSH))
        self._f.flush()

    def close(self) -> None:
        self._f.write(self._z.flush())
        self._f.close()


class TFRecordWriter:
    """Writes records to a TFRecord file (TF's `tf.io.TFRecordWriter`); a context manager.

    >>> with jf.io.TFRecordWriter("/tmp/train.tfrecords") as writer:   # doctest: +SKIP
    ...     writer.write(example.SerializeToString())
    """

    def __init__(self, path: Any, options: Any = None) -> None:
        self.path = _path(path)
        opts = options if isinstance(options, TFRecordOptions) else TFRecordOptions(options)
        self.compression_type = opts.compression_type
        try:
            raw = open(self.path, "wb")
        except FileNotFoundError:
            raise NotFoundError(f"TFRecordWriter: cannot create {self.path}: its directory does not exist") from None
        if self.compression_type == "GZIP":
            # TF compresses at zlib's default level (6) unless told otherwise.
            self._f: Any = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6 if opts.compression_level < 0
                                         else opts.compression_level)
            self._raw: Optional[BinaryIO] = raw
        elif self.compression_type == "ZLIB":
            self._f, self._raw = _ZlibWriter(raw, opts.compression_level), None
        else:
            self._f, self._raw = raw, None
        self._closed = False

    def write(self, record: Any) -> None:
        """Append one record (bytes, or a scalar string tensor)."""
        if self._closed:
            raise ValueError(f"TFRecordWriter({self.path!r}) is closed; cannot write")
        if hasattr(record, "numpy"):
            record = record.numpy()
        if isinstance(record, str):
            record = record.encode("utf-8")
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(f"record: expected bytes (e.g. example.SerializeToString()); got {type(record).__name__}")
        self._f.write(records.frame(bytes(record)))

    def write_many(self, payloads: Any) -> None:
        """Append many records with one framing call (faster than a `write` loop)."""
        if self._closed:
            raise ValueError(f"TFRecordWriter({self.path!r}) is closed; cannot write")
        self._f.write(records.frame_many([bytes(p) for p in payloads]))

    def flush(self) -> None:
        self._f.flush()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._f.close()
            if self._raw is not None:
                self._raw.close()

    def __enter__(self) -> "TFRecordWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class Reader(Protocol):
    """What `open_reader` returns: a file, a `GzipFile` or a `_ZlibReader`."""

    def read(self, n: int, /) -> bytes: ...

    def close(self) -> None: ...


def open_reader(path: str, compression: str, buffer_size: Optional[int] = None) -> Reader:
    """A `read(n)` over the decompressed bytes of a TFRecord file, and its closer."""
    try:
        raw = open(path, "rb", buffering=buffer_size or -1)
    except FileNotFoundError:
        raise NotFoundError(f"{path}; No such file or directory") from None
    except IsADirectoryError:
        raise NotFoundError(f"{path} is a directory, not a TFRecord file") from None
    if compression == "GZIP":
        return _GzipReader(raw)
    if compression == "ZLIB":
        return _ZlibReader(raw)
    return raw


class _GzipReader(gzip.GzipFile):
    """A GzipFile that closes the file under it too (GzipFile leaves a passed `fileobj` open)."""

    def __init__(self, raw: BinaryIO) -> None:
        super().__init__(fileobj=raw, mode="rb")
        self._raw = raw

    def close(self) -> None:
        try:
            super().close()
        finally:
            self._raw.close()


class _ZlibReader:
    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self._z = zlib.decompressobj()

    def read(self, n: int) -> bytes:
        while True:
            if self._z.unconsumed_tail:
                out = self._z.decompress(self._z.unconsumed_tail, n)
            else:
                chunk = self._f.read(1 << 16)
                if not chunk:
                    return self._z.flush()
                out = self._z.decompress(chunk, n)
            if out:
                return out

    def close(self) -> None:
        self._f.close()


def read_records(path: str, compression: str = "", buffer_size: Optional[int] = None) -> Iterator[bytes]:
    """Every record payload of one file; corruption raises `DataLossError` naming file and offset."""
    f = open_reader(path, compression, buffer_size)
    try:
        try:
            yield from records.iter_records(f.read)
        except records.CorruptRecord as e:
            where = "offset" if not compression else "offset (in the decompressed stream)"
            raise DataLossError(f"{path}: {e.what} at {where} {e.offset}; the file is truncated or "
                                "corrupt") from None
        except (OSError, EOFError, zlib.error) as e:  # bad gzip/zlib stream
            raise DataLossError(f"{path}: cannot decompress ({compression}): {e}") from None
    finally:
        f.close()


def tf_record_iterator(path: Any, options: Any = None) -> Iterator[bytes]:
    """Iterate the records of a TFRecord file as bytes (TF's `tf.compat.v1.io.tf_record_iterator`).

    >>> for record in jf.io.tf_record_iterator("/tmp/train.tfrecords"):   # doctest: +SKIP
    ...     example = jf.train.Example.FromString(record)
    """
    return read_records(_path(path), normalise_compression(options))
