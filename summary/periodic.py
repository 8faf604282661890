"""A daemon thread that refreshes something every few seconds while the process runs.

The summary package keeps two views of a live run fresh this way (the trace statistics
and the input-pipeline wait times), so a panel following a long training loop sees them
move. The thread starts on first need, and again in a forked child, which inherits no
threads but does inherit the "already started" flag.
"""
from __future__ import annotations

import os
import threading
from typing import Callable, Optional


class PeriodicRefresher:
    """Calls `refresh()` every `interval()` seconds on a daemon thread named `name`.

    `interval` is read before each wait, so a test may shorten it on a live process.

    >>> ticks = []
    >>> r = PeriodicRefresher("demo", lambda: 0.01, lambda: ticks.append(1))
    >>> r.ensure_started(); import time; time.sleep(0.1); len(ticks) > 0
    True
    """

    def __init__(self, name: str, interval: Callable[[], float], refresh: Callable[[], None]) -> None:
        self._name, self._interval, self._refresh = name, interval, refresh
        self._thread: Optional[threading.Thread] = None
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def ensure_started(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        pause = threading.Event()
        while True:
            pause.wait(self._interval())
            self._refresh()   # its locals (e.g. writers) go with each round: weak references stay weak

    def _forget(self) -> None:
        self._thread = None


__all__ = ["PeriodicRefresher"]
