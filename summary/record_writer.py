"""TFRecord framing for event files: the shared implementation in `jitflow.runtime.io.records`.

Event files and TFRecord data files use one record format and one CRC-32C; the code
lives below both in the runtime, and this module keeps the names the summary writer
has always used.
"""
from __future__ import annotations

from jitflow.runtime.io.records import (BACKEND, _c_crc32c, _c_frame_large, _c_frame_small,  # noqa: F401
                                        _header, _headers, crc32c, frame, frame_many, masked_crc32c,
                                        numba_crc32c, numba_frame_many)
