"""Trace records and call statistics as the panel reads them: every field checked.

A logdir is input from anywhere (an old jitflow, another tool, a damaged or hostile
file). A record whose fields do not have the types the writer gives them would break
every page that sums, sorts or formats them, so each record is validated field by field;
a bad one is dropped and named in the run's `errors` (webui/API.md: a damaged run still
returns what is readable).
"""
from __future__ import annotations

import json
import math
from typing import Any, Callable, Dict, List, Optional, Tuple

# field -> (check, default when absent, what the check expects)
Check = Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_count(v: Any) -> bool:
    return _is_int(v) and v >= 0


def _is_seconds(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_opt_seconds(v: Any) -> bool:
    return v is None or _is_seconds(v)


def _is_opt_time(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def _is_changes(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(c, dict) and all(isinstance(k, str) and isinstance(x, (str, int, float, type(None)))
                                    for k, x in c.items()) for c in v)


FIELDS: Dict[str, Tuple[Check, Any, str]] = {
    "function": (lambda v: isinstance(v, str) and bool(v), None, "a non-empty string"),
    "function_id": (_is_int, 0, "an integer"),
    "source": (_is_str, "", "a string"),
    "call_site": (_is_str, "", "a string"),
    "key": (_is_str, "", "a string"),
    "trace_number": (_is_count, 0, "an integer >= 0"),
    "trace_seconds": (_is_seconds, 0.0, "a finite number of seconds >= 0"),
    "compile_seconds": (_is_opt_seconds, None, "null or a finite number of seconds >= 0"),
    "reason_kind": (_is_str, "", "a string"),
    "reason": (_is_str, "", "a string"),
    "changes": (_is_changes, [], "a list of objects with string/number values"),
    "advice": (_is_str, "", "a string"),
    "graph_name": (_is_str, "", "a string"),
    "num_nodes": (_is_count, 0, "an integer >= 0"),
    "calls_so_far": (_is_count, 0, "an integer >= 0"),
    "timestamp": (_is_opt_time, None, "null or a finite number (seconds since the epoch)"),
}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(record: Any) -> Tuple[Optional[dict], Optional[str]]:
    """(the record with defaults filled in, None), or (None, why it was dropped)."""
    if not isinstance(record, dict):
        return None, f"not a JSON object but {type(record).__name__}"
    out: Dict[str, Any] = {}
    for name, (check, default, expected) in FIELDS.items():
        if name not in record:
            if default is None and name == "function":
                return None, "field 'function' is missing"
            out[name] = list(default) if isinstance(default, list) else default
            continue
        value = record[name]
        if not check(value):
            return None, f"field {name!r} should be {expected}, got {type(value).__name__} {_short(value)}"
        out[name] = value
    return out, None


def decode(payload: bytes) -> Tuple[Optional[dict], Optional[str]]:
    """One record from its JSON bytes, validated."""
    try:
        record = json.loads(payload.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        return None, f"unreadable JSON ({e})"
    return validate(record)


def decode_stats(payload: bytes, errors: List[str], where: str,
                 calls: Dict[Tuple[str, int], int], compiles: Dict[str, float]) -> None:
    """Merge one `jitflow/stats` event into `calls` ((function, id) -> highest count seen)
    and `compiles` (graph name -> seconds); bad entries are named in `errors`."""
    try:
        stats = json.loads(payload.decode("utf-8"))
        if not isinstance(stats, dict):
            raise ValueError(f"not a JSON object but {type(stats).__name__}")
    except (ValueError, UnicodeDecodeError) as e:
        errors.append(f"{where}: dropped unreadable call statistics ({e})")
        return
    entries = stats.get("calls", [])
    for entry in entries if isinstance(entries, list) else [None]:
        if not (isinstance(entry, dict) and isinstance(entry.get("function"), str)
                and _is_int(entry.get("function_id")) and _is_count(entry.get("calls"))):
            errors.append(f"{where}: dropped a call count entry: {_short(entry)}")
            continue
        key = (entry["function"], entry["function_id"])
        calls[key] = max(calls.get(key, 0), entry["calls"])
    entries = stats.get("compiles", [])
    for entry in entries if isinstance(entries, list) else [None]:
        if not (isinstance(entry, dict) and isinstance(entry.get("graph_name"), str)
                and _is_seconds(entry.get("compile_seconds"))):
            errors.append(f"{where}: dropped a compile time entry: {_short(entry)}")
            continue
        compiles[entry["graph_name"]] = float(entry["compile_seconds"])


def merge_stats(records: List[dict], calls: Dict[Tuple[str, int], int], compiles: Dict[str, float]) -> None:
    """Give each record its function's latest call count (`calls_total`) and its graph's
    compile time when the record was written before the compile finished."""
    for r in records:
        total = calls.get((r["function"], r["function_id"]))
        r["calls_total"] = max(total, r["calls_so_far"]) if total is not None else None
        if r["compile_seconds"] is None and r["graph_name"] in compiles:
            r["compile_seconds"] = compiles[r["graph_name"]]
