"""Issue #22 item 13: `import jitflow` works when numba has nowhere to write its cache.

numba refuses `cache=True` ("no locator available") when neither the package directory nor
the user's cache directory is writable. The child process below allows numba only the
user-wide locator (NUMBA_CACHE_LOCATOR_CLASSES) and points HOME at an unwritable place,
which is that situation; jitflow must import, warn once, run eagerly and compile a
function (the compiled-segment cache falls back to a private temporary directory).
"""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as caught:
        import jitflow as jf
        eager = jf.reduce_max(jf.constant([1.0, 3.0])).numpy()
        f = jf.function(lambda x: jf.reduce_sum(x * 2.0), jit_compile=True)
        compiled = f(jf.constant([1.0, 2.0])).numpy()
    names = [type(w.message).__name__ for w in caught]
    print("RESULT", eager, compiled, names.count("NumbaCacheWarning"))
""")


def test_import_and_run_without_a_writable_numba_cache(tmp_path):
    env = dict(os.environ, HOME="/proc/jitflow-no-home", XDG_CACHE_HOME="/proc/jitflow-no-home",
               NUMBA_CACHE_LOCATOR_CLASSES="UserWideCacheLocator")
    for key in ("NUMBA_CACHE_DIR", "JITFLOW_CACHE_DIR"):
        env.pop(key, None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=1500, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT")][0]
    _, eager, compiled, warnings_seen = line.split()
    assert float(eager) == 3.0 and float(compiled) == 6.0
    assert 1 <= int(warnings_seen) <= 2  # one for numba's kernel cache, one for the segment cache
