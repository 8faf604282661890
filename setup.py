"""The C extension only; everything else is declared in pyproject.toml.

The direct call path of `jf.function` in C (runtime/execution/_direct.c) is optional:
without a C compiler the install still succeeds and jitflow runs the same path in Python
(runtime/execution/direct_call.py), only slower.
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("jitflow.runtime.execution._direct", ["runtime/execution/_direct.c"], optional=True)])
