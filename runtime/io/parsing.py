"""Parsing serialized `tf.train.Example`s: `parse_single_example`, `parse_example` and the
feature specs `FixedLenFeature`, `VarLenFeature`, `FixedLenSequenceFeature`.

One graph op (TF's `ParseExampleV2`) parses a scalar or a batch of records with protobuf's
C parser. `VarLenFeature` gives a `jf.sparse.SparseTensor`, exactly TF's: for one record
indices `[[0], [1], ...]` and dense_shape `[n]`; for a batch, indices `[[record, j], ...]`
and dense_shape `[batch, max_n]` (`jf.sparse.to_dense` gives the zero-padded form).
"""
from __future__ import annotations

from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from jitflow.runtime.core import dtypes as _dt
from jitflow.runtime.core.errors import InvalidArgumentError
from jitflow.runtime.ops.constant_op import convert_to_tensor
from jitflow.runtime.ops.infer import check_kind
from jitflow.runtime.ops.registry import apply, register
from jitflow.runtime.core.tensor import Tensor
from jitflow.runtime.io import example_pb
from jitflow.runtime.io.file_ops import as_bytes
from jitflow.runtime.sparse.sparse_tensor import SparseTensor

_ALLOWED = (_dt.int64, _dt.float32, _dt.string)
_LIST_FIELD = {_dt.int64: "int64_list", _dt.float32: "float_list", _dt.string: "bytes_list"}
_KIND_NAME = {"int64_list": "int64", "float_list": "float", "bytes_list": "string"}


class FixedLenFeature(NamedTuple):
    """A feature with a fixed number of values, parsed to a tensor of `shape` (TF's `tf.io.FixedLenFeature`).

    >>> spec = {"label": jf.io.FixedLenFeature([], jf.int64, default_value=0)}
    """
    shape: Any
    dtype: Any
    default_value: Any = None


class VarLenFeature(NamedTuple):
    """A feature with any number of values, parsed to a `jf.sparse.SparseTensor` (TF's).

    >>> spec = {"tags": jf.io.VarLenFeature(jf.string)}
    """
    dtype: Any


class FixedLenSequenceFeature(NamedTuple):
    """A feature holding a sequence of items of `shape`: parsed to `[n, *shape]` (TF's name).

    >>> spec = {"frames": jf.io.FixedLenSequenceFeature([2], jf.float32, allow_missing=True)}
    """
    shape: Any
    dtype: Any
    allow_missing: bool = False
    default_value: Any = None


# One flat, hashable description per feature: (key, kind, dtype, shape, default).
_Spec = Tuple[str, str, _dt.DType, Tuple[int, ...], Any]


def _normalise(features: Dict[str, Any]) -> List[_Spec]:
    if not isinstance(features, dict) or not features:
        raise TypeError(f"features: expected a non-empty dict of feature name -> FixedLenFeature / "
                        f"VarLenFeature / FixedLenSequenceFeature; got {features!r}")
    specs: List[_Spec] = []
    for key in sorted(features):  # TF orders its outputs by key too
        f = features[key]
        if not isinstance(key, str):
            raise TypeError(f"features: keys must be str; got {key!r}")
        if not isinstance(f, (FixedLenFeature, VarLenFeature, FixedLenSequenceFeature)):
            raise TypeError(f"features[{key!r}]: expected FixedLenFeature, VarLenFeature or "
                            f"FixedLenSequenceFeature; got {f!r}")
        dtype = _dt.as_dtype(f.dtype)
        if dtype not in _ALLOWED:
            raise ValueError(f"features[{key!r}]: dtype must be jf.int64, jf.float32 or jf.string "
                             f"(what an Example stores); got {dtype.name}")
        if isinstance(f, VarLenFeature):
            specs.append((key, "var", dtype, (), None))
            continue
        shape = tuple(int(d) for d in (f.shape if f.shape is not None else ()))
        if any(d < 0 for d in shape):
            raise ValueError(f"features[{key!r}]: shape must be fully defined; got {list(f.shape)}")
        default = None
        if f.default_value is not None:
            default = np.asarray(f.default_value, dtype=dtype.as_numpy_dtype)
            n = int(np.prod(shape)) if shape else 1
            if isinstance(f, FixedLenFeature):
                if default.size == 1 and n != 1:
                    default = np.full(shape, default.reshape(-1)[0], dtype=default.dtype)
                if default.size != n:
                    raise ValueError(f"features[{key!r}]: default_value has {default.size} values; "
                                     f"shape {list(shape)} needs {n}")
                default = default.reshape(shape)
        if isinstance(f, FixedLenSequenceFeature):
            specs.append((key, "seq", dtype, shape, (bool(f.allow_missing), default)))
        else:
            specs.append((key, "fixed", dtype, shape, default))
    return specs


