"""jitflow on a CUDA GPU (issue 7): bandwidth, matmul throughput and per-call latency.

Run by hand on a machine with an NVIDIA GPU (CI has none; without one this script says
so and exits 0):

    .venv/bin/python benchmarks/bench_cuda.py            # full sizes (~1 minute)
    .venv/bin/python benchmarks/bench_cuda.py --quick    # smaller sizes (seconds)
    .venv/bin/python benchmarks/bench_cuda.py --json runs/bench_cuda.json

It reports, against the device's peaks computed from its attributes:

- (a) GB/s of a large elementwise op (`a + b` on float32: 2 reads + 1 write per element),
  through `jf` eagerly and through the raw kernel (the framework's share is the gap);
- (b) TFLOP/s of a large float32 matmul (2·n³ flops) on jitflow's tiled kernel;
- (c) per-call time of the 150-op elementwise chain of `bench_runtime.py` as a
  `jf.function` on the GPU, on 10 and on 1M float32, beside the same function on the CPU.

GPU times are wall times around work followed by a stream synchronisation, so they
include launch overhead; every figure is the median of `--repeat` samples.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import environment, format_ns, print_table, write_json  # noqa: E402
from bench_runtime import make_chain  # noqa: E402

# FP32 lanes per SM by compute capability (NVIDIA's tables); FP64 lanes where they differ.
FP32_PER_SM = {(6, 0): 64, (6, 1): 128, (7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128,
               (8, 9): 128, (9, 0): 128, (10, 0): 128, (12, 0): 128}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def find_gpu(allow_simulator: bool) -> Optional[str]:
    """None when there is a usable GPU, else why not (printed, then exit 0)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0") and not allow_simulator:
        return "NUMBA_ENABLE_CUDASIM is set: the simulator's timings mean nothing (--allow-simulator to smoke-test)"
    import jitflow as jf
    if not jf.config.list_physical_devices("GPU"):
        return ("no CUDA GPU found (jf.config.list_physical_devices('GPU') is empty: no NVIDIA driver, "
                "or numba.cuda cannot use it); run this on a machine with an NVIDIA GPU")
    return None


def device_peaks() -> Dict[str, Any]:
    from numba import cuda
    if not hasattr(cuda, "get_current_device"):  # the simulator
        return {"name": "numba CUDA simulator", "compute_capability": [0, 0]}
    dev = cuda.get_current_device()
    out: Dict[str, Any] = {"name": dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
                           "compute_capability": list(dev.compute_capability)}
    try:
        sms = dev.MULTIPROCESSOR_COUNT
        clock_khz = dev.CLOCK_RATE
        mem_khz = dev.MEMORY_CLOCK_RATE
        bus_bits = dev.GLOBAL_MEMORY_BUS_WIDTH
        out["peak_GBps"] = 2 * mem_khz * 1e3 * bus_bits / 8 / 1e9
        lanes = FP32_PER_SM.get(tuple(dev.compute_capability))
        if lanes:
            out["peak_fp32_TFLOPs"] = sms * lanes * 2 * clock_khz * 1e3 / 1e12
        out.update(sms=sms, clock_MHz=clock_khz / 1e3, memory_clock_MHz=mem_khz / 1e3, bus_bits=bus_bits)
    except Exception as e:  # the simulator has no such attributes
        out["peak_error"] = str(e)
    return out


