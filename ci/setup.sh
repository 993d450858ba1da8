#!/usr/bin/env bash
# Installs what the project needs that Cargo does not: toolchain components, and the C and
# C++ compilers that crates/ffi's tests (tests/c_api.rs) compile their C/C++ programs with.
# Debian packages used only by benchmarks (redis-server) are installed by ci/install-peers.sh.
set -euo pipefail
if command -v rustup >/dev/null 2>&1; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
fi
if ! command -v "${CC:-cc}" >/dev/null 2>&1 || ! command -v "${CXX:-c++}" >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends build-essential
fi
cargo --version
"${CC:-cc}" --version | sed -n 1p
"${CXX:-c++}" --version | sed -n 1p
