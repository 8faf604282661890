"""The import structure: no cycles anywhere, and every import goes down the stages.

Parses every module of the five parts (imports at module level, inside functions and in
class bodies; `if TYPE_CHECKING:` blocks are skipped, as they never run). Then checks:

* the parts depend one way: runtime <- tracer <- summary <- webui <- the `jitflow` facade;
* inside the runtime, each subpackage imports only from its own stage or those below
  (`RUNTIME_STAGES`, bottom first);
* the module graph has no cycle, counting imports inside functions;
* an import of a jitflow module inside a function says why on its line (`# lazy: ...`):
  that is allowed only to defer a heavy or optional dependency (numba.cuda, Flask, ...).
"""
from __future__ import annotations

import ast
import os
from collections import defaultdict
from typing import Dict, List, Optional, Set, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTS = {"jitflow.runtime": "runtime", "jitflow.tracer": "tracer", "jitflow.summary": "summary",
         "jitflow.webui": "webui", "jitflow": "jitflow"}
PART_ORDER = ["jitflow.runtime", "jitflow.tracer", "jitflow.summary", "jitflow.webui", "jitflow"]
# Bottom first. A subpackage may import from its own stage and the stages before it.
RUNTIME_STAGES = [
    ["core"],
    ["ops"],
    ["execution"],
    ["autodiff"],
    ["state"],
    ["tracing"],
    ["backends"],
    ["training"],
    ["sparse"],
    ["io", "strings"],
    ["image"],
    ["data"],
    ["keras"],
    ["saved_model"],
    ["distribute"],
]
STAGE_RANK = {name: rank for rank, names in enumerate(RUNTIME_STAGES) for name in names}
TOP = len(RUNTIME_STAGES)  # runtime/__init__.py: the runtime's own facade


def _module_files() -> Dict[str, Tuple[str, bool]]:
    mods = {}
    for pkg, folder in PARTS.items():
        base = os.path.join(ROOT, folder)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in filenames:
                if not f.endswith(".py"):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, f), base)[:-3].replace(os.sep, ".")
                is_pkg = rel == "__init__" or rel.endswith(".__init__")
                rel = rel[: -len("__init__")].rstrip(".") if is_pkg else rel
                name = pkg + ("." + rel if rel else "")
                mods[name] = (os.path.join(dirpath, f), is_pkg)
    return mods


MODULES = _module_files()


class _Imports(ast.NodeVisitor):
    """Collects (line number, target, inside a function) for every import that runs."""

    def __init__(self) -> None:
        self.found: List[Tuple[int, ast.AST, bool]] = []
        self._depth = 0

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node: ast.AST) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_Import(self, node: ast.Import) -> None:
        self.found.append((node.lineno, node, self._depth > 0))

    visit_ImportFrom = visit_Import


def _targets(module: str, is_pkg: bool, node: ast.AST) -> List[str]:
    names: List[str] = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".")
            if not is_pkg:
                parts = parts[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join(parts) + ("." + node.module if node.module else "")
        for alias in node.names:
            full = f"{base}.{alias.name}"
            names.append(full if full in MODULES else base)
    out = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.append(name)
    return out


def _edges() -> Dict[str, List[Tuple[str, int, bool, str]]]:
    edges: Dict[str, List[Tuple[str, int, bool, str]]] = defaultdict(list)
    for module, (path, is_pkg) in MODULES.items():
        with open(path, encoding="utf-8") as f:
            source = f.read()
        lines = source.splitlines()
        visitor = _Imports()
        visitor.visit(ast.parse(source, path))
        for lineno, node, lazy in visitor.found:
            for target in _targets(module, is_pkg, node):
                edges[module].append((target, lineno, lazy, lines[lineno - 1]))
    return edges


EDGES = _edges()


def _part(module: str) -> str:
    for part in PART_ORDER:
        if module == part or module.startswith(part + "."):
            return part
    raise AssertionError(module)


def _stage(module: str) -> Optional[int]:
    """The runtime stage rank of `module` (None outside the runtime)."""
    if _part(module) != "jitflow.runtime":
        return None
    rest = module[len("jitflow.runtime"):].lstrip(".")
    if not rest:
        return TOP
    sub = rest.split(".")[0]
    if sub not in STAGE_RANK:
        raise AssertionError(f"runtime/{sub} is not in RUNTIME_STAGES of {__file__}: put it in its stage")
    return STAGE_RANK[sub]


def test_parts_depend_one_way() -> None:
    bad = []
    for module, targets in EDGES.items():
        rank = PART_ORDER.index(_part(module))
        for target, lineno, _, _ in targets:
            if PART_ORDER.index(_part(target)) > rank:
                bad.append(f"{module}:{lineno} imports {target} (a part above it)")
    assert not bad, "upward imports between parts:\n" + "\n".join(bad)


def test_runtime_stages_import_only_downward() -> None:
    bad = []
    for module, targets in EDGES.items():
        stage = _stage(module)
        if stage is None:
            continue
        for target, lineno, _, _ in targets:
            t = _stage(target)
            if t is not None and t > stage:
                bad.append(f"{module}:{lineno} imports {target} (stage {t} > {stage})")
    assert not bad, "upward imports inside the runtime:\n" + "\n".join(bad)


def test_no_import_cycles() -> None:
    graph = {m: sorted({t for t, *_ in EDGES.get(m, [])}) for m in MODULES}
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    cycles: List[List[str]] = []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_lazy_project_imports_say_why() -> None:
    bad = [f"{module}:{lineno}: {line.strip()}"
           for module, targets in EDGES.items()
           for target, lineno, lazy, line in targets
           if lazy and "# lazy:" not in line]
    assert not bad, ("imports of jitflow modules inside functions must defer a heavy or optional "
                     "dependency and say so with '# lazy: <why>':\n" + "\n".join(sorted(set(bad))))


@pytest.mark.parametrize("stage", sorted(STAGE_RANK))
def test_every_listed_stage_is_a_package_or_planned(stage: str) -> None:
    """Stages named in RUNTIME_STAGES exist as packages (libraries may be planned)."""
    path = os.path.join(ROOT, "runtime", stage)
    planned = {"io", "strings", "image", "data", "keras", "saved_model", "distribute"}
    assert os.path.isdir(path) or stage in planned, f"runtime/{stage} listed but missing"
