#!/usr/bin/env bash
# Runs every loom model in the workspace with a bounded preemption count.
# Models live next to the code they check, as `#[cfg(loom)]` tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
for crate in epvs rangelock rangelock-bravo; do
  if grep -rqs 'cfg(loom)' "crates/$crate/src" "crates/$crate/tests" 2>/dev/null; then
    echo "--- loom: $crate"
    cargo test --release -p "$crate" --lib --tests -- --test-threads=2 loom
  fi
done
