# The project's tasks. README.md, scripts/run-tests.sh and .ci/run call these targets, so a
# command is written once. Make stops at the first target that fails.
#
#   make test        what CI runs before its benchmarks: system, setup, lint, type, then every
#                    suite (scripts/run-tests.sh)
#   make test-pure   the pure suite alone: no toolchain, no browser, no root
#   make bench       the benchmark figures CI prints (small configurations)
#   make help        every target
#
# PYTEST_ARGS go to each pytest run, for example `make test-pure PYTEST_ARGS="-x -k render"`;
# a run that selects no test (pytest's status 5) is not a failure.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

VENV := venv
PYTHON := $(VENV)/bin/python
PYTEST_ARGS ?=
NO_TESTS := 5
# The shell scripts shellcheck judges (its settings: .shellcheckrc).
SHELL_SCRIPTS := .ci/run $(wildcard scripts/*.sh scripts/*/*.sh) magic-cluster/host/install.sh validation/entrypoint-ollama.sh

.PHONY: help setup system lint type check test-pure toolchain engine-sources images browser test-toolchain test-cluster test-node test bench

help:  ## this list
	@sed -n 's/^\([a-z-]*\):.*## \(.*\)/  make \1\t\2/p' $(MAKEFILE_LIST) | expand -t 24

setup: $(VENV)/.installed  ## the virtual environment venv/, with the project and its test tools

# Made again when pyproject.toml changes; one environment for every target.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

system:  ## the Debian packages beyond the pure suite (as root; nothing when present)
	scripts/system-packages.sh

lint: setup  ## ruff lint and format check, shellcheck
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/shellcheck $(SHELL_SCRIPTS)

type: setup  ## mypy --strict (pyproject.toml says over what)
	$(VENV)/bin/mypy

check: lint type  ## lint and type, the fast checks (pre-commit runs them too)

test-pure: setup  ## the pure suite, with every tool of the toolchain hidden
	$(PYTHON) -m tests.pure_environment $(VENV)/bin/pytest -m pure $(PYTEST_ARGS) || (($$? == $(NO_TESTS)))

toolchain:  ## build what the test toolchain lacks (scripts/toolchain/build.sh)
	scripts/toolchain/build.sh

engine-sources: setup  ## the engines' source at the releases docs/engine-arguments.md cites (scripts/engine-sources/fetch.sh)
	PYTHON=$(PYTHON) scripts/engine-sources/fetch.sh

images:  ## the real node's images (scripts/images/build.sh, as root)
	scripts/images/build.sh >/dev/null

browser: setup  ## chromium and axe-core for the browser suite
	scripts/browser/setup.sh >/dev/null

test-toolchain: test-cluster test-node  ## every suite but the pure one, one after the other

test-cluster: setup  ## every suite but the pure one and the real node's (needs toolchain, engine-sources, browser, system)
	$(VENV)/bin/pytest -m "not pure" --ignore=tests/node $(PYTEST_ARGS) || (($$? == $(NO_TESTS)))

test-node: setup  ## the real node's suite, tests/node (as root; needs toolchain, images, system)
	$(VENV)/bin/pytest -m "not pure" tests/node $(PYTEST_ARGS) || (($$? == $(NO_TESTS)))

test: system setup lint type  ## everything CI tests: the checks, then every suite
	scripts/run-tests.sh $(PYTEST_ARGS)

bench: setup  ## the benchmark figures, small configurations (figures, not assertions)
	$(PYTHON) -m benchmarks.access_guard
	$(PYTHON) -m benchmarks.reconcile_trigger
	$(PYTHON) -m benchmarks.scale --small
	$(PYTHON) -m benchmarks.engine --small
	$(PYTHON) -m benchmarks.dashboard --small
	$(PYTHON) -m benchmarks.first_answer
