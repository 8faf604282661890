"""Was a run input-bound? Its dataset iterators' wait times, judged as TensorBoard's Input
Pipeline Analyzer judges them, with advice that names the fix.

The payloads are `jitflow/input_pipeline` summaries (jitflow.summary.input_pipeline): per
iterator, the seconds spent waiting in `next()` and the seconds the program worked between
two `next()` calls. The input share of step time is wait / (wait + work), the first `next()`
(pipeline start-up: threads, first compile) counted apart. The verdict uses xprof's
thresholds: at least 20% is HIGHLY input-bound, at least 5% MODERATELY, less is not.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

HIGHLY_PERCENT = 20.0      # xprof's kHighlyInfeedBoundThresholdInPercent
MODERATELY_PERCENT = 5.0   # xprof's kModeratelyInfeedBoundThresholdInPercent
_NUMBERS = ("elements", "wait_seconds", "busy_seconds", "first_wait_seconds", "created")

FILE_SOURCES = {"TFRecord", "TextLine"}
PARALLEL_MAPS = {"ParallelMapV2"}
CACHES = {"Cache", "MemoryCache"}
INTERLEAVES = {"Interleave", "ParallelInterleaveV4"}


def decode(payload: bytes, errors: List[str], where: str, into: Dict[int, dict]) -> None:
    """Merge one payload into `into` (iterator id -> its latest counters); bad input is named
    in `errors` and skipped."""
    try:
        data = json.loads(payload.decode("utf-8"))
        iterators = data["iterators"]
        if not isinstance(iterators, list):
            raise ValueError("'iterators' is not a list")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        errors.append(f"{where}: dropped input-pipeline counters: {e}")
        return
    for it in iterators:
        problem = _check(it)
        if problem:
            errors.append(f"{where}: dropped an iterator's input-pipeline counters: {problem}")
            continue
        old = into.get(it["id"])
        if old is None or (it["elements"], it["finished"]) >= (old["elements"], old["finished"]):
            into[it["id"]] = it


def _check(it: Any) -> Optional[str]:
    if not isinstance(it, dict):
        return f"expected an object; got {type(it).__name__}"
    if not isinstance(it.get("id"), int):
        return f"'id' must be an int; got {it.get('id')!r}"
    for key in _NUMBERS:
        value = it.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            return f"{key!r} must be a non-negative number; got {value!r}"
    if not isinstance(it.get("pipeline"), str) or not isinstance(it.get("stages"), list):
        return "'pipeline' must be a string and 'stages' a list"
    if not all(isinstance(s, str) for s in it["stages"]) or not isinstance(it.get("finished"), bool):
        return "'stages' must hold strings and 'finished' be a bool"
    return None


def _verdict(percent: Optional[float]) -> str:
    if percent is None:
        return "unknown"
    if percent >= HIGHLY_PERCENT:
        return "highly"
    if percent >= MODERATELY_PERCENT:
        return "moderately"
    return "not"


VERDICT_TEXT = {
    "highly": "HIGHLY input-bound",
    "moderately": "MODERATELY input-bound",
    "not": "not input-bound",
    "unknown": "not enough steps to tell",
}


def advice(stages: List[str]) -> List[dict]:
    """The fixes a pipeline with these transformation kinds is missing, most effective first."""
    kinds = set(stages)
    out = []
    if "Prefetch" not in kinds:
        out.append({"fix": "prefetch", "text": "Add `.prefetch(jf.data.AUTOTUNE)` as the last step: the next batch is "
                                               "then produced in the background while the training step runs."})
    if "Map" in kinds:
        out.append({"fix": "num_parallel_calls", "text": "Run the map function on several cores: "
                    "`.map(f, num_parallel_calls=jf.data.AUTOTUNE)`."})
    if kinds & FILE_SOURCES and not kinds & INTERLEAVES:
        out.append({"fix": "interleave", "text": "Read several files at once: "
                    "`files.interleave(jf.data.TFRecordDataset, num_parallel_calls=jf.data.AUTOTUNE)` "
                    "(or `TFRecordDataset(files, num_parallel_reads=jf.data.AUTOTUNE)`)."})
    elif "Interleave" in kinds:
        out.append({"fix": "interleave", "text": "Open the interleaved inputs in parallel: "
                    "`.interleave(f, num_parallel_calls=jf.data.AUTOTUNE)`."})
    if not kinds & CACHES and (kinds & FILE_SOURCES or kinds & ({"Map"} | PARALLEL_MAPS)):
        out.append({"fix": "cache", "text": "`.cache()` after the expensive deterministic steps (reading, decoding, "
                    "parsing) if the data fits in memory (`.cache(filename)` otherwise): later epochs skip them."})
    if not out:
        out.append({"fix": "cheaper_pipeline", "text": "The pipeline already prefetches, maps in parallel and caches: "
                    "the wait is its own work. Make it cheaper (vectorise: batch before map, smaller images), "
                    "or move random augmentation after `.cache()`."})
    return out


def iterator_row(it: dict) -> dict:
    wait = max(it["wait_seconds"] - it["first_wait_seconds"], 0.0)
    busy = it["busy_seconds"]
    steps = wait + busy
    percent = 100.0 * wait / steps if steps > 0 and it["elements"] >= 2 else None
    return {"id": it["id"], "pipeline": it["pipeline"], "stages": it["stages"], "elements": it["elements"],
            "finished": it["finished"], "created": it["created"], "wait_seconds": wait, "busy_seconds": busy,
            "startup_seconds": it["first_wait_seconds"], "input_percent": percent, "verdict": _verdict(percent)}


def analysis(iterators: Dict[int, dict]) -> dict:
    """The run's verdict over all its iterators (time-weighted), per-iterator rows and advice."""
    rows = sorted((iterator_row(it) for it in iterators.values()), key=lambda r: r["id"])
    counted = [r for r in rows if r["input_percent"] is not None]
    wait = sum(r["wait_seconds"] for r in counted)
    busy = sum(r["busy_seconds"] for r in counted)
    percent = 100.0 * wait / (wait + busy) if counted and wait + busy > 0 else None
    verdict = _verdict(percent)
    worst = max(counted, key=lambda r: r["wait_seconds"], default=None)
    tips = advice(worst["stages"]) if worst is not None and verdict in ("highly", "moderately") else []
    return {"iterators": rows, "input_percent": percent, "verdict": verdict, "verdict_text": VERDICT_TEXT[verdict],
            "wait_seconds": wait, "busy_seconds": busy,
            "startup_seconds": sum(r["startup_seconds"] for r in rows),
            "elements": sum(r["elements"] for r in rows),
            "worst_pipeline": worst["pipeline"] if worst is not None else None, "advice": tips,
            "thresholds": {"highly_percent": HIGHLY_PERCENT, "moderately_percent": MODERATELY_PERCENT}}


def brief(iterators: Dict[int, dict]) -> dict:
    """What the runs overview shows: the share, the verdict, the first fix."""
    a = analysis(iterators)
    return {"input_percent": a["input_percent"], "verdict": a["verdict"], "verdict_text": a["verdict_text"],
            "iterators": len(a["iterators"]), "advice": a["advice"][0]["text"] if a["advice"] else ""}
