"""Input pipelines: jf.data against tf.data (when installed) in one process.

Workloads (the same pipeline written twice, `jf.` and `tf.`):

- records: TFRecordDataset -> map(parse_single_example + a small cast/scale) -> iterate;
  also the batched form, batch(64) -> map(parse_example). Records per second.
- images: JPEG files -> map(read_file, decode_jpeg, resize to 32x32, / 255,
  num_parallel_calls=AUTOTUNE) -> batch(32) -> prefetch -> iterate. Images per second.
- varlen: batch(64) -> map(parse_example with a VarLenFeature, which is a SparseTensor,
  then sparse.to_dense and a reduce_sum). Records per second.
- buckets: sequences of 1..64 tokens (made by a map) -> bucket_by_sequence_length with 4
  boundaries and batches of 32 -> iterate. Sequences per second.
- scaling: seed 004's decode_and_resize on 320x320 JPEGs (read_file, decode_jpeg, resize to
  256x256, / 255) with num_parallel_calls = 1, 2, 4, ... up to the cores this process may
  use; images per second and the speed-up over one thread. The per-image work (Pillow's
  decoder, the numba resize) runs without the GIL, so threads scale with free cores.

Every pipeline runs once to warm up (traces, numba compiles, file cache) and then
--repeat times, jitflow's and tf.data's passes alternating; the best run counts.

    python benchmarks/bench_data.py [--records N] [--images N] [--repeat R] [--quick] [--no-tf] [--json PATH]

Importing this module runs nothing; `main(["--quick"])` runs a smoke benchmark and returns 0.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Dict, List

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import environment, gc_disabled, import_optional, print_table, write_json  # noqa: E402


def make_records(m: Any, path: str, n: int) -> None:
    """n Examples: a 64-byte payload, an int64 label and 4 floats."""
    t = m.train
    rng = np.random.default_rng(0)
    with m.io.TFRecordWriter(path) as w:
        for i in range(n):
            ex = t.Example(features=t.Features(feature={
                "payload": t.Feature(bytes_list=t.BytesList(value=[rng.bytes(64)])),
                "label": t.Feature(int64_list=t.Int64List(value=[i % 10])),
                "x": t.Feature(float_list=t.FloatList(value=rng.random(4).tolist())),
            }))
            w.write(ex.SerializeToString())


def make_varlen_records(m: Any, path: str, n: int) -> None:
    """n Examples with 0..15 int64 tags each (a VarLenFeature)."""
    t = m.train
    with m.io.TFRecordWriter(path) as w:
        for i in range(n):
            tags = [(i * 7 + j) % 1000 for j in range(i % 16)]
            w.write(t.Example(features=t.Features(feature={
                "tags": t.Feature(int64_list=t.Int64List(value=tags))})).SerializeToString())


def varlen_pipeline(m: Any, path: str):
    desc = {"tags": m.io.VarLenFeature(m.int64)}

    def parse(s):
        tags = m.io.parse_example(s, desc)["tags"]
        dense = m.sparse.to_dense(tags)
        return dense, m.reduce_sum(dense, axis=1)
    return m.data.TFRecordDataset(path).batch(64).map(parse)


def bucket_pipeline(m: Any, n: int):
    ds = m.data.Dataset.range(n).map(lambda i: m.range(i % 64 + 1))
    return ds.bucket_by_sequence_length(lambda x: m.size(x), [8, 16, 32, 48], [32] * 5)


def make_images(folder: str, n: int, size: int = 64) -> List[str]:
    from PIL import Image
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:size, 0:size] * 256 // size
    paths = []
    for i in range(n):
        img = np.stack([x, y, (x + y) // 2], -1) + rng.integers(0, 16, (size, size, 3))
        path = os.path.join(folder, f"img{i}.jpg")
        Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).save(path, quality=90)
        paths.append(path)
    return paths


def records_pipeline(m: Any, path: str, batched: bool):
    desc = {"payload": m.io.FixedLenFeature([], m.string), "label": m.io.FixedLenFeature([], m.int64),
            "x": m.io.FixedLenFeature([4], m.float32)}

    def parse(s):
        d = m.io.parse_example(s, desc) if batched else m.io.parse_single_example(s, desc)
        return d["x"] * 2.0, m.cast(d["label"], m.float32)
    ds = m.data.TFRecordDataset(path)
    if batched:
        ds = ds.batch(64)
    return ds.map(parse)


def image_pipeline(m: Any, paths: List[str], parallel: Any, size: int = 32):
    def load(filename):
        img = m.io.decode_jpeg(m.io.read_file(filename), channels=3)
        return m.image.resize(img, [size, size]) / 255.0
    ds = m.data.Dataset.from_tensor_slices(paths).map(load, num_parallel_calls=parallel)
    return ds.batch(32).prefetch(m.data.AUTOTUNE)


def drain(ds: Any) -> int:
    """Iterate `ds`, counting records (a batch counts its rows)."""
    n = 0
    for element in ds:
        first = element[0] if isinstance(element, tuple) else element
        n += int(first.shape[0]) if len(first.shape) > 1 else 1
    return n


def best_rate(ds: Any, repeat: int, expect: int) -> float:
    """Elements per second, best of `repeat` full passes after one warm-up pass."""
    got = drain(ds)
    if got != expect:
        raise AssertionError(f"pipeline produced {got} elements; expected {expect}")
    best = float("inf")
    for _ in range(repeat):
        with gc_disabled():
            start = time.perf_counter()
            drain(ds)
            best = min(best, time.perf_counter() - start)
    return expect / best


def best_rates(pipelines: Dict[str, Any], repeat: int, expect: int) -> Dict[str, float]:
    """Like `best_rate` for the same workload in several libraries, their timed passes
    alternating (jitflow, tf.data, jitflow, ...) so that a change in the machine's load
    (a shared machine) hits both alike instead of whichever ran second."""
    for name, ds in pipelines.items():
        got = drain(ds)
        if got != expect:
            raise AssertionError(f"{name}: pipeline produced {got} elements; expected {expect}")
    best = {name: float("inf") for name in pipelines}
    for _ in range(repeat):
        for name, ds in pipelines.items():
            with gc_disabled():
                start = time.perf_counter()
                drain(ds)
                best[name] = min(best[name], time.perf_counter() - start)
    return {name: expect / seconds for name, seconds in best.items()}


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def main(argv: List[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000, help="records in the TFRecord file (default 20000)")
    ap.add_argument("--images", type=int, default=512, help="JPEG files (default 512)")
    ap.add_argument("--repeat", type=int, default=3, help="timed passes; the best counts (default 3)")
    ap.add_argument("--quick", action="store_true", help="smoke run: --records 2000 --images 64 --repeat 1")
    ap.add_argument("--no-tf", action="store_true", help="leave TensorFlow out even if installed")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = ap.parse_args(argv)
    if args.quick:
        args.records, args.images, args.repeat = 2000, 64, 1

    import jitflow as jf
    libs: Dict[str, Any] = {"jitflow": jf}
    notes = []
    if args.no_tf:
        notes.append("tf.data: left out (--no-tf)")
    else:
        tf, reason, _ = import_optional("tensorflow")
        if reason is None:
            libs["tf.data"] = tf
        else:
            notes.append(f"tf.data: not measured ({reason})")

    tmp = tempfile.mkdtemp(prefix="bench_data_")
    results: Dict[str, Dict[str, float]] = {}
    try:
        record_path = os.path.join(tmp, "data.tfrecord")
        make_records(jf, record_path, args.records)
        varlen_path = os.path.join(tmp, "varlen.tfrecord")
        make_varlen_records(jf, varlen_path, args.records)
        paths = make_images(tmp, args.images)
        big_dir = os.path.join(tmp, "big")
        os.mkdir(big_dir)
        big = make_images(big_dir, max(args.images // 4, 8), size=320)
        workloads = [
            ("records/s (parse_single_example + map)", lambda m: records_pipeline(m, record_path, False),
             args.records),
            ("records/s (batch 64 + parse_example)", lambda m: records_pipeline(m, record_path, True), args.records),
            ("images/s (decode+resize+batch, AUTOTUNE)", lambda m: image_pipeline(m, paths, m.data.AUTOTUNE),
             args.images),
            ("records/s (parse_example VarLen -> SparseTensor -> to_dense)", lambda m: varlen_pipeline(m, varlen_path),
             args.records),
            ("sequences/s (bucket_by_sequence_length, 5 buckets)", lambda m: bucket_pipeline(m, args.records),
             args.records),
        ]
        for name in libs:
            results[name] = {}
        for metric, build, expect in workloads:
            print(f"timing {metric} ...", file=sys.stderr)
            rates = best_rates({name: build(m) for name, m in libs.items()}, args.repeat, expect)
            for name, rate in rates.items():
                results[name][metric] = rate
        threads = sorted({1, 2, 4, cores()} & set(range(1, cores() + 1)))
        scaling = {}
        for k in threads:
            print(f"timing jitflow map with {k} thread(s) ...", file=sys.stderr)
            scaling[k] = best_rate(image_pipeline(jf, big, k, size=256), args.repeat, len(big))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"{args.records} records, {args.images} 64x64 JPEGs; best of {args.repeat}; Python "
          f"{sys.version.split()[0]}, {cores()} usable cores")
    names = list(results)
    metrics = list(results["jitflow"])
    headers = ["workload"] + names + (["jitflow / tf.data"] if "tf.data" in results else [])
    rows = []
    for metric in metrics:
        row = [metric] + [f"{results[n][metric]:,.0f}" for n in names]
        if "tf.data" in results:
            row.append(f"{results['jitflow'][metric] / results['tf.data'][metric]:.2f}x")
        rows.append(row)
    print_table(headers, rows)
    print()
    print_table(["jitflow map threads (320px JPEG -> 256px)", "images/s", "speed-up"],
                [[str(k), f"{v:,.0f}", f"{v / scaling[1]:.2f}x"] for k, v in scaling.items()])
    for note in notes:
        print(note)
    if args.json:
        write_json(args.json, {"benchmark": "bench_data", "environment": environment(), "records": args.records,
                               "images": args.images, "repeat": args.repeat, "notes": notes,
                               "results": results, "map_scaling_images_per_s": scaling})
    return 0


if __name__ == "__main__":
    sys.exit(main())
