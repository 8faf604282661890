"""Keras saving benchmark: `model.save("m.keras")` and `load_model` of the seed-004 CNN, jitflow vs tf.keras.

The CNN (Conv2D 32 → MaxPool → Conv2D 64 → MaxPool → Flatten → Dense 128 → Dense 10, Adam,
trained one step so the optimizer has its slots: 225k weights + 450k Adam slots) is saved to
and loaded from a `.keras` file by each library in one process, in turns (median of
`repeat` rounds, the first round not counted). Ratios are "jf time / tf time" (< 1: jf faster).
Both libraries' files are read by the other as a check (the predictions must agree).
Run it with a Python that has TF (`.venv-tf/bin/python`) to get the TF rows.

    python benchmarks/bench_keras_saving.py [--quick] [--no-tf]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _common as C  # noqa: E402


def _cnn(module: Any) -> Any:
    L = module.keras.layers
    model = module.keras.Sequential([
        module.keras.Input((28, 28, 1)), L.Conv2D(32, 3, activation="relu"), L.MaxPool2D(),
        L.Conv2D(64, 3, activation="relu"), L.MaxPool2D(), L.Flatten(), L.Dense(128, activation="relu"),
        L.Dense(10)])
    model.compile(module.keras.optimizers.Adam(1e-3),
                  module.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    rng = np.random.default_rng(0)
    model.train_on_batch(rng.random((8, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, 8))
    return model


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter_ns()
    fn()
    return float(time.perf_counter_ns() - start)


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 10")
    parser.add_argument("--no-tf", action="store_true")
    args = parser.parse_args(argv)
    import jitflow as jf
    tf = None if args.no_tf else C.import_optional("tensorflow")[0]
    repeat = 3 if args.quick else 10
    folder = tempfile.mkdtemp(prefix="bench_keras_saving_")
    models = {"jf": (_cnn(jf), jf.keras.models.load_model)}
    if tf is not None:
        models["tf"] = (_cnn(tf), tf.keras.models.load_model)
    times: Dict[str, Dict[str, List[float]]] = {name: {"save": [], "load": []} for name in models}
    for round_ in range(repeat + 1):
        for name, (model, load) in models.items():
            path = os.path.join(folder, f"{name}.keras")
            save_ns = _time(lambda: model.save(path))
            load_ns = _time(lambda: load(path))
            if round_:
                times[name]["save"].append(save_ns)
                times[name]["load"].append(load_ns)
    x = np.random.default_rng(1).random((4, 28, 28, 1), dtype=np.float32)
    if tf is not None:   # each reads the other's file and predicts the same
        mine = tf.keras.models.load_model(os.path.join(folder, "jf.keras")).predict(x, verbose=0)
        theirs = jf.keras.models.load_model(os.path.join(folder, "tf.keras")).predict(x, verbose=0)
        assert np.allclose(mine, models["jf"][0].predict(x, verbose=0), atol=1e-5)
        assert np.allclose(theirs, models["tf"][0].predict(x, verbose=0), atol=1e-5)
    rows = []
    for what in ("save", "load"):
        jf_ns = statistics.median(times["jf"][what])
        tf_ns = statistics.median(times["tf"][what]) if "tf" in times else None
        rows.append([f"{what} .keras", C.format_ns(jf_ns), C.format_ns(tf_ns), C.format_ratio(jf_ns, tf_ns)])
    size = os.path.getsize(os.path.join(folder, "jf.keras"))
    print(f"seed-004 CNN with Adam state, {repeat} rounds (median); jf file {size / 1e6:.2f} MB")
    C.print_table(["", "jitflow", "tf.keras", "jf/tf"], rows)


if __name__ == "__main__":
    main()
