"""Run a ported TF example snippet with `tf` bound to TensorFlow or to jitflow, and compare.

A snippet is Python source written for TF 2 (as in TF's guides) that calls `show(value)` for
what the guide prints, and `expect_error(fn)` where the guide shows an exception. `show`
turns tensors, variables, shapes, dtypes, numpy values and nests of them into plain JSON
(dtype name, shape, values), so the same snippet run under both gives comparable output.
Printed forms are compared too, after `jf.` → `tf.` (the one deliberate difference of a repr).
"""
from __future__ import annotations

import io
import json
import math
import os
import tempfile
import contextlib
import traceback
from typing import Any, Dict, List

import numpy as np


def normalize(value: Any, prefix: str) -> Any:
    """A JSON-able description of `value`; `prefix` is "tf." or "jf." (replaced in text)."""
    if value is None or isinstance(value, (bool, int, str)):
        return _text(value, prefix) if isinstance(value, str) else value
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, bytes):
        return {"bytes": value.decode("utf-8", "replace")}
    if isinstance(value, (np.generic, np.ndarray)):
        arr = np.asarray(value)
        return {"np": str(arr.dtype), "shape": list(arr.shape), "value": _values(arr)}
    type_name = type(value).__name__
    if type_name == "TensorShape":
        return {"TensorShape": None if value.rank is None else [d for d in value.as_list()]}
    if type_name == "DType":
        return {"DType": value.name}
    if hasattr(value, "dtype") and hasattr(value, "shape") and (hasattr(value, "numpy") or hasattr(value, "op")):
        try:
            arr = np.asarray(value.numpy())
        except Exception:  # a graph tensor (TF's has no numpy at all, jitflow's raises AttributeError)
            return {"symbolic": value.dtype.name, "shape": _shape(value.shape)}
        return {"tensor": value.dtype.name, "shape": list(arr.shape), "value": _values(arr)}
    if isinstance(value, dict):
        return {"dict": {str(k): normalize(v, prefix) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {type(value).__name__ if type(value) in (list, tuple) else "seq":
                [normalize(v, prefix) for v in value]}
    return {"object": type_name}


def _shape(shape: Any) -> Any:
    return None if shape.rank is None else shape.as_list()


def _float(x: float) -> Any:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _values(arr: np.ndarray) -> Any:
    if arr.dtype.kind in "OSU":
        text = lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)  # noqa: E731
        return np.vectorize(text, otypes=[object])(arr).tolist() if arr.size else arr.tolist()
    if arr.dtype.kind == "c":
        return {"real": _values(arr.real), "imag": _values(arr.imag)}
    if arr.dtype.kind == "f":
        return _floats(arr.astype(np.float64).tolist())
    return arr.tolist()


def _floats(v: Any) -> Any:
    if isinstance(v, list):
        return [_floats(x) for x in v]
    return _float(v)


def _text(s: str, prefix: str) -> str:
    return s.replace("jf.", "tf.") if prefix == "jf." else s


def run_snippet(source: str, module: Any, prefix: str) -> Dict[str, Any]:
    """{"outputs": [...], "error": None or exception class name, "stdout": printed text}."""
    outputs: List[Any] = []

    def show(*values: Any) -> None:
        outputs.append(normalize(values[0] if len(values) == 1 else values, prefix))

    def expect_error(fn) -> None:
        try:
            result = fn()
        except Exception as e:  # noqa: BLE001 - the class is the output
            outputs.append({"raised": _error_name(e)})
        else:
            outputs.append({"returned": normalize(result, prefix)})

    namespace = {"tf": module, "np": np, "show": show, "expect_error": expect_error}
    buf = io.StringIO()
    error = None
    detail = ""
    # AutoGraph reads function source with inspect: the snippet must live in a real file.
    fd, path = tempfile.mkstemp(suffix=".py", prefix="tf_api_snippet_")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(source)
    namespace["__file__"] = path
    try:
        with contextlib.redirect_stdout(buf):
            exec(compile(source, path, "exec"), namespace)  # noqa: S102 - the test's own snippets
    except Exception as e:  # noqa: BLE001
        error = _error_name(e)
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()[-500:]
    finally:
        os.unlink(path)
    return {"outputs": outputs, "error": error, "detail": detail}


# Exceptions match by name; TF and jitflow both subclass ValueError/TypeError the same way
# for the ones tutorials catch (InvalidArgumentError, AttributeError, ...).
def _error_name(e: BaseException) -> Any:
    return [c.__name__ for c in type(e).__mro__ if c not in (BaseException, object)]


def same(a: Any, b: Any, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    """Equal JSON trees, floats to a tolerance."""
    if isinstance(a, float) and isinstance(b, (float, int)) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    if isinstance(b, float) and isinstance(a, int) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=rtol, abs_tol=atol)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], rtol, atol) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y, rtol, atol) for x, y in zip(a, b))
    return a == b


def _same_error(tf_mro: Any, jf_mro: Any) -> bool:
    """jitflow raised the class TF raised, or a subclass of it (code catching TF's still works)."""
    if not tf_mro or not jf_mro:
        return tf_mro == jf_mro
    return tf_mro[0] in jf_mro


def _errors_match(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict) and set(a) == {"raised"} == set(b):
        return _same_error(a["raised"], b["raised"])
    return same(a, b)


def compare(expected: Dict[str, Any], got: Dict[str, Any]) -> str:
    """'' when `got` matches `expected`, else a one-line reason."""
    if not _same_error(expected["error"], got["error"]):
        want = expected["error"][0] if expected["error"] else "no error"
        have = got["error"][0] if got["error"] else "no error"
        return f"TF ended with {want}, jitflow with {have}: {got['detail'][:200]}"
    exp, out = expected["outputs"], got["outputs"]
    for i, (a, b) in enumerate(zip(exp, out)):
        if not _errors_match(a, b):
            return f"output {i}: TF {json.dumps(a)[:160]} != jitflow {json.dumps(b)[:160]}"
    if len(exp) != len(out):
        return f"TF showed {len(exp)} outputs, jitflow {len(out)}"
    return ""
