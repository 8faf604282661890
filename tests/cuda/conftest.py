"""The CUDA tests run where a GPU is: numba's simulator in CI, a real GPU by hand.

numba picks the simulator when `numba.cuda` is first imported, and jitflow decides
placement process-wide, so these tests cannot share a process with the rest of the
suite (which imports numba early and must stay on the CPU). In the normal `pytest` run
each module here is collected as one item that runs the module in a fresh interpreter
with `NUMBA_ENABLE_CUDASIM=1` and reports its summary line; a failure shows that run's
output. Run them directly (and with per-test reports) with

    NUMBA_ENABLE_CUDASIM=1 .venv/bin/python -m pytest tests/cuda     # the simulator
    JITFLOW_CUDA_TESTS=device .venv/bin/python -m pytest tests/cuda   # a real GPU

`test_cuda_ptx.py` instead runs without the simulator: it compiles every kernel for a
real GPU architecture, which needs numba's NVVM but no GPU.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
SIMULATED = os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
IN_PROCESS = SIMULATED or os.environ.get("JITFLOW_CUDA_TESTS") in ("device", "inprocess")
UNSIMULATED = {"test_cuda_ptx.py"}  # modules that must see the real numba.cuda (no device needed)


def _simulator_available() -> str:
    """'' when numba's CUDA simulator can be imported, else why not."""
    try:  # looked up, not imported: importing numba.cuda here would load the real target
        import numba
    except ImportError as e:  # pragma: no cover
        return f"CUDA simulator unavailable: numba cannot be imported ({e})"
    if not (Path(numba.__file__).parent / "cuda" / "simulator" / "__init__.py").exists():
        return f"CUDA simulator unavailable: numba {numba.__version__} has no numba.cuda.simulator"
    return ""


# -- the normal run: one subprocess per module ----------------------------------------------------
class SubprocessModule(pytest.File):
    def collect(self):
        mode = "real numba.cuda, no GPU needed" if self.path.name in UNSIMULATED else "NUMBA_ENABLE_CUDASIM=1"
        yield SubprocessRun.from_parent(self, name=f"[{mode}]")


class SubprocessFailed(Exception):
    pass


class _Launched:
    """A module's pytest run in the background, its output in a temporary file."""

    def __init__(self, path: Path) -> None:
        env = dict(os.environ)
        env.pop("PYTEST_ADDOPTS", None)
        if path.name in UNSIMULATED:
            env.pop("NUMBA_ENABLE_CUDASIM", None)
            env["JITFLOW_CUDA_TESTS"] = "inprocess"
        else:
            env["NUMBA_ENABLE_CUDASIM"] = "1"
        self.cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=-ra",
                    str(path.relative_to(ROOT))]
        self.log = tempfile.TemporaryFile(mode="w+t")
        self.proc = subprocess.Popen(self.cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     text=True)

    def wait(self, timeout: float) -> Tuple[int, str]:
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.log.seek(0)
        out = self.log.read()
        self.log.close()
        return code, out


# Modules run two at a time (the next starts while this one is awaited): the simulator is
# one busy Python process, and the PTX module another.
_launched: Dict[Path, _Launched] = {}
WIDTH = max(1, min(2, os.cpu_count() or 1))


def _start(items: List["SubprocessRun"], current: "SubprocessRun") -> _Launched:
    index = items.index(current)
    for item in items[index:index + WIDTH]:
        if item.path not in _launched and not item.skip_reason():
            _launched[item.path] = _Launched(item.path)
    return _launched.pop(current.path)


class SubprocessRun(pytest.Item):
    def skip_reason(self) -> str:
        return "" if self.path.name in UNSIMULATED else _simulator_available()

    def runtest(self) -> None:
        why = self.skip_reason()
        if why:
            pytest.skip(why)
        items = [i for i in self.session.items if isinstance(i, SubprocessRun)]
        run = _start(items, self)
        code, out = run.wait(timeout=280)
        cmd = run.cmd
        lines = [ln for ln in out.strip().splitlines() if ln.strip()]
        summary = next((ln for ln in reversed(lines) if re.search(r"\d+ (passed|failed|error)", ln)), "")
        self.add_report_section("call", "subprocess", out[-4000:])
        if code != 0 or not re.search(r"\d+ passed", summary) or "failed" in summary:
            raise SubprocessFailed(f"{' '.join(cmd)}\nexit code {code}\n\n{out[-12000:]}")
        self.user_properties.append(("summary", summary))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, SubprocessFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, f"{self.path.name} {self.name}"


def pytest_pycollect_makemodule(module_path, parent):
    if IN_PROCESS or module_path.parent != Path(__file__).parent:
        return None
    return SubprocessModule.from_parent(parent, path=module_path)


def pytest_terminal_summary(terminalreporter):
    reports = terminalreporter.stats.get("passed", [])
    rows = [(r.nodeid, dict(r.user_properties).get("summary")) for r in reports
            if dict(r.user_properties).get("summary")]
    if rows:
        terminalreporter.write_sep("-", "tests/cuda subprocess runs")
        for nodeid, summary in rows:
            terminalreporter.write_line(f"{nodeid}: {summary}")


# -- in the subprocess (or on a real GPU) ---------------------------------------------------------
def _fix_simulator_shared_arrays() -> None:
    """numba's simulator creates a block's shared array on first use without a lock, so two
    threads of a block can get different arrays (rare; likelier with a short switch interval)."""
    from numba.core import types
    from numba.np import numpy_support
    from numba.cuda.simulator import kernelapi
    import numpy as np
    lock = threading.Lock()
    original = kernelapi.FakeCUDAShared.array

    def array(self, shape, dtype):
        if shape == 0:
            return original(self, shape, dtype)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        caller = traceback.extract_stack(sys._getframe())[-2][0:2]
        with lock:
            found = self._allocations.get(caller)
            if found is None:
                found = self._allocations[caller] = np.empty(shape, dtype)
        return found
    kernelapi.FakeCUDAShared.array = array


def _quiet_simulated_threads() -> None:
    """Simulated GPU threads compute in numpy scalars, which warn on integer wrap-around (a
    GPU wraps silently); many threads warning at once can trip over the warnings registry."""
    import numpy as np
    from numba.cuda.simulator import kernel
    run = kernel.BlockThread.run

    def quiet_run(self):
        with np.errstate(all="ignore"):
            run(self)
    kernel.BlockThread.run = quiet_run


if SIMULATED:
    sys.setswitchinterval(1e-4)  # one Python thread per GPU thread: switch often, barriers wait less
    _fix_simulator_shared_arrays()
    _quiet_simulated_threads()
