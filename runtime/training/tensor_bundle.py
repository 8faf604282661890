"""TensorFlow's tensor bundle: the `<prefix>.index` + `<prefix>.data-00000-of-00001` pair.

Layout (TF's `tensorflow/core/util/tensor_bundle`):

- `.index` is an SSTable (see `sstable.py`). Key ``""`` holds a `BundleHeaderProto`
  (number of data shards, endianness, format version); every other key is a tensor name
  holding a `BundleEntryProto` (dtype, shape, shard, offset, size, masked CRC-32C).
- `.data-SSSSS-of-NNNNN` holds the tensors' bytes back to back: numeric tensors as raw
  little-endian arrays; string tensors as ``varint64 len`` per element, a masked CRC-32C of
  those lengths (each as uint32), then the bytes. The entry's CRC covers what it stores.

Writing keeps the previous bundle under the same prefix restorable until the new one is
complete, whatever the moment of a kill: the new data file is built *around* the byte
range the old index points to (kept at the same offsets), renamed into place, and only
then is the new index renamed over the old one. The data file thus holds at most two
generations (about twice the checkpoint's size), and no temp file outlives its writer
for longer than the next save (which removes the leftovers of dead processes).

Reading trusts nothing: the data file must be a regular file inside the checkpoint's
directory (no symlink out of it, no device, no FIFO: it is opened non-blocking and
checked with fstat), every entry's range must lie inside the file and match what its
dtype and shape need before a byte is allocated, and every CRC is verified.
"""
from __future__ import annotations

import os
import re
import stat
import struct
from typing import Dict, Optional, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.training.atomic_files import atomic_write, fsync_directory, remove_stale_temps
from jitflow.runtime.core.errors import DataLossError, NotFoundError
from jitflow.runtime.training.sstable import (TableError, build_table, crc32c, get_varint, mask,
                                              put_varint, read_table, unmask)

HEADER_KEY = b""
VERSION = 1            # TF's kTensorBundleVersion
MIN_CONSUMER = 0
MAX_SHARDS = 1 << 16
_BY_ENUM = {d.tf_enum: d for d in _dt.ALL_DTYPES if d.name not in ("resource",)}


def data_path(prefix: str, shard: int = 0, num_shards: int = 1) -> str:
    return f"{prefix}.data-{shard:05d}-of-{num_shards:05d}"


def index_path(prefix: str) -> str:
    return prefix + ".index"


def _protos():
    from jitflow.runtime.training import bundle_protos  # lazy: builds protobuf classes; only checkpoint I/O needs them
    return bundle_protos


# -- encoding values ---------------------------------------------------------------------------------
def _encode(value: np.ndarray, dtype: _dt.DType) -> Tuple[bytes, int]:
    """(bytes, masked crc) of one tensor as TF stores it."""
    if dtype.is_string:
        items = [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in value.reshape(-1)]
        lengths, crc = bytearray(), 0
        for item in items:
            put_varint(lengths, len(item))
            crc = crc32c(struct.pack("<I", len(item)) if len(item) <= 0xFFFFFFFF else struct.pack("<Q", len(item)), crc)
        length_sum = struct.pack("<I", mask(crc))
        crc = crc32c(length_sum, crc)
        body = b"".join(items)
        return bytes(lengths) + length_sum + body, mask(crc32c(body, crc))
    raw = np.ascontiguousarray(value, dtype=dtype.as_numpy_dtype.newbyteorder("<")).tobytes()
    return raw, mask(crc32c(raw))


