"""`jf.strings`: the string ops input pipelines reach for (TF's `tf.strings`).

String tensors hold bytes (numpy object arrays); every op here is a graph op, so it runs
inside `Dataset.map` and `jf.function`s.

    ds = jf.data.Dataset.from_tensor_slices(["3,1", "4,1"]).map(
        lambda s: jf.strings.to_number(jf.strings.split(s, ","), jf.int32))
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import broadcast_dims, check_kind
from jitflow.runtime.ops.io_ops import format_scalar
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.ops.io_ops import format_array


def _b(v: Any) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def _map_strings(fn, arr: np.ndarray, out_dtype=object) -> np.ndarray:
    flat = np.asarray(arr, dtype=object).reshape(-1)
    out = np.empty(flat.shape, dtype=out_dtype)
    for i, v in enumerate(flat):
        out[i] = fn(_b(v))
    return out.reshape(np.shape(arr))


def _strings(x: Any, what: str = "input") -> Tensor:
    t = convert_to_tensor(x, dtype=_dt.string) if not isinstance(x, Tensor) else x
    check_kind(t._dtype, "s", what)
    return t


# -- join --------------------------------------------------------------------------------
def _join_infer(specs, attrs):
    dims = ()
    for i, (d, dt) in enumerate(specs):
        check_kind(dt, "s", f"inputs[{i}]")
        dims = broadcast_dims(dims, d) if dims is not None and d is not None else None
    return [(dims, _dt.string)]


def _join_kernel(*inputs, separator):
    arrays = np.broadcast_arrays(*[np.asarray(a, dtype=object) for a in inputs])
    sep = _b(separator)
    out = np.empty(arrays[0].shape, dtype=object)
    for idx in np.ndindex(out.shape):
        out[idx] = sep.join(_b(a[idx]) for a in arrays)
    return out


register("StringJoin", _join_infer, cpu=_join_kernel, public_name="strings.join", default_name="StringJoin")


def join(inputs: Sequence[Any], separator: str = "", name: Optional[str] = None) -> Tensor:
    """Join string tensors elementwise (broadcasting) with `separator` (TF's `tf.strings.join`).

    >>> jf.strings.join(["a", jf.constant(["x", "y"])], separator="-").numpy()
    array([b'a-x', b'a-y'], dtype=object)
    """
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError(f"inputs: expected a non-empty list of string tensors; got {inputs!r}")
    return apply("StringJoin", [_strings(x, f"inputs[{i}]") for i, x in enumerate(inputs)],
                 {"separator": separator}, name=name)[0]


# -- split -------------------------------------------------------------------------------
def _split_infer(specs, attrs):
    dims, dt = specs[0]
    check_kind(dt, "s", "input")
    if dims is not None and dims != ():
        raise InvalidArgumentError(f"input: jf.strings.split splits a scalar string into a 1-D tensor "
                                   f"(jitflow has no ragged tensors); got shape {list(dims)}. Map it over "
                                   "the elements, e.g. with Dataset.map")
    return [((None,), _dt.string)]


def _split_kernel(x, sep, maxsplit):
    s = _b(np.asarray(x, dtype=object)[()])
    parts = s.split(None if sep is None else _b(sep), maxsplit)
    out = np.empty(len(parts), dtype=object)
    out[:] = parts
    return out


register("StringSplitV2", _split_infer, cpu=_split_kernel, public_name="strings.split",
         default_name="StringSplit")


def split(input: Any, sep: Optional[str] = None, maxsplit: int = -1, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Split a scalar string at `sep` (runs of whitespace when None), as TF's `tf.strings.split`.

    >>> jf.strings.split("a,b,,c", ",").numpy()
    array([b'a', b'b', b'', b'c'], dtype=object)
    """
    if sep == "":
        raise ValueError("sep: must be None (whitespace) or a non-empty string; got ''")
    return apply("StringSplitV2", [_strings(input)], {"sep": sep, "maxsplit": int(maxsplit)}, name=name)[0]


# -- to_number / length / as_string / format ------------------------------------------------
def _to_number_kernel(x, out_type):
    conv = float if out_type.is_floating else int

    def parse(b: bytes):
        try:
            return conv(b.decode("utf-8").strip())
        except ValueError:
            raise InvalidArgumentError(f"StringToNumberOp could not correctly convert string: {b!r} "
                                       f"to {out_type.name}") from None
    return _map_strings(parse, x, out_type.as_numpy_dtype)


def _to_number_infer(specs, attrs):
    check_kind(specs[0][1], "s", "input")
    return [(specs[0][0], attrs["out_type"])]


register("StringToNumber", _to_number_infer, cpu=_to_number_kernel, public_name="strings.to_number",
         default_name="StringToNumber")


def to_number(input: Any, out_type: Any = _dt.float32, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Parse numbers from strings (TF's `tf.strings.to_number`); a bad string raises.

    >>> jf.strings.to_number(["1.5", "2"]).numpy()
    array([1.5, 2. ], dtype=float32)
    """
    dt = _dt.as_dtype(out_type)
    if not (dt.is_floating or dt.is_integer):
        raise TypeError(f"out_type: expected a numeric dtype; got {dt.name}")
    return apply("StringToNumber", [_strings(input)], {"out_type": dt}, name=name)[0]


def _length_kernel(x, unit):
    fn = len if unit == "BYTE" else (lambda b: len(b.decode("utf-8")))
    return _map_strings(fn, x, np.int32)


register("StringLength", lambda specs, attrs: [(specs[0][0], _dt.int32)], cpu=_length_kernel,
         public_name="strings.length", default_name="StringLength")


def length(input: Any, unit: str = "BYTE", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Length of each string in bytes, or in characters with `unit="UTF8_CHAR"`.

    >>> jf.strings.length(["ab", "é"], unit="UTF8_CHAR").numpy()
    array([2, 1], dtype=int32)
    """
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"unit: expected 'BYTE' or 'UTF8_CHAR'; got {unit!r}")
    return apply("StringLength", [_strings(input)], {"unit": unit}, name=name)[0]


def _as_string_kernel(x, precision, fill, width):
    arr = np.asarray(x)

    def fmt(v):
        if precision >= 0 and isinstance(v, (np.floating, float)):
            text = f"{v:.{precision}f}"
        elif isinstance(v, (np.floating, float)):
            text = f"{v:f}"  # TF's default: %f
        else:
            text = format_scalar(v)
        return (text.rjust(width, fill or " ") if width > 0 else text).encode()
    out = np.empty(arr.shape, dtype=object)
    for idx in np.ndindex(arr.shape):
        out[idx] = fmt(arr[idx])
    return out


register("AsString", lambda specs, attrs: [(specs[0][0], _dt.string)], cpu=_as_string_kernel,
         public_name="strings.as_string", default_name="AsString")


def as_string(input: Any, precision: int = -1, scientific: bool = False, shortest: bool = False,  # noqa: A002
              width: int = -1, fill: str = "", name: Optional[str] = None) -> Tensor:
    """Numbers (or bools) as strings, floats as `%f` unless `precision` is given (TF's rule).

    >>> jf.strings.as_string(jf.constant([1, 22]), width=3, fill="0").numpy()
    array([b'001', b'022'], dtype=object)
    """
    return apply("AsString", [convert_to_tensor(input)], {"precision": int(precision), "fill": fill,
                                                           "width": int(width)}, name=name)[0]


def _format_kernel(*inputs, template, placeholder, summarize):
    parts = template.split(placeholder)
    text = parts[0]
    for value, rest in zip(inputs, parts[1:]):
        text += format_array(np.asarray(value), summarize) + rest
    out = np.empty((), dtype=object)
    out[()] = text.encode("utf-8")
    return out


register("StringFormat", lambda specs, attrs: [((), _dt.string)], cpu=_format_kernel,
         public_name="strings.format", default_name="StringFormat")


def format(template: str, inputs: Any, placeholder: str = "{}", summarize: int = 3,  # noqa: A001
           name: Optional[str] = None) -> Tensor:
    """Fill `{}` placeholders with tensors printed as `jf.print` prints them (TF's `tf.strings.format`).

    >>> jf.strings.format("x={}", [jf.constant([1, 2])]).numpy()
    b'x=[1 2]'
    """
    values = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if template.count(placeholder) != len(values):
        raise ValueError(f"template: has {template.count(placeholder)} placeholders {placeholder!r} but "
                         f"{len(values)} inputs were given")
    return apply("StringFormat", [convert_to_tensor(v) for v in values],
                 {"template": template, "placeholder": placeholder, "summarize": summarize}, name=name)[0]


def _case_kernel(x, upper):
    return _map_strings(bytes.upper if upper else bytes.lower, x)


register("StringCase", lambda specs, attrs: [specs[0]], cpu=_case_kernel, public_name="strings.lower",
         default_name="StringLower")


def lower(input: Any, encoding: str = "", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """ASCII lower case (TF's `tf.strings.lower`).

    >>> jf.strings.lower("AbC").numpy()
    b'abc'
    """
    return apply("StringCase", [_strings(input)], {"upper": False}, name=name)[0]


def upper(input: Any, encoding: str = "", name: Optional[str] = None) -> Tensor:  # noqa: A002
    """ASCII upper case (TF's `tf.strings.upper`).

    >>> jf.strings.upper(["abc", "dé"]).numpy()
    array([b'ABC', b'D\xc3\xa9'], dtype=object)
    """
    return apply("StringCase", [_strings(input)], {"upper": True}, name=name)[0]


register("StringStrip", lambda specs, attrs: [specs[0]], cpu=lambda x: _map_strings(bytes.strip, x),
         public_name="strings.strip", default_name="StringStrip")


def strip(input: Any, name: Optional[str] = None) -> Tensor:  # noqa: A002
    """Remove leading and trailing whitespace (TF's `tf.strings.strip`).

    >>> jf.strings.strip("  a ").numpy()
    b'a'
    """
    return apply("StringStrip", [_strings(input)], name=name)[0]


def _regex_kernel(x, pattern, rewrite, replace_global):
    import re
    rx = re.compile(_b(pattern))
    rw = _b(rewrite).replace(b"\\", b"\\\\")
    for i in range(10):  # RE2 writes groups as \1; Python too, after un-escaping above
        rw = rw.replace(b"\\\\" + str(i).encode(), b"\\" + str(i).encode())
    return _map_strings(lambda s: rx.sub(rw, s, count=0 if replace_global else 1), x)


register("StaticRegexReplace", lambda specs, attrs: [specs[0]], cpu=_regex_kernel,
         public_name="strings.regex_replace", default_name="StaticRegexReplace")


def regex_replace(input: Any, pattern: str, rewrite: str, replace_global: bool = True,  # noqa: A002
                  name: Optional[str] = None) -> Tensor:
    """Replace matches of `pattern` with `rewrite` (`\\1` for groups), as TF's `tf.strings.regex_replace`.

    >>> jf.strings.regex_replace("a1b22", r"[0-9]+", "#").numpy()
    b'a#b#'
    """
    return apply("StaticRegexReplace", [_strings(input)], {"pattern": pattern, "rewrite": rewrite,
                                                          "replace_global": bool(replace_global)},
                 name=name)[0]


__all__ = ["as_string", "format", "join", "length", "lower", "regex_replace", "split", "strip",
           "to_number", "upper"]
