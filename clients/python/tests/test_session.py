"""Sessions: keepalive, lost connections, server shutdown, poll grants, Unix sockets."""

from __future__ import annotations

import threading
import time

import pytest

import rangelock
from conftest import BlockedLock, wait_until
from test_locking import holders, waiters


def test_keepalive_keeps_a_session_past_its_lease(start_server):
    server = start_server("--lease-ms", "300")
    with rangelock.Client(server.address) as a, rangelock.Client(server.address) as b:
        assert a.lease == 0.3
        g = a.lock(0, 4096)
        # a's threads send nothing for > 3 leases; only its keepalive thread talks. Waiting
        # for time to pass is the point of this test.
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:
            assert holders(b) == [(a.session, 0, 4096, False)]
            time.sleep(0.1)
        assert g.valid and a.connected
        with pytest.raises(rangelock.WouldBlock):
            b.try_lock(0, 1)
        g.unlock()
        assert b.stats().counters.released_by_close == 0


def test_without_keepalive_the_lease_lapses(start_server):
    server = start_server("--lease-ms", "300")
    with rangelock.Client(server.address) as b:
        a = rangelock.Client(server.address, keepalive=False)
        g = a.lock(0, 4096)
        # The server ends a's session after a silent lease and releases its lock.
        wait_until(lambda: holders(b) == [], what="the server to end the silent session")
        with b.try_lock(0, 4096):
            pass
        lost = a.wait_lost(timeout=10)
        assert isinstance(lost, rangelock.ConnectionLost)
        assert "the server closed the connection" in str(lost)
        assert not g.valid
        with pytest.raises(rangelock.ConnectionLost):
            g.unlock()
        a.close()


def test_killed_server_gives_connection_lost(start_server):
    server = start_server()
    c = rangelock.Client(server.address)
    other = rangelock.Client(server.address)
    g = c.lock(0, 10)
    queued = threading.Event()
    out = {}

    def blocked():
        try:
            c.lock(0, 10)  # waits on c's own lock (a second LOCK of an overlapping range)
        except BaseException as e:  # noqa: BLE001
            out["error"] = e
        queued.set()

    t = threading.Thread(target=blocked)
    t.start()
    wait_until(lambda: len(waiters(other)) == 1, what="the second lock to be queued")
    server.kill()
    lost = c.wait_lost(timeout=10)
    assert isinstance(lost, rangelock.ConnectionLost)
    assert not isinstance(lost, rangelock.ClientClosed)
    assert f"connection to {server.address} lost: " in str(lost)
    assert f"releases every lock of session {c.session}" in str(lost)
    assert queued.wait(10)
    t.join()
    assert isinstance(out["error"], rangelock.ConnectionLost), out
    assert not c.connected and not g.valid
    for call in (c.ping, c.stats, lambda: c.lock(20, 30), lambda: c.try_lock(20, 30), g.unlock):
        with pytest.raises(rangelock.ConnectionLost, match="lost"):
            call()
    with pytest.raises(rangelock.ConnectionLost):
        with c.lock(40, 50):
            pass
    c.close()
    other.close()


def test_with_block_reports_a_connection_lost_inside_it(start_server):
    server = start_server()
    c = rangelock.Client(server.address)
    with pytest.raises(rangelock.ConnectionLost):
        with c.lock(0, 10) as g:
            server.kill()
            c.wait_lost(timeout=10)
            assert not g.valid
    c.close()


def test_server_shutdown_answers_a_waiting_lock(start_server):
    """SIGTERM: queued LOCKs are answered SHUTTING_DOWN (§2), then the connection closes."""
    server = start_server()
    holder = rangelock.Client(server.address)
    c = rangelock.Client(server.address)
    holder.lock(0, 10)
    blocked = BlockedLock(c, 0, 10)
    wait_until(lambda: len(waiters(holder)) == 1, what="the lock to be queued")
    assert server.stop() == 0
    error = blocked.result()
    assert isinstance(error, rangelock.ShuttingDown), error
    assert "shutting down" in str(error)
    assert isinstance(c.wait_lost(timeout=10), rangelock.ConnectionLost)
    holder.close()
    c.close()


def test_poll_grant_server(start_server):
    server = start_server("--grant", "poll")
    with rangelock.Client(server.address) as a, rangelock.Client(server.address) as b:
        assert a.grant_mode == rangelock.GrantMode.POLL == "poll"
        held = a.lock(0, 100)
        with pytest.raises(rangelock.WouldBlock):
            b.try_lock(50, 60)
        with pytest.raises(rangelock.TimedOut):
            b.lock(50, 60, timeout=0.1)  # PENDING, then POLL answers TIMED_OUT
        done = threading.Event()
        out = {}

        def blocked():
            out["guard"] = b.lock(50, 60, shared=True)
            done.set()

        t = threading.Thread(target=blocked)
        t.start()
        wait_until(lambda: len(waiters(a)) == 1, what="b's lock to be queued")
        assert not done.is_set()
        held.unlock()
        assert done.wait(10)
        t.join()
        g = out["guard"]
        assert g.valid and g.token > held.token
        assert holders(a) == [(b.session, 50, 60, True)]
        g.unlock()
        assert holders(a) == []
        with a.lock(0, 100, timeout=1) as g2:
            assert g2.token > g.token


def test_unix_socket(start_server, tmp_path):
    path = str(tmp_path / "rl.sock")
    server = start_server(unix=path, tcp=False)
    assert server.unix == f"unix:{path}" and server.address is None
    with rangelock.Client(f"unix:{path}") as a, rangelock.Client(f"unix:{path}") as b:
        with a.lock(0, 10) as g:
            with pytest.raises(rangelock.WouldBlock):
                b.try_lock(0, 10)
            assert g.valid
        with b.try_lock(0, 10, shared=True) as g2:
            assert g2.token > g.token
    with pytest.raises(rangelock.ConnectError, match=f"cannot connect to unix:{path}x"):
        rangelock.Client(f"unix:{path}x")
