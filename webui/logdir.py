"""The logdir, read through TensorBoard's own event loaders and nothing else.

A run is a directory under the logdir that holds event files (`*tfevents*`), named by
its path relative to the logdir with `/` separators, and `.` for the logdir itself (the
names TensorBoard gives them). Every run has one `EventAccumulator` that keeps every
tensor event (`size_guidance={"tensors": 0}`) and never purges "orphaned" steps: trace
records restart their step at 1 for each new function object, and purging would drop
earlier records.

Reading is cached on the event files' (name, size, mtime): a request re-stats the
files, and only a run whose files changed is reloaded, so new events show up on the
next page load without a restart. When only the newest file grew (a live writer) the
accumulator reloads incrementally; any other change starts a fresh one.

Safety: a run name that arrives in a request is only ever compared with the names
discovered by walking the logdir; it is never joined onto a path. The walk does not
follow symlinked directories, and skips event files whose real path is outside the
logdir. The accumulator itself lists the run directory again, so it gets the same filter
(`_accumulator`): a symlinked event file that leads out of the logdir is never read.

TensorBoard's loaders stop silently at a corrupt or truncated record. To show that as an
error for that run (and only that run), each event file also gets an integrity scanner:
TensorBoard's own record reader (`PyRecordReader_New`), kept open so that a growing file
is checked incrementally.
"""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from tensorboard.backend.event_processing import directory_watcher, event_file_loader, io_wrapper
from tensorboard.backend.event_processing import plugin_event_accumulator as pea
from tensorboard.compat.proto import config_pb2
from tensorboard.compat.tensorflow_stub import errors as tb_errors
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow

from jitflow.summary.input_pipeline import PLUGIN_NAME as INPUT_PLUGIN
from jitflow.summary.trace import GRAPH_ONLY_PLUGIN, RUN_METADATA_PLUGIN
from jitflow.summary.trace_records import PLUGIN_NAME as TRACE_PLUGIN
from jitflow.summary.trace_records import STATS_PLUGIN

from . import input_model
from . import records as _records

ROOT_RUN = "."
SCALARS_PLUGIN = "scalars"
LEGACY_RUN_METADATA = "run_metadata"   # v1 `add_run_metadata` (tagged RunMetadata events)
PROFILE_PLUGINS = (RUN_METADATA_PLUGIN, GRAPH_ONLY_PLUGIN, LEGACY_RUN_METADATA)

Signature = Tuple[Tuple[str, int, int], ...]   # (file name, size, mtime_ns), sorted by name


@dataclass(frozen=True)
class ProfileRef:
    """One exported trace: a RunMetadata summary at one step."""
    tag: str
    step: int
    wall_time: float
    plugin: str            # graph_run_metadata (with step stats) or graph_run_metadata_graph

    @property
    def has_step_stats(self) -> bool:
        return self.plugin != GRAPH_ONLY_PLUGIN


@dataclass
class RunData:
    """A snapshot of one run, as of its last reload. Never mutated after it is built."""
    name: str
    path: str
    errors: List[str] = field(default_factory=list)
    scalar_tags: List[str] = field(default_factory=list)
    tags_by_plugin: Dict[str, List[str]] = field(default_factory=dict)
    last_step: Optional[int] = None
    records: List[dict] = field(default_factory=list)       # trace records + step, wall_time
    profiles: List[ProfileRef] = field(default_factory=list)
    input_iterators: Dict[int, dict] = field(default_factory=dict)  # dataset iterator id -> wait counters
    loaded_at: float = 0.0
    _run_metadata: Dict[Tuple[str, int], bytes] = field(default_factory=dict, repr=False)

    def profile(self, tag: str, step: Optional[int] = None) -> Optional[ProfileRef]:
        """The exported trace `tag` at `step` (default: its latest step)."""
        refs = [p for p in self.profiles if p.tag == tag and (step is None or p.step == step)]
        return refs[-1] if refs else None

    def run_metadata(self, ref: ProfileRef) -> config_pb2.RunMetadata:
        return config_pb2.RunMetadata.FromString(self._run_metadata[(ref.tag, ref.step)])


