"""The LevelDB table ("SSTable") format that TensorFlow uses for a checkpoint's `.index` file.

A table is a sorted map from byte keys to byte values::

    [data block]* [meta-index block] [index block] [footer: 48 bytes]

- A block is a run of entries, each ``varint shared, varint unshared, varint value_len,
  key[shared:], value`` (the key shares a prefix with the previous one), then an array of
  little-endian uint32 "restart" offsets where ``shared == 0``, then their count (uint32).
  Every block is followed by a 5-byte trailer: the compression type (0: none; TF writes
  none) and the masked CRC-32C of the block and that byte.
- The index block maps a key >= every key of a data block to that block's handle
  (``varint offset, varint size``); the meta-index block is empty.
- The footer holds the meta-index and index handles, zero-padded to 40 bytes, then the
  magic number 0xdb4775248b80fb57 (little-endian uint64).

The reader trusts nothing: every varint, handle, restart array and key prefix is bounds-
checked against the bytes it was given, and every block's CRC is verified, so a hostile
file yields `TableError`, never an out-of-range read or a huge allocation.
"""
from __future__ import annotations

import struct
from typing import Iterable, Iterator, List, Tuple

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
TRAILER_SIZE = 5
BLOCK_SIZE = 262144        # TF's table::Options defaults
RESTART_INTERVAL = 16
_MASK_DELTA = 0xA282EAD8


class TableError(ValueError):
    """The bytes are not a well-formed table; the message says where."""


_crc_module = None


def crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C via the `crc32c` package (imported on first use: `import jitflow` stays fast)."""
    global _crc_module
    if _crc_module is None:
        import crc32c as _crc_module_
        _crc_module = _crc_module_
    return _crc_module.crc32c(data, crc)


def mask(crc: int) -> int:
    """LevelDB/TF's masked CRC (stored CRCs are masked so CRCs of CRCs stay useful)."""
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def put_varint(out: bytearray, value: int) -> None:
    if value < 0:
        raise ValueError(f"varint: expected a non-negative integer; got {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def get_varint(data: bytes, pos: int, limit: int, what: str = "varint") -> Tuple[int, int]:
    """(value, next position); at most 10 bytes, never past `limit`."""
    result = shift = 0
    for _ in range(10):
        if pos >= limit:
            raise TableError(f"{what} runs past the end of its block")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
    raise TableError(f"{what} is longer than 10 bytes")


# -- writing -------------------------------------------------------------------------------------
class _BlockBuilder:
    def __init__(self, restart_interval: int) -> None:
        self.interval = restart_interval
        self.buf = bytearray()
        self.restarts = [0]
        self.count = 0
        self.last = b""

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self.count < self.interval:
            limit = min(len(key), len(self.last))
            while shared < limit and key[shared] == self.last[shared]:
                shared += 1
        else:
            self.restarts.append(len(self.buf))
            self.count = 0
        put_varint(self.buf, shared)
        put_varint(self.buf, len(key) - shared)
        put_varint(self.buf, len(value))
        self.buf += key[shared:]
        self.buf += value
        self.last = key
        self.count += 1

    def finish(self) -> bytes:
        return bytes(self.buf) + b"".join(struct.pack("<I", r) for r in self.restarts) + struct.pack(
            "<I", len(self.restarts))

    def size(self) -> int:
        return len(self.buf) + 4 * len(self.restarts) + 4


def _handle(offset: int, size: int) -> bytes:
    out = bytearray()
    put_varint(out, offset)
    put_varint(out, size)
    return bytes(out)


def build_table(items: Iterable[Tuple[bytes, bytes]]) -> bytes:
    """The table holding `items` (keys strictly increasing, as TF's TableBuilder requires)."""
    out = bytearray()
    index = _BlockBuilder(1)

    def emit(block: _BlockBuilder) -> Tuple[int, int]:
        contents = block.finish()
        offset = len(out)
        out.extend(contents)
        out.append(0)
        out.extend(struct.pack("<I", mask(crc32c(b"\x00", crc32c(contents)))))
        return offset, len(contents)

    block, previous = _BlockBuilder(RESTART_INTERVAL), None
    for key, value in items:
        if previous is not None and key <= previous:
            raise ValueError(f"table keys must be strictly increasing; {key!r} follows {previous!r}")
        block.add(key, value)
        previous = key
        if block.size() >= BLOCK_SIZE:
            index.add(key, _handle(*emit(block)))
            block = _BlockBuilder(RESTART_INTERVAL)
    if block.count or block.buf:
        assert previous is not None, "a non-empty block holds at least one added key"
        index.add(previous, _handle(*emit(block)))
    meta_handle = _handle(*emit(_BlockBuilder(RESTART_INTERVAL)))
    index_handle = _handle(*emit(index))
    footer = (meta_handle + index_handle).ljust(40, b"\x00") + struct.pack("<Q", MAGIC)
    out.extend(footer)
    return bytes(out)


# -- reading -------------------------------------------------------------------------------------
def _read_handle(data: bytes, pos: int, limit: int) -> Tuple[int, int, int]:
    offset, pos = get_varint(data, pos, limit, "block handle offset")
    size, pos = get_varint(data, pos, limit, "block handle size")
    return offset, size, pos


def _block(data: bytes, offset: int, size: int, what: str) -> bytes:
    if offset < 0 or size < 4 or offset + size + TRAILER_SIZE > len(data) - FOOTER_SIZE:
        raise TableError(f"the {what} block (offset {offset}, {size} bytes) lies outside the "
                         f"{len(data)}-byte table")
    contents = data[offset:offset + size]
    kind = data[offset + size]
    stored = struct.unpack_from("<I", data, offset + size + 1)[0]
    if unmask(stored) != crc32c(bytes([kind]), crc32c(contents)):
        raise TableError(f"the {what} block at offset {offset} fails its CRC-32C check")
    if kind != 0:
        raise TableError(f"the {what} block at offset {offset} is compressed (type {kind}); "
                         "TensorFlow writes checkpoint indexes uncompressed")
    return contents


def _entries(block: bytes, what: str) -> Iterator[Tuple[bytes, bytes]]:
    n = len(block)
    num_restarts = struct.unpack_from("<I", block, n - 4)[0]
    if num_restarts * 4 + 4 > n:
        raise TableError(f"the {what} block claims {num_restarts} restart points, more than fit in it")
    limit = n - 4 - 4 * num_restarts
    pos, key = 0, b""
    while pos < limit:
        shared, pos = get_varint(block, pos, limit, "key prefix length")
        unshared, pos = get_varint(block, pos, limit, "key length")
        vlen, pos = get_varint(block, pos, limit, "value length")
        if shared > len(key) or pos + unshared + vlen > limit:
            raise TableError(f"an entry of the {what} block runs past the block's end")
        key = key[:shared] + block[pos:pos + unshared]
        pos += unshared
        yield key, block[pos:pos + vlen]
        pos += vlen


def read_table(data: bytes) -> List[Tuple[bytes, bytes]]:
    """All (key, value) pairs of a table, in order, after checking every block."""
    if len(data) < FOOTER_SIZE:
        raise TableError(f"the table is {len(data)} bytes, shorter than its {FOOTER_SIZE}-byte footer")
    footer_at = len(data) - FOOTER_SIZE
    if struct.unpack_from("<Q", data, footer_at + 40)[0] != MAGIC:
        raise TableError("the footer does not end with the table magic number (not a TF checkpoint index)")
    _, _, pos = _read_handle(data, footer_at, footer_at + 40)
    index_offset, index_size, _ = _read_handle(data, pos, footer_at + 40)
    index = _block(data, index_offset, index_size, "index")
    items: List[Tuple[bytes, bytes]] = []
    for _, handle in _entries(index, "index"):
        offset, size, _ = _read_handle(handle, 0, len(handle))
        for key, value in _entries(_block(data, offset, size, "data"), "data"):
            if items and key <= items[-1][0]:
                raise TableError(f"keys are out of order ({key!r} after {items[-1][0]!r})")
            items.append((key, value))
    return items


__all__ = ["TableError", "build_table", "read_table", "crc32c", "mask", "unmask"]
