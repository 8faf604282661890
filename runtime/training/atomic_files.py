"""Crash-safe file replacement: temp file, fsync, rename, fsync the directory.

Temp files are named ``.<target>.<pid>.<random>.tmp`` next to their target, so a later
writer can recognise the leftovers of a killed process (its pid is gone) and remove them
without touching the temp files of a writer that is still running.
"""
from __future__ import annotations

import os
import re
import secrets
import shutil
from typing import Callable, Optional


def temp_path(path: str) -> str:
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def fsync_directory(directory: str) -> None:
    try:
        fd = os.open(directory or ".", os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes = b"", writer: Optional[Callable] = None) -> None:
    """Replace `path` with `data` (or what `writer(file)` writes): a crash leaves old or new, never half."""
    tmp = temp_path(path)
    try:
        with open(tmp, "xb") as f:
            if writer is not None:
                writer(f)
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_directory(os.path.dirname(path))


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_TEMP = re.compile(r"\.(?P<target>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp(\.old)?")


def remove_stale_temps(path: str) -> int:
    """Delete temp files next to `path` (of any target) left by processes that no longer exist.

    Any target, not just `path`'s: a writer killed while saving `ckpt-4` leaves temps that no
    later save of `ckpt-5`, `ckpt-6`, ... would otherwise ever remove. Returns how many went.
    """
    directory = os.path.dirname(path)
    removed = 0
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return 0
    for name in names:
        m = _TEMP.fullmatch(name)
        if m is None or _alive(int(m.group("pid"))):
            continue
        full = os.path.join(directory, name)
        try:
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full)  # a SavedModel export being built when its writer died
            else:
                os.unlink(full)
            removed += 1
        except OSError:
            pass
    return removed


__all__ = ["atomic_write", "remove_stale_temps", "temp_path", "fsync_directory"]
