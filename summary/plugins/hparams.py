"""HParams (`hparams` plugin) for `SummaryWriter.add_hparams`, as PyTorch writes
it: an `Experiment` (hparam and metric infos), a `SessionStartInfo` with this
trial's values and a `SessionEndInfo`, each an empty tensor whose metadata
carries the `HParamsPluginData`; the metric values follow as scalars.

The TF-style API (`jf.summary.hparams`) uses TensorBoard's own
`tensorboard.plugins.hparams.summary_v2` builders instead.
"""

from __future__ import annotations

import numbers
from typing import Any, Mapping

import numpy as np
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import metadata as hp_md
from tensorboard.plugins.hparams import plugin_data_pb2
from google.protobuf import struct_pb2

from jitflow.summary.values import as_numpy, describe

_NULL_TENSOR = hp_md.NULL_TENSOR  # TensorBoard's own placeholder tensor for hparams values


def _scalar_of(value: Any) -> Any:
    """numpy scalars, 0-d arrays and one-element tensors as Python values."""
    if isinstance(value, (bool, str, int, float)):
        return value
    if isinstance(value, (np.generic, np.ndarray)) or hasattr(value, "numpy") or hasattr(value, "__array__"):
        a = as_numpy(value, "value")
        if a.size == 1:
            return a.reshape(()).item()
    return value


def _hparam(name: str, value: Any, ssi: plugin_data_pb2.SessionStartInfo) -> api_pb2.HParamInfo | None:
    value = _scalar_of(value)
    if value is None:
        return None
    if isinstance(value, bool):
        ssi.hparams[name].bool_value = value
        return api_pb2.HParamInfo(name=name, type=api_pb2.DATA_TYPE_BOOL)
    if isinstance(value, str):
        ssi.hparams[name].string_value = value
        return api_pb2.HParamInfo(name=name, type=api_pb2.DATA_TYPE_STRING)
    if isinstance(value, numbers.Real):
        ssi.hparams[name].number_value = float(value)
        return api_pb2.HParamInfo(name=name, type=api_pb2.DATA_TYPE_FLOAT64)
    if callable(value):  # e.g. an optimizer class: recorded by name, as tensorboardX does
        ssi.hparams[name].string_value = getattr(value, "__name__", str(value))
        return api_pb2.HParamInfo(name=name, type=api_pb2.DATA_TYPE_STRING)
    raise TypeError(f"hparam_dict[{name!r}]: expected a bool, str, number or scalar tensor, got {describe(value)}")


def _domain(name: str, values: Any, info: api_pb2.HParamInfo) -> None:
    if not isinstance(values, (list, tuple)) or not values:
        raise TypeError(f"hparam_domain_discrete[{name!r}]: expected a non-empty list of values, "
                        f"got {describe(values)}")
    kinds: Mapping[int, Any] = {api_pb2.DATA_TYPE_BOOL: bool, api_pb2.DATA_TYPE_STRING: str,
                                api_pb2.DATA_TYPE_FLOAT64: numbers.Real}
    want = kinds.get(info.type)
    lv = struct_pb2.ListValue()
    for v in values:
        if want is None or not isinstance(v, want) or (want is numbers.Real and isinstance(v, bool)):
            raise TypeError(f"hparam_domain_discrete[{name!r}]: expected values of the hparam's type, "
                            f"got {describe(v)}")
        if info.type == api_pb2.DATA_TYPE_BOOL:
            lv.values.add(bool_value=v)
        elif info.type == api_pb2.DATA_TYPE_STRING:
            lv.values.add(string_value=v)
        else:
            lv.values.add(number_value=float(v))
    info.domain_discrete.CopyFrom(lv)


def _value(tag: str, data: plugin_data_pb2.HParamsPluginData) -> summary_pb2.Summary.Value:
    return summary_pb2.Summary.Value(tag=tag, metadata=hp_md.create_summary_metadata(data), tensor=_NULL_TENSOR)


def hparams_values(hparam_dict: Mapping[str, Any], metric_dict: Mapping[str, Any],
                   hparam_domain_discrete: Mapping[str, Any] | None = None,
                   ) -> tuple[list[summary_pb2.Summary.Value], dict[str, float]]:
    """(experiment, session start, session end) values and the metric values to write."""
    if not isinstance(hparam_dict, Mapping) or not isinstance(metric_dict, Mapping):
        raise TypeError("hparam_dict and metric_dict: expected dicts, got "
                        f"{describe(hparam_dict)} and {describe(metric_dict)}")
    if hparam_domain_discrete is not None and not isinstance(hparam_domain_discrete, Mapping):
        raise TypeError(f"hparam_domain_discrete: expected a dict or None, got {describe(hparam_domain_discrete)}")
    ssi = plugin_data_pb2.SessionStartInfo()
    infos = []
    for name, value in hparam_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"hparam_dict: expected str keys, got {describe(name)}")
        info = _hparam(name, value, ssi)
        if info is None:
            continue
        if hparam_domain_discrete and name in hparam_domain_discrete:
            _domain(name, hparam_domain_discrete[name], info)
        infos.append(info)
    metrics = {}
    for name, value in metric_dict.items():
        if not isinstance(name, str):
            raise TypeError(f"metric_dict: expected str keys, got {describe(name)}")
        v = _scalar_of(value)
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise TypeError(f"metric_dict[{name!r}]: expected a number, got {describe(value)}")
        metrics[name] = float(v)
    exp = api_pb2.Experiment(hparam_infos=infos,
                             metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=k)) for k in metrics])
    values = [
        _value(hp_md.EXPERIMENT_TAG, plugin_data_pb2.HParamsPluginData(experiment=exp)),
        _value(hp_md.SESSION_START_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_start_info=ssi)),
        _value(hp_md.SESSION_END_INFO_TAG, plugin_data_pb2.HParamsPluginData(
            session_end_info=plugin_data_pb2.SessionEndInfo(status=api_pb2.STATUS_SUCCESS))),
    ]
    return values, metrics
