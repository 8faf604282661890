"""Cold start: `import jitflow` and the first `jf.function` call, each in fresh processes.

Every figure is the median over `repeat` new interpreters (a warm-up process runs first,
so numba's disk cache holds the kernels: "warm kernel cache", and Python's `__pycache__`
holds jitflow's bytecode, as after a user's first import; `PYTHONDONTWRITEBYTECODE` is
cleared for the children, since with it set every import recompiles ~100 modules from source
and `import jitflow` costs about 230 ms more). Peers, when installed:
`import numpy` (the floor every jitflow import pays), and JAX's import + first `jax.jit`
call of the same function. Goals (issue: architecture): `import jitflow` <= 0.25 s and the
first call <= 50 ms, i.e. time to first result below JAX's.

The first call runs on the numpy tier (exact numpy kernels while numba loads in a background
thread, `runtime/execution/numpy_tier.py`); the same script with `JITFLOW_NUMPY_TIER=0` is
measured too: the first call as it was before, waiting for numba and its cached kernels.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from typing import Any, Dict, List, Optional

GOAL_IMPORT_S = 0.25
GOAL_FIRST_CALL_S = 0.050

_JITFLOW = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import jitflow as jf
t2 = time.perf_counter()

@jf.function
def f(x):
    return jf.reduce_sum(jf.tanh(x * 2.0 + 1.0))

x = jf.constant(np.linspace(-1, 1, 10, dtype=np.float32))
t3 = time.perf_counter()
float(f(x))
t4 = time.perf_counter()
float(f(x))
t5 = time.perf_counter()
print(json.dumps({"numpy": t1 - t0, "import": t2 - t1, "first_call": t4 - t3, "second_call": t5 - t4,
                  "first_result": t4 - t0}))
"""

_JAX = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
import jax, jax.numpy as jnp
t1 = time.perf_counter()

@jax.jit
def f(x):
    return jnp.sum(jnp.tanh(x * 2.0 + 1.0))

x = jnp.asarray(np.linspace(-1, 1, 10, dtype=np.float32))
t2 = time.perf_counter()
float(f(x))
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "first_call": t3 - t2, "first_result": t3 - t0}))
"""


def _run(code: str, **env: str) -> Optional[Dict[str, float]]:
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**base, "PYTHONWARNINGS": "ignore", "JAX_PLATFORMS": "cpu", **env})
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median(samples: List[Dict[str, float]]) -> Dict[str, float]:
    return {k: statistics.median(s[k] for s in samples) for k in samples[0]}


def measure(repeat: int = 5) -> Dict[str, Any]:
    """Median cold-start figures (seconds) for jitflow and, when installed, JAX."""
    _run(_JITFLOW)  # warm numba's disk cache for the kernels the first call uses
    samples = [s for s in (_run(_JITFLOW) for _ in range(repeat)) if s]
    waiting = [s for s in (_run(_JITFLOW, JITFLOW_NUMPY_TIER="0") for _ in range(repeat)) if s]
    out: Dict[str, Any] = {"repeat": repeat, "jitflow": _median(samples) if samples else None, "jax": None,
                           "numpy_tier_off": _median(waiting) if waiting else None}
    try:
        import importlib.util
        has_jax = importlib.util.find_spec("jax") is not None
    except ValueError:
        has_jax = False
    if has_jax:
        _run(_JAX)
        jax_samples = [s for s in (_run(_JAX) for _ in range(repeat)) if s]
        out["jax"] = _median(jax_samples) if jax_samples else None
    return out


def report(result: Dict[str, Any], out=None) -> None:
    out = out or sys.stdout
    jf_ = result["jitflow"]
    print(f"\ncold start (median of {result['repeat']} fresh processes, warm kernel cache):", file=out)
    if jf_ is None:
        print("  jitflow: the cold-start script failed", file=out)
        return

    def mark(value: float, goal: float) -> str:
        return "meets" if value <= goal else "MISSES"

    print(f"  import numpy            {jf_['numpy'] * 1e3:7.1f} ms  (the floor under every import)", file=out)
    print(f"  import jitflow          {jf_['import'] * 1e3:7.1f} ms  goal <= {GOAL_IMPORT_S * 1e3:.0f} ms: "
          f"{mark(jf_['import'], GOAL_IMPORT_S)}", file=out)
    print(f"  first jf.function call  {jf_['first_call'] * 1e3:7.1f} ms  goal <= {GOAL_FIRST_CALL_S * 1e3:.0f} ms: "
          f"{mark(jf_['first_call'], GOAL_FIRST_CALL_S)}", file=out)
    off = result.get("numpy_tier_off")
    if off:
        print(f"    without the numpy tier {off['first_call'] * 1e3:7.1f} ms  (JITFLOW_NUMPY_TIER=0: waits for numba; "
              f"{off['first_call'] / jf_['first_call']:.0f}x the first call with it)", file=out)
    print(f"  second call             {jf_['second_call'] * 1e6:7.1f} us", file=out)
    print(f"  time to first result    {jf_['first_result'] * 1e3:7.1f} ms", file=out)
    jax = result.get("jax")
    if jax:
        print(f"  JAX: import {jax['import'] * 1e3:.0f} ms, first jit call {jax['first_call'] * 1e3:.0f} ms, "
              f"first result {jax['first_result'] * 1e3:.0f} ms -> jitflow/JAX time to first result "
              f"{jf_['first_result'] / jax['first_result']:.2f}x", file=out)
    else:
        print("  JAX: not installed (pip install jax) - no comparison", file=out)


if __name__ == "__main__":
    report(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
