# Two entry points, each self-sufficient on a fresh machine:
#   make run   - create .venv, install jitflow, run the main job
#   make test  - create .venv, install jitflow with test extras, run the whole suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q

.PHONY: run test test-tf bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

# Stamps re-install only when pyproject.toml or the C accelerator changes.
$(VENV)/.installed: pyproject.toml runtime/_direct.c | $(PY)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml runtime/_direct.c | $(PY)
	$(PIP) install -e '.[test]'
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(VENV)/bin/jitflow demo $(DEMO_ARGS)

test: $(VENV)/.installed-test
	$(PY) -m pytest -q

# TensorFlow interop (tests marked `tf`: checkpoints and SavedModels both ways) in a side venv;
# TensorFlow is never a dependency of jitflow itself.
VENV_TF := .venv-tf
$(VENV_TF)/.installed-tf: pyproject.toml runtime/_direct.c
	test -x $(VENV_TF)/bin/python || $(PYTHON) -m venv $(VENV_TF)
	$(VENV_TF)/bin/python -m pip --disable-pip-version-check -q install --upgrade pip setuptools wheel
	$(VENV_TF)/bin/python -m pip --disable-pip-version-check -q install -e '.[test]' tensorflow-cpu
	touch $@

test-tf: $(VENV_TF)/.installed-tf
	TF_CPP_MIN_LOG_LEVEL=2 $(VENV_TF)/bin/python -m pytest -q -m tf

bench: $(VENV)/.installed
	$(PIP) install -e '.[bench]'
	for b in benchmarks/bench_*.py; do $(PY) $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) $(VENV_TF) runs .pytest_cache
