"""TLS (PROTOCOL.md §1.2) against a server started with --tls-cert/--tls-key, with
certificates made at run time by trustme."""

from __future__ import annotations

import datetime
import ssl
from pathlib import Path
from typing import Any, Tuple

import pytest
import trustme  # a test dependency (requirements-test.txt)

import rangelock
from conftest import Connect, Server, StartServer, require_flag
from test_locking import holders



@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def write_server_cert(
    ca: trustme.CA, tmp_path: Path, name: str = "server", **kw: Any
) -> Tuple[str, str]:
    cert = ca.issue_cert("127.0.0.1", "localhost", **kw)
    chain = tmp_path / f"{name}.pem"
    key = tmp_path / f"{name}.key"
    cert.private_key_pem.write_to_path(str(key))
    cert.cert_chain_pems[0].write_to_path(str(chain))
    for extra in cert.cert_chain_pems[1:]:
        extra.write_to_path(str(chain), append=True)
    return str(chain), str(key)


def ca_file(ca: trustme.CA, tmp_path: Path, name: str = "ca.pem") -> str:
    path = tmp_path / name
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def tls_server(start_server: StartServer, ca: trustme.CA, tmp_path: Path) -> Server:
    require_flag("--tls-cert")
    cert, key = write_server_cert(ca, tmp_path)
    return start_server("--tls-cert", cert, "--tls-key", key)


def test_tls_with_a_ca_file(tls_server: Server, ca: trustme.CA, tmp_path: Path, connect: Connect) -> None:
    path = ca_file(ca, tmp_path)
    with connect(tls_server.address, tls=path) as a:
        ctx = ssl.create_default_context(cafile=path)
        with connect(tls_server.address, tls=ctx) as b:
            with a.lock(0, 10) as g:
                with pytest.raises(rangelock.WouldBlockError):
                    b.try_lock(0, 10)
                assert holders(b) == [(a.session, 0, 10, False)]
            with b.lock(0, 10, timeout=1) as g2:
                assert g2.token > g.token
    # The host name is checked: "localhost" is in the certificate too.
    port = tls_server.address.rsplit(":", 1)[1]
    with connect(f"localhost:{port}", tls=path) as c:
        c.ping()
    with pytest.raises(rangelock.TlsError, match="not trusted"):
        connect(tls_server.address, tls=path, server_hostname="example.com")


def test_wrong_ca_fails_clearly_and_a_good_session_goes_on(tls_server: Server, ca: trustme.CA, tmp_path: Path, connect: Connect) -> None:
    good = connect(tls_server.address, tls=ca_file(ca, tmp_path))
    g = good.lock(0, 10)
    other = trustme.CA()
    with pytest.raises(rangelock.TlsError, match="certificate is not trusted") as info:
        connect(tls_server.address, tls=ca_file(other, tmp_path, "other.pem"))
    assert isinstance(info.value, rangelock.ConnectError)
    assert good.connected and g.valid
    assert holders(good) == [(good.session, 0, 10, False)]
    g.unlock()
    good.close()


def test_expired_server_certificate(start_server: StartServer, ca: trustme.CA, tmp_path: Path, connect: Connect) -> None:
    require_flag("--tls-cert")
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=30)
    cert, key = write_server_cert(
        ca, tmp_path, "expired",
        not_before=past - datetime.timedelta(days=30), not_after=past,
    )
    server = start_server("--tls-cert", cert, "--tls-key", key)
    with pytest.raises(rangelock.TlsError, match="expired"):
        connect(server.address, tls=ca_file(ca, tmp_path))


def test_plain_client_against_a_tls_server_is_told_tls_required(tls_server: Server, ca: trustme.CA, tmp_path: Path, connect: Connect) -> None:
    with pytest.raises(rangelock.TlsRequiredError, match="speaks TLS on this port: pass tls=") as info:
        connect(tls_server.address)
    assert info.value.hello is not None
    assert info.value.hello.status == rangelock.protocol.HelloStatus.TLS_REQUIRED
    with connect(tls_server.address, tls=ca_file(ca, tmp_path)) as c:
        c.ping()


def test_tls_client_against_a_plain_server(server: Server, ca: trustme.CA, tmp_path: Path, connect: Connect) -> None:
    with pytest.raises(rangelock.TlsError, match="closed the connection.*TLS on this port"):
        connect(server.address, tls=ca_file(ca, tmp_path))
    with connect(server.address) as c:
        c.ping()


def test_client_certificates(start_server: StartServer, ca: trustme.CA, tmp_path: Path, connect: Connect) -> None:
    require_flag("--tls-client-ca")
    cert, key = write_server_cert(ca, tmp_path)
    client_ca = trustme.CA()
    server = start_server(
        "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca_file(client_ca, tmp_path, "clients.pem")
    )
    trusted = ca_file(ca, tmp_path)
    ctx = ssl.create_default_context(cafile=trusted)
    client_ca.issue_cert("client-1").configure_cert(ctx)
    with connect(server.address, tls=ctx) as c:
        with c.lock(0, 10) as g:
            assert g.valid
        # Without a client certificate the server ends the TLS session.
        with pytest.raises(rangelock.TlsError):
            connect(server.address, tls=trusted)
        # With one from another CA too.
        ctx2 = ssl.create_default_context(cafile=trusted)
        trustme.CA().issue_cert("client-2").configure_cert(ctx2)
        with pytest.raises(rangelock.TlsError):
            connect(server.address, tls=ctx2)
        c.ping()


def test_auth_over_tls(start_server: StartServer, ca: trustme.CA, tmp_path: Path, connect: Connect) -> None:
    require_flag("--tls-cert")
    require_flag("--auth-file")
    cert, key = write_server_cert(ca, tmp_path)
    auth = tmp_path / "auth.toml"
    auth.write_text('[[token]]\nname = "t"\nsecret = "tls-and-token-0123"\nranges = ["0..100"]\n')
    auth.chmod(0o600)
    server = start_server("--tls-cert", cert, "--tls-key", key, "--auth-file", str(auth))
    path = ca_file(ca, tmp_path)
    with pytest.raises(rangelock.AuthRequiredError):
        connect(server.address, tls=path)
    with pytest.raises(rangelock.AuthFailedError):
        connect(server.address, tls=path, token="wrong")
    with connect(server.address, tls=path, token="tls-and-token-0123") as c:
        with c.lock(0, 100) as g:
            assert g.valid
        with pytest.raises(rangelock.ForbiddenError):
            c.lock(0, 101)
