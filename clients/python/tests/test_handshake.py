"""The version 5 handshake (and the fallback to version 3): the bytes the client sends, how it reports each hello
refusal, and the real server's answers to hellos it must refuse."""

from __future__ import annotations

import socket
import threading
from typing import Type

import pytest

import rangelock
from rangelock import protocol as P
from conftest import REPO, Connect, Server, StartServer
from test_protocol import VECTORS


class Peer:
    """A one-connection TCP listener on 127.0.0.1 that records the client's first bytes
    and answers with ``reply`` (then closes). Stands in for a server only where the test
    is about the client's side of the handshake."""

    def __init__(self, reply: bytes, read: int):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.received = b""
        self._reply, self._read = reply, read
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            while len(self.received) < self._read:
                data = conn.recv(4096)
                if not data:
                    break
                self.received += data
            conn.sendall(self._reply)
            # Hold the connection until the client closes it (a refusal closes it here).
            if self._reply == VECTORS["server-hello"]:
                while conn.recv(4096):
                    pass

    def close(self) -> None:
        self.thread.join(timeout=10)
        self.listener.close()


def test_hello_bytes_without_and_with_token(connect: Connect) -> None:
    for token, name in ((None, "client-hello"), ("secret", "client-hello-token"), (b"secret", "client-hello-token")):
        want = VECTORS[name]
        peer = Peer(VECTORS["server-hello"], len(want))
        with connect(peer.address, token=token, keepalive=False) as c:
            assert (c.session, c.lease, c.grant_mode, c.max_frame) == (1, 10.0, "push", 65536)
        peer.close()
        assert peer.received == want


@pytest.mark.parametrize(
    "vector,exc,words",
    [
        ("server-hello-refused", rangelock.UnsupportedVersionError, "speaks protocol version 6, this client speaks 3 to 6"),
        ("server-hello-auth-required", rangelock.AuthRequiredError, "requires authentication: pass token="),
        ("server-hello-auth-failed", rangelock.AuthFailedError, "refused the token"),
        ("server-hello-tls-required", rangelock.TlsRequiredError, "speaks TLS on this port: pass tls="),
    ],
)
def test_each_refusal_is_its_own_error(vector: str, exc: Type[rangelock.HelloRefusedError], words: str, connect: Connect) -> None:
    peer = Peer(VECTORS[vector], 8)
    with pytest.raises(exc, match=words) as info:
        connect(peer.address)
    peer.close()
    assert isinstance(info.value, rangelock.HelloRefusedError)
    assert isinstance(info.value, rangelock.ConnectError)
    assert info.value.hello is not None and info.value.hello.session == 0
    assert info.value.address == peer.address


def test_a_peer_that_is_not_a_rangelock_server(connect: Connect) -> None:
    peer = Peer(b"HTTP/1.1 400 Bad Request\r\n\r\n", 8)
    with pytest.raises(rangelock.HandshakeError, match="bad magic"):
        connect(peer.address)
    peer.close()
    peer = Peer(b"RLCK", 8)  # closes after 4 bytes
    with pytest.raises(rangelock.HandshakeError, match="closed the connection after 4 of the 24 bytes"):
        connect(peer.address)
    peer.close()


def test_bad_arguments_are_refused_before_connecting(connect: Connect) -> None:
    with pytest.raises(ValueError, match="1 to 1024 bytes"):
        connect("127.0.0.1:1", token="x" * 1025)
    with pytest.raises(ValueError, match="1 to 1024 bytes"):
        connect("127.0.0.1:1", token="")
    with pytest.raises(ValueError, match="neither host, host:port nor unix:/path"):
        connect("localhost:http")
    with pytest.raises(ValueError, match="TLS is for TCP"):
        connect("unix:/tmp/x.sock", tls=True)


