#!/usr/bin/env bash
# Installs the Debian packages scalatrace needs, if any is missing. Idempotent and quick.
set -euo pipefail
# patch, make, uuid-dev: building the real coNCePTuaL compiler for tests/py/test_codegen_conceptual.py
packages=(mpich libmpich-dev libgtest-dev libunwind-dev gfortran pkg-config clang-format patch make uuid-dev)
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
