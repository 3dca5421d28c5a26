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

# pip installing requirements: no progress bars (the output is a log), no byte-compiling of
# every installed module (Python compiles what it imports on first use; byte-compiling SciPy,
# pandas, SymPy and matplotlib up front took more than half of the install).
PIP_REQUIREMENTS = $(PY) -m pip install --progress-bar off --no-compile

# The package's build flags: -O2 with line tables (-g1: file:line in backtraces and profiles).
# Full debug info (-g) made every compile 35-55 % slower (CPU time per translation unit), the
# largest part of `make demo`; one set of flags for `make demo`, `build` and `test`, so nothing
# is compiled twice.
OPT_FLAGS := -O2 -g1 -DNDEBUG

# pip building and installing the package into .venv from the build tree $(BUILD_DIR).
PIP_INSTALL_PACKAGE = $(PROGRESS) --label "building scalatrace" -- \
	$(PY) -m pip install -v --no-build-isolation --no-deps --no-compile \
	  -C build-dir=$(BUILD_DIR) -C cmake.build-type=RelWithDebInfo \
	  -C "cmake.define.CMAKE_CXX_FLAGS_RELWITHDEBINFO=$(OPT_FLAGS)" \
	  -C "cmake.define.CMAKE_C_FLAGS_RELWITHDEBINFO=$(OPT_FLAGS)" \
	  $(if $(CCACHE),-C cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=$(CCACHE) -C cmake.define.CMAKE_C_COMPILER_LAUNCHER=$(CCACHE))

.PHONY: all build package demo docs test sanitize system system-test venv clean

all: build

system:
	@./scripts/setup-system.sh

system-test:
	@./scripts/setup-system.sh test

# requirements.txt: the build backend and the runtime dependencies (what `make demo` needs);
# requirements-dev.txt adds the tests' (pytest, Jupyter kernel for the notebooks, ruff).
$(VENV)/.runtime-stamp: requirements.txt
	@test -x $(PY) || $(PROGRESS) --label "python -m venv" -- $(PYTHON) -m venv $(VENV)
	$(PROGRESS) --label "pip" -- $(PIP_REQUIREMENTS) -r requirements.txt
	@touch $@

$(VENV)/.deps-stamp: requirements-dev.txt $(VENV)/.runtime-stamp
	$(PROGRESS) --label "pip" -- $(PY) -m pip install --progress-bar off --upgrade pip
	$(PROGRESS) --label "pip" -- $(PIP_REQUIREMENTS) -r requirements-dev.txt
	@touch $@

$(VENV)/.docs-stamp: requirements-docs.txt $(VENV)/.runtime-stamp
	$(PROGRESS) --label "pip" -- $(PIP_REQUIREMENTS) -r requirements-docs.txt
	@touch $@

venv: system $(VENV)/.deps-stamp

# Everything: the package with its command-line tools, plus the examples, GoogleTest suites and
# benchmarks (what `make test` runs).
build: system-test venv
	$(PIP_INSTALL_PACKAGE) -C cmake.define.SCALATRACE_BUILD_TOOLS=ON -C cmake.define.SCALATRACE_BUILD_TESTS=ON .

# What the demo needs (core, collector, replay, Python extension; not the command-line tools
# scalatrace-dump/-harness/-calibrate), with the runtime requirements only. Same build tree and
# flags as `build`, so a later `make build` / `make test` adds only the tools and the tests. In a
# tree that `make build` configured, the tools and tests stay (ON in its CMakeCache.txt): a later
# `make demo` or `make docs` does not take the tools out of the installed package or the tests
# out of ctest.
IN_BUILD_TREE = $(if $(shell grep -s '^$(1):BOOL=ON$$' $(BUILD_DIR)/CMakeCache.txt),ON,OFF)
package: system $(VENV)/.runtime-stamp
	$(PIP_INSTALL_PACKAGE) -C cmake.define.SCALATRACE_BUILD_TOOLS=$(call IN_BUILD_TREE,SCALATRACE_BUILD_TOOLS) \
	  -C cmake.define.SCALATRACE_BUILD_TESTS=$(call IN_BUILD_TREE,SCALATRACE_BUILD_TESTS) .

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

# The API reference (Sphinx, from the docstrings of the installed package) into build/docs/html.
docs: package $(VENV)/.docs-stamp
	$(PROGRESS) --label "sphinx" -- $(PY) -m sphinx -b html -q -W --keep-going docs/api build/docs/html
	@echo "API reference: build/docs/html/index.html"

clean:
	rm -rf build