class _Scanner:
    """Checks one event file's record framing and CRCs with TensorBoard's record reader."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.records = 0
        self.error: Optional[str] = None
        self._reader: Any = None  # TensorBoard's PyRecordReader, opened on the first scan

    def scan(self) -> Optional[str]:
        if self._reader is None:
            try:
                self._reader = pywrap_tensorflow.PyRecordReader_New(self.path)
            except Exception as e:  # noqa: BLE001 - unreadable file: report it, keep serving
                self.error = f"cannot open: {e}"
                return self.error
        while True:
            try:
                self._reader.GetNext()
            except tb_errors.OutOfRangeError:      # clean end of file
                self.error = None
                return None
            except tb_errors.DataLossError as e:   # corrupt, or truncated (maybe still being written)
                message = str(e).replace(self.path, "").strip()
                hint = ("truncated: still being written, or cut short" if "truncated" in message
                        else "corrupt")
                self.error = f"{message} after {self.records} good records ({hint})"
                return self.error
            except Exception as e:  # noqa: BLE001
                self.error = f"unreadable: {e}"
                return self.error
            self.records += 1

    def close(self) -> None:
        reader, self._reader = self._reader, None
        handle = getattr(reader, "file_handle", None)
        if handle is not None:
            handle.close()


class _RunCache:
    def __init__(self, name: str, path: str) -> None:
        self.name = name
        self.path = path
        self.lock = threading.Lock()
        self.signature: Optional[Signature] = None
        self.accumulator: Optional[pea.EventAccumulator] = None
        self.scanners: Dict[str, _Scanner] = {}
        self.load_errors: List[str] = []      # sticky for the life of the accumulator
        self.data: Optional[RunData] = None

    def close(self) -> None:
        for scanner in self.scanners.values():
            scanner.close()
        self.scanners.clear()


def _inside(root: str, path: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _event_files(root: str, dirpath: str, filenames) -> List[str]:
    out = []
    for name in filenames:
        full = os.path.join(dirpath, name)
        if io_wrapper.IsTensorFlowEventsFile(name) and os.path.isfile(full) and _inside(root, full):
            out.append(name)
    return sorted(out)


def _grew(old: Signature, new: Signature) -> bool:
    """True when `new` is `old` with only its newest file grown and/or newer files added:
    the one change an accumulator can follow incrementally."""
    if len(new) < len(old) or not old:
        return False
    for i, (name, size, mtime) in enumerate(old):
        n_name, n_size, n_mtime = new[i]
        if n_name != name or n_size < size:
            return False
        if i < len(old) - 1 and (n_size, n_mtime) != (size, mtime):
            return False
    return True


class Logdir:
    """Runs under one directory, each reloaded when its event files change."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.root = os.path.realpath(self.path)
        self._lock = threading.Lock()
        self._caches: Dict[str, _RunCache] = {}

    # -- discovery -------------------------------------------------------------------------
    def discover(self) -> Dict[str, Tuple[str, Signature]]:
        """Run name → (directory, signature of its event files)."""
        runs: Dict[str, Tuple[str, Signature]] = {}
        if not os.path.isdir(self.root):
            return runs
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            # Symlinked directories are not walked into (they could lead out of the logdir).
            dirnames[:] = sorted(d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)))
            files = _event_files(self.root, dirpath, filenames)
            if not files:
                continue
            sig = []
            for name in files:
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue
                sig.append((name, st.st_size, st.st_mtime_ns))
            rel = os.path.relpath(dirpath, self.root)
            runs[ROOT_RUN if rel == os.curdir else rel.replace(os.sep, "/")] = (dirpath, tuple(sig))
        return runs

    def run_names(self) -> List[str]:
        return sorted(self.discover())

    # -- loading ---------------------------------------------------------------------------
    def runs(self) -> List[RunData]:
        """Every run, each reloaded if its files changed."""
        found = self.discover()
        self._forget_missing(found)
        return [self._load(name, *found[name]) for name in sorted(found)]

    def run(self, name: str) -> Optional[RunData]:
        """The run called `name`, or None when the logdir has no such run."""
        found = self.discover()
        if not isinstance(name, str) or name not in found:   # the only way a request names a path
            return None
        return self._load(name, *found[name])

    def _forget_missing(self, found) -> None:
        with self._lock:
            for name in [n for n in self._caches if n not in found]:
                self._caches.pop(name).close()

    def _load(self, name: str, path: str, signature: Signature) -> RunData:
        with self._lock:
            cache = self._caches.get(name)
            if cache is None or cache.path != path:
                if cache is not None:
                    cache.close()
                cache = self._caches[name] = _RunCache(name, path)
        with cache.lock:
            if cache.data is not None and cache.signature == signature:
                return cache.data
            try:
                self._reload(cache, signature)
                cache.data = self._snapshot(cache)
            except Exception as e:  # noqa: BLE001 - one broken run must not break the panel
                cache.accumulator = None
                cache.data = RunData(name=name, path=path, errors=[f"could not read this run: {e}"],
                                     loaded_at=time.time())
            cache.signature = signature
            return cache.data

    def _reload(self, cache: _RunCache, signature: Signature) -> None:
        if cache.accumulator is None or cache.signature is None or not _grew(cache.signature, signature):
            cache.close()
            cache.load_errors = []
            cache.accumulator = _accumulator(self.root, cache.path)
        try:
            cache.accumulator.Reload()
        except Exception as e:  # noqa: BLE001 - e.g. a record with a valid CRC but no Event inside
            cache.load_errors.append(f"an event could not be read: {type(e).__name__}: {e}")
        for file_name, _, _ in signature:
            scanner = cache.scanners.get(file_name)
            if scanner is None:
                scanner = cache.scanners[file_name] = _Scanner(os.path.join(cache.path, file_name))
            scanner.scan()

    def _snapshot(self, cache: _RunCache) -> RunData:
        acc = cache.accumulator
        assert acc is not None  # _reload made one
        data = RunData(name=cache.name, path=cache.path, loaded_at=time.time())
        data.errors.extend(cache.load_errors)
        for file_name in sorted(cache.scanners):
            if cache.scanners[file_name].error:
                data.errors.append(f"{file_name}: {cache.scanners[file_name].error}")
        tags = acc.Tags()
        last_step: Optional[int] = None
        calls: Dict[Tuple[str, int], int] = {}
        compiles: Dict[str, float] = {}
        for tag in tags.get(pea.TENSORS, []):
            plugin = acc.SummaryMetadata(tag).plugin_data.plugin_name
            data.tags_by_plugin.setdefault(plugin, []).append(tag)
            events = acc.Tensors(tag)
            if events:
                last_step = max(last_step if last_step is not None else events[-1].step,
                                max(e.step for e in events))
            if plugin == SCALARS_PLUGIN:
                data.scalar_tags.append(tag)
            elif plugin == TRACE_PLUGIN:
                for event in events:
                    record = _decode_record(event, tag, data.errors)
                    if record is not None:
                        data.records.append(record)
            elif plugin == STATS_PLUGIN:
                for event in events:
                    for payload in event.tensor_proto.string_val[:1]:
                        _records.decode_stats(payload, data.errors, f"{tag} at step {event.step}", calls, compiles)
            elif plugin == INPUT_PLUGIN:
                for event in events:
                    for payload in event.tensor_proto.string_val[:1]:
                        input_model.decode(payload, data.errors, f"{tag} at step {event.step}", data.input_iterators)
            elif plugin in (RUN_METADATA_PLUGIN, GRAPH_ONLY_PLUGIN):
                for event in events:
                    if event.tensor_proto.string_val:
                        data._run_metadata[(tag, event.step)] = event.tensor_proto.string_val[0]
                        data.profiles.append(ProfileRef(tag, int(event.step), event.wall_time, plugin))
        for tag in tags.get(pea.RUN_METADATA, []):
            data._run_metadata[(tag, 0)] = acc.RunMetadata(tag).SerializeToString()
            data.profiles.append(ProfileRef(tag, 0, 0.0, LEGACY_RUN_METADATA))
        data.scalar_tags.sort()
        _records.merge_stats(data.records, calls, compiles)
        data.records.sort(key=lambda r: (r["timestamp"] or r["wall_time"], r["trace_number"]))
        data.profiles.sort(key=lambda p: (p.tag, p.step))
        data.last_step = last_step
        return data