def _values(feature_map, key: str, kind: str, dtype: _dt.DType) -> Optional[np.ndarray]:
    """The values stored under `key`, or None when the Example lacks the feature."""
    if key not in feature_map:
        return None
    return _feature_values(feature_map[key], key, dtype)


def _feature_values(feature, key: str, dtype: _dt.DType) -> np.ndarray:
    which = feature.WhichOneof("kind")
    want = _LIST_FIELD[dtype]
    if which is None:  # an empty Feature: zero values of any type
        return np.empty(0, dtype=dtype.as_numpy_dtype)
    if which != want:
        raise InvalidArgumentError(f"Key: {key}.  Data types don't match. Data type: "
                                   f"{_KIND_NAME[which]} but expected type: {_KIND_NAME[want]}")
    raw = getattr(feature, which).value
    if dtype is _dt.string:
        arr = np.empty(len(raw), dtype=object)
        arr[:] = list(raw)
        return arr
    return np.array(raw, dtype=dtype.as_numpy_dtype)


def _parse_one(data: bytes, specs: Sequence[_Spec], index: Optional[int]) -> List[np.ndarray]:
    where = "" if index is None else f" (record {index} of the batch)"
    try:
        example = example_pb.message_class("Example").FromString(data)
    except Exception as e:
        raise InvalidArgumentError(f"Could not parse example input{where}: {e}; got "
                                   f"{len(data)} bytes") from None
    return _parse_features(example.features.feature, specs, where)


