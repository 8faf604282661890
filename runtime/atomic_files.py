"""Crash-safe file replacement: temp file, fsync, rename, fsync the directory.

Temp files are named ``.<target>.<pid>.<random>.tmp`` next to their target, so a later
writer can recognise the leftovers of a killed process (its pid is gone) and remove them
without touching the temp files of a writer that is still running.
"""
from __future__ import annotations

import os
import secrets
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


def remove_stale_temps(path: str) -> int:
    """Delete the temp files of `path` left by processes that no longer exist; returns how many."""
    directory, base = os.path.split(path)
    start = f".{base}."
    removed = 0
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return 0
    for name in names:
        if not (name.startswith(start) and name.endswith(".tmp")):
            continue
        parts = name[len(start):-len(".tmp")].split(".")
        if len(parts) != 2 or not parts[0].isdigit() or _alive(int(parts[0])):
            continue
        try:
            os.unlink(os.path.join(directory, name))
            removed += 1
        except OSError:
            pass
    return removed


__all__ = ["atomic_write", "remove_stale_temps", "temp_path", "fsync_directory"]
