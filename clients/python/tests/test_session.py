"""Sessions: keepalive, lost connections, server shutdown, poll grants, Unix sockets."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

import rangelock
from rangelock import protocol as P
from conftest import BlockedLock, Connect, StartServer, wait_until
from test_locking import holders, waiters
from test_protocol import VECTORS


def test_keepalive_keeps_a_session_past_its_lease(start_server: StartServer, connect: Connect) -> None:
    server = start_server("--lease-ms", "300")
    with connect(server.address) as a, connect(server.address) as b:
        assert a.lease == 0.3
        g = a.lock(0, 4096)
        # a's threads send nothing for > 3 leases; only its keepalive thread talks. Waiting
        # for time to pass is the point of this test.
        deadline = time.monotonic() + 1.2
        while time.monotonic() < deadline:
            assert holders(b) == [(a.session, 0, 4096, False)]
            time.sleep(0.1)
        assert g.valid and a.connected
        with pytest.raises(rangelock.WouldBlockError):
            b.try_lock(0, 1)
        g.unlock()
        assert b.stats().counters.released_by_close == 0


def test_without_keepalive_the_lease_lapses(start_server: StartServer, connect: Connect) -> None:
    server = start_server("--lease-ms", "300")
    with connect(server.address) as b:
        a = connect(server.address, keepalive=False)
        g = a.lock(0, 4096)
        # The server ends a's session after a silent lease and releases its lock.
        wait_until(lambda: holders(b) == [], what="the server to end the silent session")
        with b.try_lock(0, 4096):
            pass
        lost = a.wait_lost(timeout=10)
        # The server said why (a SESSION_ENDED notice, protocol §2.1).
        assert isinstance(lost, rangelock.SessionExpiredError), repr(lost)
        assert isinstance(lost, rangelock.SessionEndedError)
        assert isinstance(lost, ConnectionError)
        assert lost.reason is rangelock.EndReason.LEASE_EXPIRED
        assert f"ended session {a.session}: its lease lapsed" in str(lost)
        assert "the lease is 300 ms" in str(lost)
        assert a.loss == str(lost)
        assert not g.valid
        with pytest.raises(rangelock.SessionExpiredError, match="lease lapsed"):
            g.unlock()
        a.close()


def test_a_version_3_session_gets_no_reason(start_server: StartServer, monkeypatch: pytest.MonkeyPatch, connect: Connect) -> None:
    """A version 3 session never gets the SESSION_ENDED notice: its client sees only the
    closed connection, as before version 4."""
    monkeypatch.setattr(rangelock.protocol, "VERSION", 3)
    server = start_server("--lease-ms", "300")
    a = connect(server.address, keepalive=False)
    assert a.hello.version == 3
    lost = a.wait_lost(timeout=10)
    assert type(lost) is rangelock.ConnectionLostError, repr(lost)
    assert "the server closed the connection" in str(lost)
    a.close()


def test_killed_server_gives_connection_lost(start_server: StartServer, connect: Connect) -> None:
    server = start_server()
    c = connect(server.address)
    other = connect(server.address)
    g = c.lock(0, 10)
    queued = threading.Event()
    out = {}

    def blocked() -> None:
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
    assert isinstance(lost, rangelock.ConnectionLostError)
    assert not isinstance(lost, rangelock.ClientClosedError)
    assert f"connection to {server.address} lost: " in str(lost)
    assert f"releases every lock of session {c.session}" in str(lost)
    assert queued.wait(10)
    t.join()
    assert isinstance(out["error"], rangelock.ConnectionLostError), out
    assert not c.connected and not g.valid
    for call in (c.ping, c.stats, lambda: c.lock(20, 30), lambda: c.try_lock(20, 30), g.unlock):
        with pytest.raises(rangelock.ConnectionLostError, match="lost"):
            call()
    with pytest.raises(rangelock.ConnectionLostError):
        with c.lock(40, 50):
            pass
    c.close()
    other.close()


def test_with_block_reports_a_connection_lost_inside_it(start_server: StartServer, connect: Connect) -> None:
    server = start_server()
    c = connect(server.address)
    with pytest.raises(rangelock.ConnectionLostError):
        with c.lock(0, 10) as g:
            server.kill()
            c.wait_lost(timeout=10)
            assert not g.valid
    c.close()


#: The server's engines (``rangelock serve --engine``).
ENGINES = ["combiner", "tree-mutex", "tree-single", "rangelock"]


@pytest.mark.parametrize("grant", ["push", "poll"])
@pytest.mark.parametrize("engine", ENGINES)
def test_server_shutdown_ends_a_waiting_lock_with_a_connection_error(
    start_server: StartServer, connect: Connect, engine: str, grant: str
) -> None:
    """SIGTERM: the session gets the SESSION_ENDED notice, then its queued LOCKs are
    answered SHUTTING_DOWN (§2.1), then the connection closes. The waiting call raises a
    ``ConnectionError`` on every engine, whichever of those it learns from first (poll: the
    answer to its next POLL, or the closed connection)."""
    server = start_server("--engine", engine, "--grant", grant)
    holder = connect(server.address)
    c = connect(server.address)
    holder.lock(0, 10)
    blocked = BlockedLock(c, 0, 10)
    wait_until(lambda: len(waiters(holder)) == 1, what="the lock to be queued")
    assert server.stop() == 0
    error = blocked.result()
    assert isinstance(error, ConnectionError), repr(error)
    assert isinstance(error, (rangelock.ShuttingDownError, rangelock.ServerShuttingDownError)), repr(error)
    assert "shutting down" in str(error)
    if grant == "push":
        assert isinstance(error, rangelock.ShuttingDownError), repr(error)
    for client in (c, holder):
        lost = client.wait_lost(timeout=10)
        assert isinstance(lost, rangelock.ServerShuttingDownError), repr(lost)
        assert lost.reason is rangelock.EndReason.SHUTDOWN
        assert f"ended session {client.session}: the server is shutting down" in str(lost)
    holder.close()
    c.close()


class StoppingPeer:
    """A one-connection stand-in for a server that stops while a LOCK waits: it accepts
    the hello, reads one LOCK and answers with ``frames(lock_id)``, then closes. For the
    orders of the stop's frames that a real server does not produce on demand."""

    def __init__(self, frames: Callable[[int], bytes]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self._frames = frames
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _read(self, conn: socket.socket, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            data = conn.recv(n - len(buf))
            assert data, "the client closed the connection early"
            buf += data
        return buf

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            self._read(conn, P.CLIENT_HELLO_LEN)
            conn.sendall(VECTORS["server-hello"])
            size = int.from_bytes(self._read(conn, 4), "little")
            frame = self._read(conn, size)
            assert frame[0] == P.Op.LOCK
            conn.sendall(self._frames(int.from_bytes(frame[1:9], "little")))

    def close(self) -> None:
        self.thread.join(timeout=10)
        self.listener.close()


def _answer(lock_id: int) -> bytes:
    return P.encode_response(P.Response(P.Op.LOCK, lock_id, P.Status.SHUTTING_DOWN, 0))


_NOTICE = P.encode_notice(P.Status.SESSION_ENDED, P.EndReason.SHUTDOWN)


@pytest.mark.parametrize(
    "order,frames",
    [
        ("notice, answer", lambda id: _NOTICE + _answer(id)),
        ("answer, notice", lambda id: _answer(id) + _NOTICE),
        ("notice only", lambda id: _NOTICE),
        ("answer only", _answer),
    ],
)
def test_a_stop_while_a_lock_waits_is_a_connection_error_in_any_order(
    connect: Connect, order: str, frames: Callable[[int], bytes]
) -> None:
    peer = StoppingPeer(frames)
    with connect(peer.address, keepalive=False) as c:
        with pytest.raises(ConnectionError) as info:
            c.lock(0, 10)
        assert isinstance(info.value, (rangelock.ShuttingDownError, rangelock.ServerShuttingDownError)), order
        assert "shutting down" in str(info.value), order
        assert isinstance(c.wait_lost(timeout=10), rangelock.ConnectionLostError)
    peer.close()


def test_poll_grant_server(start_server: StartServer, connect: Connect) -> None:
    server = start_server("--grant", "poll")
    with connect(server.address) as a, connect(server.address) as b:
        assert a.grant_mode is rangelock.GrantMode.POLL and a.grant_mode == "poll"  # type: ignore[comparison-overlap]
        held = a.lock(0, 100)
        with pytest.raises(rangelock.WouldBlockError):
            b.try_lock(50, 60)
        with pytest.raises(rangelock.TimedOutError):
            b.lock(50, 60, timeout=0.1)  # PENDING, then POLL answers TIMED_OUT
        done = threading.Event()
        out = {}

        def blocked() -> None:
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


def test_unix_socket(start_server: StartServer, tmp_path: Path, connect: Connect) -> None:
    path = str(tmp_path / "rl.sock")
    server = start_server(unix=path, tcp=False)
    assert server.unix == f"unix:{path}" and server.tcp is None
    with connect(f"unix:{path}") as a, connect(f"unix:{path}") as b:
        with a.lock(0, 10) as g:
            with pytest.raises(rangelock.WouldBlockError):
                b.try_lock(0, 10)
            assert g.valid
        with b.try_lock(0, 10, shared=True) as g2:
            assert g2.token > g.token
    with pytest.raises(rangelock.ConnectError, match=f"cannot connect to unix:{path}x"):
        connect(f"unix:{path}x")
