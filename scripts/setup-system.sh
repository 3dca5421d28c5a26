#!/usr/bin/env bash
# Installs the Debian packages scalatrace needs, if any is missing. Idempotent and quick.
# `setup-system.sh` (make demo / build): what building and running the package needs.
# `setup-system.sh test` (make test): also what the tests need: GoogleTest, gfortran (Fortran
# examples), clang-format (style test), chromium (the HTML report opened headless).
set -euo pipefail
packages=(mpich libmpich-dev libunwind-dev pkg-config)
if [ "${1:-}" = "test" ]; then
  # patch, make, uuid-dev: building the real coNCePTuaL compiler (tests/py/test_codegen_conceptual.py)
  packages+=(libgtest-dev gfortran clang-format chromium patch make uuid-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "scalatrace: installing Debian packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
