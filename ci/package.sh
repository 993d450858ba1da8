#!/usr/bin/env bash
# Every crate packages as it would be published, and each package builds on its own (the
# verify build, from the packaged sources only, in target/package-verify).
set -euo pipefail
cd "$(dirname "$0")/.."
# The verify builds read the other workspace crates from an overlay registry. Cargo
# treats a registry crate as immutable: a build of rangelock-proto 0.1.0 from an earlier
# run would be reused instead of today's sources. So the verify builds get a target
# directory of their own, in which our crates' builds are cleared each time (the
# dependencies' stay) along with the unpacked packages.
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
verify=target/package-verify
rm -rf target/package "$cargo_home"/registry/src/-*/rangelock* "$cargo_home"/registry/src/-*/epvs-*
rm -rf "$verify"/debug/.fingerprint/rangelock* "$verify"/debug/.fingerprint/epvs-* \
  "$verify"/debug/deps/*rangelock* "$verify"/debug/deps/*epvs*
cargo package --workspace --allow-dirty --target-dir "$verify"
