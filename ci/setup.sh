#!/usr/bin/env bash
# Installs what the project needs that Cargo does not: toolchain components, the C and
# C++ compilers and binutils that crates/ffi's tests (tests/c_api.rs, tests/install.rs)
# compile and link their C/C++ programs with, pkg-config (tests/install.rs builds against
# the installed rangelock.pc), and python3 with venv for the Python client's tests
# (ci/python.sh), and openssl and curl, which the shell blocks of the docs use
# (crates/cli/tests/docs.rs runs them).
# Debian packages used only by benchmarks (redis-server) are installed by ci/install-peers.sh.
set -euo pipefail
if command -v rustup >/dev/null 2>&1; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
fi
packages=()
if ! command -v "${CC:-cc}" >/dev/null 2>&1 || ! command -v "${CXX:-c++}" >/dev/null 2>&1; then
  packages+=(build-essential)
fi
if ! command -v pkg-config >/dev/null 2>&1; then
  packages+=(pkg-config)
fi
# The Python client's tests (ci/python.sh) need python3 with venv (Debian splits ensurepip,
# which `python3 -m venv` needs, into python3-venv).
if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  packages+=(python3 python3-venv)
fi
for tool in openssl curl; do
  command -v "$tool" >/dev/null 2>&1 || packages+=("$tool")
done
if [ "${#packages[@]}" -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${packages[@]}"
fi
cargo --version
"${CC:-cc}" --version | sed -n 1p
"${CXX:-c++}" --version | sed -n 1p
pkg-config --version | sed 's/^/pkg-config /'
python3 --version
openssl version
curl --version | sed -n 1p
