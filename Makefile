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

# Stamps re-install only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PIP) install -e '.[test]'
	touch $(VENV)/.installed $@

run: $(VENV)/.installed
	$(PY) examples/retracing.py

test: $(VENV)/.installed-test
	$(PY) -m pytest -q

bench: $(VENV)/.installed
	$(PIP) install -e '.[bench]'
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) runs .pytest_cache
