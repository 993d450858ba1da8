"""Locking through the client against the real server (push grants)."""

from __future__ import annotations

import threading
import time
from typing import Any, List, Optional, Tuple

import pytest

import rangelock
from rangelock import protocol as P
from conftest import BlockedLock, Connect, Server, wait_until


def holders(client: Any, session: Optional[int] = None) -> List[Tuple[int, int, int, bool]]:
    """The (session, start, end, shared) of every held lock the server lists."""
    return [
        (e.session, e.start, e.end, e.shared)
        for e in client.stats().entries
        if e.held and (session is None or e.session == session)
    ]


def waiters(client: Any) -> List[P.StatsEntry]:
    return [e for e in client.stats().entries if not e.held]


def test_lock_and_unlock(server: Server, connect: Connect) -> None:
    with connect(server.address) as c:
        g = c.lock(0, 4096, shared=False, timeout=1.0)
        assert g.valid and g.token >= 1 and (g.start, g.end, g.shared) == (0, 4096, False)
        assert holders(c) == [(c.session, 0, 4096, False)]
        g.unlock()
        assert not g.valid and g.released
        assert holders(c) == []
        g.unlock()  # again: nothing happens
        with c.lock(0, 4096) as g2:
            assert g2.token > g.token
            assert holders(c) == [(c.session, 0, 4096, False)]
        assert holders(c) == []
        assert not g2.valid


def test_with_block_that_raises_still_releases(server: Server, connect: Connect) -> None:
    with connect(server.address) as c:
        with pytest.raises(KeyError):
            with c.lock(5, 6):
                raise KeyError("body")
        assert holders(c) == []


