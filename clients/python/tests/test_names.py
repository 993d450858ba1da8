"""Named resources (protocol version 5, ``docs/PROTOCOL.md`` §2.2) from the blocking and
asyncio clients, against the real server's engines: locks on different names, and
on a name and the unnamed resource, never conflict; the same name does.

The ``check_*`` functions take clients of the blocking client's interface: the cluster
tests (``test_cluster.py``) run them against a cluster too."""

from __future__ import annotations

from typing import Any

import pytest

import rangelock
from conftest import Connect, Server, StartServer

#: Every engine serves names.
ENGINES = ["combiner", "tree-mutex", "tree-single", "rangelock"]


def check_names_are_separate_resources(c1: Any, c2: Any) -> None:
    """Different names never conflict (nor a name and the unnamed resource), the same
    name's overlapping ranges do; ``str`` names are their UTF-8 bytes."""
    held = c1.lock(0, 100, name="db/orders")
    other = c2.try_lock(0, 100, name=b"db/users")
    unnamed = c2.try_lock(0, 100)
    with pytest.raises(rangelock.WouldBlockError):
        c2.try_lock(50, 51, name="db/orders")
    # A str is its UTF-8 bytes; bytes need not be UTF-8.
    accent = c1.try_lock(0, 1, name="naïve")
    with pytest.raises(rangelock.WouldBlockError):
        c2.try_lock(0, 1, name="naïve".encode("utf-8"))
    raw = c2.try_lock(0, 1, name=b"\xff\x00\xfe")
    held.unlock()
    c2.try_lock(50, 51, name="db/orders").unlock()
    for g in (other, unnamed, accent, raw):
        g.unlock()


@pytest.mark.parametrize("engine", ENGINES)
def test_names_are_separate_resources(start_server: StartServer, connect: Connect, engine: str) -> None:
    server = start_server("--engine", engine)
    with connect(server.address) as c1, connect(server.address) as c2:
        assert c1.hello.version == rangelock.protocol.VERSION
        check_names_are_separate_resources(c1, c2)


def check_range_lock_with_a_name(c1: Any, c2: Any) -> None:
    """``range_lock(..., name=...)``: acquire, release, ``owned()`` and ``locked()`` see
    only their own resource."""
    mine = c1.range_lock(0, 10, name="x")
    assert mine.name == b"x"
    assert mine.acquire()
    assert mine.owned() and mine.locked()
    assert c2.range_lock(5, 6, name="x").locked()
    assert not c2.range_lock(5, 6, name="y").locked()
    theirs = c2.range_lock(5, 6, name="y")
    assert theirs.acquire(blocking=False)
    theirs.release()
    mine.release()
    assert not c2.range_lock(5, 6, name="x").locked()


def test_range_lock_with_a_name(server: Server, connect: Connect) -> None:
    address = server.address
    with connect(address) as c1, connect(address) as c2:
        check_range_lock_with_a_name(c1, c2)


def check_bad_names_are_refused_before_sending(c: Any) -> None:
    """An empty name, or one over 1024 bytes, is refused with :class:`BadNameError` (a
    ``ValueError``) before anything is sent, a name that is neither ``str`` nor bytes
    with ``TypeError``; the client goes on."""
    for bad in ("", b"", b"n" * 1025):
        with pytest.raises(rangelock.BadNameError) as info:
            c.try_lock(0, 1, name=bad)
        assert isinstance(info.value, ValueError)
        with pytest.raises(rangelock.BadNameError):
            c.range_lock(0, 1, name=bad)
    c.try_lock(0, 1, name=b"n" * 1024).unlock()
    with pytest.raises(TypeError):
        c.try_lock(0, 1, name=7)
    c.try_lock(0, 1, name="after").unlock()


def test_bad_names_are_refused_before_sending(server: Server, connect: Connect) -> None:
    address = server.address
    with connect(address) as c:
        check_bad_names_are_refused_before_sending(c)
        assert c.connected


def test_an_older_session_has_no_names(server: Server, connect: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session of version 4 (the client offered 4, as to an older server): a named lock
    raises :class:`NamesUnsupportedError` before anything is sent."""
    monkeypatch.setattr(rangelock.protocol, "VERSION", 4)
    address = server.address
    with connect(address) as c:
        assert c.hello.version == 4
        with pytest.raises(rangelock.NamesUnsupportedError, match="protocol version 4"):
            c.try_lock(0, 1, name="x")
        c.try_lock(0, 1).unlock()


def test_stats_names_each_lock_and_locked_sees_only_its_resource(server: Server, connect: Connect) -> None:
    """A version 5 session's ``stats()`` is a STATS_NAMED: each entry carries its
    resource's name (``None``: the unnamed one) and the counters count names; an unnamed
    lock's ``locked()`` is not fooled by a named holder of the same units."""
    address = server.address
    with connect(address) as c1, connect(address) as c2:
        named = c1.lock(0, 10, name="db/orders")
        raw = c1.lock(0, 10, name=b"\xff")
        st = c2.stats()
        assert [e.name for e in st.entries] == [b"db/orders", b"\xff"]
        assert (st.counters.names_live, st.counters.named_holders, st.counters.holders) == (2, 2, 2)
        assert not c2.range_lock(0, 10).locked()
        assert c2.range_lock(5, 6, name="db/orders").locked()
        unnamed = c1.lock(0, 10)
        assert c2.range_lock(5, 6).locked()
        named.unlock()
        raw.unlock()
        st = c2.stats()
        assert [e.name for e in st.entries] == [None]
        assert (st.counters.names_live, st.counters.named_holders, st.counters.holders) == (0, 0, 1)
        unnamed.unlock()
