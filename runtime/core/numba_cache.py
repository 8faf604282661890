"""Whether numba can keep compiled kernels on disk, decided once per directory.

jitflow's kernels are `njit(cache=True)`, so a second process loads machine code instead
of compiling. numba refuses `cache=True` outright ("no locator available") when it finds
nowhere to write: a read-only install with no writable home (containers, some CI). Then
jitflow must still import and run: `usable(__file__)` says False, the kernels are compiled
without a disk cache, and one warning says why and how to fix it (NUMBA_CACHE_DIR).
"""
from __future__ import annotations

import os
import threading
import warnings
from typing import Dict

from jitflow.runtime.core import lazyjit

_lock = threading.Lock()
_decided: Dict[str, bool] = {}
_warned = False


class NumbaCacheWarning(UserWarning):
    """numba has no writable cache directory: kernels compile in every new process."""


def usable(source_file: str) -> bool:
    """True if numba can cache functions defined in `source_file` (probes numba's locators)."""
    directory = os.path.dirname(os.path.abspath(source_file))
    with _lock:
        found = _decided.get(directory)
        if found is None:
            found = _decided[directory] = _probe(source_file)
    if not found:
        _warn_once(source_file)
    return found


def _probe(source_file: str) -> bool:
    lazyjit.numba()  # imported by every caller already, or loading on another thread: wait for it
    from numba.core.caching import FunctionCache

    if not os.path.exists(source_file):  # numba's locators stat the source: probe with a stand-in
        source_file = os.path.join(os.path.dirname(os.path.abspath(source_file)), "_numba_cache_probe.py")
        try:
            os.makedirs(os.path.dirname(source_file), exist_ok=True)
            if not os.path.exists(source_file):
                with open(source_file, "w", encoding="utf-8") as f:
                    f.write("# written by jitflow to ask numba whether it can cache here\n")
        except OSError:
            return False

    def probe():
        pass
    probe.__code__ = probe.__code__.replace(co_filename=os.path.abspath(source_file))
    try:
        FunctionCache(probe)
    except RuntimeError:  # "cannot cache function ...: no locator available for file ..."
        return False
    return True


def _warn_once(source_file: str) -> None:
    global _warned
    with _lock:
        if _warned:
            return
        _warned = True
    warnings.warn(f"numba has no writable cache directory for {os.path.dirname(source_file)} (nor a "
                  "writable home): jitflow's kernels are compiled without a disk cache, so every new "
                  "process compiles them again. Set NUMBA_CACHE_DIR to a writable directory to cache "
                  "them.", NumbaCacheWarning, stacklevel=3)
