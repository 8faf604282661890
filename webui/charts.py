"""Geometry for the inline SVG charts: pure functions from data to coordinates.

Templates draw what these return (`templates/_charts.html`), so every label passes
through Jinja's escaping, and the charts need no JavaScript and no external library.
"""
from __future__ import annotations

import math
from typing import List, Optional, Sequence

KIND_CLASS = {"first_call": "k-first", "retrace": "k-retrace", "new_function_object": "k-newobj",
              "get_concrete_function": "k-concrete", "variable_lifting": "k-varlift"}


def plural(n: int, noun: str) -> str:
    """`1 trace`, `2 traces`."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def format_seconds(seconds: Optional[float]) -> str:
    """`0.000123` → `123 µs`, `0.0421` → `42.1 ms`, `3.2` → `3.20 s`."""
    if seconds is None:
        return "—"
    s = abs(seconds)
    if s == 0:
        return "0 s"
    if s < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if s < 1:
        return f"{seconds * 1e3:.3g} ms" if s < 0.01 else f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def nice_ticks(span: float, max_ticks: int = 6) -> List[float]:
    """Round tick positions 0, step, 2·step, ... ≤ span (step 1, 2 or 5 × 10^k)."""
    if span <= 0:
        return [0.0]
    raw = span / max_ticks
    base = 10 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 5, 10) if m * base >= raw)
    n = int(span / step + 1e-9)
    return [i * step for i in range(n + 1)]


def timeline(rows: Sequence[dict], width: int = 900, label_width: int = 180, row_height: int = 26,
             min_mark: float = 3.0) -> dict:
    """Rows of traces on a shared wall-clock axis.

    rows: [{"label", "href" (optional), "traces": [trace_view dicts]}]. A trace is drawn
    from its start (`timestamp` or event `wall_time`, minus its cost) for its cost (trace + compile
    seconds), at least `min_mark` pixels wide, coloured by reason kind.
    """
    starts = [s for r in rows for t in r["traces"] if (s := _start(t)) is not None]
    ends = [s + t["cost_seconds"] for r in rows for t in r["traces"] if (s := _start(t)) is not None]
    t0 = min(starts) if starts else 0.0
    span = (max(ends) - t0) if ends else 0.0
    span = span if span > 0 else 1.0
    plot = width - label_width - 16
    scale = plot / span
    out_rows = []
    for i, row in enumerate(rows):
        marks = []
        for t in row["traces"]:
            start = _start(t)
            if start is None:
                continue
            x = label_width + (start - t0) * scale
            w = max(t["cost_seconds"] * scale, min_mark)
            marks.append({
                "x": round(x, 2), "w": round(w, 2), "cls": KIND_CLASS.get(t["reason_kind"], "k-other"),
                "title": f"#{t['trace_number']} {t['reason_label']}: {t['reason']} "
                         f"({format_seconds(t['cost_seconds'])}, at +{format_seconds(start - t0)})",
            })
        out_rows.append({"label": row["label"], "href": row.get("href"), "y": 8 + i * row_height,
                         "h": row_height - 8, "marks": marks})
    height = 8 + len(rows) * row_height + 24
    ticks = [{"x": round(label_width + v * scale, 2), "label": "+" + format_seconds(v) if v else "0"}
             for v in nice_ticks(span)]
    return {"width": width, "height": height, "label_width": label_width, "axis_y": height - 22,
            "plot_right": label_width + plot, "rows": out_rows, "ticks": ticks, "span": span}


def _start(trace: dict) -> Optional[float]:
    # A record is stamped when its trace has finished, so the trace began `cost` earlier.
    end = trace.get("timestamp") or trace.get("wall_time")
    return None if end is None else end - trace["cost_seconds"]


def bars(items: Sequence[dict], width: int = 900, label_width: int = 260, row_height: int = 22) -> dict:
    """Horizontal bars: items [{"label", "value", "text", "cls" (optional)}], largest = full width."""
    top = max((i["value"] for i in items), default=0) or 1.0
    plot = width - label_width - 90
    out = []
    for n, item in enumerate(items):
        out.append({"label": item["label"], "y": 4 + n * row_height, "h": row_height - 6,
                    "w": round(max(item["value"] / top * plot, 1.0), 2), "text": item["text"],
                    "cls": item.get("cls", "bar"), "title": item.get("title", item["label"])})
    return {"width": width, "height": 8 + len(items) * row_height, "label_width": label_width,
            "bars": out}
