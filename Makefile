# Two entry points, each self-sufficient on a fresh machine:
#   make run   - create .venv, install jitflow, run the main job
#   make test  - create .venv, install jitflow with test extras, run the whole suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q

.PHONY: run test bench clean

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

bench: $(VENV)/.installed
	$(PIP) install -e '.[bench]'
	for b in benchmarks/bench_*.py; do $(PY) $$b --quick || exit 1; done

clean:
	rm -rf $(VENV) runs .pytest_cache
