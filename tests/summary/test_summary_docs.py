"""The examples in jitflow.summary's docstrings run and print what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import numpy as np
import pytest

import jitflow as jf
import jitflow.summary as pkg

MODULES = ["jitflow.summary"] + [f"jitflow.summary.{m.name}" for m in pkgutil.iter_modules(pkg.__path__)]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False, extraglobs={"jf": jf, "np": np})
    assert result.failed == 0


def test_public_api_has_examples():
    for name in pkg.__all__:
        obj = getattr(pkg, name)
        doc = getattr(obj, "__doc__", "") or ""
        assert doc.strip(), f"{name} has no docstring"
    for name in ["create_file_writer", "scalar", "histogram", "text", "image", "graph", "write",
                 "SummaryWriter", "SummaryFileWriter", "record_if"]:
        assert ">>>" in getattr(pkg, name).__doc__, f"{name} has no example"
