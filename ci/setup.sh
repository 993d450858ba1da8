#!/usr/bin/env bash
# Installs what the project needs that Cargo does not: toolchain components.
# Debian packages used only by benchmarks (redis-server) are installed by ci/install-peers.sh.
set -euo pipefail
if command -v rustup >/dev/null 2>&1; then
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
fi
cargo --version
