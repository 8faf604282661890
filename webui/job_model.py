"""The workers of a multi-worker job side by side: traces, retraces and step times, and
which worker differs from the others. Pure functions of `RunData` snapshots and profile
files; the page and its JSON twin are in `workers.py`.

A job's workers write to runs `<job>/worker_<rank>` (`jf.distribute.worker_logdir`). Their
step times come from the latest profile session captured from all of them at once
(`jitflow capture --workers-in <job>`: `<job>/plugins/profile/<session>/<host>_<port>.xplane.pb`,
one file per worker, matched to its rank by the port each worker announced in
`worker_<rank>/profiler_server.json`). A step is a step marker: an event named `train…`
or `test…` carrying a `group_id` (what `jf.profiler.Trace("train", step_num=i)` and
Keras's `fit` write).

In a synchronous job every worker's step lasts as long as the slowest one's: the others
wait for it inside the all-reduce. So a worker's *busy* time per step is the step minus
the time it spent waiting in collectives (`JfCollectiveAllReduce…` / `…Wait` ops inside
the step), and the straggler is the one busy longest.

Flags (a worker is compared with the median of the *other* workers, so with two workers
the slower or more-retracing one is named):

* `straggler`: its median busy time per step is more than `STRAGGLER_RATIO` times the
  others' and at least `STRAGGLER_MIN_S` longer;
* `divergent retraces`: it traced some function more often than the others did (its
  inputs had other shapes or types: each retrace names the change).
"""
from __future__ import annotations

import bisect
import os
import re
import statistics
from collections import defaultdict
from typing import Any, Dict, List, Optional, Tuple

from jitflow.tracer import job as _job
from jitflow.tracer import xplane as _xplane

from . import model
from .logdir import RunData

STRAGGLER_RATIO = 1.2
STRAGGLER_MIN_S = 0.002
_WORKER_RUN = re.compile(r"^(?:(?P<job>.*)/)?worker_(?P<rank>\d+)$")
_PORT = re.compile(r"_(\d+)$")
MAX_PROFILE_BYTES = 256 << 20   # a larger file is not read (the page must answer quickly)
# Ops in which a worker waits for the others (the op type, after the node name's ':').
COLLECTIVE_WAITS = frozenset({"JfCollectiveAllReduce", "JfCollectiveAllReduceWait", "JfCollectiveAllGather"})


def worker_runs(runs: List[RunData]) -> Dict[str, Dict[int, RunData]]:
    """job name ('.' for the logdir itself) → rank → the worker's run."""
    jobs: Dict[str, Dict[int, RunData]] = defaultdict(dict)
    for run in runs:
        match = _WORKER_RUN.match(run.name)
        if match:
            jobs[match.group("job") or "."][int(match.group("rank"))] = run
    return dict(jobs)


def latest_session(job_dir: str) -> Optional[str]:
    """The newest profile session directory under `<job_dir>/plugins/profile` with xplane files."""
    root = os.path.join(job_dir, "plugins", "profile")
    try:
        sessions = [os.path.join(root, s) for s in os.listdir(root)]
    except OSError:
        return None
    sessions = [s for s in sessions if os.path.isdir(s) and any(f.endswith(".xplane.pb") for f in os.listdir(s))]
    return max(sessions, key=lambda s: (os.path.getmtime(s), s)) if sessions else None


def steps_of(path: str) -> List[Tuple[float, float]]:
    """(duration, time waiting in collectives) of each step marker in one `.xplane.pb` file,
    in seconds, in time order."""
    if os.path.getsize(path) > MAX_PROFILE_BYTES:
        raise ValueError(f"larger than {MAX_PROFILE_BYTES >> 20} MiB; not read")
    with open(path, "rb") as f:
        space = _xplane.XSpace.FromString(f.read())
    out: List[Tuple[int, float, float]] = []
    for plane in space.planes:
        group_ids = {sid for sid, meta in plane.stat_metadata.items() if meta.name == "group_id"}
        names = {mid: meta.name for mid, meta in plane.event_metadata.items()}
        steps: List[Tuple[int, int]] = []      # (start ps, end ps)
        waits: List[Tuple[int, int]] = []
        for line in plane.lines:
            base = line.timestamp_ns * 1000
            for event in line.events:
                name = names.get(event.metadata_id, "")
                start = base + event.offset_ps
                if "/" not in name and name.startswith(("train", "test")) and \
                        any(s.metadata_id in group_ids for s in event.stats):
                    steps.append((start, start + event.duration_ps))
                elif name.rsplit(":", 1)[-1] in COLLECTIVE_WAITS:
                    waits.append((start, event.duration_ps))
        steps.sort()
        starts = [a for a, _ in steps]
        waited = [0] * len(steps)
        for start, duration in waits:
            i = bisect.bisect_right(starts, start) - 1
            if i >= 0 and start < steps[i][1]:
                waited[i] += duration
        out.extend((a, (b - a) / 1e12, w / 1e12) for (a, b), w in zip(steps, waited))
    return [(d, w) for _, d, w in sorted(out)]


def _host_ranks(job_dir: str) -> Dict[int, int]:
    """port → rank, from the workers' announcements."""
    return {a["port"]: a["rank"] for a in _job.announcements(job_dir)}


