"""Record what TensorFlow outputs for every snippet into expected.json (run once, with TF).

    .venv-tf/bin/python tests/tf_api/record_expected.py            # everything
    .venv-tf/bin/python tests/tf_api/record_expected.py --missing  # new snippets only

The recording is checked in; `test_tf_snippets.py::test_recording_matches_live_tensorflow`
(marked `tf`) re-runs TF to check it stays true.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

import harness  # noqa: E402
import snippets  # noqa: E402


def record_all(skip=()):
    out = {}
    for name, source in snippets.load().items():
        if name in skip:
            continue
        out[name] = harness.run_snippet(source, tf, "tf.")
        out[name].pop("detail")
    return out


def main() -> None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected.json")
    if "--missing" in sys.argv[1:]:  # record only snippets without a recording yet
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        if result["tensorflow"] != tf.__version__:
            raise SystemExit(f"expected.json was recorded with TensorFlow {result['tensorflow']}, "
                             f"this is {tf.__version__}: re-record everything (no --missing)")
        known = set(snippets.load())
        result["snippets"] = {k: v for k, v in result["snippets"].items() if k in known}
        result["snippets"].update(record_all(skip=set(result["snippets"])))
    else:
        result = {"tensorflow": tf.__version__, "snippets": record_all()}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    print(f"recorded {len(result['snippets'])} snippets with TensorFlow {tf.__version__} into {path}")


if __name__ == "__main__":
    main()
