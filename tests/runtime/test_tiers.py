"""Every jf.function test under each tier: interpreter, compiled (cold cache), cached.

The function tests assert exact values, so passing under each tier means each tier gives
the same results. Each run is a fresh process with JITFLOW_TIER set; the compiled and
cached runs share one JITFLOW_CACHE_DIR, and the cached run must not write to it (every
segment came from the disk cache).
"""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FUNCTION_TESTS = ["test_function.py", "test_direct_call.py", "test_seeds.py", "test_seeds_training.py",
                  "test_autograph.py", "test_gradients.py", "test_optimizers.py", "test_tensor_array.py"]


def _run(tier, cache_dir):
    env = dict(os.environ, JITFLOW_TIER=tier, JITFLOW_CACHE_DIR=str(cache_dir))
    env.pop("JITFLOW_DIRECT", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not the_python_twin",
           *[os.path.join(HERE, name) for name in FUNCTION_TESTS]]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, cwd=HERE)
    assert proc.returncode == 0, f"JITFLOW_TIER={tier}:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
    assert " passed" in proc.stdout and " failed" not in proc.stdout
    return proc.stdout


def _cache_files(cache_dir):
    found = {}
    for root, _, files in os.walk(cache_dir):
        for name in files:
            path = os.path.join(root, name)
            found[path] = os.stat(path).st_mtime_ns
    return found


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("jitflow-tier-cache")


def test_function_tests_pass_on_the_interpreter(tmp_path):
    _run("interpreter", tmp_path)  # (tests that pass jit_compile=True still compile, as they ask)


def test_function_tests_pass_compiled_from_a_cold_cache(cache_dir):
    _run("compiled", cache_dir)
    assert any(p.endswith(".py") for p in _cache_files(cache_dir)), "compiled segments must be cached"


def test_function_tests_pass_from_the_cache_without_compiling(cache_dir):
    before = _cache_files(cache_dir)
    if not before:
        pytest.skip("needs the compiled run first (run the whole module)")
    _run("compiled", cache_dir)
    after = _cache_files(cache_dir)
    assert after == before, ("the cached run wrote to the cache: "
                             f"{sorted(set(after.items()) - set(before.items()))[:5]}")