def test_shared_and_exclusive_across_two_clients(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        ra = a.lock(0, 100, shared=True)
        rb = b.try_lock(50, 150, shared=True)  # shared + shared overlap: compatible
        with pytest.raises(rangelock.WouldBlockError):
            b.try_lock(90, 91)  # exclusive against a shared holder
        with pytest.raises(rangelock.WouldBlockError):
            a.try_lock(140, 200)  # exclusive against b's shared holder, same for a
        with b.try_lock(100 + 50, 300) as ex:  # adjacent ranges do not conflict
            assert ex.valid
        ra.unlock()
        with pytest.raises(rangelock.WouldBlockError):
            a.try_lock(0, 1000, shared=False)
        rb.unlock()
        with a.try_lock(0, 1000) as g:
            with pytest.raises(rangelock.WouldBlockError):
                b.try_lock(999, 1000, shared=True)  # shared against an exclusive holder
            assert g.valid


def test_try_lock_would_block_says_what_and_why(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        with a.lock(0, 10):
            with pytest.raises(rangelock.WouldBlockError) as info:
                b.try_lock(5, 20, shared=True)
        e = info.value
        assert isinstance(e, rangelock.LockNotGrantedError) and isinstance(e, rangelock.ServerError)
        assert e.status is P.Status.WOULD_BLOCK
        assert str(e) == (
            "lock 5..20 shared: the range is locked: a conflicting holder or an earlier "
            "conflicting waiter exists (WOULD_BLOCK)"
        )
        assert b.stats().counters.would_block == 1


def test_timeout(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        with a.lock(0, 10):
            t0 = time.monotonic()
            with pytest.raises(rangelock.TimedOutError, match="timeout passed"):
                b.lock(0, 10, timeout=0.2)
            assert time.monotonic() - t0 >= 0.19
            # timeout=0 queues and times out at once: TIMED_OUT, never WOULD_BLOCK (§2).
            with pytest.raises(rangelock.TimedOutError):
                b.lock(0, 10, timeout=0)
            assert waiters(a) == []
        assert b.stats().counters.timeouts == 2
        with b.lock(0, 10, timeout=0.2) as g:
            assert g.valid


def test_bad_timeouts_are_refused_before_sending(server: Server, connect: Connect) -> None:
    with connect(server.address) as c:
        with pytest.raises(ValueError, match=">= 0"):
            c.lock(0, 1, timeout=-1)
        with pytest.raises(ValueError, match="timeout=None to wait forever"):
            c.lock(0, 1, timeout=50 * 86400)
        assert c.stats().counters.errors == 0


def test_a_waiting_lock_is_granted_when_the_holder_releases(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        held = a.lock(0, 4096)
        granted = threading.Event()
        result = {}

        def wait_for_it() -> None:
            try:
                result["guard"] = b.lock(100, 200, timeout=None)
            except BaseException as e:  # noqa: BLE001 - reported by the main thread
                result["error"] = e
            granted.set()

        t = threading.Thread(target=wait_for_it)
        t.start()
        wait_until(lambda: len(waiters(a)) == 1, what="b's lock to be queued")
        assert not granted.is_set()
        held.unlock()
        assert granted.wait(10)
        t.join()
        assert "error" not in result, result
        g = result["guard"]
        assert g.valid and g.token > held.token
        assert holders(a) == [(b.session, 100, 200, False)]
        g.unlock()


def test_fencing_tokens_strictly_increase(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        tokens = []
        for i in range(20):
            c = (a, b)[i % 2]
            with c.lock(0, 10, shared=bool(i % 3)) as g:
                tokens.append(g.token)
        s1 = a.lock(0, 10, shared=True)
        s2 = b.lock(0, 10, shared=True)  # shared grants get their own, larger tokens
        tokens += [s1.token, s2.token]
        assert tokens == sorted(set(tokens)), tokens
        assert a.stats().counters.grants == tokens[-1]  # a single server: the last token
        s1.unlock()
        s2.unlock()


def test_stats(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        g = a.lock(0, 4096)
        s = b.lock(10_000, 20_000, shared=True)
        st = a.stats()
        c = st.counters
        assert (c.sessions_open, c.sessions_total, c.holders, c.waiters) == (2, 2, 2, 0)
        assert (c.grants, c.releases) == (2, 0)
        assert [(e.session, e.id, e.start, e.end, e.mode, e.held, e.token) for e in st.entries] == [
            (a.session, g.id, 0, 4096, P.Mode.EXCLUSIVE, True, g.token),
            (b.session, s.id, 10_000, 20_000, P.Mode.SHARED, True, s.token),
        ]
        assert st.omitted == 0
        one = a.stats(max_entries=1)
        assert (len(one.entries), one.omitted) == (1, 1)
        none = a.stats(max_entries=0)
        assert (none.entries, none.omitted) == ([], 2)
        g.unlock()
        s.unlock()
        assert a.stats().counters.releases == 2


def test_invalid_ranges(server: Server) -> None:
    with rangelock.Client(server.address) as c:
        for start, end in ((10, 10), (10, 5), (-1, 5), (0, P.U64_MAX + 1)):
            with pytest.raises(rangelock.InvalidRangeError, match="checked before sending"):
                c.lock(start, end)
            with pytest.raises(ValueError):
                c.try_lock(start, end)
        assert c.stats().counters.errors == 0, "nothing was sent"
        # The server's own check, through the raw connection:
        core = c._c
        id = core.next_id()
        r = core.request(id, P.encode_lock(id, 7, 7, P.Mode.EXCLUSIVE, P.Wait.FOREVER))
        assert (r.id, r.status) == (id, P.Status.INVALID_RANGE)
        assert isinstance(rangelock.error_for_status(r.status), rangelock.InvalidRangeError)
        assert c.stats().counters.errors == 1
        # The whole domain is fine; the unit 2**64-1 is never lockable.
        with c.lock(0, P.U64_MAX) as g:
            assert g.valid


def test_unlock_of_a_lock_not_held(server: Server, connect: Connect) -> None:
    with connect(server.address) as a, connect(server.address) as b:
        with pytest.raises(rangelock.NotHeldError, match=r"unlock of lock 424242: .*\(NOT_HELD\)"):
            a.unlock(424242)
        g = a.lock(0, 10)
        # Lock ids name locks within a session: b cannot release a's lock.
        with pytest.raises(rangelock.NotHeldError):
            b.unlock(g.id)
        assert holders(b) == [(a.session, 0, 10, False)]
        g.unlock()
        a.unlock(g.id)  # an ended lock: ALREADY_RELEASED, which unlock accepts
        assert a.ping() >= 0  # the session goes on


def test_many_threads_share_one_client(server: Server, connect: Connect) -> None:
    with connect(server.address) as c:
        tokens = []
        errors = []
        lock = threading.Lock()

        def worker(n: int) -> None:
            try:
                for i in range(40):
                    with c.lock(n * 1000 + i, n * 1000 + i + 1, timeout=5) as g:
                        with lock:
                            tokens.append(g.token)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert len(tokens) == len(set(tokens)) == 320
        assert holders(c) == []


def test_a_blocked_lock_does_not_hold_up_other_requests(server: Server, connect: Connect) -> None:
    """Responses are dispatched by id: while one thread waits for a grant, others get
    their answers on the same connection."""
    with connect(server.address) as a, connect(server.address) as b:
        held = b.lock(0, 10)
        done = threading.Event()
        out = {}

        def blocked() -> None:
            out["guard"] = a.lock(0, 10)
            done.set()

        t = threading.Thread(target=blocked)
        t.start()
        wait_until(lambda: len(waiters(a)) == 1, what="a's lock to be queued")
        for i in range(20):
            with a.try_lock(100 + i, 101 + i) as g:
                assert g.valid
            a.ping()
        assert not done.is_set()
        held.unlock()
        assert done.wait(10)
        t.join()
        out["guard"].unlock()


def test_close_releases_every_lock_and_stales_guards(server: Server, connect: Connect) -> None:
    with connect(server.address) as watcher:
        c = connect(server.address)
        g = c.lock(0, 10)
        s = c.lock(20, 30, shared=True)
        assert len(holders(watcher, c.session)) == 2
        c.close()
        c.close()  # again: nothing
        assert not c.connected and not g.valid and not s.valid
        assert "closed" in c.loss
        wait_until(lambda: holders(watcher, c.session) == [], what="the server to end the session")
        for call in (c.ping, c.stats, lambda: c.lock(0, 1), g.unlock):
            with pytest.raises(rangelock.ClientClosedError):
                call()
        assert watcher.stats().counters.released_by_close == 2  # locks, not sessions
        with watcher.try_lock(0, 10):
            pass


def test_close_wakes_a_waiting_lock(server: Server, connect: Connect) -> None:
    with connect(server.address) as holder:
        c = connect(server.address)
        with holder.lock(0, 10):
            blocked = BlockedLock(c, 0, 10)
            wait_until(lambda: len(waiters(holder)) == 1, what="the lock to be queued")
            c.close()
            assert isinstance(blocked.result(), rangelock.ClientClosedError)
            wait_until(lambda: waiters(holder) == [], what="the server to withdraw the wait")


class Interrupted(Exception):
    pass


def test_an_interrupted_wait_withdraws_the_request(server: Server) -> None:
    """A signal handler that raises (as Ctrl-C does) while lock() waits: the queued
    request is withdrawn, so it is never granted to a caller that is gone."""
    import os
    import signal

    def handler(signum: int, frame: Any) -> None:
        raise Interrupted()

    old = signal.signal(signal.SIGUSR1, handler)
    try:
        with rangelock.Client(server.address) as holder, rangelock.Client(server.address) as c:
            held = holder.lock(0, 10)

            def interrupt_when_queued() -> None:
                wait_until(lambda: len(waiters(holder)) == 1, what="the lock to be queued")
                os.kill(os.getpid(), signal.SIGUSR1)

            t = threading.Thread(target=interrupt_when_queued)
            t.start()
            with pytest.raises(Interrupted):
                c.lock(0, 10)
            t.join()
            wait_until(lambda: waiters(holder) == [], what="the wait to be withdrawn")
            held.unlock()
            assert holders(holder) == []
            assert c.connected
            with c.try_lock(0, 10) as g:
                assert g.valid
    finally:
        signal.signal(signal.SIGUSR1, old)
