# Front door: `make demo`, `make test`, `make build`. Each installs what is missing first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BUILD_DIR := build/py
export SCALATRACE_BUILD_DIR := $(abspath $(BUILD_DIR))

ASAN_DIR := build/asan
CCACHE := $(shell command -v ccache 2>/dev/null)

# Long steps print what they do (pip without -q, the CMake/ninja lines with -v) and, through
# scripts/with_progress.py, a line after every 20 s of silence.
PROGRESS := $(PYTHON) scripts/with_progress.py

# pip building and installing the package into .venv from the build tree $(BUILD_DIR).
PIP_INSTALL_PACKAGE = $(PROGRESS) --label "building scalatrace" -- \
	$(PY) -m pip install -v --no-build-isolation --no-deps \
	  -C build-dir=$(BUILD_DIR) -C cmake.build-type=RelWithDebInfo \
	  $(if $(CCACHE),-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) -C cmake.define.CMAKE_C_COMPILER_LAUNCHER=$(CCACHE))

.PHONY: all build package demo test sanitize system system-test venv clean

all: build

system:
	@./scripts/setup-system.sh

system-test:
	@./scripts/setup-system.sh test

$(VENV)/.deps-stamp: requirements-dev.txt
	@test -x $(PY) || $(PROGRESS) --label "python -m venv" -- $(PYTHON) -m venv $(VENV)
	$(PROGRESS) --label "pip" -- $(PY) -m pip install --progress-bar off --upgrade pip
	$(PROGRESS) --label "pip" -- $(PY) -m pip install --progress-bar off -r requirements-dev.txt
	@touch $@

venv: system $(VENV)/.deps-stamp

# Everything: the package plus the examples, GoogleTest suites and benchmarks (what `make test`
# runs).
build: system-test venv
	$(PIP_INSTALL_PACKAGE) -C cmake.define.SCALATRACE_BUILD_TESTS=ON .

# The package alone (core, collector, replay, tools, Python extension): what the demo needs.
# Same build tree as `build`, so a later `make build` / `make test` adds only the tests.
package: venv
	$(PIP_INSTALL_PACKAGE) -C cmake.define.SCALATRACE_BUILD_TESTS=OFF .

test: build sanitize
	cd $(BUILD_DIR) && $(abspath $(VENV))/bin/ctest --output-on-failure -j2
	$(PY) -m pytest -q tests/py

# The core's GoogleTest suites under AddressSanitizer + UndefinedBehaviorSanitizer: a separate
# small build (core and tests only, no MPI/Python; ccache when available).
sanitize: system-test venv
	$(VENV)/bin/cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_MAKE_PROGRAM=$(abspath $(VENV))/bin/ninja \
	  -DSCALATRACE_CORE_ONLY=ON -DSCALATRACE_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS=-O1 $(if $(CCACHE),-DCMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE))
	$(VENV)/bin/cmake --build $(ASAN_DIR) -j2
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	  $(abspath $(VENV))/bin/ctest --output-on-failure -j2

# The demo builds its example program with mpicc when the build tree has none.
demo: package
	$(PY) -m scalatrace.demo

clean:
	rm -rf build
