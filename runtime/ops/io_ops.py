"""Side-effect ops that run on every call: `jf.print` and `jf.py_function`.

Python's own `print` inside a `jf.function` runs only while tracing; these become
graph nodes, so they run every time the graph does (seed 002).
"""
from __future__ import annotations

import functools

import sys
from typing import Any, Callable, List, Optional, Sequence

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.tensor import EagerTensor, Tensor
from jitflow.runtime.ops.constant_op import TensorConvertible, convert_to_tensor
from jitflow.runtime.ops.registry import apply, register

# -- value formatting (TF's tf.print style) --------------------------------------------


def format_scalar(value: Any) -> str:
    """Shortest text that round-trips in the value's own precision, as TF prints it."""
    if isinstance(value, (bytes, np.bytes_)):
        return value.decode("utf-8", "replace")
    if isinstance(value, (np.bool_, bool)):
        return "1" if value else "0"
    if isinstance(value, (np.floating, float)):
        dt = np.asarray(value).dtype
        if dt == np.float64:
            text = "%.15g" % value
            if float(text) != value and value == value:
                text = "%.17g" % value
            return text
        text = "%.6g" % value
        if dt.type(text) != value and value == value:
            text = "%.9g" % value
        return text
    return str(value)


def format_array(arr: np.ndarray, summarize: int = 3) -> str:
    """`[[1 2]\\n [3 4]]`, eliding the middle of long dimensions with `...`."""
    if arr.ndim == 0:
        return format_scalar(arr[()])
    quote = arr.dtype == object

    def item(v):
        return f'"{format_scalar(v)}"' if quote else format_scalar(v)

    def rec(a: np.ndarray, depth: int) -> str:
        n = a.shape[0]
        idx = list(range(n)) if summarize < 0 or n <= 2 * summarize else (
            list(range(summarize)) + [None] + list(range(n - summarize, n)))
        if a.ndim == 1:
            return "[" + " ".join("..." if i is None else item(a[i]) for i in idx) + "]"
        sep = "\n" + " " * (depth + 1)
        parts = ["..." if i is None else rec(a[i], depth + 1) for i in idx]
        return "[" + sep.join(parts) + "]"

    return rec(arr, 0)


# -- PrintV2 ---------------------------------------------------------------------------
def _print_infer(specs, attrs):
    return []


def _resolve_stream(stream: Any):
    if stream == "stdout":
        return sys.stdout
    if stream == "stderr":
        return sys.stderr
    return stream


def _print_kernel(*values, template, sep, end, output_stream, summarize):
    parts = []
    for kind, payload in template:
        if kind == "lit":
            parts.append(payload)
        else:
            parts.append(format_array(np.asarray(values[payload]), summarize))
    text = sep.join(parts) + end
    stream = _resolve_stream(output_stream)
    if isinstance(stream, str):  # "file:///path" appends, as tf.print does
        path = stream[len("file://"):] if stream.startswith("file://") else stream
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)
    else:
        stream.write(text)
        flush = getattr(stream, "flush", None)
        if flush is not None:
            flush()


register("PrintV2", _print_infer, cpu=_print_kernel, public_name="print", default_name="PrintV2",
         stateful=True)


def print(*inputs: Any, output_stream: Any = None, summarize: int = 3, sep: str = " ",  # noqa: A001
          end: str = "\n", name: Optional[str] = None) -> None:
    """Print values every time it runs, eagerly or inside a `jf.function`.

    Unlike `tf.print` (stderr), the default stream is the *current* `sys.stdout`, looked up
    at run time so notebooks and captured output see it. `output_stream` may be
    `sys.stdout`, `sys.stderr`, any file-like object, or `"file:///path"` to append.

    >>> jf.print('x =', jf.constant([1, 2]))
    x = [1 2]
    """
    if output_stream is None or output_stream is sys.__stdout__ or output_stream is sys.stdout:
        stream: Any = "stdout"
    elif output_stream is sys.stderr or output_stream is sys.__stderr__:
        stream = "stderr"
    elif isinstance(output_stream, str) or callable(getattr(output_stream, "write", None)):
        stream = output_stream
    else:
        raise TypeError(f"output_stream: expected sys.stdout, sys.stderr, a file-like object with "
                        f"a write() method or a 'file:///path' string; got {output_stream!r}")
    if summarize is None:
        summarize = 3
    if not isinstance(summarize, (int, np.integer)) or isinstance(summarize, bool):
        raise TypeError(f"summarize: expected an int (-1 prints every element); got {summarize!r}")
    template: List[tuple] = []
    tensors: List[Tensor] = []
    for value in inputs:
        if isinstance(value, (Tensor, TensorConvertible)):
            template.append(("tensor", len(tensors)))
            tensors.append(convert_to_tensor(value))
        else:  # Python values print as at trace time: primitives by str, objects by repr
            text = str(value) if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
            template.append(("lit", text))
    apply("PrintV2", tensors, {"template": tuple(template), "sep": sep, "end": end,
                               "output_stream": stream, "summarize": summarize}, name=name)


