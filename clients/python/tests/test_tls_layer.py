"""The client's TLS layer through a TLS-terminating relay (Python's ssl, OpenSSL) in
front of the real, plain-text server. The relay stands in for the server's own TLS
(test_tls.py) so the client side of TLS is checked with any server binary: handshake,
pipelined requests from many threads, wrong CA, expired certificate, client
certificates."""

from __future__ import annotations

import datetime
import select
import socket
import ssl
import threading
from pathlib import Path
from typing import Callable, Iterator, List, Optional

import pytest
import trustme

import rangelock
from conftest import Server
from test_locking import holders
from test_tls import ca_file


class TlsRelay:
    """Accepts TLS on 127.0.0.1 and relays the plain bytes to ``backend``."""

    def __init__(self, backend: str, ctx: ssl.SSLContext) -> None:
        host, port = backend.rsplit(":", 1)
        self.backend = (host, int(port))
        self.ctx = ctx
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.handshake_errors: List[BaseException] = []
        self.threads: List[threading.Thread] = []
        self._closed = False
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self.threads.append(t)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            t = threading.Thread(target=self._relay, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _relay(self, conn: socket.socket) -> None:
        try:
            tls = self.ctx.wrap_socket(conn, server_side=True)
        except (ssl.SSLError, OSError) as e:
            self.handshake_errors.append(e)
            conn.close()
            return
        backend = socket.create_connection(self.backend)
        try:
            while not self._closed:
                readable = [tls] if tls.pending() else select.select([tls, backend], [], [], 0.2)[0]
                if tls in readable:
                    data = tls.recv(65536)
                    if not data:
                        return
                    backend.sendall(data)
                if backend in readable:
                    data = backend.recv(65536)
                    if not data:
                        return
                    tls.sendall(data)
        except (ssl.SSLError, OSError):
            return
        finally:
            backend.close()
            tls.close()

    def close(self) -> None:
        self._closed = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept (Linux)
        except OSError:
            pass
        self.listener.close()
        for t in self.threads:
            t.join(timeout=5)


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


#: The ``relay_for`` fixture: ``relay_for(cert=None, client_ca=None)``.
MakeRelay = Callable[..., "TlsRelay"]


@pytest.fixture
def relay_for(server: Server, ca: trustme.CA) -> Iterator[MakeRelay]:
    relays: List[TlsRelay] = []

    def make(
        *, cert: Optional[trustme.LeafCert] = None, client_ca: Optional[trustme.CA] = None
    ) -> TlsRelay:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        (cert or ca.issue_cert("127.0.0.1", "localhost")).configure_cert(ctx)
        if client_ca is not None:
            ctx.verify_mode = ssl.CERT_REQUIRED
            client_ca.configure_trust(ctx)
        r = TlsRelay(server.address, ctx)
        relays.append(r)
        return r

    yield make
    for r in relays:
        r.close()


def test_locking_over_tls(relay_for: MakeRelay, ca: trustme.CA, tmp_path: Path, server: Server) -> None:
    relay = relay_for()
    path = ca_file(ca, tmp_path)
    with rangelock.Client(relay.address, tls=path) as a, rangelock.Client(server.address) as plain:
        with a.lock(0, 10) as g:
            assert holders(plain) == [(a.session, 0, 10, False)]
            with pytest.raises(rangelock.WouldBlockError):
                a.try_lock(5, 6)
        assert g.token >= 1 and not g.valid
        # Many threads, pipelined on one TLS connection (reads and writes at once).
        errors, tokens, lock = [], [], threading.Lock()

        def worker(n: int) -> None:
            try:
                for i in range(30):
                    with a.lock(n * 100 + i, n * 100 + i + 1, timeout=5) as g:
                        with lock:
                            tokens.append(g.token)
                    a.stats()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and len(set(tokens)) == 180
        big = a.stats(max_entries=100_000)  # a response spanning several TLS records
        assert big.counters.grants >= 181


def test_system_context_and_server_hostname(relay_for: MakeRelay, ca: trustme.CA, tmp_path: Path) -> None:
    relay = relay_for()
    ctx = ssl.create_default_context()
    ca.configure_trust(ctx)
    with rangelock.Client(relay.address, tls=ctx, server_hostname="localhost") as c:
        c.ping()
    with pytest.raises(rangelock.TlsError, match="not trusted.*(mismatch|match)"):
        rangelock.Client(relay.address, tls=ctx, server_hostname="example.com")
    with pytest.raises(rangelock.TlsError, match="not trusted"):
        rangelock.Client(relay.address, tls=True)  # the system's CAs do not know trustme's


def test_wrong_ca_and_expired_certificate(relay_for: MakeRelay, ca: trustme.CA, tmp_path: Path) -> None:
    relay = relay_for()
    with pytest.raises(rangelock.TlsError, match="certificate is not trusted: unable to get local issuer"):
        rangelock.Client(relay.address, tls=ca_file(trustme.CA(), tmp_path, "other.pem"))
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=30)
    expired = relay_for(cert=ca.issue_cert("127.0.0.1", not_before=past - datetime.timedelta(days=1), not_after=past))
    with pytest.raises(rangelock.TlsError, match="certificate has expired"):
        rangelock.Client(expired.address, tls=ca_file(ca, tmp_path))
    with rangelock.Client(relay.address, tls=ca_file(ca, tmp_path)) as c:
        c.ping()


def test_client_certificate(relay_for: MakeRelay, ca: trustme.CA, tmp_path: Path) -> None:
    client_ca = trustme.CA()
    relay = relay_for(client_ca=client_ca)
    path = ca_file(ca, tmp_path)
    ctx = ssl.create_default_context(cafile=path)
    client_ca.issue_cert("client-1").configure_cert(ctx)
    with rangelock.Client(relay.address, tls=ctx) as c:
        with c.lock(0, 1) as g:
            assert g.valid
    for _ in range(10):  # an alert or a plain close, by timing: both are TlsError
        with pytest.raises(rangelock.TlsError, match="client certificate"):
            rangelock.Client(relay.address, tls=path)  # no client certificate
