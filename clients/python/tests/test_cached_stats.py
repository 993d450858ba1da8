"""What ``stats()`` shows of cached locks (protocol version 6, ``docs/PROTOCOL.md`` §5.2),
against the real server: a version 6 session's STATS_CACHED counts the kept extents of a
caching session (this client never caches: a raw session does here) and marks them
``kept``; a version 5 session gets STATS_NAMED as before, without either."""

from __future__ import annotations

import socket
import struct

import pytest

import rangelock
from conftest import Connect, Server
from rangelock import protocol as P


def recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("the server closed the connection")
        buf += chunk
    return buf


def call(s: socket.socket, frame: bytes) -> P.Response:
    """Sends one request frame and reads the next response frame."""
    s.sendall(frame)
    (n,) = struct.unpack("<I", recv_exactly(s, 4))
    return P.decode_response(recv_exactly(s, n))


def caching_session(address: str) -> socket.socket:
    """A raw version 6 session that sent CACHE_ON and keeps the extent of one LOCK_CACHED
    of ``0..10``, granted up to ``0..1000``."""
    host, port = address.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=10)
    s.sendall(P.encode_client_hello(version=6))
    hello = P.decode_server_hello(recv_exactly(s, P.SERVER_HELLO_LEN))
    assert hello.version == 6
    assert call(s, P.encode_cache_on(1)).status == P.Status.OK
    lock = P.encode_lock_cached(2, 0, 10, P.Mode.EXCLUSIVE, P.Wait.FOREVER, 0, 0, 1000)
    r = call(s, lock)
    assert (r.status, r.cached_grant()) == (P.Status.OK, (0, 1000, True))
    return s


def test_stats_count_and_mark_kept_extents(server: Server, connect: Connect) -> None:
    with caching_session(server.address), connect(server.address) as c:
        st = c.stats()
        n = st.counters
        assert (n.cached_extents, n.callbacks, n.give_backs, n.cache_expanded) == (1, 0, 0, 1)
        assert n.holders == 1
        [e] = st.entries
        assert (e.held, e.kept, e.start, e.end, e.name) == (True, True, 0, 1000, None)
        # A kept extent is a holder: locked() sees it.
        assert c.range_lock(5, 6).locked()


def test_a_version_5_session_gets_the_layout_of_before(
    server: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rangelock.protocol, "VERSION", 5)
    with caching_session(server.address), connect(server.address) as c:
        assert c.hello.version == 5
        st = c.stats()
        assert (st.counters.cached_extents, st.counters.cache_expanded, st.counters.holders) == (0, 0, 1)
        [e] = st.entries
        assert (e.held, e.kept) == (True, False)
