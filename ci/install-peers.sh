#!/usr/bin/env bash
# Installs the external peers the server benchmarks compare against (idempotent,
# non-interactive): redis-server (Debian package) for the `dslr-redis` variant of
# `rangelock bench server-micro` / `server-oltp`.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
    echo "redis-server already installed: $(redis-server --version)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends redis-server
# The bench starts its own redis-server on a free port; the packaged service is not needed.
echo "installed: $(redis-server --version)"