def _decode_record(event, tag: str, errors: List[str]) -> Optional[dict]:
    """One trace record, every field checked (webui/records.py); a bad one is dropped and
    named in `errors`, the run's other records still load."""
    if not event.tensor_proto.string_val:
        errors.append(f"{tag} at step {event.step}: dropped a trace record: no payload")
        return None
    record, problem = _records.decode(event.tensor_proto.string_val[0])
    if record is None:
        errors.append(f"{tag} at step {event.step}: dropped a trace record: {problem}")
        return None
    record["step"] = int(event.step)
    record["wall_time"] = event.wall_time
    return record


def _accumulator(root: str, run_dir: str) -> pea.EventAccumulator:
    """TensorBoard's accumulator for `run_dir`, reading only event files whose real path is
    inside `root`. (Its own DirectoryWatcher would read every `*tfevents*` name it lists,
    symlinks to anywhere included; the watcher is replaced by one with our path filter.)"""
    acc = pea.EventAccumulator(run_dir, size_guidance={"tensors": 0}, purge_orphaned_data=False)
    if not hasattr(acc, "_generator"):   # pragma: no cover - a TensorBoard that changed its internals
        raise RuntimeError("this TensorBoard's EventAccumulator has no _generator; cannot restrict it "
                           "to the logdir, so the run is not read")
    acc._generator = directory_watcher.DirectoryWatcher(
        run_dir, event_file_loader.EventFileLoader,
        lambda path: io_wrapper.IsSummaryEventsFile(path) and _inside(root, path))
    return acc
