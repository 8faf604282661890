"""The public face of jitflow: what `dir(jf)` shows, `__all__` everywhere, documented names.

* `dir(jf)` is exactly `jf.__all__`: no internal module or helper (`executor`, `KERNELS`,
  `annotations`, ...) is reachable as `jf.<name>`; internals stay importable by full path.
* every public submodule (`jf.math`, `jf.nn`, ...) defines `__all__`, and every name in it exists;
* every `jf.<name>` the README mentions exists;
* every public function and class has a docstring with a short example, and the examples run
  (doctest, with `jf` and `np` in scope).
"""
from __future__ import annotations

import doctest
import inspect
import os
import re
import types
from typing import Dict, Iterator, List, Tuple

import numpy as np
import pytest

import jitflow as jf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INTERNAL = {"annotations", "executor", "compiler", "compiler_codegen", "KERNELS", "OPS", "OpDef",
            "registry", "placement", "instrument", "array_ops", "math_ops", "constant_op", "Any", "Dict"}


def _public_modules() -> Dict[str, types.ModuleType]:
    return {name: getattr(jf, name) for name in jf.__all__ if isinstance(getattr(jf, name), types.ModuleType)}


def _public_objects() -> Iterator[Tuple[str, object]]:
    seen = set()
    namespaces = {"jf": jf, **{f"jf.{k}": v for k, v in _public_modules().items()}}
    for prefix, module in namespaces.items():
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or not callable(obj) or id(obj) in seen:
                continue
            if isinstance(obj, type) and issubclass(obj, BaseException) and prefix == "jf.errors":
                continue
            if isinstance(obj, type) and any(c.__module__.startswith("google.") for c in obj.__mro__[1:]):
                continue  # protobuf messages (`jf.train.Example`): TensorFlow's own protos, documented there
            seen.add(id(obj))
            yield f"{prefix}.{name}", obj


def test_dir_is_the_public_api() -> None:
    public = [n for n in dir(jf) if not n.startswith("_")]
    assert sorted(public) == sorted(jf.__all__)
    leaked = INTERNAL & set(public)
    assert not leaked, f"internal names reachable as jf.<name>: {sorted(leaked)}"


def test_every_public_name_exists() -> None:
    missing = [n for n in jf.__all__ if not hasattr(jf, n)]
    assert not missing


@pytest.mark.parametrize("name", sorted(_public_modules()))
def test_public_submodules_define_all(name: str) -> None:
    module = getattr(jf, name)
    assert hasattr(module, "__all__"), f"jf.{name} has no __all__"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"jf.{name}.__all__ names missing attributes: {missing}"
    leaked = INTERNAL & set(module.__all__)
    assert not leaked, f"jf.{name}.__all__ exports internals: {sorted(leaked)}"


def test_readme_names_exist() -> None:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    missing = []
    for dotted in sorted(set(re.findall(r"\bjf\.([A-Za-z_][\w.]*[A-Za-z0-9_])", readme))):
        obj: object = jf
        for part in dotted.split("."):
            if not hasattr(obj, part):
                missing.append(dotted)
                break
            obj = getattr(obj, part)
    assert not missing, f"the README mentions names jitflow does not have: {missing}"


def _undocumented() -> List[str]:
    bad = []
    for qualname, obj in _public_objects():
        doc = inspect.getdoc(obj) or ""
        if ">>>" not in doc and "\n    " not in doc:
            bad.append(qualname)
    return bad


def test_every_public_name_has_a_docstring_with_an_example() -> None:
    bad = _undocumented()
    assert not bad, f"{len(bad)} public names lack a docstring with an example: {bad}"


def test_docstring_examples_run() -> None:
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures: List[str] = []
    tests = []
    for qualname, obj in _public_objects():
        for test in finder.find(obj, qualname, extraglobs={"jf": jf, "np": np}):
            tests.append(test)
    for module in [jf, *_public_modules().values()]:
        tests.extend(t for t in finder.find(module, module.__name__, extraglobs={"jf": jf, "np": np})
                     if t.name == module.__name__)  # the module docstring itself
    from jitflow.summary import context as summary_context
    for test in tests:
        runner.run(test, out=lambda s: failures.append(s))
        # Each example stands alone: forget a default writer and step an example left set
        # (as `writer.set_as_default(step=0)` does, in TF too).
        summary_context.global_writer = None
        summary_context.global_step = None
        summary_context.tls.writer = None
        summary_context.tls.step = summary_context._UNSET
    assert runner.failures == 0, "".join(failures)
