"""The ported TF example snippets: `snippets_*.txt`, each snippet under a `### name` line."""
from __future__ import annotations

import os
from typing import Dict

HERE = os.path.dirname(os.path.abspath(__file__))


def load() -> Dict[str, str]:
    snippets: Dict[str, str] = {}
    for name in sorted(os.listdir(HERE)):
        if not (name.startswith("snippets_") and name.endswith(".txt")):
            continue
        current = None
        with open(os.path.join(HERE, name), encoding="utf-8") as f:
            for line in f:
                if line.startswith("### "):
                    current = line[4:].strip()
                    if current in snippets:
                        raise ValueError(f"{name}: snippet {current!r} defined twice")
                    snippets[current] = ""
                elif current is not None:
                    snippets[current] += line
    return snippets
