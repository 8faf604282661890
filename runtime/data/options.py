"""`jf.data.Options`: pipeline-wide settings, set with `Dataset.with_options` (TF's `tf.data.Options`).

Every TF field is accepted with TF's name, type check and default (None: "TF's default").
What jitflow honours (the rest are accepted so TF code runs; jitflow has no graph
rewriting, so the optimisation switches have nothing to switch):

* `deterministic`: the default order of `map(num_parallel_calls=...)` when its own
  `deterministic` argument is None (False: finished elements first).
* `threading.private_threadpool_size`: caps the threads of every parallel map of the
  pipeline (AUTOTUNE included). (A parallel interleave keeps one producer per open input:
  its `cycle_length` is what bounds it.)
* `autotune.enabled=False`: `prefetch(AUTOTUNE)` keeps a single element ahead instead of
  jitflow's default of two (TF's untuned start value).

Accepted, not honoured: `threading.max_intra_op_parallelism` (jitflow's kernels are
single-threaded per op already), `autotune.cpu_budget/ram_budget/autotune_algorithm`,
every `experimental_optimization.*` switch, `experimental_distribute.*`,
`experimental_slack`, `experimental_external_state_policy`, `experimental_warm_start`,
`experimental_symbolic_checkpoint`.
"""
from __future__ import annotations

import enum
from typing import Any, Dict, Tuple


class AutoShardPolicy(enum.IntEnum):
    """How a multi-worker input pipeline is split (TF's `tf.data.experimental.AutoShardPolicy`).

    >>> jf.data.experimental.AutoShardPolicy.DATA
    <AutoShardPolicy.DATA: 2>
    """
    OFF = -1
    AUTO = 0
    FILE = 1
    DATA = 2
    HINT = 3


class ExternalStatePolicy(enum.IntEnum):
    """What to do with external state when saving a pipeline (TF's enum).

    >>> jf.data.experimental.ExternalStatePolicy.WARN
    <ExternalStatePolicy.WARN: 0>
    """
    WARN = 0
    IGNORE = 1
    FAIL = 2


class _OptionsBase:
    """Fields declared in `_FIELDS` (name -> (type, default or None)); anything else is refused."""

    _FIELDS: Dict[str, Tuple[Any, Any]] = {}

    def __init__(self) -> None:
        values: Dict[str, Any] = {}
        object.__setattr__(self, "_values", values)
        for name, (kind, _) in self._FIELDS.items():
            if isinstance(kind, type) and issubclass(kind, _OptionsBase):
                values[name] = kind()

    def __getattr__(self, name: str) -> Any:
        fields = type(self)._FIELDS
        if name not in fields:
            raise AttributeError(f"{type(self).__name__} has no option {name!r}; options: {sorted(fields)}")
        return self._values.get(name, fields[name][1])

    def __setattr__(self, name: str, value: Any) -> None:
        fields = type(self)._FIELDS
        if name not in fields:
            raise AttributeError(f"Cannot set the property {name} on {type(self).__name__}.")
        kind = fields[name][0]
        if value is not None and not _fits(value, kind):
            raise TypeError(f"{type(self).__name__}.{name}: expected {_kind_name(kind)} or None; got "
                            f"{type(value).__name__} {value!r}")
        if isinstance(kind, type) and issubclass(kind, enum.Enum) and value is not None:
            value = kind(value)
        self._values[name] = value

    def _set_fields(self) -> Dict[str, Any]:
        return {k: v for k, v in self._values.items() if v is not None and not isinstance(v, _OptionsBase)}

    def _merge_into(self, target: "_OptionsBase") -> None:
        for name, value in self._values.items():
            if isinstance(value, _OptionsBase):
                value._merge_into(target._values[name])
            elif value is not None:
                target._values[name] = value

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and other._values == self._values

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in self._values.items() if v is not None and
                 not (isinstance(v, _OptionsBase) and v == type(v)())]
        return f"{type(self).__name__}({', '.join(parts)})"


