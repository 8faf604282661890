"""Distribution benchmark (issue 21): the MPI all-reduce path, and step time from 1 to 2 workers.

Two parts, each measured side by side in the same processes:

  all-reduce  a gradient-like list of float32 buffers (sizes of a 784-512-512-10 MLP's
              weights and biases, repeated to `--mb` MB) summed over 2 MPI workers by
                jitflow      `MultiWorkerMirroredStrategy.communicator.allreduce`: fused into
                             contiguous buckets, one MPI_Allreduce per bucket, on the
                             collective thread under the watchdog
                mpi4py each  plain `comm.Allreduce(IN_PLACE, buf)` on every buffer in turn
                mpi4py fused plain `comm.Allreduce` of one prebuilt contiguous buffer of the
                             same bytes (the floor: no packing, no thread hand-off)
              reported as bus GB/s (bytes of the gradients / median time) and jitflow's
              ratio to each (goal: >= 0.9x of plain mpi4py).
  scaling     one training step (forward, GradientTape, all-reduced SGD update) of that MLP
              on a fixed global batch under MultiWorkerMirroredStrategy with 1 worker
              (mpiexec -n 1) and 2 workers (mpiexec -n 2): median step time and speed-up,
              2 workers with the all-reduce started only in apply_gradients (no overlap
              with the backward pass), and the same with MirroredStrategy on 1 and 2
              logical CPUs in one process.

    python benchmarks/bench_distribute.py [--quick] [--mb 64] [--steps 20] [--batch 512] [--runs 3] [--json PATH]

The script starts its own `mpiexec` (MPICH's from `pip install 'jitflow[mpi]'`, or the
one on PATH); `main(["--quick"])` runs a smoke benchmark and returns 0. On a machine
with fewer than 2 free cores the scaling figures say more about the machine than about
jitflow: read them with the core count printed at the top.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LAYERS = [(784, 512), (512,), (512, 512), (512,), (512, 10), (10,)]


def _mpiexec() -> str:
    found = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if found is None:
        raise SystemExit("bench_distribute: no mpiexec; pip install 'jitflow[mpi]'")
    return found


def _buffers(total_mb: float) -> List[np.ndarray]:
    rng = np.random.default_rng(0)
    out: List[np.ndarray] = []
    target = int(total_mb * (1 << 20))
    while sum(a.nbytes for a in out) < target:
        for shape in LAYERS:
            out.append(rng.normal(size=shape).astype(np.float32))
    return out


def _median_s(fn, repeat: int) -> float:
    fn()  # warm-up (first touch of the buffers, MPI connection setup)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# -- inside mpiexec ---------------------------------------------------------------------------------
def worker_allreduce(options: argparse.Namespace) -> Dict[str, Any]:
    import jitflow as jf
    strategy = jf.distribute.MultiWorkerMirroredStrategy()
    comm, mpi = strategy.communicator.comm, strategy.communicator.mpi
    arrays = _buffers(options.mb)
    nbytes = sum(a.nbytes for a in arrays)
    check = strategy.communicator.allreduce(arrays)
    assert all(np.allclose(c, a * comm.Get_size()) for c, a in zip(check, arrays))
    work = [a.copy() for a in arrays]
    fused = np.concatenate([a.ravel() for a in arrays])

    def plain_each() -> None:
        for w in work:
            comm.Allreduce(mpi.IN_PLACE, w, op=mpi.SUM)

    def plain_fused() -> None:
        comm.Allreduce(mpi.IN_PLACE, fused, op=mpi.SUM)

    def jitflow_path() -> None:
        strategy.communicator.allreduce(arrays)

    results = {}
    for _round in range(2):  # interleaved rounds, so a noisy neighbour hits every contender
        for name, fn in (("jitflow", jitflow_path), ("mpi4py each", plain_each), ("mpi4py fused", plain_fused)):
            comm.Barrier()
            t = _median_s(fn, options.repeat)
            results[name] = min(results.get(name, t), t)
    return {"bytes": nbytes, "buffers": len(arrays), "seconds": results}


def worker_step(options: argparse.Namespace) -> Dict[str, Any]:
    import jitflow as jf
    kind = options.worker_strategy
    if kind == "mirrored":
        cpu = jf.config.list_physical_devices("CPU")[0]
        jf.config.set_logical_device_configuration(cpu, [jf.config.LogicalDeviceConfiguration()] * options.replicas)
        strategy = jf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(options.replicas)])
    else:
        strategy = jf.distribute.MultiWorkerMirroredStrategy(overlap_backward=not options.no_overlap)
    rng = np.random.default_rng(0)
    with strategy.scope():
        weights = [jf.Variable(rng.normal(size=shape).astype(np.float32) * 0.05) for shape in LAYERS]
        optimizer = jf.optimizers.SGD(0.01)
    x = rng.normal(size=(options.batch, 784)).astype(np.float32)
    y = rng.integers(0, 10, size=options.batch)
    (batch,) = list(strategy.experimental_distribute_dataset([(x, jf.one_hot(y, 10))]))

    def step_fn(x, y):
        with jf.GradientTape() as tape:
            h = x
            for i in range(0, len(weights) - 2, 2):
                h = jf.nn.relu(jf.matmul(h, weights[i]) + weights[i + 1])
            logits = jf.matmul(h, weights[-2]) + weights[-1]
            loss = jf.reduce_sum(jf.nn.softmax_cross_entropy_with_logits(y, logits)) / float(options.batch)
        grads = tape.gradient(loss, weights)
        optimizer.apply_gradients(zip(grads, weights))
        return loss

    @jf.function
    def train_step(x, y):
        return strategy.reduce("sum", strategy.run(step_fn, args=(x, y)), axis=None)

    train_step(*batch)
    t = _median_s(lambda: float(train_step(*batch)), options.steps)
    return {"strategy": kind, "replicas": strategy.num_replicas_in_sync, "step_s": t,
            "overlap": kind != "mirrored" and not options.no_overlap}


# -- the driver -------------------------------------------------------------------------------------
def _launch(n: int, args: List[str], mpi: bool = True) -> Dict[str, Any]:
    cmd = ([_mpiexec(), "-n", str(n)] if mpi else []) + [sys.executable, os.path.abspath(__file__), "--worker", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(lines[0][len("RESULT "):])


def run(options: argparse.Namespace) -> Dict[str, Any]:
    common = ["--mb", str(options.mb), "--repeat", str(options.repeat), "--steps", str(options.steps),
              "--batch", str(options.batch)]
    out: Dict[str, Any] = {"cores": os.cpu_count()}
    out["allreduce_runs"] = [_launch(2, ["allreduce", *common]) for _ in range(options.runs)]
    out["allreduce"] = out["allreduce_runs"][0]
    out["scaling"] = {
        "multi_worker_1": _launch(1, ["step", *common, "--worker-strategy", "multi_worker"]),
        "multi_worker_2": _launch(2, ["step", *common, "--worker-strategy", "multi_worker"]),
        "multi_worker_2_no_overlap": _launch(2, ["step", *common, "--worker-strategy", "multi_worker",
                                                 "--no-overlap"]),
        "mirrored_1": _launch(1, ["step", *common, "--worker-strategy", "mirrored", "--replicas", "1"], mpi=False),
        "mirrored_2": _launch(1, ["step", *common, "--worker-strategy", "mirrored", "--replicas", "2"], mpi=False),
    }
    return out


def report(results: Dict[str, Any]) -> None:
    ar = results["allreduce"]
    gb = ar["bytes"] / 1e9
    secs = ar["seconds"]
    print(f"machine: {results['cores']} cores")
    print(f"\nall-reduce over 2 MPI workers: {ar['buffers']} float32 buffers, {ar['bytes'] / (1 << 20):.1f} MiB")
    print(f"{'path':<14}{'median ms':>12}{'GB/s':>10}{'jitflow ÷ it':>15}")
    for name, t in secs.items():
        print(f"{name:<14}{t * 1e3:>12.2f}{gb / t:>10.2f}{(gb / secs['jitflow']) / (gb / t):>14.2f}x")
    runs = results.get("allreduce_runs", [ar])
    if len(runs) > 1:
        ratios = [r["seconds"]["mpi4py fused"] / r["seconds"]["jitflow"] for r in runs]
        print(f"jitflow ÷ mpi4py fused over {len(runs)} runs: " + ", ".join(f"{x:.2f}x" for x in ratios)
              + f"  (median {statistics.median(ratios):.2f}x)")
    sc = results["scaling"]
    print("\nstep time at a global batch of the same size (784-512-512-10 MLP, jf.function):")
    for kind in ("multi_worker", "mirrored"):
        one, two = sc[f"{kind}_1"]["step_s"], sc[f"{kind}_2"]["step_s"]
        print(f"  {kind:<13} 1 replica {one * 1e3:8.2f} ms   2 replicas {two * 1e3:8.2f} ms   "
              f"speed-up {one / two:4.2f}x")
    plain = sc["multi_worker_2_no_overlap"]["step_s"]
    print(f"  2 workers, all-reduce started in apply_gradients instead of during the backward pass: "
          f"{plain * 1e3:8.2f} ms (overlap: {plain / sc['multi_worker_2']['step_s']:4.2f}x)")


def main(argv: List[str] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small buffers, few repeats (a smoke run)")
    parser.add_argument("--mb", type=float, default=64.0, help="MB of gradients to all-reduce")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=512, help="global batch of the scaling step")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--runs", type=int, default=3, help="separate 2-worker all-reduce jobs (ratios of each)")
    parser.add_argument("--no-overlap", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker-strategy", default="multi_worker", help=argparse.SUPPRESS)
    parser.add_argument("--replicas", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("mode", nargs="?", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.quick:
        options.mb, options.repeat, options.steps, options.batch, options.runs = 4.0, 5, 5, 128, 1
    if options.worker:
        result = worker_allreduce(options) if options.mode == "allreduce" else worker_step(options)
        rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
        if rank == 0:
            print("RESULT " + json.dumps(result), flush=True)
        return 0
    results = run(options)
    report(results)
    if options.json:
        with open(options.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
