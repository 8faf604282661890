"""Run a command (TensorBoard) so that it dies with the process that started it.

    python -m jitflow.webui.tensorboard_child PARENT_PID -- tensorboard --logdir ...

`jitflow panel` starts TensorBoard in its own session (so a terminal's Ctrl-C reaches only
the panel, which then stops TensorBoard in order). A session of its own also means that
closing the terminal (SIGHUP) or killing the panel (SIGKILL) would leave TensorBoard
running on its port. So TensorBoard starts through this wrapper:

- on Linux it asks the kernel for a parent-death signal (`prctl(PR_SET_PDEATHSIG,
  SIGKILL)`, kept across `exec`), checks the parent is still PARENT_PID (it may have died
  before the request), and `exec`s the command: no extra process;
- elsewhere (or with JITFLOW_TENSORBOARD_WATCHDOG=1) it stays as a watchdog: it runs the
  command as its child and reads its stdin, a pipe whose other end only the parent holds;
  end of file means the parent is gone, however it died, and the child is stopped.

TensorBoard's own data server watches TensorBoard the same way (`--die-after-stdin`).
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from typing import List

PR_SET_PDEATHSIG = 1


def _parent_death_signal(sig: int) -> bool:
    """Ask Linux to send `sig` to this process when its parent dies; False if not possible."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watchdog(command: List[str]) -> int:
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    done = threading.Event()

    def stop(*_: object) -> None:
        done.set()
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()

    for sig in (signal.SIGTERM, signal.SIGINT, getattr(signal, "SIGHUP", signal.SIGTERM)):
        signal.signal(sig, lambda *_: stop())

    def read_stdin() -> None:
        try:
            while os.read(sys.stdin.fileno(), 4096):
                pass
        except OSError:
            pass
        stop()   # end of file: the parent is gone

    threading.Thread(target=read_stdin, daemon=True).start()
    code = child.wait()
    return code


def main(argv: List[str]) -> int:
    if len(argv) < 3 or argv[1] != "--" or not argv[0].isdigit():
        print("usage: python -m jitflow.webui.tensorboard_child PARENT_PID -- COMMAND [ARGS...]",
              file=sys.stderr)
        return 2
    parent, command = int(argv[0]), argv[2:]
    watchdog = os.environ.get("JITFLOW_TENSORBOARD_WATCHDOG", "") not in ("", "0")
    if not watchdog and _parent_death_signal(signal.SIGKILL):
        if os.getppid() != parent:   # the parent died before the request took effect
            return 0
        os.execvp(command[0], command)
    return _watchdog(command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
