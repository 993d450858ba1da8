"""The asyncio client behind the blocking client's interface, so that one behaviour test
runs against both (the ``connect`` fixture of ``conftest.py``).

An event loop runs in a thread of its own; every call of the facade runs the async
client's coroutine there (``asyncio.run_coroutine_threadsafe``) and waits for it, so the
tests' threads (``BlockedLock``) work as with the blocking client.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Coroutine, List, Optional, TypeVar, Union

import rangelock
from rangelock import protocol as P
from rangelock._common import NameArg
from rangelock.aio import (
    AsyncClient,
    AsyncClusterClient,
    AsyncClusterGuard,
    AsyncClusterLock,
    AsyncGuard,
    AsyncLock,
)

T = TypeVar("T")


class Loop:
    """An event loop in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


class BridgedGuard:
    """:class:`rangelock.Guard`'s interface over an :class:`AsyncGuard`."""

    def __init__(self, loop: Loop, guard: AsyncGuard) -> None:
        self._loop, self.inner = loop, guard

    id = property(lambda self: self.inner.id)
    start = property(lambda self: self.inner.start)
    end = property(lambda self: self.inner.end)
    shared = property(lambda self: self.inner.shared)
    token = property(lambda self: self.inner.token)
    valid = property(lambda self: self.inner.valid)
    released = property(lambda self: self.inner.released)

    def unlock(self) -> None:
        self._loop.run(self.inner.unlock())

    def __enter__(self) -> BridgedGuard:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.run(self.inner.__aexit__(*exc))


class BridgedClusterGuard:
    """:class:`rangelock.ClusterGuard`'s interface over an :class:`AsyncClusterGuard`."""

    def __init__(self, loop: Loop, guard: AsyncClusterGuard) -> None:
        self._loop, self.inner = loop, guard

    start = property(lambda self: self.inner.start)
    end = property(lambda self: self.inner.end)
    shared = property(lambda self: self.inner.shared)
    name = property(lambda self: self.inner.name)
    pieces = property(lambda self: self.inner.pieces)
    lost = property(lambda self: self.inner.lost)
    lost_reason = property(lambda self: self.inner.lost_reason)
    valid = property(lambda self: self.inner.valid)
    released = property(lambda self: self.inner.released)

    def check(self) -> None:
        self.inner.check()

    def wait_lost(self, timeout: Optional[float] = None) -> Any:
        return self._loop.run(self.inner.wait_lost(timeout))

    def unlock(self) -> None:
        self._loop.run(self.inner.unlock())

    def release(self) -> None:
        self._loop.run(self.inner.release())

    def __enter__(self) -> BridgedClusterGuard:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.run(self.inner.__aexit__(*exc))


class BridgedLock:
    """:class:`rangelock.Lock`'s interface over an :class:`AsyncLock` (or
    :class:`rangelock.ClusterLock`'s over an :class:`AsyncClusterLock`)."""

    def __init__(self, loop: Loop, lock: Union[AsyncLock, AsyncClusterLock]) -> None:
        self._loop, self.inner = loop, lock

    token = property(lambda self: self.inner.token)
    name = property(lambda self: self.inner.name)

    @property
    def guard(self) -> Union[BridgedGuard, BridgedClusterGuard, None]:
        g = self.inner.guard
        if isinstance(g, AsyncClusterGuard):
            return BridgedClusterGuard(self._loop, g)
        return None if g is None else BridgedGuard(self._loop, g)

    def owned(self) -> bool:
        return self.inner.owned()

    def locked(self) -> bool:
        return self._loop.run(self.inner.locked())

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        return self._loop.run(self.inner.acquire(blocking, timeout))

    def release(self) -> None:
        self._loop.run(self.inner.release())

    def __enter__(self) -> BridgedLock:
        self._loop.run(self.inner.__aenter__())
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.run(self.inner.__aexit__(*exc))


_LOOPS: List[Loop] = []


def stop_all() -> None:
    """Closes the clients and stops the loops of every :class:`BridgedClient` made so far
    (the ``connect`` fixture does, after each test)."""
    while _LOOPS:
        loop = _LOOPS.pop()
        for task in asyncio.all_tasks(loop.loop):
            loop.loop.call_soon_threadsafe(task.cancel)
        loop.stop()


