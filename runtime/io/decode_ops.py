"""Decoding raw bytes and CSV lines: `decode_raw`, `decode_csv` (TF's `DecodeRaw`, `DecodeCSV`).

Both turn records read by `TFRecordDataset` / `TextLineDataset` into numbers inside
`Dataset.map`.
"""
from __future__ import annotations

import csv
from typing import Any, List, Optional, Sequence

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import check_kind
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor


def _decode_raw_kernel(input_bytes, out_type, little_endian, fixed_length):
    dt = np.dtype(out_type.as_numpy_dtype).newbyteorder("<" if little_endian else ">")
    arr = np.asarray(input_bytes, dtype=object)
    rows = []
    for b in arr.reshape(-1):
        b = b.encode("utf-8") if isinstance(b, str) else bytes(b)
        if fixed_length is not None:
            b = b[:fixed_length].ljust(fixed_length, b"\x00")
        if len(b) % dt.itemsize:
            raise InvalidArgumentError(f"decode_raw: input to DecodeRaw has length {len(b)} that is not a "
                                       f"multiple of {dt.itemsize}, the size of {out_type.name}")
        rows.append(np.frombuffer(b, dtype=dt).astype(out_type.as_numpy_dtype))
    if arr.ndim == 0:
        return rows[0]
    n = {r.size for r in rows}
    if len(n) > 1:
        raise InvalidArgumentError(f"decode_raw: all inputs must decode to the same number of values; got "
                                   f"{sorted(n)} (pass fixed_length)")
    width = rows[0].size if rows else 0
    return np.stack(rows).reshape(arr.shape + (width,)) if rows else np.empty(arr.shape + (0,), out_type.as_numpy_dtype)


def _decode_raw_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "s", "input_bytes")
    return [(None if dims is None else dims + (None,), attrs["out_type"])]


register("DecodeRaw", _decode_raw_infer, cpu=_decode_raw_kernel, public_name="io.decode_raw",
         default_name="DecodeRaw")


def decode_raw(input_bytes: Any, out_type: Any, little_endian: bool = True, fixed_length: Optional[int] = None,
               name: Optional[str] = None) -> Tensor:
    """Reinterpret the bytes of each string as a vector of `out_type` (TF's `tf.io.decode_raw`).

    >>> jf.io.decode_raw(np.arange(3, dtype=np.float32).tobytes(), jf.float32).numpy()
    array([0., 1., 2.], dtype=float32)
    """
    dt = _dt.as_dtype(out_type)
    if dt.is_string:
        raise TypeError("out_type: expected a numeric dtype; got string")
    return apply("DecodeRaw", [convert_to_tensor(input_bytes, dtype=_dt.string)],
                 {"out_type": dt, "little_endian": bool(little_endian),
                  "fixed_length": None if fixed_length is None else int(fixed_length)}, name=name)[0]


def _decode_csv_kernel(records, defaults, dtypes, field_delim, use_quote_delim, na_value, select_cols):
    arr = np.asarray(records, dtype=object)
    outs = [np.empty(arr.shape, dtype=d.as_numpy_dtype) for d in dtypes]
    for idx in np.ndindex(arr.shape):
        line = arr[idx]
        line = line.decode("utf-8") if isinstance(line, bytes) else str(line)
        if use_quote_delim:
            fields = next(csv.reader([line], delimiter=field_delim)) if line else [""]
        else:
            fields = line.split(field_delim)
        if select_cols is not None:
            try:
                fields = [fields[c] for c in select_cols]
            except IndexError:
                raise InvalidArgumentError(f"decode_csv: record {line!r} has {len(fields)} fields; "
                                           f"select_cols asks for column {max(select_cols)}") from None
        if len(fields) != len(dtypes):
            raise InvalidArgumentError(f"decode_csv: expect {len(dtypes)} fields but have {len(fields)} in "
                                       f"record {line!r}")
        for k, (text, dt, default) in enumerate(zip(fields, dtypes, defaults)):
            if text == "" or (na_value and text == na_value):
                if default is None:
                    raise InvalidArgumentError(f"decode_csv: field {k} is required but missing in record {line!r}")
                outs[k][idx] = default
                continue
            try:
                outs[k][idx] = text.encode("utf-8") if dt.is_string else (
                    float(text) if dt.is_floating else int(text))
            except ValueError:
                raise InvalidArgumentError(f"decode_csv: field {k} in record {line!r} is not a valid "
                                           f"{dt.name}: {text!r}") from None
    return outs[0] if len(outs) == 1 else tuple(outs)


def _decode_csv_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "s", "records")
    return [(dims, d) for d in attrs["dtypes"]]


register("DecodeCSV", _decode_csv_infer, cpu=_decode_csv_kernel, public_name="io.decode_csv",
         default_name="DecodeCSV")


def decode_csv(records: Any, record_defaults: Sequence[Any], field_delim: str = ",", use_quote_delim: bool = True,
               name: Optional[str] = None, na_value: str = "", select_cols: Optional[List[int]] = None) -> List[Tensor]:
    """Split CSV lines into one tensor per column (TF's `tf.io.decode_csv`).

    Each entry of `record_defaults` gives a column's dtype and its default: a value (used
    for empty fields), or a dtype / empty list for a required column.

    >>> lines = jf.data.TextLineDataset("data.csv").skip(1)          # doctest: +SKIP
    >>> ds = lines.map(lambda l: jf.io.decode_csv(l, [[0.0], [0], [""]]))   # doctest: +SKIP
    """
    defaults: List[Any]  # a column's default value, or None for a required column
    dtypes, defaults = [], []
    for i, d in enumerate(record_defaults):
        if isinstance(d, _dt.DType) or (isinstance(d, (list, tuple)) and len(d) == 0):
            dtypes.append(d if isinstance(d, _dt.DType) else _dt.float32)
            defaults.append(None)
            continue
        value = d[0] if isinstance(d, (list, tuple)) else d
        if hasattr(value, "numpy"):
            value = value.numpy()
        if isinstance(value, str):
            value = value.encode("utf-8")
        if isinstance(value, bytes):
            dt = _dt.string
        elif isinstance(value, (bool, int, float)):
            dt = _dt.python_scalar_dtype(value)  # TF's inference: 0 -> int32, 0.0 -> float32
        else:
            value = np.asarray(value).reshape(-1)[0]
            dt = _dt.as_dtype(np.asarray(value).dtype)
        if dt not in (_dt.int32, _dt.int64, _dt.float32, _dt.float64, _dt.string):
            raise TypeError(f"record_defaults[{i}]: expected an int, float or string default; got {d!r}")
        dtypes.append(dt)
        defaults.append(value)
    if len(field_delim) != 1:
        raise ValueError(f"field_delim: expected one character; got {field_delim!r}")
    outs = apply("DecodeCSV", [convert_to_tensor(records, dtype=_dt.string)],
                 {"defaults": tuple(defaults), "dtypes": tuple(dtypes), "field_delim": field_delim,
                  "use_quote_delim": bool(use_quote_delim), "na_value": na_value,
                  "select_cols": None if select_cols is None else tuple(select_cols)}, name=name)
    return list(outs)
