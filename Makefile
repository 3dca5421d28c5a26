# Front door: `make demo`, `make test`, `make build`. Each installs what is missing first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BUILD_DIR := build/py
export SCALATRACE_BUILD_DIR := $(abspath $(BUILD_DIR))

.PHONY: all build demo test system venv clean

all: build

system:
	@./scripts/setup-system.sh

$(VENV)/.deps-stamp: requirements-dev.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	@touch $@

venv: system $(VENV)/.deps-stamp

build: venv
	$(PY) -m pip install -q --no-build-isolation --no-deps \
	  -C build-dir=$(BUILD_DIR) -C cmake.build-type=RelWithDebInfo \
	  -C cmake.define.SCALATRACE_BUILD_TESTS=ON .

test: build
	cd $(BUILD_DIR) && $(abspath $(VENV))/bin/ctest --output-on-failure -j2
	$(PY) -m pytest -q tests/py

demo: build
	$(PY) -m scalatrace.demo

clean:
	rm -rf build
