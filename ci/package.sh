#!/usr/bin/env bash
# Every crate packages as it would be published, and each package builds on its own (the
# verify build, from the packaged sources only, in target/package).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo package --workspace --allow-dirty