def time_gpu(fn: Callable[[], Any], repeat: int, inner: int, sync: Callable[[], None]) -> float:
    """Median seconds per call of `fn`, each sample `inner` calls then a synchronisation."""
    fn()
    sync()
    samples: List[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        sync()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def run(opts: argparse.Namespace) -> Dict[str, Any]:
    import jitflow as jf
    from jitflow.runtime.execution import device_memory as D
    from jitflow.runtime.execution import placement
    from jitflow.runtime.backends import cuda_kernels as CK
    from jitflow.runtime.backends import cuda_primitives as P
    from jitflow.runtime.ops import cpu_kernels as K
    placement.cuda_table()
    sync = D.synchronize
    peaks = device_peaks()
    results: Dict[str, Any] = {"device": peaks, "environment": environment()}
    rows = []

    # (a) bandwidth
    n = opts.elements
    rng = np.random.default_rng(0)
    with jf.device("/GPU:0"):
        a = jf.constant(rng.standard_normal(n, dtype=np.float32))
        b = jf.constant(rng.standard_normal(n, dtype=np.float32))
    log(f"(a) elementwise add on {n:,} float32")
    moved = 3 * n * 4
    t_jf = time_gpu(lambda: a + b, opts.repeat, opts.inner, sync)
    out = D.empty((n,), np.float32)
    kernel = P.map2_flat(K.add_)
    raw = lambda: CK.launch(kernel, n, out, a._value, b._value)  # noqa: E731
    t_raw = time_gpu(raw, opts.repeat, opts.inner, sync)
    np.testing.assert_allclose((a + b).numpy()[:1000], a.numpy()[:1000] + b.numpy()[:1000], rtol=1e-6)
    peak = peaks.get("peak_GBps")
    for name, t in (("jf eager a + b", t_jf), ("raw kernel", t_raw)):
        gbps = moved / t / 1e9
        rows.append([f"(a) {name}", format_ns(t * 1e9), f"{gbps:,.1f} GB/s",
                     f"{gbps / peak:.0%} of {peak:,.0f} GB/s" if peak else "-"])
        results[f"elementwise_{name.split()[0]}_GBps"] = gbps

    # (b) matmul
    m = opts.matmul
    with jf.device("/GPU:0"):
        x = jf.constant(rng.standard_normal((m, m), dtype=np.float32))
        w = jf.constant(rng.standard_normal((m, m), dtype=np.float32))
    log(f"(b) matmul {m}x{m} float32")
    t_mm = time_gpu(lambda: jf.matmul(x, w), max(3, opts.repeat // 4), 1, sync)
    tflops = 2 * m ** 3 / t_mm / 1e12
    peak_f = peaks.get("peak_fp32_TFLOPs")
    rows.append([f"(b) matmul {m}x{m} f32", format_ns(t_mm * 1e9), f"{tflops:,.2f} TFLOP/s",
                 f"{tflops / peak_f:.0%} of {peak_f:,.1f} TFLOP/s" if peak_f else "-"])
    results["matmul_TFLOPs"] = tflops
    check = jf.matmul(x[:64], w).numpy()
    np.testing.assert_allclose(check, x.numpy()[:64] @ w.numpy(), rtol=2e-3, atol=2e-3)

    # (c) the 150-op chain as a jf.function, GPU vs CPU
    chain = make_chain(jf, opts.chain_ops)
    for size in opts.chain_sizes:
        xs = rng.uniform(-1, 1, size).astype(np.float32)
        gpu_fn = jf.function(chain)
        with jf.device("/GPU:0"):
            xg = jf.constant(xs)
        t_gpu = time_gpu(lambda: gpu_fn(xg), opts.repeat, opts.inner, sync)
        with jf.device("/CPU:0"):  # traced under the scope: every node on the CPU
            cpu_fn = jf.function(chain)
            xc = jf.constant(xs)
            cpu_fn(xc)
        t_cpu = time_gpu(lambda: cpu_fn(xc), opts.repeat, opts.inner, lambda: None)
        np.testing.assert_allclose(gpu_fn(xg).numpy(), cpu_fn(xc).numpy(), rtol=1e-4, atol=1e-5)
        rows.append([f"(c) {opts.chain_ops}-op chain, {size:,} f32, GPU", format_ns(t_gpu * 1e9),
                     f"{t_gpu / opts.chain_ops * 1e6:.2f} µs/op", f"CPU: {format_ns(t_cpu * 1e9)}"])
        results[f"chain_{size}_gpu_ns"] = t_gpu * 1e9
        results[f"chain_{size}_cpu_ns"] = t_cpu * 1e9

    print(f"\njitflow CUDA benchmark on {peaks['name']} (cc {peaks['compute_capability']}), "
          f"peaks: {peaks.get('peak_GBps', float('nan')):,.0f} GB/s, "
          f"{peaks.get('peak_fp32_TFLOPs', float('nan')):,.1f} FP32 TFLOP/s")
    print_table(["case", "time/call", "rate", "vs peak"], rows)
    return results


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer samples")
    p.add_argument("--repeat", type=int, default=20, help="samples per figure (median reported)")
    p.add_argument("--inner", type=int, default=10, help="calls per sample before synchronising")
    p.add_argument("--elements", type=int, default=1 << 26, help="elements of the elementwise op")
    p.add_argument("--matmul", type=int, default=4096, help="matmul size n (n x n @ n x n)")
    p.add_argument("--chain-ops", type=int, default=150)
    p.add_argument("--json", help="also write the results as JSON here")
    p.add_argument("--allow-simulator", action="store_true", help="run on numba's CUDA simulator (smoke test)")
    opts = p.parse_args(argv)
    opts.chain_sizes = [10, 1 << 20]
    if opts.quick:
        opts.repeat, opts.inner = 5, 3
        opts.elements, opts.matmul, opts.chain_sizes = 1 << 22, 1024, [10]
    if opts.allow_simulator and os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
        opts.repeat, opts.inner, opts.elements, opts.matmul, opts.chain_sizes = 1, 1, 256, 8, [4]
        opts.chain_ops = min(opts.chain_ops, 9)
    why = find_gpu(opts.allow_simulator)
    if why is not None:
        print(f"bench_cuda: nothing to measure: {why}")
        return 0
    results = run(opts)
    if opts.json:
        write_json(opts.json, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