def _decode_strings(raw: bytes, count: int, name: str) -> Tuple[np.ndarray, int]:
    """(the strings, the CRC-32C TF stores for them: lengths, length checksum, bytes)."""
    lengths, pos, crc = [], 0, 0
    for _ in range(count):
        n, pos = get_varint(raw, pos, len(raw), f"string length in {name!r}")
        lengths.append(n)
        crc = crc32c(struct.pack("<I", n) if n <= 0xFFFFFFFF else struct.pack("<Q", n), crc)
    if pos + 4 > len(raw):
        raise TableError(f"string tensor {name!r} ends inside its length checksum")
    if unmask(struct.unpack_from("<I", raw, pos)[0]) != crc:
        raise TableError(f"the string lengths of {name!r} fail their checksum")
    crc = crc32c(raw[pos:pos + 4], crc)
    pos += 4
    if pos + sum(lengths) != len(raw):
        raise TableError(f"string tensor {name!r} holds {len(raw) - pos} bytes of text, its lengths add up "
                         f"to {sum(lengths)}")
    out = np.empty(count, dtype=object)
    for i, n in enumerate(lengths):
        out[i] = raw[pos:pos + n]
        pos += n
    return out, crc32c(raw[len(raw) - sum(lengths):], crc)


# -- reading -----------------------------------------------------------------------------------------
def open_regular(path: str, directory: str, what: str) -> Tuple[int, int]:
    """(fd, size) of `path`, which must be a regular file inside `directory`."""
    real_dir = os.path.realpath(directory or ".")
    real = os.path.realpath(path)
    if os.path.dirname(real) != real_dir:
        raise DataLossError(f"{what} {path!r} resolves to {real!r}, outside the checkpoint's directory "
                            f"{real_dir!r}; refusing to read it")
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise NotFoundError(f"{what} {path!r} does not exist") from None
    except OSError as e:
        raise DataLossError(f"{what} {path!r} cannot be opened ({e.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise DataLossError(f"{what} {path!r} is not a regular file (a device, FIFO, socket or directory); "
                            "refusing to read it")
    return fd, st.st_size


