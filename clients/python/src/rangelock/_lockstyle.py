"""The :class:`threading.Lock` style over a client's guards, shared by the single-server
locks (:class:`rangelock.Lock`, :class:`rangelock.aio.AsyncLock`) and the cluster ones
(:class:`rangelock.ClusterLock`, :class:`rangelock.aio.AsyncClusterLock`); and the
guards' ``with`` (:class:`UnlockOnExit`, :class:`AsyncUnlockOnExit`).

One object holds at most one guard of its range: a local lock (``threading.Lock`` or
``asyncio.Lock``) makes the threads or tasks that share it take turns, and ``acquire``
takes the range from the client under it. A subclass says how to take the range
(:meth:`_take`) and which refusals mean "not granted" (``_not_granted``); it adds its own
``locked()`` and ``__repr__``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from types import TracebackType
from typing import Any, Generic, Optional, Protocol, Tuple, Type, TypeVar

from ._common import acquire_timeout
from .errors import LockNotGrantedError, RangelockError


class _Unlock(Protocol):
    def unlock(self) -> None: ...


class _AsyncUnlock(Protocol):
    async def unlock(self) -> None: ...


G = TypeVar("G", bound=_Unlock)
U = TypeVar("U", bound="UnlockOnExit")
AU = TypeVar("AU", bound="AsyncUnlockOnExit")
AG = TypeVar("AG", bound=_AsyncUnlock)
L = TypeVar("L", bound="LockStyle[Any]")
AL = TypeVar("AL", bound="AsyncLockStyle[Any]")


class UnlockOnExit:
    """``with guard:`` unlocks at the end; when the body raised, an unlock error is not
    raised over it (a lost connection after a clean body is: the lock may not have held
    throughout)."""

    def unlock(self) -> None:
        raise NotImplementedError

    def __enter__(self: U) -> U:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if exc_type is None:
            self.unlock()
        else:
            try:
                self.unlock()
            except RangelockError:
                pass  # do not hide the body's exception


class AsyncUnlockOnExit:
    """:class:`UnlockOnExit` for asyncio guards: ``async with guard:``."""

    async def unlock(self) -> None:
        raise NotImplementedError

    async def __aenter__(self: AU) -> AU:
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if exc_type is None:
            await self.unlock()
        else:
            try:
                await self.unlock()
            except RangelockError:
                pass  # do not hide the body's exception


class LockStyle(Generic[G]):
    """``acquire``/``release``/``with`` over the guards of :meth:`_take`."""

    #: The errors of :meth:`_take` after which ``acquire`` returns ``False``.
    _not_granted: Tuple[Type[BaseException], ...] = (LockNotGrantedError,)

    def __init__(self, start: int, end: int, shared: bool, name: Optional[bytes]) -> None:
        self.start = start
        self.end = end
        self.shared = shared
        #: The resource's name (``None``: the unnamed resource), as bytes.
        self.name = name
        self._local = threading.Lock()
        self._guard: Optional[G] = None

    def _take(self, blocking: bool, timeout: Optional[float]) -> G:
        """The range from the client: a try (``blocking`` false), or a lock waiting at
        most ``timeout`` seconds (``None``: as long as it takes)."""
        raise NotImplementedError

    @property
    def guard(self) -> Optional[G]:
        """The guard of the current hold (``None`` while not held)."""
        return self._guard

    def owned(self) -> bool:
        """Whether this lock holds its range: acquired and not released (the connection
        may be lost meanwhile: see ``guard.valid``). Local: nothing is sent. The meaning
        of redis-py's ``Lock.owned()``."""
        return self._guard is not None

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Locks the range; returns whether it was granted, as
        :meth:`threading.Lock.acquire` does. ``blocking=False`` does not wait (a try:
        ``False`` if a conflicting lock is held or queued); ``timeout`` seconds bounds the
        wait (``None`` or ``-1``: forever; ``blocking=False`` with a timeout is a
        ``ValueError``). Raises the client's other errors (:class:`ConnectionLostError`,
        :class:`ForbiddenError`, ...)."""
        wait = acquire_timeout(blocking, timeout)
        deadline = None if wait is None else time.monotonic() + wait
        if wait is None:
            got = self._local.acquire()
        elif wait > 0:
            got = self._local.acquire(timeout=wait)
        else:
            got = self._local.acquire(blocking=False)
        if not got:
            return False  # another thread holds this lock
        try:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            g = self._take(blocking, left)
        except self._not_granted:
            self._local.release()
            return False
        except BaseException:
            self._local.release()
            raise
        self._guard = g
        return True

    def release(self) -> None:
        """Releases the range and waits for the answer. Raises ``RuntimeError`` if the
        lock is not held (as :meth:`threading.Lock.release` does), and the guard's
        ``unlock`` errors (:class:`ConnectionLostError`: the server released the lock
        when the session ended); either way the lock is not held after."""
        g = self._guard
        if g is None:
            raise RuntimeError("release unlocked lock")
        self._guard = None
        try:
            g.unlock()
        finally:
            self._local.release()

    def __enter__(self: L) -> L:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if exc_type is None:
            self.release()
        else:
            try:
                self.release()
            except RangelockError:
                pass  # do not hide the body's exception


class AsyncLockStyle(Generic[AG]):
    """:class:`LockStyle` for asyncio: ``await acquire()``, ``await release()``,
    ``async with``; tasks sharing one lock take turns as with :class:`asyncio.Lock`."""

    _not_granted: Tuple[Type[BaseException], ...] = (LockNotGrantedError,)

    def __init__(self, start: int, end: int, shared: bool, name: Optional[bytes]) -> None:
        self.start = start
        self.end = end
        self.shared = shared
        #: The resource's name (``None``: the unnamed resource), as bytes.
        self.name = name
        self._local = asyncio.Lock()
        self._guard: Optional[AG] = None

    async def _take(self, blocking: bool, timeout: Optional[float]) -> AG:
        """As :meth:`LockStyle._take`, awaited."""
        raise NotImplementedError

    @property
    def guard(self) -> Optional[AG]:
        """The guard of the current hold (``None`` while not held)."""
        return self._guard

    def owned(self) -> bool:
        """Whether this lock holds its range: acquired and not released. Local: nothing is
        sent (as :meth:`rangelock.Lock.owned`)."""
        return self._guard is not None

    async def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Locks the range; returns whether it was granted, with the arguments and results
        of :meth:`threading.Lock.acquire` (``blocking=False``: a try; ``timeout`` seconds,
        ``None`` or ``-1`` for ever; ``blocking=False`` with a timeout is a
        ``ValueError``)."""
        wait = acquire_timeout(blocking, timeout)
        deadline = None if wait is None else time.monotonic() + wait
        if wait is None or (wait == 0 and not self._local.locked()):
            await self._local.acquire()  # free: returns at once
        elif wait == 0:
            return False  # another task holds this lock
        else:
            try:
                await asyncio.wait_for(self._local.acquire(), wait)
            except asyncio.TimeoutError:
                return False
        try:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            g = await self._take(blocking, left)
        except self._not_granted:
            self._local.release()
            return False
        except BaseException:
            self._local.release()
            raise
        self._guard = g
        return True

    async def release(self) -> None:
        """Releases the range and waits for the answer. Raises ``RuntimeError`` if the
        lock is not held, and the guard's ``unlock`` errors; either way the lock is not
        held after."""
        g = self._guard
        if g is None:
            raise RuntimeError("release unlocked lock")
        self._guard = None
        try:
            await g.unlock()
        finally:
            self._local.release()

    async def __aenter__(self: AL) -> AL:
        await self.acquire()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        if exc_type is None:
            await self.release()
        else:
            try:
                await self.release()
            except RangelockError:
                pass  # do not hide the body's exception
