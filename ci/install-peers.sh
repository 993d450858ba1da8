#!/usr/bin/env bash
# Installs the external peers the server benchmarks compare against (idempotent,
# non-interactive): redis-server (Debian package) for the client-sided variants over the
# network, `dslr-redis` and `citron-redis`, of `rangelock bench server-micro` /
# `server-oltp`, and their tests. The tests and suites start private redis-servers on free
# ports; the packaged service is stopped.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

if command -v redis-server >/dev/null 2>&1; then
    echo "redis-server already installed: $(redis-server --version)"
else
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends redis-server
    echo "installed: $(redis-server --version)"
fi

# The package may have started its service (as user redis, on port 6379): stop and
# disable it. Only processes of user redis are touched, never the tests' own servers.
if id -u redis >/dev/null 2>&1 && pgrep -u redis -x redis-server >/dev/null; then
    echo "stopping the packaged redis-server service"
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        $SUDO systemctl disable --now redis-server || true
    elif [ -x /etc/init.d/redis-server ]; then
        $SUDO /etc/init.d/redis-server stop || true
    fi
fi