Steps = List[Tuple[float, float]]


def session_steps(job_dir: str, session: str, errors: List[str]) -> Tuple[Dict[int, Tuple[str, Steps]], List[str]]:
    """rank → (host file, steps) for the session's files matched to a worker; the unmatched files."""
    ports = _host_ranks(job_dir)
    found: Dict[int, Tuple[str, Steps]] = {}
    unmatched = []
    for name in sorted(os.listdir(session)):
        if not name.endswith(".xplane.pb"):
            continue
        host = name[:-len(".xplane.pb")]
        port = _PORT.search(host)
        rank = ports.get(int(port.group(1))) if port else None
        if rank is None:
            unmatched.append(host)
            continue
        try:
            found[rank] = (host, steps_of(os.path.join(session, name)))
        except (OSError, ValueError) as e:  # a damaged file: say so, show the rest
            errors.append(f"{name}: {e}")
    return found, unmatched


def _median_of_others(values: Dict[int, float], rank: int) -> Optional[float]:
    others = [v for r, v in values.items() if r != rank]
    return statistics.median(others) if others else None


def _step_summary(steps: Steps) -> Optional[dict]:
    if not steps:
        return None
    seconds = [d for d, _ in steps]
    busy = [d - w for d, w in steps]
    return {"steps": len(steps), "median_s": statistics.median(seconds), "mean_s": statistics.fmean(seconds),
            "max_s": max(seconds), "min_s": min(seconds),
            "median_wait_s": statistics.median(w for _, w in steps), "median_busy_s": statistics.median(busy)}


def job_view(job: str, job_dir: str, workers: Dict[int, RunData]) -> dict:
    """One job: each worker's traces, retraces and steps, and the flags."""
    errors: List[str] = []
    session = latest_session(job_dir)
    steps, unmatched = session_steps(job_dir, session, errors) if session else ({}, [])
    rows: List[Dict[str, Any]] = []
    per_function: Dict[int, Dict[str, int]] = {}
    for rank in sorted(set(workers) | set(steps)):
        run = workers.get(rank)
        summary = model.run_summary(run) if run is not None else None
        fns = model.functions(run.records) if run is not None else []
        per_function[rank] = {f["function"]: f["traces"] for f in fns}
        host, seconds = steps.get(rank, (None, []))  # type: ignore[assignment]
        rows.append({
            "rank": rank, "run": run.name if run is not None else None,
            "traces": summary["traces"] if summary else 0, "retraces": summary["retraces"] if summary else 0,
            "functions": summary["functions"] if summary else 0,
            "retrace_changes": sorted({c for f in fns for t in f["retrace_list"] for c in _changes(t)}),
            "profile_host": host, "step_time": _step_summary(seconds), "flags": [], "differing_functions": [],
        })
    medians = {r["rank"]: r["step_time"]["median_busy_s"] for r in rows if r["step_time"]}
    retraces = {r["rank"]: r["retraces"] for r in rows}
    flags = []
    for row in rows:
        rank = row["rank"]
        if rank in medians and len(medians) > 1:
            others = _median_of_others(medians, rank)
            if others is not None and medians[rank] > STRAGGLER_RATIO * others and \
                    medians[rank] - others >= STRAGGLER_MIN_S:
                row["flags"].append("straggler")
                flags.append({"rank": rank, "flag": "straggler",
                              "detail": f"worker {rank}: busy {medians[rank] * 1e3:.1f} ms of each step, the others "
                                        f"{others * 1e3:.1f} ms ({medians[rank] / others:.2f}×), the rest of their "
                                        "steps waiting for it in the all-reduce"})
        if len(retraces) > 1:
            others_retraces = _median_of_others(retraces, rank)
            differing = []
            for fn, n in sorted(per_function.get(rank, {}).items()):
                theirs = statistics.median([per_function[r].get(fn, 0) for r in per_function if r != rank])
                if n > theirs:
                    differing.append({"function": fn, "traces": n, "others_median": theirs})
            row["differing_functions"] = differing
            if others_retraces is not None and retraces[rank] > others_retraces and differing:
                row["flags"].append("divergent retraces")
                what = ", ".join(f"{d['function']} {d['traces']}× (others {d['others_median']:g})" for d in differing)
                changes = "; ".join(row["retrace_changes"]) or "see its functions page"
                flags.append({"rank": rank, "flag": "divergent retraces",
                              "detail": f"worker {rank}: {retraces[rank]} retraces, the others "
                                        f"{others_retraces:g}: {what} ({changes})"})
    return {"job": job, "workers": rows, "flags": flags, "errors": errors,
            "profile_session": os.path.basename(session) if session else None, "unmatched_hosts": unmatched}


def _changes(trace: dict) -> List[str]:
    out = []
    for c in trace.get("changes", []):
        if c.get("text"):
            out.append(c["text"])
            continue
        label = model.CHANGE_LABELS.get(c.get("kind"), c.get("kind") or "changed")
        out.append(f"{c['path']}: {label}" if c.get("path") else label)
    return out


__all__ = ["job_view", "worker_runs", "steps_of", "latest_session", "STRAGGLER_RATIO"]
