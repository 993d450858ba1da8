#!/usr/bin/env bash
# Formatting and clippy, warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
cargo clippy --workspace --all-targets -- -D warnings
