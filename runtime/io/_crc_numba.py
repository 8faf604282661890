"""numba-compiled CRC-32C (slice-by-8 tables) and batch TFRecord framing.

Only imported when no C CRC-32C library is installed (or by tests), so plain
summary writing never pays numba's compile time. Kernels are cached on disk.
"""

from __future__ import annotations

import numpy as np

from jitflow.runtime.core import lazyjit

numba = lazyjit.numba()  # through lazyjit: numba may be loading on another thread (see lazyjit.numba)


def _make_tables() -> np.ndarray:
    table = np.zeros((8, 256), dtype=np.uint32)
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table[0, n] = c
    for k in range(1, 8):  # table k advances a byte through k more zero bytes
        for n in range(256):
            prev = int(table[k - 1, n])
            table[k, n] = (prev >> 8) ^ int(table[0, prev & 0xFF])
    return table


_T = _make_tables()  # a global array: numba freezes it into the compiled code


@numba.njit(cache=True, nogil=True)
def crc_update(data, start, stop, crc):
    t = _T
    c = np.int64(crc) ^ 0xFFFFFFFF
    i = start
    while i + 8 <= stop:  # eight table lookups per 8 bytes
        lo = c ^ (np.int64(data[i]) | (np.int64(data[i + 1]) << 8)
                  | (np.int64(data[i + 2]) << 16) | (np.int64(data[i + 3]) << 24))
        c = np.int64(t[7, lo & 0xFF] ^ t[6, (lo >> 8) & 0xFF] ^ t[5, (lo >> 16) & 0xFF]
                     ^ t[4, (lo >> 24) & 0xFF] ^ t[3, data[i + 4]] ^ t[2, data[i + 5]]
                     ^ t[1, data[i + 6]] ^ t[0, data[i + 7]])
        i += 8
    while i < stop:
        c = np.int64(t[0, (c ^ data[i]) & 0xFF]) ^ (c >> 8)
        i += 1
    return c ^ 0xFFFFFFFF


@numba.njit(cache=True, nogil=True)
def _masked(data, start, stop):
    c = crc_update(data, start, stop, 0)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


@numba.njit(cache=True, nogil=True)
def frame_batch(data, lengths, out):
    """data: the payloads back to back; out: room for sum(lengths) + 16 per record."""
    src = 0
    dst = 0
    for r in range(lengths.shape[0]):
        n = lengths[r]
        for k in range(8):
            out[dst + k] = (n >> (8 * k)) & 0xFF
        h = _masked(out, dst, dst + 8)
        for k in range(4):
            out[dst + 8 + k] = (h >> (8 * k)) & 0xFF
        out[dst + 12:dst + 12 + n] = data[src:src + n]
        c = _masked(data, src, src + n)
        for k in range(4):
            out[dst + 12 + n + k] = (c >> (8 * k)) & 0xFF
        src += n
        dst += n + 16
    return dst
