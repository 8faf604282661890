"""The `>>>` examples in the docstrings of the TF-API additions run and print what they say."""
import doctest
import importlib

import numpy as np
import pytest

import jitflow as jf

MODULES = [
    "jitflow.runtime.ops.math_extra_ops", "jitflow.runtime.ops.array_extra_ops", "jitflow.runtime.ops.clip_ops",
    "jitflow.runtime.ops.nn_extra_ops", "jitflow.runtime.autodiff.custom_gradient", "jitflow.runtime.autodiff.tape",
    "jitflow.runtime.state.variable_options", "jitflow.runtime.state.variables",
    "jitflow.runtime.tracing.function_type",
    "jitflow.runtime.tracing.trace_types", "jitflow.runtime.execution.config", "jitflow.runtime.core.graph",
    "jitflow.test", "jitflow.types", "jitflow.linalg",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    globs = {**{k: getattr(jf, k) for k in jf.__all__ if hasattr(jf, k)}, "jf": jf, "np": np,
             **vars(module)}
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name, globs=globs) if t.examples]
    assert tests, f"{name} has no examples"
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring examples of {name} failed (see output)"
