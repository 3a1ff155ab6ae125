# Two commands do all the set-up: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DB ?= sqlite:///autonumber.db
STAMP := $(VENV)/.installed
DEVSTAMP := $(VENV)/.installed-dev

# pytest-xdist workers for `make test`: the suite waits on the database servers more than on the
# CPU, so more workers than cores pays (CONTRIBUTING.md has the measurement). `make test WORKERS=0`
# runs serially.
WORKERS ?= 4
XDIST = -n $(WORKERS) --dist loadgroup

.PHONY: run test check lint suite quick stress-suite install install-dev bench bench-quick bench-job bench-cli bench-import soak clean chromium iptables wrk

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(DEVSTAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $@ $(STAMP)

install: $(STAMP)
install-dev: $(DEVSTAMP)

## make run: install, bootstrap the embedded SQLite database and run the main job.
run: $(STAMP)
	$(BIN)/autonumber run --db $(DB)

## Lint and types run BESIDE the tests, not before them: mypy's first run on a fresh clone (empty
## .mypy_cache) takes minutes, and the tests mostly wait on the database servers. The tests print
## their progress as they go; lint's output is kept in a file and printed when both have ended.
LINT_LOG := $(VENV)/lint.log
define beside_lint
$(MAKE) --no-print-directory lint > $(LINT_LOG) 2>&1 & lint=$$!; \
$(MAKE) --no-print-directory $(1); tests=$$?; \
wait $$lint; linted=$$?; \
echo "--- make lint, run beside the tests (exit $$linted)"; cat $(LINT_LOG); \
test $$tests -eq 0 -a $$linted -eq 0
endef

## make test: install the dev extras (and Chromium via apt-get for the browser tests, when missing)
## and run the whole suite (lint, types, every test on SQLite, MariaDB, PostgreSQL, Galera, Chromium).
test: chromium iptables $(DEVSTAMP)
	@$(call beside_lint,suite)

suite: $(DEVSTAMP)
	$(BIN)/pytest -q $(XDIST) --durations=30

## make check: the quick loop (< 2 min): lint, types, and the tests that need no server, browser or
## load (unit tests and everything on SQLite).
check: $(DEVSTAMP)
	@$(call beside_lint,quick)

QUICK_WORKERS ?= 4
quick: $(DEVSTAMP)
	$(BIN)/pytest -q -n $(QUICK_WORKERS) -m "not mysql and not postgresql and not galera and not e2e and not slow"

## make stress-suite: RUNS (default 3) fresh-clone `CI=true bash .ci/run` in a row while stress-ng keeps
## one core busy (installed with apt-get when missing); one line per run and a JSON of them.
stress-suite:
	bash scripts/stress_suite.sh

lint: $(DEVSTAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

chromium:
	@command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ] || \
	  (echo "make test: installing Chromium with apt-get (browser tests drive /usr/bin/chromium)" && \
	   apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)

## iptables makes the Galera tests' lossy links (an iptables `statistic` match; netem is missing here).
iptables:
	@command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || \
	  (echo "make test: installing iptables with apt-get (the Galera tests' lossy links)" && \
	   apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iptables >/dev/null)

## wrk drives the HTTP rows of the bench (Debian package, like chromium for the browser tests).
wrk:
	@command -v wrk >/dev/null 2>&1 || \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null)

## make bench: the full benchmark (≈20 min, `python -m bench` from this directory; the harness is the
## bench/ package, never installed); bench-quick < 5 min; bench-job only the record/HTTP rows;
## bench-cli only the CLI start-up row; bench-import the bulk import (100k and 1M rows);
## soak restarts the local servers.
bench: $(DEVSTAMP) wrk
	$(BIN)/python -m bench

bench-job: $(DEVSTAMP) wrk
	$(BIN)/python -m bench --only job

bench-quick: $(DEVSTAMP) wrk
	$(BIN)/python -m bench --quick

bench-cli: $(DEVSTAMP)
	$(BIN)/python -m bench --only cli

bench-import: $(DEVSTAMP)
	$(BIN)/python -m bench --only import

soak: $(DEVSTAMP)
	bash bench/soak_restart.sh

clean:
	rm -rf $(VENV) autonumber.db autonumber.db-wal autonumber.db-shm
