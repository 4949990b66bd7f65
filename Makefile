# Quick start: `make demo` (set up, then run the digits search) and `make test` (set up, then run the tests).
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
RUN_ID := $(shell date +%Y%m%d-%H%M%S)
# Debian packages: real Fashion-MNIST for its tests, Chromium for the HTML report's browser test,
# PostgreSQL 15 for the --storage postgresql:// test (a throwaway server in a temp dir).
APT_PACKAGES := dataset-fashion-mnist chromium postgresql-15

.PHONY: setup system-deps demo test test-system bench clean-venv

setup: $(STAMP) system-deps

# The venv is rebuilt when the pins or the project's requirements change. pip byte-compiles the ~15,000 modules
# it installs (torch, Ray, ...) one at a time: 69 of the 156 s of a fresh setup here. compileall does it on every
# core (24 s on 2); the .pyc files must exist up front, since PYTHONDONTWRITEBYTECODE (set on these machines) stops
# Python from writing them at import. One torch test helper is Python 3.12 syntax (pip skips it too). Left out:
# what nothing here imports, the libraries' own test suites and Ray's RLlib, Serve and LLM (4,300 files: 22 -> 15 s;
# imported after all, a module is compiled in memory, as without the .pyc).
$(STAMP): pyproject.toml constraints.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --no-compile -c constraints.txt \
	  -e ".[test,postgres]"
	$(PY) -m compileall -qq -j 0 -x '/py312_[a-z_]+\.py$$|/tests/|/ray/(rllib|llm|serve)/' "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
	  || echo "note: some installed modules could not be byte-compiled; Python compiles them at each import"
	@touch $(STAMP)

# Only where we are root with apt (CI, dev machines); elsewhere the tests that need them skip.
system-deps:
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	  if [ -n "$$missing" ]; then \
	    echo "apt-get install$$missing"; \
	    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null \
	      || echo "warning: could not install$$missing; tests that need them will skip"; \
	  fi; \
	fi

demo: setup
	$(PY) -m recipesearch search search_spaces/digits.yaml --out runs/demo-$(RUN_ID)
	@echo "report: runs/demo-$(RUN_ID)/index.html"

test: setup
	$(PY) -m ruff check recipesearch bench tests examples tools
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=20 -m "not system"

# The system tests: whole searches across processes (a two-node Ray cluster, kill -9 and resume, lost workers,
# data-parallel ranks, PostgreSQL, the wheel in a fresh venv), 30-150 s each, ~13 min on 2 cores. CI runs them
# after `make test`; run them before a change to the engine, storage or packaging lands.
test-system: setup
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=10 -m system

# The benchmarks' own extra (Syne Tune, the MO-ASHA peer of §4): only here, never for demo or test.
bench: setup
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[bench]"
	$(PY) -m bench.run_all

clean-venv:
	rm -rf $(VENV)
