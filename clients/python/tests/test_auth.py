"""Authentication tokens (PROTOCOL.md §1.1) against a server started with --auth-file."""

from __future__ import annotations

from pathlib import Path

import pytest

import rangelock
from conftest import Connect, Server, StartServer, require_flag, wait_until
from test_locking import holders

# Secrets of an auth file are at least 16 bytes.
FULL = "full-secret-7f3a-0001"
LIMITED = "limited-secret-91c2"

AUTH_FILE = f"""
[[token]]
name = "full"
secret = "{FULL}"

[[token]]
name = "limited"
secret = "{LIMITED}"
ranges = ["0..4096", "1048576..2097152"]
names = ["db/"]
"""


@pytest.fixture
def auth_server(start_server: StartServer, tmp_path: Path) -> Server:
    require_flag("--auth-file")
    path = tmp_path / "auth.toml"
    path.write_text(AUTH_FILE)
    path.chmod(0o600)  # the server warns about a secret file others can read
    return start_server("--auth-file", str(path))


def test_missing_and_wrong_tokens_are_refused_and_a_good_session_goes_on(auth_server: Server, connect: Connect) -> None:
    good = connect(auth_server.address, token=FULL)
    g = good.lock(0, 10)
    with pytest.raises(rangelock.AuthRequiredError, match="requires authentication: pass token="):
        connect(auth_server.address)
    with pytest.raises(rangelock.AuthFailedError, match="refused the token") as info:
        connect(auth_server.address, token="not-a-token")
    assert FULL not in str(info.value) and "not-a-token" not in str(info.value)
    with pytest.raises(rangelock.AuthFailedError):
        connect(auth_server.address, token=FULL + "x")
    # The good session is unaffected: still connected, its lock still held.
    assert good.connected and g.valid
    assert holders(good) == [(good.session, 0, 10, False)]
    good.ping()
    wait_until(lambda: good.stats().counters.sessions_open == 1, what="refused connections to close")
    g.unlock()
    good.close()


def test_a_token_outside_its_ranges_is_forbidden(auth_server: Server, connect: Connect) -> None:
    with connect(auth_server.address, token=LIMITED) as lim, \
            connect(auth_server.address, token=FULL) as full:
        inside = lim.lock(0, 4096)
        other = lim.lock(1048576, 1048577, shared=True)
        for start, end in ((4096, 8192), (0, 4097), (4000, 1048600), (2097151, 2097153)):
            with pytest.raises(rangelock.ForbiddenError, match=f"lock {start}..{end} exclusive: forbidden") as info:
                lim.lock(start, end, timeout=1)
            assert info.value.status is rangelock.Status.FORBIDDEN
            with pytest.raises(rangelock.ForbiddenError):
                lim.try_lock(start, end, shared=True)
        # Nothing changed, and the session goes on.
        assert lim.connected and inside.valid and other.valid
        assert sorted(holders(full)) == [
            (lim.session, 0, 4096, False),
            (lim.session, 1048576, 1048577, True),
        ]
        # A token without ranges may lock anything.
        with full.lock(4096, 8192) as g:
            assert g.valid
        inside.unlock()
        other.unlock()
        # Every other request is allowed to the limited token.
        lim.ping()
        lim.stats()


def test_a_name_outside_the_tokens_prefixes_is_forbidden(auth_server: Server, connect: Connect) -> None:
    with connect(auth_server.address, token=LIMITED) as lim, \
            connect(auth_server.address, token=FULL) as full:
        g = lim.try_lock(0, 10, name="db/t1")
        for name in ("etc/passwd", b"db"):
            with pytest.raises(rangelock.ForbiddenError) as info:
                lim.try_lock(0, 10, name=name)
            assert info.value.status is rangelock.Status.FORBIDDEN
        # A token without names may lock no name; both sessions go on.
        with pytest.raises(rangelock.ForbiddenError):
            full.try_lock(0, 10, name="db/t1")
        assert lim.connected and full.connected and g.valid
        g.unlock()
        lim.try_lock(0, 10).unlock()


def test_a_token_given_as_bytes(auth_server: Server, connect: Connect) -> None:
    # (TLS + auth: test_tls.py)
    with connect(auth_server.address, token=FULL.encode()) as c:
        assert c.session >= 1
