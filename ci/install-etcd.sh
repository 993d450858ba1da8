#!/usr/bin/env bash
# Installs etcd (idempotent, non-interactive): the Debian package etcd-server
# (bookworm: 3.4.23). The rangelock-cluster tests start private etcd servers on free
# ports (`LocalEtcd`), so no etcd service is left running.
set -euo pipefail

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

if command -v etcd >/dev/null 2>&1; then
    echo "etcd already installed: $(command -v etcd)"
else
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends etcd-server
fi

# The package may have started its service (as user etcd, on port 2379): stop and
# disable it. Only processes of user etcd are touched, never the tests' own etcds.
if id -u etcd >/dev/null 2>&1 && pgrep -u etcd -x etcd >/dev/null; then
    echo "stopping the packaged etcd service"
    if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
        $SUDO systemctl disable --now etcd || true
    elif [ -x /etc/init.d/etcd ]; then
        $SUDO /etc/init.d/etcd stop || true
    fi
    for _ in $(seq 50); do
        pgrep -u etcd -x etcd >/dev/null || break
        sleep 0.1
    done
    if pgrep -u etcd -x etcd >/dev/null; then
        echo "the packaged etcd did not stop; killing it:"
        pgrep -a -u etcd -x etcd
        pgrep -u etcd -x etcd | xargs -r $SUDO kill || true
    fi
fi
echo "running etcd processes (none expected from the package):"
pgrep -a -x etcd || echo "  none"

echo "installed: $(etcd --version | head -n 1)"
