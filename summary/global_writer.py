"""`GlobalSummaryWriter`: one writer for a whole program and its worker processes,
numbering the steps itself (tensorboardX's `GlobalSummaryWriter`).

Each tag has its own step counter, shared by every thread and every process
forked after the writer was made (a `multiprocessing` lock and a managed dict),
so interleaved calls from a `multiprocessing.Pool` get distinct, increasing
steps. Each process writes through its own event file in the same log_dir (the
file names carry the PID); a forked child never writes through the parent's
writer, and flushes after every call, since pool workers end with `os._exit`
and would otherwise lose what is queued.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from typing import Any, Callable, Dict

from jitflow.summary.torch_writer import SummaryWriter
from jitflow.summary.values import describe

_default: "GlobalSummaryWriter | None" = None
_default_lock = threading.Lock()


class GlobalSummaryWriter:
    """Writes summaries with automatic, process-wide steps per tag.

    Example:
        >>> import tempfile
        >>> from jitflow.summary import GlobalSummaryWriter
        >>> w = GlobalSummaryWriter(tempfile.mkdtemp())
        >>> w.add_scalar("loss", 0.5)  # step 0
        >>> w.add_scalar("loss", 0.4)  # step 1
        >>> w.close()
    """

    def __init__(self, logdir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: float = 120, filename_suffix: str = "",
                 log_dir: str | None = None, coalesce_process: bool = True) -> None:
        if logdir is not None and log_dir is not None and logdir != log_dir:
            raise ValueError(f"logdir and log_dir: pass one (got {logdir!r} and {log_dir!r})")
        self._config: Dict[str, Any] = dict(max_queue=max_queue, flush_secs=flush_secs, filename_suffix=filename_suffix)
        self._writer = SummaryWriter(log_dir or logdir, comment=comment, purge_step=purge_step, **self._config)
        self.log_dir = self._writer.log_dir
        self._pid = os.getpid()
        self._child = False  # True in a forked process, which has its own event file
        self._coalesce = coalesce_process  # accepted for tensorboardX; counters are always shared
        self._lock = mp.Lock()
        self._manager = mp.Manager()
        self._steps = self._manager.dict()  # (kind, tag) -> last step

    def __repr__(self) -> str:
        return f"<GlobalSummaryWriter {self.log_dir!r}>"

    @staticmethod
    def getSummaryWriter(**kwargs: Any) -> "GlobalSummaryWriter":
        """The process's shared writer, made on first use (like `logging.getLogger`)."""
        global _default
        with _default_lock:
            if _default is None:
                _default = GlobalSummaryWriter(**kwargs)
            return _default

    def _next_step(self, kind: str, tag: str) -> int:
        if not isinstance(tag, str):
            raise TypeError(f"tag: expected a str, got {describe(tag)}")
        key = f"{kind}\0{tag}"
        with self._lock:
            step = self._steps.get(key, -1) + 1
            self._steps[key] = step
        return step

    def _local(self) -> SummaryWriter:
        """This process's writer: the one made here, or a new file in a forked child."""
        if os.getpid() != self._pid:
            self._writer = SummaryWriter(self.log_dir, **self._config)
            self._pid = os.getpid()
            self._child = True
        return self._writer

    def _write(self, kind: str, tag: str, call: Callable[[SummaryWriter, int], None]) -> None:
        writer = self._local()
        call(writer, self._next_step(kind, tag))
        if self._child:
            writer.flush()

    def add_scalar(self, tag: str, scalar_value: Any, walltime: float | None = None) -> None:
        self._write("scalar", tag, lambda w, step: w.add_scalar(tag, scalar_value, step, walltime))

    def add_histogram(self, tag: str, values: Any, bins: Any = "tensorflow", walltime: float | None = None,
                      max_bins: int | None = None) -> None:
        self._write("histogram", tag, lambda w, step: w.add_histogram(tag, values, step, bins, walltime, max_bins))

    def add_image(self, tag: str, img_tensor: Any, walltime: float | None = None, dataformats: str = "CHW") -> None:
        self._write("image", tag, lambda w, step: w.add_image(tag, img_tensor, step, walltime, dataformats))

    def add_audio(self, tag: str, snd_tensor: Any, sample_rate: int = 44100, walltime: float | None = None) -> None:
        self._write("audio", tag, lambda w, step: w.add_audio(tag, snd_tensor, step, sample_rate, walltime))

    def add_text(self, tag: str, text_string: str, walltime: float | None = None) -> None:
        self._write("text", tag, lambda w, step: w.add_text(tag, text_string, step, walltime))

    def flush(self) -> None:
        self._local().flush()

    def close(self) -> None:
        """Close this process's event file (and, in the parent, the step counters)."""
        self._writer.close()
        if not self._child:
            self._manager.shutdown()

    def __enter__(self) -> "GlobalSummaryWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