class BridgedClient:
    """:class:`rangelock.Client`'s interface over an :class:`AsyncClient`."""

    def __init__(self, address: str, **kwargs: Any) -> None:
        self._loop = Loop()
        _LOOPS.append(self._loop)
        try:
            self.inner = self._loop.run(AsyncClient(address, **kwargs).connect())
        except BaseException:
            _LOOPS.remove(self._loop)
            self._loop.stop()
            raise
        self.address = address

    hello = property(lambda self: self.inner.hello)
    session = property(lambda self: self.inner.session)
    lease = property(lambda self: self.inner.lease)
    grant_mode = property(lambda self: self.inner.grant_mode)
    max_frame = property(lambda self: self.inner.max_frame)
    connected = property(lambda self: self.inner.connected)
    loss = property(lambda self: self.inner.loss)

    def lock(
        self, start: int, end: int, *, shared: bool = False, timeout: Optional[float] = None, name: NameArg = None
    ) -> BridgedGuard:
        return BridgedGuard(
            self._loop, self._loop.run(self.inner.lock(start, end, shared=shared, timeout=timeout, name=name))
        )

    def try_lock(self, start: int, end: int, *, shared: bool = False, name: NameArg = None) -> BridgedGuard:
        return BridgedGuard(self._loop, self._loop.run(self.inner.try_lock(start, end, shared=shared, name=name)))

    def range_lock(self, start: int, end: int, *, shared: bool = False, name: NameArg = None) -> BridgedLock:
        return BridgedLock(self._loop, self.inner.range_lock(start, end, shared=shared, name=name))

    def unlock(self, lock_id: int) -> None:
        self._loop.run(self.inner.unlock(lock_id))

    def stats(self, max_entries: int = 1000) -> P.Stats:
        return self._loop.run(self.inner.stats(max_entries))

    def ping(self) -> float:
        return self._loop.run(self.inner.ping())

    def wait_lost(self, timeout: Optional[float] = None) -> Optional[rangelock.ConnectionLostError]:
        return self._loop.run(self.inner.wait_lost(timeout))

    def close(self) -> None:
        """Closes the client; its loop runs on (the calls of a closed client still run
        there and fail) until :func:`stop_all`."""
        self._loop.run(self.inner.close())

    def __enter__(self) -> BridgedClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class BridgedClusterClient:
    """:class:`rangelock.ClusterClient`'s interface over an :class:`AsyncClusterClient`
    (closed, with its loop, by :func:`stop_all`)."""

    def __init__(self, seeds: Any, **kwargs: Any) -> None:
        self._loop = Loop()
        _LOOPS.append(self._loop)
        try:
            self.inner = self._loop.run(AsyncClusterClient(seeds, **kwargs).connect())
        except BaseException:
            _LOOPS.remove(self._loop)
            self._loop.stop()
            raise

    map = property(lambda self: self.inner.map)
    seeds = property(lambda self: self.inner.seeds)

    def refresh_map(self) -> P.ClusterMap:
        return self._loop.run(self.inner.refresh_map())

    def lock(
        self, start: int, end: int, *, shared: bool = False, timeout: Optional[float] = None, name: NameArg = None
    ) -> BridgedClusterGuard:
        g = self._loop.run(self.inner.lock(start, end, shared=shared, timeout=timeout, name=name))
        return BridgedClusterGuard(self._loop, g)

    def try_lock(self, start: int, end: int, *, shared: bool = False, name: NameArg = None) -> BridgedClusterGuard:
        g = self._loop.run(self.inner.try_lock(start, end, shared=shared, name=name))
        return BridgedClusterGuard(self._loop, g)

    def range_lock(self, start: int, end: int, *, shared: bool = False, name: NameArg = None) -> BridgedLock:
        return BridgedLock(self._loop, self.inner.range_lock(start, end, shared=shared, name=name))

    def close(self) -> None:
        self._loop.run(self.inner.close())

    def __enter__(self) -> BridgedClusterClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