def pread_all(fd: int, size: int, offset: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = os.pread(fd, min(size - got, 1 << 26), offset + got)
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class Entry:
    """One tensor of a bundle: its dtype (a jf.DType, or None when jitflow lacks it), shape and place."""

    __slots__ = ("name", "dtype", "dtype_enum", "shape", "shard", "offset", "size", "crc", "sliced")

    def __init__(self, name: str, proto) -> None:
        self.name = name
        self.dtype_enum = int(proto.dtype)
        self.dtype = _BY_ENUM.get(self.dtype_enum)
        self.shape = [int(d.size) for d in proto.shape.dim]
        self.shard, self.offset, self.size = int(proto.shard_id), int(proto.offset), int(proto.size)
        self.crc = int(proto.crc32c)
        self.sliced = len(proto.slices) > 0


class BundleReader:
    """Reads a bundle after checking its index; tensors are read (and checked) one by one."""

    def __init__(self, prefix: str) -> None:
        self.prefix = os.fspath(prefix)
        self.directory = os.path.dirname(self.prefix) or "."
        fd, size = open_regular(index_path(self.prefix), self.directory, "checkpoint index")
        try:
            raw = pread_all(fd, size, 0)
        finally:
            os.close(fd)
        protos = _protos()
        try:
            items = read_table(raw)
        except TableError as e:
            raise self._corrupt(f"{index_path(self.prefix)} is not a valid index ({e})") from None
        if not items or items[0][0] != HEADER_KEY:
            raise self._corrupt(f"{index_path(self.prefix)} has no bundle header")
        header = protos.BundleHeaderProto()
        try:
            header.ParseFromString(items[0][1])
        except Exception as e:  # protobuf's DecodeError
            raise self._corrupt(f"its bundle header cannot be parsed ({e})") from None
        if header.endianness != 0:
            raise DataLossError(f"checkpoint {self.prefix!r} was written big-endian; jitflow reads little-endian")
        if header.version.min_consumer > VERSION or VERSION in header.version.bad_consumers:
            raise DataLossError(f"checkpoint {self.prefix!r} needs a reader of bundle version "
                                f"{header.version.min_consumer} or newer; jitflow reads version {VERSION}")
        if not 1 <= header.num_shards <= MAX_SHARDS:
            raise self._corrupt(f"its header says {header.num_shards} data shards")
        self.num_shards = int(header.num_shards)
        self.entries: Dict[str, Entry] = {}
        for key, value in items[1:]:
            proto = protos.BundleEntryProto()
            try:
                proto.ParseFromString(value)
                name = key.decode("utf-8")
            except Exception as e:
                raise self._corrupt(f"the entry {key!r} cannot be parsed ({e})") from None
            entry = Entry(name, proto)
            if not 0 <= entry.shard < self.num_shards or entry.offset < 0 or entry.size < 0 or any(
                    d < 0 for d in entry.shape):
                raise self._corrupt(f"the entry of {name!r} has shard {entry.shard}, offset {entry.offset}, "
                                    f"size {entry.size}, shape {entry.shape}")
            self.entries[name] = entry
        self._files: Dict[int, Tuple[int, int]] = {}

    def _corrupt(self, why: str) -> DataLossError:
        return DataLossError(f"checkpoint {self.prefix!r} is corrupt or truncated: {why}. Nothing was restored.")

    def close(self) -> None:
        for fd, _ in self._files.values():
            os.close(fd)
        self._files.clear()

    def __enter__(self) -> "BundleReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _file(self, shard: int) -> Tuple[int, int]:
        if shard not in self._files:
            path = data_path(self.prefix, shard, self.num_shards)
            try:
                self._files[shard] = open_regular(path, self.directory, "checkpoint data file")
            except NotFoundError:
                raise self._corrupt(f"its data file {path} is missing") from None
        return self._files[shard]

    def check_ranges(self) -> None:
        """Every entry lies inside its data file (checked before any tensor is read)."""
        for entry in self.entries.values():
            _, size = self._file(entry.shard)
            if entry.offset + entry.size > size:
                raise self._corrupt(f"{entry.name!r} needs bytes {entry.offset}..{entry.offset + entry.size} "
                                    f"of a {size}-byte data file")

    def read(self, name: str) -> np.ndarray:
        entry = self.entries.get(name)
        if entry is None:
            raise NotFoundError(f"Key {name} not found in checkpoint {self.prefix!r}")
        if entry.dtype is None:
            raise DataLossError(f"{name!r} in checkpoint {self.prefix!r} has TF dtype enum {entry.dtype_enum}, "
                                "which jitflow does not support")
        if entry.sliced:
            raise DataLossError(f"{name!r} in checkpoint {self.prefix!r} is a partitioned (sliced) variable, "
                                "which jitflow does not read")
        count = int(np.prod(entry.shape, dtype=object))
        if not entry.dtype.is_string and count * entry.dtype.size != entry.size:
            raise self._corrupt(f"{name!r} has shape {entry.shape} of {entry.dtype.name} "
                                f"({count * entry.dtype.size} bytes), but its entry says {entry.size} bytes")
        if entry.dtype.is_string and entry.size < 4 + count:
            raise self._corrupt(f"string tensor {name!r} of {count} elements cannot fit in {entry.size} bytes")
        fd, size = self._file(entry.shard)
        if entry.offset + entry.size > size:
            raise self._corrupt(f"{name!r} needs bytes {entry.offset}..{entry.offset + entry.size} of a "
                                f"{size}-byte data file")
        raw = pread_all(fd, entry.size, entry.offset)
        if len(raw) != entry.size:
            raise self._corrupt(f"the data file ended while reading {name!r}")
        if entry.dtype.is_string:
            try:
                values, crc = _decode_strings(raw, count, name)
            except TableError as e:
                raise self._corrupt(str(e)) from None
            if unmask(entry.crc) != crc:
                raise self._corrupt(f"{name!r} fails its CRC-32C check")
            return values.reshape(entry.shape)
        if unmask(entry.crc) != crc32c(raw):
            raise self._corrupt(f"{name!r} fails its CRC-32C check")
        if entry.dtype is _dt.bool_:
            return (np.frombuffer(raw, np.uint8) != 0).reshape(entry.shape)
        return np.frombuffer(raw, entry.dtype.as_numpy_dtype.newbyteorder("<")).astype(
            entry.dtype.as_numpy_dtype).reshape(entry.shape)


# -- writing -----------------------------------------------------------------------------------------
def _live_region(prefix: str) -> Optional[Tuple[int, int]]:
    """The byte range of shard 0 that the current index at `prefix` points into (None: nothing to keep)."""
    if not os.path.exists(index_path(prefix)):
        return None
    try:
        reader = BundleReader(prefix)
    except Exception:
        return None  # no readable index: there is no complete checkpoint to protect
    ranges = [(e.offset, e.offset + e.size) for e in reader.entries.values() if e.shard == 0 and e.size]
    reader.close()
    if not ranges:
        return None
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def write_bundle(prefix: str, tensors: Dict[str, Tuple[np.ndarray, _dt.DType]]) -> None:
    """Write `tensors` ({name: (value, dtype)}) as the bundle `prefix`, kill-safely (module docstring)."""
    prefix = os.fspath(prefix)
    directory = os.path.dirname(prefix)
    if directory:
        os.makedirs(directory, exist_ok=True)
    dpath, ipath = data_path(prefix), index_path(prefix)
    remove_stale_temps(ipath)
    protos = _protos()
    encoded = []
    for name in sorted(tensors, key=lambda n: n.encode("utf-8")):
        value, dtype = tensors[name]
        raw, crc = _encode(np.asarray(value) if not dtype.is_string else np.asarray(value, dtype=object), dtype)
        encoded.append((name, value, dtype, raw, crc))
    payload_size = sum(len(e[3]) for e in encoded)
    live = _live_region(prefix)
    keep = b""
    if live is None or payload_size <= live[0]:
        start = 0
    else:
        start = live[1]
    if live is not None:
        try:
            fd, size = open_regular(dpath, directory or ".", "checkpoint data file")
        except (DataLossError, NotFoundError):  # not a file we may read: nothing restorable to keep
            fd, size = None, 0
        if fd is not None:
            try:
                keep = pread_all(fd, live[1] - live[0], live[0]) if live[1] <= size else b""
            finally:
                os.close(fd)
        if len(keep) != live[1] - live[0]:
            live, keep, start = None, b"", 0
    index_items = []
    header = protos.BundleHeaderProto(num_shards=1, endianness=0)
    header.version.producer = VERSION
    index_items.append((HEADER_KEY, header.SerializeToString()))
    offset = start
    for name, value, dtype, raw, crc in encoded:
        entry = protos.BundleEntryProto(dtype=dtype.tf_enum, shard_id=0, offset=offset, size=len(raw), crc32c=crc)
        for d in np.shape(value):
            entry.shape.dim.add(size=int(d))
        index_items.append((name.encode("utf-8"), entry.SerializeToString()))
        offset += len(raw)

    def write_data(f) -> None:
        if live is not None:
            f.seek(live[0])
            f.write(keep)    # the old index's bytes, at the offsets it expects
        f.seek(start)
        for e in encoded:
            f.write(e[3])
        f.truncate(max(offset, live[1] if live is not None else 0))

    atomic_write(dpath, writer=write_data)          # the old index still reads the kept range
    atomic_write(ipath, build_table(index_items))   # commits the new bundle
    shard = re.compile(re.escape(os.path.basename(prefix)) + r"\.data-\d{5}-of-\d{5}")
    for name in os.listdir(directory or "."):       # shards of an older, differently sharded bundle
        full = os.path.join(directory, name)
        if shard.fullmatch(name) and full != dpath:
            try:
                os.unlink(full)
            except OSError:
                pass


def delete_bundle(prefix: str) -> None:
    """Remove a bundle: the index first, so a half-deleted bundle is no bundle."""
    directory = os.path.dirname(prefix) or "."
    for path in [index_path(prefix)] + sorted(
            os.path.join(directory, n) for n in os.listdir(directory)
            if re.fullmatch(re.escape(os.path.basename(prefix)) + r"\.data-\d{5}-of-\d{5}", n)):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
    fsync_directory(directory)


__all__ = ["BundleReader", "Entry", "write_bundle", "delete_bundle", "data_path", "index_path"]
