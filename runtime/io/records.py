"""TFRecord framing: one record format and one CRC-32C for event files and TFRecord data files.

Format of one record (all integers little-endian)::

    uint64  length
    uint32  masked_crc32c(the 8 length bytes)
    byte    data[length]
    uint32  masked_crc32c(data)

    masked_crc32c(b) = (((crc >> 15) | (crc << 17)) + 0xA282EAD8) mod 2**32
    crc = CRC-32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78)

CRC-32C comes from a C library (`crc32c`, else `google_crc32c` with its C
extension). Without either, a numba-compiled table-driven CRC is used; it frames
a whole batch in one compiled call, so no Python loop ever runs per byte.
"""

from __future__ import annotations

import struct
from typing import Callable, Iterator, Sequence

import numpy as np

_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_pack_u32 = struct.Struct("<I").pack
_pack_u64 = struct.Struct("<Q").pack


def _load_c_crc32c() -> tuple[Callable[[bytes], int] | None, str]:
    try:
        import crc32c as _crc32c_mod  # ICRAR's crc32c: hardware CRC via C

        fn = getattr(_crc32c_mod, "crc32c", None)
        if fn is not None:
            return fn, "crc32c"
    except ImportError:
        pass
    try:
        import google_crc32c

        # Its pure-Python fallback is a per-byte loop: only take the C build.
        if getattr(google_crc32c, "implementation", "") == "c":
            return google_crc32c.value, "google_crc32c"
    except ImportError:
        pass
    return None, "numba"


_c_crc32c, BACKEND = _load_c_crc32c()


# --- numba fallback -------------------------------------------------------------

def numba_crc32c(data: bytes, crc: int = 0) -> int:
    """CRC-32C of `data` computed by the numba kernel (the fallback path)."""
    from jitflow.runtime.io import _crc_numba as k  # lazy: imports numba; compiled on first use, cached on disk

    arr = np.frombuffer(data, dtype=np.uint8)
    return int(k.crc_update(arr, 0, arr.shape[0], np.uint32(crc)))


def numba_frame_many(payloads: Sequence[bytes]) -> bytes:
    """Frame a batch of payloads with the numba kernel in one compiled call."""
    if not payloads:
        return b""
    from jitflow.runtime.io import _crc_numba as k  # lazy: imports numba; compiled on first use, cached on disk

    lengths = np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads))
    data = np.frombuffer(b"".join(payloads), dtype=np.uint8)
    out = np.empty(int(lengths.sum()) + 16 * len(payloads), dtype=np.uint8)
    k.frame_batch(data, lengths, out)
    return out.tobytes()


# --- public API -----------------------------------------------------------------

crc32c: Callable[[bytes], int] = _c_crc32c or numba_crc32c


def masked_crc32c(data: bytes) -> int:
    """The masked CRC-32C TFRecord stores (see module docstring)."""
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32


# Scalar events of one tag all have the same length, so the 12 header bytes
# (length + its CRC) are computed once per length.
_headers: dict[int, bytes] = {}


def _header(n: int) -> bytes:
    h = _headers.get(n)
    if h is None:
        length = _pack_u64(n)
        h = length + _pack_u32(masked_crc32c(length))
        if len(_headers) >= 65536:
            _headers.clear()
        _headers[n] = h
    return h


def frame(data: bytes) -> bytes:
    """One payload framed as a TFRecord."""
    return _header(len(data)) + data + _pack_u32(masked_crc32c(data))


