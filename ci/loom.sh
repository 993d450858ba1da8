#!/usr/bin/env bash
# Lints the loom build of every crate with models, then runs every model with a bounded
# preemption count.
# Models live next to the code they check, as `#[cfg(loom)]` tests.
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
# package:directory
for crate in epvs:epvs rangelock:rangelock rangelock-baselines:baselines rangelock-bravo:bravo \
  rangelock-client:client; do
  package="${crate%%:*}" dir="${crate##*:}"
  if grep -rqs 'cfg(loom)' "crates/$dir/src" "crates/$dir/tests" 2>/dev/null; then
    echo "--- loom: $package"
    # The loom build has code of its own (cfg(loom) constants, models): lint it too.
    cargo clippy --release -p "$package" --lib --tests -- -D warnings
    # A model that deadlocks can hang the harness (loom's panic under captured output)
    # instead of failing: a bound turns that into a failure (exit 124) naming the crate.
    timeout "${LOOM_TIMEOUT:-1500}" \
      cargo test --release -p "$package" --lib --tests -- --test-threads=2 loom ||
      { echo "--- loom: $package failed or ran past ${LOOM_TIMEOUT:-1500} s" >&2; exit 1; }
  else
    echo "--- loom: no models in crates/$dir" >&2
    exit 1
  fi
done