def _fits(value: Any, kind: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            kind(value)
            return True
        except ValueError:
            return False
    return isinstance(value, kind)


def _kind_name(kind: Any) -> str:
    return getattr(kind, "__name__", str(kind))


class ThreadingOptions(_OptionsBase):
    """Threads of the pipeline: `private_threadpool_size` (honoured: caps the threads of parallel
    maps), `max_intra_op_parallelism` (accepted).

    >>> o = jf.data.Options(); o.threading.private_threadpool_size = 2
    """
    _FIELDS = {"private_threadpool_size": (int, None), "max_intra_op_parallelism": (int, None)}


class AutotuneOptions(_OptionsBase):
    """`enabled` (honoured for `prefetch(AUTOTUNE)`), `cpu_budget`, `ram_budget`, `autotune_algorithm`.

    >>> o = jf.data.Options(); o.autotune.enabled = False
    """
    _FIELDS = {"enabled": (bool, None), "cpu_budget": (int, None), "ram_budget": (int, None),
               "autotune_algorithm": (object, None), "initial_parallelism": (int, None),
               "min_parallelism": (int, None)}


class OptimizationOptions(_OptionsBase):
    """TF's static optimisation switches; accepted (jitflow does not rewrite pipelines).

    >>> o = jf.data.Options(); o.experimental_optimization.map_parallelization = True
    """
    _FIELDS = {name: (bool, None) for name in (
        "apply_default_optimizations", "filter_fusion", "filter_parallelization", "inject_prefetch",
        "map_and_batch_fusion", "map_and_filter_fusion", "map_fusion", "map_parallelization", "noop_elimination",
        "parallel_batch", "seq_interleave_prefetch", "shuffle_and_repeat_fusion", "warm_start")}


class DistributeOptions(_OptionsBase):
    """`auto_shard_policy` and `num_devices` (accepted).

    >>> o = jf.data.Options()
    >>> o.experimental_distribute.auto_shard_policy = jf.data.experimental.AutoShardPolicy.DATA
    """
    _FIELDS = {"auto_shard_policy": (AutoShardPolicy, None), "num_devices": (int, None)}


class Options(_OptionsBase):
    """Options of a whole input pipeline, set with `dataset.with_options(options)` (TF's `tf.data.Options`).

    Unset fields are None (TF's default applies). Options of the datasets a pipeline is
    built from are merged, later `with_options` calls winning, and `dataset.options()`
    returns the result. Honoured by jitflow: `deterministic`,
    `threading.private_threadpool_size`, `autotune.enabled` (for `prefetch(AUTOTUNE)`);
    the other fields are accepted (see the module docstring).

    >>> options = jf.data.Options()
    >>> options.deterministic = False
    >>> options.threading.private_threadpool_size = 2
    >>> ds = jf.data.Dataset.range(8).with_options(options).map(lambda x: x * 2, num_parallel_calls=4)
    >>> ds.options().deterministic, ds.options().threading.private_threadpool_size
    (False, 2)
    """
    _FIELDS = {
        "autotune": (AutotuneOptions, None),
        "deterministic": (bool, None),
        "experimental_deterministic": (bool, None),
        "experimental_distribute": (DistributeOptions, None),
        "experimental_external_state_policy": (ExternalStatePolicy, None),
        "experimental_optimization": (OptimizationOptions, None),
        "experimental_slack": (bool, None),
        "experimental_symbolic_checkpoint": (bool, None),
        "experimental_threading": (ThreadingOptions, None),
        "experimental_warm_start": (bool, None),
        "threading": (ThreadingOptions, None),
        "dataset_name": (str, None),
        "framework_type": (list, None),
    }

    def merge(self, options: "Options") -> "Options":
        """A new Options: these, with every field `options` sets overriding.

        >>> a, b = jf.data.Options(), jf.data.Options()
        >>> a.deterministic, b.experimental_slack = False, True
        >>> m = a.merge(b); m.deterministic, m.experimental_slack
        (False, True)
        """
        if not isinstance(options, Options):
            raise TypeError(f"options: expected jf.data.Options; got {type(options).__name__}")
        out = Options()
        self._merge_into(out)
        options._merge_into(out)
        return out

    # The effective values the pipeline reads.
    def _deterministic(self) -> bool:
        value = self.deterministic if self.deterministic is not None else self.experimental_deterministic
        return value is not False

    def _threadpool(self) -> int:
        size = self.threading.private_threadpool_size or self.experimental_threading.private_threadpool_size
        return int(size) if size else 0
