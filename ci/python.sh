#!/usr/bin/env bash
# Type-checks the Python client (mypy --strict clients/python: the package and its tests)
# and runs its tests (clients/python/tests) against the real server binary.
#
# A virtual environment under ${CARGO_TARGET_DIR:-target}/pyenv holds the test tools
# (pytest, trustme, mypy; pinned in clients/python/requirements-test.txt); it is made on
# first use and reused after. The client itself needs nothing beyond the standard library and
# is tested from its source tree. The server binary is built if needed (cheap after
# `cargo test --workspace`); set RANGELOCK_BIN to test another binary.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

target="${CARGO_TARGET_DIR:-target}"
case "$target" in
  /*) ;;
  *) target="$repo/$target" ;;
esac
venv="$target/pyenv"
requirements="$repo/clients/python/requirements-test.txt"

python="${PYTHON:-python3}"
if ! command -v "$python" >/dev/null 2>&1; then
  echo "ci/python.sh: $python not found: install Python 3.9 or newer (Debian: apt-get install python3 python3-venv)" >&2
  exit 1
fi

# Re-create the environment if it is missing or broken, or if the interpreter or the
# requirements changed since it was made.
want="$("$python" --version 2>&1)
$(cat "$requirements")"
stamp="$venv/.made-from"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "" 2>/dev/null \
  || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  rm -rf "$venv"
  if ! "$python" -m venv "$venv"; then
    echo "ci/python.sh: '$python -m venv' failed: on Debian/Ubuntu install python3-venv (bash ci/setup.sh does)" >&2
    exit 1
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
  printf '%s' "$want" >"$stamp"
fi

"$venv/bin/python" -m mypy --strict --cache-dir "$target/mypy-cache" clients/python

if [ -z "${RANGELOCK_BIN:-}" ]; then
  cargo build -p rangelock-cli
  export RANGELOCK_BIN="$target/debug/rangelock"
fi

cd clients/python
"$venv/bin/python" -m pytest tests "$@"