def _c_frame_small(payloads: Sequence[bytes]) -> bytes:
    # One C CRC call per payload; header CRCs come from the cache.
    crc, headers, pack = _c_crc32c, _headers, _pack_u32
    assert crc is not None, "frame_many calls this only when a C CRC-32C is loaded"
    out: list[bytes] = []
    append = out.append
    for p in payloads:
        h = headers.get(len(p))
        append(h if h is not None else _header(len(p)))
        append(p)
        c = crc(p)
        append(pack((((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32))
    return b"".join(out)


def _c_frame_large(payloads: Sequence[bytes]) -> bytes:
    # The same with the per-record work in C loops (map) and numpy: ~2x faster
    # per record once a batch has more than a few dozen records.
    assert _c_crc32c is not None, "frame_many calls this only when a C CRC-32C is loaded"
    lens = list(map(len, payloads))
    headers = {n: _header(n) for n in set(lens)}
    c = np.fromiter(map(_c_crc32c, payloads), dtype=np.uint64, count=len(payloads))
    masked = ((((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32).tolist()
    parts: list = [None] * (3 * len(payloads))
    parts[0::3] = map(headers.__getitem__, lens)
    parts[1::3] = payloads
    parts[2::3] = map(_pack_u32, masked)
    return b"".join(parts)


def frame_many(payloads: Sequence[bytes]) -> bytes:
    """Many payloads framed back to back, ready for a single file write."""
    if _c_crc32c is None:
        return numba_frame_many(payloads)
    if len(payloads) < 32:
        return _c_frame_small(payloads)
    if len(payloads) <= 1024:
        return _c_frame_large(payloads)
    # Chunks keep the temporary lists cache-sized.
    return b"".join([_c_frame_large(payloads[i:i + 1024]) for i in range(0, len(payloads), 1024)])


# --- reading --------------------------------------------------------------------

_unpack_u64 = struct.Struct("<Q").unpack_from
_unpack_u32 = struct.Struct("<I").unpack_from
_BLOCK = 1 << 20


class CorruptRecord(Exception):
    """A record failed its framing check; `offset` is where the bad record starts.

    Raised by `iter_records`; callers above (jf.io, jf.data) turn it into the
    `DataLossError` their users catch, naming the file.
    """

    def __init__(self, offset: int, what: str) -> None:
        super().__init__(f"{what} at offset {offset}")
        self.offset = offset
        self.what = what


def iter_records(read: Callable[[int], bytes], check_crc: bool = True,
                 start: int = 0) -> Iterator[bytes]:
    """Yield the payloads of the records in a byte stream, checking both CRCs.

    `read(n)` returns up to n bytes (b"" at the end), like a file's `read`. Records are
    cut from 1 MiB blocks, so a small record costs two `unpack`s and one CRC call, not
    three reads. A record cut short by the end of the stream or failing a CRC raises
    `CorruptRecord` (never a silent skip: TF's behaviour).
    """
    crc = crc32c
    buf = b""
    pos = 0
    offset = start  # file offset of buf[0]
    eof = False
    while True:
        if len(buf) - pos < 12 and not eof:
            more = read(_BLOCK)
            eof = not more
            offset += pos
            buf = buf[pos:] + more
            pos = 0
            continue
        if pos == len(buf) and eof:
            return
        if len(buf) - pos < 12:
            raise CorruptRecord(offset + pos, f"truncated record header ({len(buf) - pos} of 12 bytes)")
        (n,) = _unpack_u64(buf, pos)
        if check_crc:
            c = crc(buf[pos:pos + 8])
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32 != _unpack_u32(buf, pos + 8)[0]:
                raise CorruptRecord(offset + pos, "corrupted record (length CRC mismatch)")
        end = pos + 12 + n + 4
        while end > len(buf) and not eof:
            more = read(max(_BLOCK, end - len(buf)))
            eof = not more
            offset += pos
            buf = buf[pos:] + more
            end -= pos
            pos = 0
        if end > len(buf):
            raise CorruptRecord(offset + pos, f"truncated record (needs {n + 16} bytes, "
                                              f"{len(buf) - pos} left in the file)")
        data = buf[pos + 12:end - 4]
        if check_crc:
            c = crc(data)
            if (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32 != _unpack_u32(buf, end - 4)[0]:
                raise CorruptRecord(offset + pos, "corrupted record (data CRC mismatch)")
        yield data
        pos = end