# -- EagerPyFunc -----------------------------------------------------------------------
def _py_func_infer(specs, attrs):
    return [(None, dt) for dt in attrs["Tout"]]


def _py_func_kernel(*arrays, func, Tout, single):  # noqa: N803 - TF attr name
    args = [EagerTensor(np.asarray(a), _dt.as_dtype(np.asarray(a).dtype)) for a in arrays]
    result = func(*args)
    if not Tout:
        return ()
    results = [result] if single else list(result)
    if len(results) != len(Tout):
        raise ValueError(f"py_function: {getattr(func, '__name__', func)} returned {len(results)} "
                         f"values; Tout declares {len(Tout)}")
    out = []
    for value, dt in zip(results, Tout):
        tensor = convert_to_tensor(value, dtype_hint=dt)
        arr = tensor._host() if isinstance(tensor, EagerTensor) else np.asarray(tensor._value)
        if tensor._dtype is not dt:
            raise TypeError(f"py_function: {getattr(func, '__name__', func)} returned dtype "
                            f"{tensor._dtype.name}; Tout declares {dt.name}")
        out.append(arr)
    return out[0] if len(out) == 1 else tuple(out)


register("EagerPyFunc", _py_func_infer, cpu=_py_func_kernel, public_name="py_function",
         default_name="EagerPyFunc", stateful=True)


_NOT_GIVEN = object()


def py_function(func: Optional[Callable] = None, inp: Optional[Sequence[Any]] = None, Tout: Any = _NOT_GIVEN,  # noqa: N803
                name: Optional[str] = None):
    """Run the Python callable `func` on every call, eagerly or inside a `jf.function`.

    `func` receives eager tensors; `Tout` is a dtype, a list of dtypes, or `[]`/None.

    >>> jf.py_function(lambda x: x * 2, [jf.constant(3)], Tout=jf.int32).numpy()
    np.int32(6)

    Without `inp` it is a decorator, as in TF: `@jf.py_function(Tout=jf.float32)`.

    >>> @jf.py_function(Tout=jf.float32)
    ... def double(x):
    ...     return x * 2
    >>> double(jf.constant(1.0)).numpy()
    np.float32(2.0)
    """
    if Tout is _NOT_GIVEN:
        raise TypeError("py_function: missing the argument Tout (a dtype, a list of dtypes, or None)")
    if inp is None:  # decorator form
        def decorate(fn: Callable) -> Callable:
            if not callable(fn):
                raise TypeError(f"func: expected a callable; got {type(fn).__name__}")

            @functools.wraps(fn)
            def wrapper(*args: Any) -> Any:
                return py_function(fn, list(args), Tout, name=name)
            return wrapper
        return decorate(func) if func is not None else decorate
    if not callable(func):
        raise TypeError(f"func: expected a callable; got {type(func).__name__}")
    single = not isinstance(Tout, (list, tuple)) and Tout is not None
    touts = [] if Tout is None else [_dt.as_dtype(Tout)] if single else [_dt.as_dtype(t) for t in Tout]
    tensors = [convert_to_tensor(x) for x in inp]
    outs = apply("EagerPyFunc", tensors, {"func": func, "Tout": tuple(touts), "single": single}, name=name)
    if single:
        return outs[0]
    return list(outs) if touts else None
