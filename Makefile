# Two entry points, each self-sufficient on a fresh machine:
#   make run   - create .venv, install jitflow, run the main job
#   make test  - create .venv, install jitflow with test extras, run the whole suite
# and for the edit-test loop and CI:
#   make test-quick  - the fast subset (< 1 minute): no servers, browsers, CUDA simulator or tier matrix
#   make lint        - ruff (lint) and mypy (types) over the package
#   make docs        - the API reference from the docstrings, into docs/api/
#   make test-tf     - the TensorFlow interop tests in a side venv, .venv-tf (TF is never a dependency)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
VENV_TF := .venv-tf
PY_TF   := $(VENV_TF)/bin/python

.PHONY: run test test-quick test-tf lint docs bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

# Stamps re-install only when pyproject.toml or the C accelerator changes.
$(VENV)/.installed: pyproject.toml setup.py runtime/execution/_direct.c | $(PY)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml setup.py runtime/execution/_direct.c | $(PY)
	$(PIP) install -e '.[test,dev]'
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(VENV)/bin/jitflow demo $(DEMO_ARGS)

test: $(VENV)/.installed-test
	$(PY) -m pytest -q

test-quick: $(VENV)/.installed-test
	$(PY) -m pytest -q -x -m "not slow and not tf" -p no:cacheprovider tests/architecture \
		tests/runtime/test_tensor.py tests/runtime/test_function.py tests/runtime/test_errors.py \
		tests/runtime/test_autograph.py tests/summary/test_summary_tf_api.py tests/webui/test_webui_model.py

# mypy checks the installed layout (jitflow.runtime, jitflow.tracer, ...): build/mypy/jitflow is
# a tree of links to the facade's files and the four parts' folders (see [tool.mypy]).
MYPY_TREE := build/mypy/jitflow

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check .
	rm -rf $(MYPY_TREE) && mkdir -p $(MYPY_TREE)
	for f in jitflow/*; do [ "$${f##*/}" = __pycache__ ] || ln -s ../../../$$f $(MYPY_TREE)/; done
	for part in runtime tracer summary webui; do ln -s ../../../$$part $(MYPY_TREE)/$$part; done
	$(VENV)/bin/mypy

docs: $(VENV)/.installed-test
	$(PY) -m pdoc -o docs/api --docformat markdown jitflow

$(PY_TF):
	$(PYTHON) -m venv $(VENV_TF)
	$(PY_TF) -m pip --disable-pip-version-check -q install --upgrade pip setuptools wheel

$(VENV_TF)/.installed: pyproject.toml setup.py runtime/execution/_direct.c | $(PY_TF)
	$(PY_TF) -m pip --disable-pip-version-check -q install -e '.[test]' tensorflow-cpu
	touch $@

test-tf: $(VENV_TF)/.installed
	TF_CPP_MIN_LOG_LEVEL=2 $(PY_TF) -m pytest -q -m tf -p no:cacheprovider; rc=$$?; [ $$rc -eq 5 ] && echo "no TensorFlow tests collected" && exit 0; exit $$rc

bench: $(VENV)/.installed
	$(PIP) install -e '.[bench]'
	for b in benchmarks/bench_*.py; do $(PY) $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) $(VENV_TF) runs .pytest_cache docs/api