def test_connect_refused_says_where_and_why(connect: Connect) -> None:
    s = socket.create_server(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(rangelock.ConnectError, match=f"cannot connect to 127.0.0.1:{port}: connection refused"):
        connect(f"127.0.0.1:{port}")


def test_real_server_accepts_a_version_4_hello(server: Server, connect: Connect) -> None:
    with connect(server.address) as c:
        assert c.hello.version == P.VERSION
        assert c.session >= 1
        assert c.grant_mode == P.GrantMode.PUSH
        assert c.lease == 10.0


def test_real_server_refuses_a_version_2_hello(server: Server) -> None:
    host, port = server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(VECTORS["client-hello-v2"])
        reply = b""
        while len(reply) < 24:
            data = s.recv(64)
            assert data, "closed before the refusal"
            reply += data
        h = P.decode_server_hello(reply[:24])
        assert (h.version, h.status, h.session) == (P.VERSION, P.HelloStatus.UNSUPPORTED_VERSION, 0)
        assert s.recv(64) == b"", "the server closes after a refusal"


def test_client_of_another_version_is_told_the_servers(server: Server, monkeypatch: pytest.MonkeyPatch, connect: Connect) -> None:
    monkeypatch.setattr(P, "VERSION", 7)
    monkeypatch.setattr(P, "MIN_VERSION", 7)
    with pytest.raises(rangelock.UnsupportedVersionError, match="speaks protocol version 6") as info:
        connect(server.address)
    assert info.value.server_version == 6


def test_real_server_accepts_a_version_3_hello(server: Server) -> None:
    """A version 3 client keeps working: the session speaks version 3 (§1)."""
    host, port = server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(VECTORS["client-hello-v3"] + P.encode_keepalive(1))
        buf = b""
        while len(buf) < 24 + 22:
            data = s.recv(4096)
            assert data
            buf += data
        h = P.decode_server_hello(buf[:24])
        assert (h.version, h.status) == (3, P.HelloStatus.ACCEPTED)
        assert P.decode_response(buf[28:46]).status == P.Status.OK


def test_falls_back_to_version_3_for_a_version_3_server(connect: Connect) -> None:
    """A version 3 server refuses the version 5 hello and names version 3: the client
    connects again and offers 3 (§1)."""
    listener = socket.create_server(("127.0.0.1", 0))
    address = "127.0.0.1:%d" % listener.getsockname()[1]
    v3_refusal = P.ServerHello(3, P.HelloStatus.UNSUPPORTED_VERSION, P.GrantMode.PUSH, 0, 10_000, 65_536)
    v3_accept = P.ServerHello(3, P.HelloStatus.ACCEPTED, P.GrantMode.PUSH, 7, 10_000, 65_536)
    hellos = []

    def serve() -> None:
        for reply in (v3_refusal, v3_accept):
            conn, _ = listener.accept()
            with conn:
                hellos.append(conn.recv(8))
                conn.sendall(reply.encode())
                if reply is v3_accept:
                    while conn.recv(4096):
                        pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    with connect(address, keepalive=False) as c:
        assert (c.hello.version, c.session) == (3, 7)
    t.join(timeout=10)
    listener.close()
    assert hellos == [VECTORS["client-hello"], VECTORS["client-hello-v3"]]


def test_a_host_without_port_uses_the_default_port() -> None:
    from rangelock._common import parse_address

    assert rangelock.DEFAULT_PORT == 7878
    assert parse_address("lockhost") == ("tcp", "lockhost", 7878, None)
    assert parse_address("[::1]") == ("tcp", "::1", 7878, None)
    assert parse_address("lockhost:9000") == ("tcp", "lockhost", 9000, None)
    assert parse_address("[::1]:9000") == ("tcp", "::1", 9000, None)
    # The Rust crate's constant is the same port.
    port_rs = (REPO / "crates" / "proto" / "src" / "port.rs").read_text()
    assert "pub const DEFAULT_PORT: u16 = 7878;" in port_rs


def test_unknown_flag_bits_close_the_connection(server: Server, connect: Connect) -> None:
    host, port = server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"RLCK\x04\x00\x02\x00")
        assert s.recv(64) == b"", "closed without an answer (PROTOCOL.md §1)"
    with connect(server.address) as c:
        c.ping()


def test_server_without_auth_file_ignores_a_token(server: Server, connect: Connect) -> None:
    with connect(server.address, token="anything") as c:
        with c.lock(0, 10) as g:
            assert g.token >= 1


def test_hello_and_requests_in_one_write_are_answered_in_order(server: Server) -> None:
    """§1: a client may send requests right after its hello, before reading the server
    hello."""
    host, port = server.address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(VECTORS["client-hello"] + P.encode_lock(1, 0, 4096, 0, 2) + P.encode_unlock(2, 1))
        want = 24 + 22 + 22
        buf = b""
        while len(buf) < want:
            data = s.recv(4096)
            assert data
            buf += data
        assert P.decode_server_hello(buf[:24]).status == P.HelloStatus.ACCEPTED
        lock = P.decode_response(buf[28:46])
        unlock = P.decode_response(buf[50:68])
        assert (lock.id, lock.status) == (1, P.Status.OK)
        assert (unlock.id, unlock.status) == (2, P.Status.OK)


def raw_hello(address: str, data: bytes) -> bytes:
    """Sends ``data`` as the hello and returns everything the server sends until it
    closes the connection."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return out
            out += chunk


@pytest.mark.parametrize("token_len", [0, 1025])
def test_a_bad_token_length_is_refused_even_without_auth_file(server: Server, token_len: int) -> None:
    """§1.1: token_len 0 or over 1024 is refused with status 3 without reading the token,
    by a server without an auth file too (the client refuses such tokens before sending)."""
    reply = raw_hello(server.address, b"RLCK\x04\x00\x01\x00" + token_len.to_bytes(2, "little"))
    h = P.decode_server_hello(reply)
    assert (h.status, h.session) == (P.HelloStatus.AUTH_FAILED, 0)


def test_a_truncated_hello_is_closed_after_a_lease(start_server: StartServer) -> None:
    server = start_server("--lease-ms", "300")
    # token_len 10, but only 3 token bytes: the server waits at most a lease, then closes
    # without answering (§1).
    assert raw_hello(server.address, b"RLCK\x04\x00\x01\x00\x0a\x00abc") == b""
