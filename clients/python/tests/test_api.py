"""The Pythonic surface: ``acquire``/``release`` as in ``threading.Lock``, exceptions that
derive from the builtins, the deprecated names without the ``Error`` suffix, and the asyncio client's
own forms (``async with``, cancellation)."""

from __future__ import annotations

import asyncio
import builtins
import re
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, Set, Tuple

import pytest

import rangelock
import rangelock.aio
from conftest import BlockedLock, Server, StartServer, require_flag, wait_until
from test_locking import holders, waiters

Connect = Callable[..., Any]

#: The Python client's README.
README = Path(__file__).resolve().parents[1] / "README.md"


def test_acquire_and_release_like_threading_lock(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        lock = a.range_lock(0, 4096)
        assert not lock.owned() and not lock.locked() and lock.token is None and lock.guard is None
        assert lock.acquire() is True
        assert lock.owned() and lock.locked() and lock.token is not None and lock.token >= 1
        assert lock.guard is not None and lock.guard.token == lock.token
        assert holders(b) == [(a.session, 0, 4096, False)]
        other = b.range_lock(100, 200, shared=True)
        assert other.acquire(blocking=False) is False  # a try
        assert other.acquire(timeout=0) is False  # queued, timed out at once
        assert other.acquire(timeout=0.05) is False
        # Not owned, but locked: a holds an overlapping range (redis-py's meanings).
        assert not other.owned() and other.locked() and other.token is None
        first = lock.token
        lock.release()
        assert not lock.owned() and not lock.locked() and lock.token is None
        assert holders(b) == []
        assert other.acquire(blocking=False) is True
        assert other.token is not None and other.token > first
        other.release()
        with lock as held:
            assert held is lock and lock.owned()
        assert not lock.owned()


def test_locked_says_whether_anyone_holds_the_range(server: Server, connect: Connect) -> None:
    """``locked()`` as in redis-py: whether anyone holds the range (asked of the server);
    ``owned()``: whether this lock does (local)."""
    with connect(server.address) as c1, connect(server.address) as c2:
        mine = c1.range_lock(0, 100)
        theirs = c2.range_lock(10, 20)
        assert not theirs.locked() and not mine.locked()  # nobody holds anything
        assert mine.acquire()
        assert mine.owned() and mine.locked()
        assert theirs.locked() and not theirs.owned()
        assert c2.range_lock(10, 20, shared=True).locked()  # shared conflicts with exclusive
        assert c1.range_lock(50, 60).locked()  # the same client's other lock is "anyone"
        assert not c2.range_lock(100, 200).locked()  # half-open: 0..100 ends before 100
        readers = c1.range_lock(300, 400, shared=True)
        assert readers.acquire()
        assert not c2.range_lock(350, 360, shared=True).locked()  # shared with shared: free
        assert c2.range_lock(350, 360).locked()
        # A queued lock is not a holder.
        waiter = BlockedLock(c2, 0, 10)
        wait_until(lambda: len(waiters(c1)) == 1, what="the lock to be queued")
        mine.release()
        assert waiter.result() is None
        assert not mine.owned() and mine.locked()  # c2 holds 0..10 now
        readers.release()
        assert not c2.range_lock(350, 360).locked()


def test_locked_probes_when_the_servers_list_is_cut_short(start_server: StartServer, connect: Connect) -> None:
    """A server that lists one entry per STATS: ``locked()`` cannot see every holder in
    the list and falls back to a try-lock, released at once."""
    require_flag("--max-stats-entries")
    server = start_server("--max-stats-entries", "1")
    with connect(server.address) as c1, connect(server.address) as c2:
        c1.lock(500, 600)  # the one entry listed (the oldest)
        c1.lock(0, 100)  # left out of the list
        stats = c2.stats()
        assert len(stats.entries) == 1 and stats.omitted == 1
        assert c2.range_lock(10, 20).locked()
        assert not c2.range_lock(200, 300).locked()
        # The probe's grant was released: still the two holders of c1, and c2 holds nothing.
        after = c2.stats()
        assert after.counters.holders == 2 and after.counters.grants == 3
        assert c2.range_lock(200, 300).acquire(blocking=False)


def test_acquire_arguments_are_those_of_threading(server: Server, connect: Connect) -> None:
    with connect(server.address) as c:
        lock = c.range_lock(0, 10)
        with pytest.raises(ValueError, match="can't specify a timeout for a non-blocking call"):
            lock.acquire(blocking=False, timeout=1.0)
        with pytest.raises(ValueError):
            lock.acquire(timeout=-2)
        with pytest.raises(RuntimeError, match="release unlocked lock"):
            lock.release()
        assert lock.acquire(True, -1) is True  # -1: wait forever, as in threading
        lock.release()
        with pytest.raises(rangelock.InvalidRangeError):
            c.range_lock(10, 10)


def test_a_waiting_acquire_is_granted_when_the_holder_releases(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        held = a.range_lock(0, 10)
        assert held.acquire()
        wanted = b.range_lock(5, 15)
        got = {}

        def wait() -> None:
            got["ok"] = wanted.acquire(timeout=30)

        t = threading.Thread(target=wait)
        t.start()
        wait_until(lambda: len(waiters(a)) == 1, what="the acquire to be queued")
        held.release()
        t.join(timeout=30)
        assert got == {"ok": True} and wanted.owned()
        wanted.release()


def test_threads_sharing_one_lock_exclude_each_other(server: Server, connect: Connect) -> None:
    with connect(server.address) as c:
        lock = c.range_lock(0, 10)
        assert lock.acquire()
        # Another thread's non-blocking acquire of the same Lock fails at once, as with
        # threading.Lock (the server is not asked).
        out: Dict[str, bool] = {}
        t = threading.Thread(target=lambda: out.update(ok=lock.acquire(blocking=False)))
        t.start()
        t.join(timeout=10)
        assert out == {"ok": False}
        lock.release()


def test_acquire_after_a_lost_connection_raises(start_server: Callable[..., Server], connect: Connect) -> None:
    server = start_server()
    c = connect(server.address)
    lock = c.range_lock(0, 10)
    assert lock.acquire()
    server.kill()
    assert c.wait_lost(timeout=10) is not None
    with pytest.raises(rangelock.ConnectionLostError):
        lock.release()
    assert not lock.owned()
    with pytest.raises(ConnectionError):
        lock.acquire()
    c.close()


#: Every exception class the package exports, with the builtin exceptions it derives from
#: (the most derived ones: a ``ConnectionError`` is an ``OSError`` too). The README's
#: "Errors" table says the same (``test_the_readme_names_the_builtin_of_every_exception``).
BUILTIN_BASES: Dict[str, Tuple[type, ...]] = {
    "RangelockError": (),
    "ConnectError": (ConnectionError,),
    "HandshakeError": (ConnectionError,),
    "TlsError": (ConnectionError,),
    "HelloRefusedError": (ConnectionError,),
    "UnsupportedVersionError": (ConnectionError,),
    "AuthRequiredError": (ConnectionError, PermissionError),
    "AuthFailedError": (ConnectionError, PermissionError),
    "TlsRequiredError": (ConnectionError,),
    "ConnectionLostError": (ConnectionError,),
    "ClientClosedError": (ConnectionError,),
    "SessionEndedError": (ConnectionError,),
    "SessionExpiredError": (ConnectionError,),
    "ServerShuttingDownError": (ConnectionError,),
    "ProtocolError": (ValueError,),
    "ServerError": (),
    "LockNotGrantedError": (),
    "WouldBlockError": (BlockingIOError,),
    "TimedOutError": (TimeoutError,),
    "LockCancelledError": (),
    "ShuttingDownError": (ConnectionError,),
    "ForbiddenError": (PermissionError,),
    "BadNameError": (ValueError,),
    "NamesUnsupportedError": (NotImplementedError,),
    "LockLostError": (ConnectionError,),
    "PartitionUnavailableError": (BlockingIOError,),
    "InvalidRangeError": (ValueError,),
    "NotHeldError": (),
    "TooManyLocksError": (),
    "TooManyNamesError": (),
    "CacheUnavailableError": (),
    "AlreadyReleasedError": (),
    "MalformedError": (),
    "UnknownOpError": (),
    "DuplicateIdError": (),
    "FrameTooLargeError": (),
    "NotWaitingError": (),
    "NotOwnerError": (),
    "InGraceError": (),
    "CrossesPartitionError": (),
    "ReclaimRefusedError": (),
    "FencedError": (),
    "NotClusteredError": (),
    "ShmUnavailableError": (),
    "ShmFullError": (),
    "ShmAlreadyAttachedError": (),
}


def builtin_bases(cls: type) -> Set[type]:
    """The most derived builtin exceptions among ``cls``'s bases (``Exception`` and its
    bases left out)."""
    found = {
        c
        for c in cls.__mro__
        if c.__module__ == "builtins" and c not in (Exception, BaseException, object)
    }
    return {c for c in found if not any(o is not c and issubclass(o, c) for o in found)}


def test_every_exception_derives_from_its_builtin() -> None:
    E = rangelock
    exported = {
        name
        for name in E.errors.__all__
        if isinstance(getattr(E.errors, name), type) and issubclass(getattr(E.errors, name), BaseException)
    }
    assert exported == set(BUILTIN_BASES), "the table names every exported exception class"
    # Walk the whole hierarchy: no class of the package is left out of the table.
    seen: Set[type] = set()
    todo: List[type] = [E.RangelockError]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            todo.extend(cls.__subclasses__())
    ours = {c.__name__ for c in seen if c.__module__.startswith("rangelock")}
    assert ours == set(BUILTIN_BASES)
    for name, bases in BUILTIN_BASES.items():
        cls = getattr(E, name)
        assert cls is getattr(E.errors, name), name
        assert issubclass(cls, E.RangelockError), name
        assert name.endswith("Error"), name
        assert builtin_bases(cls) == set(bases), name
        for b in bases:
            assert issubclass(cls, b), (name, b)
    e = E.TimedOutError("lock 0..1 exclusive: timed out")
    assert str(e) == "lock 0..1 exclusive: timed out" and e.status is E.Status.TIMED_OUT
    c = E.ConnectError("cannot connect to x: refused", "x")
    assert str(c) == "cannot connect to x: refused" and c.address == "x"
    s = E.error_for_status(E.Status.SHUTTING_DOWN, 0, "lock 0..10 exclusive")
    assert isinstance(s, E.ShuttingDownError) and isinstance(s, ConnectionError)
    assert str(s) == "lock 0..10 exclusive: the server is shutting down: nothing is granted any more (SHUTTING_DOWN)"


def test_the_readme_names_the_builtin_of_every_exception() -> None:
    """The README's "Errors" table: one row per exported class, its builtin bases as in
    :data:`BUILTIN_BASES`."""
    text = README.read_text()
    section = text[text.index("## Errors") :]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*) \|", section, re.M)
    table: Dict[str, Tuple[type, ...]] = {}
    for name, bases in rows:
        assert name not in table, f"README: {name} has two rows"
        names = re.findall(r"`(\w+)`", bases)
        assert names or bases.strip() == "—", f"README: {name}: {bases!r}"
        table[name] = tuple(getattr(builtins, b) for b in names)
    assert table == BUILTIN_BASES


def test_old_names_are_deprecated_aliases() -> None:
    for old, new in rangelock.errors.DEPRECATED_ALIASES.items():
        with pytest.warns(DeprecationWarning, match=f"rangelock.{old} is deprecated.*use rangelock.{new}"):
            assert getattr(rangelock, old) is getattr(rangelock, new)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(rangelock.TimedOutError):
            try:
                raise rangelock.TimedOutError()
            except rangelock.ConnectionLostError:
                pass
    with pytest.raises(AttributeError):
        rangelock.NoSuchThing  # noqa: B018


def test_asyncio_client_natively(server: Server) -> None:
    """``async with`` forms and the cancellation of a waiting lock, with plain
    ``asyncio.run``."""

    async def main() -> None:
        async with rangelock.aio.AsyncClient(server.address) as a:
            b = await rangelock.aio.connect(server.address)
            assert a.hello.version == rangelock.protocol.VERSION and a.session != b.session
            async with await a.lock(0, 10) as g:
                assert g.valid and g.token >= 1
                with pytest.raises(rangelock.WouldBlockError):
                    await b.try_lock(0, 10)
                waiting = asyncio.ensure_future(b.lock(0, 10))
                while len([e for e in (await a.stats()).entries if not e.held]) != 1:
                    await asyncio.sleep(0.005)
                waiting.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await waiting
                # The cancelled wait was withdrawn: nothing waits any more.
                while [e for e in (await a.stats()).entries if not e.held]:
                    await asyncio.sleep(0.005)
            assert not g.valid
            lock = b.range_lock(0, 10)
            async with lock:
                assert lock.token is not None and lock.token > g.token
            assert await lock.acquire(blocking=False)
            await lock.release()
            await b.close()
            assert not b.connected
            with pytest.raises(rangelock.ClientClosedError):
                await b.ping()

    asyncio.run(main())


def test_asyncio_connect_errors(server: Server) -> None:
    async def main() -> None:
        with pytest.raises(rangelock.ConnectError, match="cannot connect to unix:/nonexistent"):
            await rangelock.aio.connect("unix:/nonexistent/rl.sock")
        with pytest.raises(ValueError, match="TLS is for TCP"):
            rangelock.aio.AsyncClient("unix:/tmp/x.sock", tls=True)

    asyncio.run(main())
