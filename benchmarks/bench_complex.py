"""Complex-number benchmark: jf.function compiled vs interpreter vs numpy (and TF when importable).

Two workloads on complex64, each run side by side in one process:
  (a) chain   sum(|exp(z·w) · conj(z) + sqrt(z)|²) over N elements: an elementwise chain the
              compiled tier fuses into one loop (with the reduction);
  (b) grad    the gradient of (a) with respect to z (GradientTape inside the function; TF's
              convention dL/dx + i·dL/dy), which doubles the graph.
Columns: steady per-call time (median, GC off) and ratios against numpy (a) and TF. The jf
rows must agree bit for bit with each other, and with numpy to float tolerance.

    python benchmarks/bench_complex.py [--quick] [--n N] [--repeat R] [--json PATH] [--no-tf]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any, Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (environment, format_ns, format_ratio, import_optional, print_table,  # noqa: E402
                     run_benchmark, time_steady)


def _chain(m: Any, conj: Any, z: Any, w: Any) -> Any:
    v = m.exp(z * w) * conj(z) + m.sqrt(z)
    return m.reduce_sum(m.square(m.abs(v)))


def run(opts: Any, log=print) -> Dict[str, Any]:
    os.environ.setdefault("JITFLOW_CACHE_DIR", tempfile.mkdtemp(prefix="jf_bench_complex_"))
    import jitflow as jf
    rng = np.random.default_rng(0)
    n = opts.n
    z = ((rng.normal(size=n) + 1j * rng.normal(size=n)) * 0.3).astype(np.complex64)
    w = ((rng.normal(size=n) + 1j * rng.normal(size=n)) * 0.3).astype(np.complex64)

    def np_chain() -> Any:
        v = np.exp(z * w) * np.conj(z) + np.sqrt(z)
        return np.sum(np.abs(v) ** 2, dtype=np.float32)

    def jf_body(a, b):
        return _chain(jf, jf.math.conj, a, b)

    def jf_grad_body(a, b):
        with jf.GradientTape() as tape:
            tape.watch(a)
            y = _chain(jf, jf.math.conj, a, b)
        return tape.gradient(y, a)

    zt, wt = jf.constant(z), jf.constant(w)
    rows: List[Dict[str, Any]] = []
    results: Dict[str, Any] = {}
    for case, body in (("chain", jf_body), ("grad", jf_grad_body)):
        for label, jit in (("jf compiled", True), ("jf interpreter", False)):
            f = jf.function(body, jit_compile=jit)
            results[(case, label)] = f(zt, wt).numpy()
            log(f"{case}: {label}")
            stats = time_steady(lambda f=f: f(zt, wt), repeat=opts.repeat, warmup=3)
            rows.append({"case": case, "impl": label, "median_ns": stats.median_ns})
        same = np.array_equal(results[(case, "jf compiled")], results[(case, "jf interpreter")])
        rows[-1]["bit_identical_to_compiled"] = bool(same)
    want = np_chain()
    results_ok = bool(np.allclose(results[("chain", "jf compiled")], want, rtol=1e-4))
    stats = time_steady(np_chain, repeat=opts.repeat, warmup=3)
    rows.append({"case": "chain", "impl": "numpy", "median_ns": stats.median_ns})
    tf, reason, _ = (None, "--no-tf", 0) if opts.no_tf else import_optional("tensorflow")
    if tf is not None:
        zt_tf, wt_tf = tf.constant(z), tf.constant(w)
        tf_chain = tf.function(lambda a, b: _chain(tf, tf.math.conj, a, b))

        @tf.function
        def tf_grad(a, b):
            with tf.GradientTape() as tape:
                tape.watch(a)
                y = _chain(tf, tf.math.conj, a, b)
            return tape.gradient(y, a)
        for case, f in (("chain", tf_chain), ("grad", tf_grad)):
            got = f(zt_tf, wt_tf).numpy()
            ok = np.allclose(got, results[(case, "jf compiled")], rtol=1e-3, atol=1e-3)
            stats = time_steady(lambda f=f: f(zt_tf, wt_tf), repeat=opts.repeat, warmup=3)
            rows.append({"case": case, "impl": "tf.function", "median_ns": stats.median_ns, "matches_jf": bool(ok)})
    return {"environment": environment(n=n), "rows": rows, "numpy_check": results_ok,
            "tf_skipped": reason}


def print_report(payload: Dict[str, Any]) -> None:
    rows = payload["rows"]
    base = {(r["case"], r["impl"]): r["median_ns"] for r in rows}
    table = []
    for r in rows:
        table.append([f"{r['case']}: {r['impl']}", format_ns(r["median_ns"]),
                      format_ratio(r["median_ns"], base.get(("chain", "numpy")) if r["case"] == "chain" else None),
                      format_ratio(r["median_ns"], base.get((r["case"], "tf.function")))])
    print(f"complex64, n = {payload['environment']['n']}; jf chain matches numpy: {payload['numpy_check']}; "
          f"compiled == interpreter bit for bit: "
          f"{all(r.get('bit_identical_to_compiled', True) for r in rows)}")
    print_table(["case: implementation", "per call", "vs numpy", "vs tf.function"], table)
    if payload["tf_skipped"]:
        print(f"tf.function skipped: {payload['tf_skipped']}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 18)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    parser.add_argument("--no-tf", action="store_true")
    parser.add_argument("--json", dest="json_path", default=None)
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.n, opts.repeat = 1 << 12, 5
    return run_benchmark(opts, run, print_report)


if __name__ == "__main__":
    sys.exit(main())