def _parse_features(fmap, specs: Sequence[_Spec], where: str) -> List[np.ndarray]:
    out = []
    for key, kind, dtype, shape, default in specs:
        values = _values(fmap, key, kind, dtype)
        if kind == "var":
            out.append(values if values is not None else np.empty(0, dtype=dtype.as_numpy_dtype))
        elif kind == "fixed":
            if values is None:
                if default is None:
                    raise InvalidArgumentError(f"Feature: {key} (data type: {dtype.name}) is required "
                                               f"but could not be found{where}.")
                out.append(default)
                continue
            n = int(np.prod(shape)) if shape else 1
            if values.size != n:
                raise InvalidArgumentError(f"Key: {key}.  Can't parse serialized Example{where}: "
                                           f"shape {list(shape)} needs {n} values; got {values.size}")
            out.append(values.reshape(shape))
        else:  # "seq"
            allow_missing, _ = default
            if values is None:
                if not allow_missing:
                    raise InvalidArgumentError(f"Feature: {key} (data type: {dtype.name}) is required "
                                               f"but could not be found{where} (pass allow_missing=True).")
                values = np.empty(0, dtype=dtype.as_numpy_dtype)
            item = int(np.prod(shape)) if shape else 1
            if item == 0 or values.size % item:
                raise InvalidArgumentError(f"Key: {key}.  Number of values {values.size} is not a "
                                           f"multiple of the item size {item} (shape {list(shape)}){where}")
            out.append(values.reshape((values.size // item,) + shape))
    return out


def _pad_stack(arrays: List[np.ndarray], fill: Any) -> np.ndarray:
    n = max((a.shape[0] for a in arrays), default=0)
    inner = arrays[0].shape[1:] if arrays else ()
    out = np.empty((len(arrays), n) + inner, dtype=arrays[0].dtype if arrays else np.float32)
    out[...] = fill
    for i, a in enumerate(arrays):
        out[i, :a.shape[0]] = a
    return out


def _sparse_1d(values: np.ndarray) -> List[np.ndarray]:
    """One record's VarLenFeature as TF's SparseTensor components: indices [n, 1], values, shape [n]."""
    n = values.shape[0]
    return [np.arange(n, dtype=np.int64).reshape(n, 1), values, np.array([n], dtype=np.int64)]


def _sparse_rows(rows: List[np.ndarray], dtype: _dt.DType) -> List[np.ndarray]:
    """Per-row value lists as one rank-2 SparseTensor: indices [[row, j]], dense_shape [rows, max_n]."""
    lengths = np.array([r.shape[0] for r in rows], dtype=np.int64)
    return _sparse_flat([v for r in rows for v in r], lengths, dtype)


def _sparse_flat(flat_values: list, lengths: np.ndarray, dtype: _dt.DType) -> List[np.ndarray]:
    """Rows given as one flat value list and per-row counts, as SparseTensor components."""
    total = int(lengths.sum())
    row_ids = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    starts = np.cumsum(lengths) - lengths
    cols = np.arange(total, dtype=np.int64) - np.repeat(starts, lengths)
    if dtype is _dt.string:
        values = np.empty(total, dtype=object)
        if total:
            values[:] = flat_values
    else:
        values = np.array(flat_values, dtype=dtype.as_numpy_dtype)
    shape = np.array([len(lengths), int(lengths.max()) if len(lengths) else 0], dtype=np.int64)
    return [np.stack([row_ids, cols], axis=1).reshape(total, 2), values, shape]


def _expand_sparse(out: List[np.ndarray], specs: Sequence[_Spec]) -> List[np.ndarray]:
    flat: List[np.ndarray] = []
    for arr, spec in zip(out, specs):
        flat.extend(_sparse_1d(arr) if spec[1] == "var" else [arr])
    return flat


def _parse_kernel(serialized, specs, batched):
    if batched:
        out = _parse_batch(serialized, specs)
    else:
        out = _expand_sparse(_parse_one(as_bytes(serialized, "serialized"), specs, None), specs)
    return out[0] if len(out) == 1 else tuple(out)  # a one-output op returns the array itself


def _parse_batch(serialized, specs) -> List[np.ndarray]:
    """A batch: fixed-length features of every record go into one flat list and become one
    array (no per-record arrays); the others are parsed per record and padded."""
    flat = np.asarray(serialized, dtype=object).reshape(-1)
    parse = example_pb.message_class("Example").FromString
    n = len(flat)
    fixed = [(j, spec) for j, spec in enumerate(specs) if spec[1] == "fixed"]
    var = [(j, key, dtype, _LIST_FIELD[dtype]) for j, (key, kind, dtype, _, _) in enumerate(specs) if kind == "var"]
    other = [(j, spec) for j, spec in enumerate(specs) if spec[1] == "seq"]
    values: Dict[int, list] = {j: [] for j, _ in fixed}
    # VarLenFeatures: every record's values in one flat list, plus each record's count.
    var_values: Dict[int, list] = {j: [] for j, *_ in var}
    var_lengths: Dict[int, List[int]] = {j: [] for j, *_ in var}
    columns: Dict[int, List[np.ndarray]] = {j: [] for j, _ in other}
    # Per feature, once: (output slot, key, dtype, field name, value count, default values).
    plan = [(j, key, dtype, _LIST_FIELD[dtype], int(np.prod(shape)) if shape else 1, shape,
             None if default is None else default.reshape(-1).tolist())
            for j, (key, kind, dtype, shape, default) in fixed]
    other_specs = [spec for _, spec in other]
    for i, s in enumerate(flat):
        data = s if s.__class__ is bytes else as_bytes(s, "serialized")
        try:
            fmap = parse(data).features.feature
        except Exception as e:
            raise InvalidArgumentError(f"Could not parse example input (record {i} of the batch): {e}; got "
                                       f"{len(data)} bytes") from None
        for j, key, dtype, field, count, shape, default in plan:
            feature = fmap.get(key)
            which = feature.WhichOneof("kind") if feature is not None else None
            if which is None and (feature is None or (count and default is not None)):
                if default is None:
                    raise InvalidArgumentError(f"Feature: {key} (data type: {dtype.name}) is required "
                                               f"but could not be found (record {i} of the batch).")
                values[j].extend(default)
                continue
            if which != field and which is not None:
                raise InvalidArgumentError(f"Key: {key}.  Data types don't match. Data type: "
                                           f"{_KIND_NAME[which]} but expected type: {_KIND_NAME[field]}")
            raw = getattr(feature, which).value if which is not None else ()
            if len(raw) != count:
                raise InvalidArgumentError(f"Key: {key}.  Can't parse serialized Example (record {i} of the "
                                           f"batch): shape {list(shape)} needs {count} values; got {len(raw)}")
            values[j].extend(raw)
        for j, key, _dtype, field in var:
            feature = fmap.get(key)
            which = feature.WhichOneof("kind") if feature is not None else None
            if which is None:
                var_lengths[j].append(0)
                continue
            if which != field:
                raise InvalidArgumentError(f"Key: {key}.  Data types don't match. Data type: "
                                           f"{_KIND_NAME[which]} but expected type: {_KIND_NAME[field]}")
            raw = getattr(feature, which).value
            var_values[j].extend(raw)
            var_lengths[j].append(len(raw))
        if other:
            for (j, _), arr in zip(other, _parse_features(fmap, other_specs, f" (record {i} of the batch)")):
                columns[j].append(arr)
    out: List[Any] = [None] * len(specs)
    for j, (_key, _kind, dtype, shape, _default) in fixed:
        if dtype is _dt.string:
            arr = np.empty(len(values[j]), dtype=object)
            arr[:] = values[j]
        else:
            arr = np.array(values[j], dtype=dtype.as_numpy_dtype)
        out[j] = arr.reshape((n,) + shape)
    for j, _key, dtype, _field in var:
        out[j] = _sparse_flat(var_values[j], np.array(var_lengths[j], dtype=np.int64), dtype)
    for j, (_key, kind, dtype, shape, default) in other:
        fill = b"" if dtype is _dt.string else 0
        if kind == "seq" and default[1] is not None and default[1].size:
            fill = default[1].reshape(-1)[0]
        column = columns[j]
        out[j] = _pad_stack(column, fill) if column else np.empty((0, 0) + shape, dtype=dtype.as_numpy_dtype)
    outputs: List[np.ndarray] = []
    for arr in out:
        outputs.extend(arr if isinstance(arr, list) else [arr])
    return outputs


def _parse_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "s", "serialized")
    batched = attrs["batched"]
    if dims is not None and len(dims) != (1 if batched else 0):
        what = "a 1-D (batched)" if batched else "a scalar"
        raise InvalidArgumentError(f"serialized must be {what} string tensor; got shape {list(dims)}")
    lead = (dims[0] if dims is not None else None,) if batched else ()
    out = []
    rank = 2 if batched else 1
    for _key, kind, dt, shape, _default in attrs["specs"]:
        if kind == "fixed":
            out.append((lead + shape, dt))
        elif kind == "var":
            out += _sparse_specs(rank, dt)
        else:
            out.append((lead + (None,) + shape, dt))
    return out


def _sparse_specs(rank: int, dtype: _dt.DType) -> List[Tuple[Tuple[Optional[int], ...], _dt.DType]]:
    return [((None, rank), _dt.int64), ((None,), dtype), ((rank,), _dt.int64)]


register("ParseExampleV2", _parse_infer, cpu=_parse_kernel, public_name="io.parse_example",
         default_name="ParseExampleV2")


def _group(specs: Sequence[_Spec], outs: Sequence[Tensor], sparse_dims: Tuple[Optional[int], ...]) -> List[Any]:
    """The op's flat outputs with each VarLenFeature's three components made one SparseTensor."""
    it = iter(outs)
    grouped: List[Any] = []
    for spec in specs:
        if spec[1] == "var":
            indices, values, shape = next(it), next(it), next(it)
            grouped.append(SparseTensor._make(indices, values, shape, sparse_dims))
        else:
            grouped.append(next(it))
    return grouped


def _parse(serialized: Any, features: Dict[str, Any], batched: bool, name: Optional[str]) -> Dict[str, Any]:
    specs = _normalise(features)
    records = convert_to_tensor(serialized, dtype=_dt.string)
    outs = apply("ParseExampleV2", [records], {"specs": tuple(specs), "batched": batched}, name=name)
    lead = (records._dims[0] if records._dims else None,) if batched else ()
    return {spec[0]: t for spec, t in zip(specs, _group(specs, outs, lead + (None,)))}


def parse_single_example(serialized: Any, features: Dict[str, Any], name: Optional[str] = None,
                         example_names: Any = None) -> Dict[str, Any]:
    """Parse one serialized `Example` into a dict of tensors (TF's `tf.io.parse_single_example`).

    `VarLenFeature`s come back as `jf.sparse.SparseTensor`s with 1-D indices, as TF's.

    >>> desc = {"image": jf.io.FixedLenFeature([], jf.string),
    ...         "label": jf.io.FixedLenFeature([], jf.int64)}
    >>> ds = jf.data.TFRecordDataset("train.tfrecords").map(
    ...     lambda s: jf.io.parse_single_example(s, desc))      # doctest: +SKIP
    """
    return _parse(serialized, features, False, name)


def parse_example(serialized: Any, features: Dict[str, Any], name: Optional[str] = None,
                  example_names: Any = None) -> Dict[str, Any]:
    """Parse a 1-D batch of serialized `Example`s; every output gains a leading batch dimension.

    `VarLenFeature`s are SparseTensors of dense shape `[batch, longest]`, indices `[record, j]`.

    Cheaper than `parse_single_example` per record: batch first, then parse
    (`ds.batch(64).map(lambda s: jf.io.parse_example(s, desc))`).

    >>> jf.io.parse_example(jf.constant([rec1, rec2]), desc)   # doctest: +SKIP
    """
    return _parse(serialized, features, True, name)


# -- SequenceExample ------------------------------------------------------------------------
def _parse_sequence_kernel(serialized, context_specs, sequence_specs):
    data = as_bytes(serialized, "serialized")
    try:
        seq = example_pb.message_class("SequenceExample").FromString(data)
    except Exception as e:
        raise InvalidArgumentError(f"Could not parse SequenceExample input: {e}; got {len(data)} bytes") from None
    out = _expand_sparse(_parse_features(seq.context.feature, context_specs, " (context)"), context_specs)
    lists = seq.feature_lists.feature_list
    for key, kind, dtype, shape, default in sequence_specs:
        steps = lists[key].feature if key in lists else None
        if steps is None:
            allow_missing = kind == "var" or default[0]
            if not allow_missing:
                raise InvalidArgumentError(f"Feature list: {key} (data type: {dtype.name}) is required but "
                                           "could not be found (pass allow_missing=True).")
            steps = []
        rows = [_feature_values(f, key, dtype) for f in steps]
        if kind == "var":
            out.extend(_sparse_rows(rows, dtype))
            continue
        item = int(np.prod(shape)) if shape else 1
        for t, r in enumerate(rows):
            if r.size != item:
                raise InvalidArgumentError(f"Key: {key}, Index: {t}.  Number of values {r.size} != expected "
                                           f"{item} for shape {list(shape)}")
        if rows:
            out.append(np.stack([r.reshape(shape) for r in rows]))
        else:
            out.append(np.empty((0,) + shape, dtype=dtype.as_numpy_dtype))
    return out[0] if len(out) == 1 else tuple(out)


def _parse_sequence_infer(specs, attrs):
    dims, dtype = specs[0]
    check_kind(dtype, "s", "serialized")
    if dims is not None and dims != ():
        raise InvalidArgumentError(f"serialized must be a scalar string tensor; got shape {list(dims)}")
    out: List[Any] = []
    for _key, kind, dt, shape, _default in attrs["context_specs"]:
        if kind == "var":
            out += _sparse_specs(1, dt)
        else:
            out.append(((shape if kind == "fixed" else (None,) + shape), dt))
    for _key, kind, dt, shape, _default in attrs["sequence_specs"]:
        if kind == "var":
            out += _sparse_specs(2, dt)
        else:
            out.append(((None,) + shape, dt))
    return out


register("ParseSequenceExampleV2", _parse_sequence_infer, cpu=_parse_sequence_kernel,
         public_name="io.parse_single_sequence_example", default_name="ParseSingleSequenceExample")


def parse_single_sequence_example(serialized: Any, context_features: Optional[Dict[str, Any]] = None,
                                  sequence_features: Optional[Dict[str, Any]] = None, example_name: Any = None,
                                  name: Optional[str] = None):
    """Parse one serialized `SequenceExample` into `(context, sequences)` dicts (TF's name).

    Sequence features are `FixedLenSequenceFeature`s (`[steps, *shape]`) or
    `VarLenFeature`s (SparseTensors of dense shape `[steps, max_n]`, as TF's).

    >>> context, seqs = jf.io.parse_single_sequence_example(
    ...     record, {"length": jf.io.FixedLenFeature([], jf.int64)},
    ...     {"frames": jf.io.FixedLenSequenceFeature([2], jf.float32)})       # doctest: +SKIP
    """
    ctx = _normalise(context_features) if context_features else []
    seq = _normalise(sequence_features) if sequence_features else []
    if not ctx and not seq:
        raise ValueError("parse_single_sequence_example: give context_features and/or sequence_features")
    for key, kind, _, _, _ in seq:
        if kind == "fixed":
            raise TypeError(f"sequence_features[{key!r}]: expected FixedLenSequenceFeature or VarLenFeature; "
                            "got FixedLenFeature")
    outs = apply("ParseSequenceExampleV2", [convert_to_tensor(serialized, dtype=_dt.string)],
                 {"context_specs": tuple(ctx), "sequence_specs": tuple(seq)}, name=name)
    n_ctx = sum(3 if s[1] == "var" else 1 for s in ctx)
    context = _group(ctx, outs[:n_ctx], (None,))
    sequences = _group(seq, outs[n_ctx:], (None, None))
    return ({s[0]: t for s, t in zip(ctx, context)}, {s[0]: t for s, t in zip(seq, sequences)})
