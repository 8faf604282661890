"""Record TensorFlow's `tf.autograph.to_code` for every function of `functions.py` (run with TF).

    /work/tfenv/bin/python tests/tf_api/autograph/record_to_code.py
"""
from __future__ import annotations

import inspect
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

import functions  # noqa: E402


def record() -> dict:
    return {name: tf.autograph.to_code(fn) for name, fn in inspect.getmembers(functions, inspect.isfunction)}


if __name__ == "__main__":
    out = {"tensorflow": tf.__version__, "to_code": record()}
    with open(os.path.join(HERE, "to_code_tf.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"recorded {len(out['to_code'])} conversions with TensorFlow {tf.__version__}")
