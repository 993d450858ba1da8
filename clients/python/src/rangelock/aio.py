"""The asyncio client of ``rangelock serve``: the blocking client's surface, awaited.

>>> import rangelock.aio
>>> async def main() -> None:                                   # doctest: +SKIP
...     async with rangelock.aio.AsyncClient("127.0.0.1:7878") as client:
...         async with await client.lock(0, 4096, timeout=1.0) as g:
...             await write_storage(data, fencing_token=g.token)
...         lock = client.range_lock(0, 4096)
...         if await lock.acquire(timeout=1.0):
...             try:
...                 await write_storage(data, fencing_token=lock.token)
...             finally:
...                 await lock.release()

One :class:`AsyncClient` is one connection and one server session, used from one event
loop. Any number of tasks may share it: requests are pipelined (each carries an id, and a
reader task hands each response to the task waiting for it). A keepalive task sends
``KEEPALIVE`` every third of the lease. The errors, the fencing tokens, the loss of the
connection (and the reason the server gives for ending a session) are those of the
blocking :class:`rangelock.Client`. A task cancelled while its ``lock`` waits withdraws the
request (an ``UNLOCK`` of its id) before the cancellation goes on.

Unlike :meth:`asyncio.Lock.release`, :meth:`AsyncLock.release` is a coroutine: it waits for
the server's answer, so a lost connection is reported there.

A cluster of nodes: :class:`AsyncClusterClient` (``await cluster.lock(...)`` returns an
:class:`AsyncClusterGuard`), the counterpart of :class:`rangelock.ClusterClient`.
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import time
from types import TracebackType
from typing import Callable, Dict, Optional, Tuple, Type, Union

from . import protocol as P
from ._common import (
    ALL_ENTRIES,
    CLUSTER_NOTICES,
    DEFAULT_ADDRESS,
    Loss,
    LossHook,
    NameArg,
    NoticeHook,
    TlsArg,
    TokenArg,
    brief,
    check_name,
    check_range,
    fallback_version,
    held_in_conflict,
    lock_wait,
    lock_what,
    parse_address,
    parse_server_hello,
    stats_encoder,
    tls_context,
    token_bytes,
)
from ._lockstyle import AsyncLockStyle, AsyncUnlockOnExit
from .errors import (
    ClientClosedError,
    ConnectError,
    ConnectionLostError,
    HandshakeError,
    ProtocolError,
    RangelockError,
    TlsError,
    UnsupportedVersionError,
    WouldBlockError,
    error_for_status,
)

__all__ = [
    "AsyncClient",
    "AsyncGuard",
    "AsyncLock",
    "connect",
    "AsyncClusterClient",
    "AsyncClusterGuard",
    "AsyncClusterLock",
]

#: Polls sent back to back (with only a yield between them) before backing off.
_BACK_TO_BACK_POLLS = 8


class _Connection:
    """The streams, the waiting requests, the reader and keepalive tasks."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        hello: P.ServerHello,
        address: str,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.hello = hello
        self.address = address
        self._ids = itertools.count(1)
        self._pending: Dict[int, asyncio.Future[P.Response]] = {}
        self._loss: Optional[Loss] = None
        self._lost = asyncio.Event()
        self._drain = asyncio.Lock()
        self._fatal: Optional[P.Status] = None
        self._ended: Union[P.EndReason, int, None] = None
        self._tasks: list[asyncio.Task[None]] = []
        #: A cluster client's hooks (``AsyncClient._watch``), run by the reader task.
        self.on_notice: Optional[NoticeHook] = None
        self.on_lost: Optional[LossHook] = None

    def start(self, keepalive: bool) -> None:
        s = self.hello.session
        self._tasks.append(asyncio.ensure_future(self._read_loop()))
        self._tasks[-1].set_name(f"rangelock-reader-{s}")
        if keepalive:
            self._tasks.append(asyncio.ensure_future(self._keepalive_loop()))
            self._tasks[-1].set_name(f"rangelock-keepalive-{s}")

    def next_id(self) -> int:
        return next(self._ids)

    @property
    def connected(self) -> bool:
        return self._loss is None

    def lost_error(self) -> ConnectionLostError:
        loss = self._loss
        assert loss is not None
        return loss.error()

    async def send(self, frame: bytes) -> None:
        if self._loss is not None:
            raise self.lost_error()
        try:
            self.writer.write(frame)
            async with self._drain:
                await self.writer.drain()
        except (OSError, ssl.SSLError) as e:
            self.fail(f"writing to the server failed: {brief(e)}")
            raise self.lost_error() from None

    async def call(self, id: int, frame: bytes) -> P.Response:
        """Sends one request and waits for its response. Raises
        :class:`ConnectionLostError`."""
        if self._loss is not None:
            raise self.lost_error()
        fut: asyncio.Future[P.Response] = asyncio.get_running_loop().create_future()
        self._pending[id] = fut
        try:
            await self.send(frame)
            return await fut
        finally:
            self._pending.pop(id, None)

    def fail(self, why: str, closed: bool = False, unresponsive: bool = False) -> None:
        """Records the loss (the first one counts), fails every waiting call and closes
        the socket. ``unresponsive``: the server answered no keepalive for a lease."""
        if self._loss is not None:
            return
        if closed:
            loss = Loss.client_closed(self.address)
        else:
            h = self.hello
            loss = Loss.lost(self.address, h.session, why, self._ended, h.lease_ms)
            loss.unresponsive = unresponsive
        self._loss = loss
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(loss.error())
        self._lost.set()
        self.writer.close()
        if self.on_lost is not None:
            self.on_lost(loss)

    def watch(self, on_notice: NoticeHook, on_lost: LossHook) -> None:
        """Sets the hooks; ``on_lost`` runs at once if the connection is lost already."""
        self.on_notice, self.on_lost = on_notice, on_lost
        if self._loss is not None:
            on_lost(self._loss)

    async def close(self) -> None:
        self.fail("", closed=True)
        me = asyncio.current_task()
        for t in self._tasks:
            if t is not me:
                t.cancel()
        for t in self._tasks:
            if t is not me:
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass
        try:
            # TLS waits for the peer's close_notify: a vanished server must not hold
            # close() up for long.
            await asyncio.wait_for(self.writer.wait_closed(), self.hello.lease_ms / 1000.0)
        except (OSError, ssl.SSLError, asyncio.TimeoutError):
            pass

    async def _read_loop(self) -> None:
        rd = self.reader
        try:
            while True:
                try:
                    head = await rd.readexactly(4)
                except asyncio.IncompleteReadError as e:
                    if e.partial:
                        raise ProtocolError("the connection closed inside a frame") from None
                    why = "the server closed the connection"
                    if self._fatal is not None:
                        why += f" after answering {self._fatal.name}"
                    break
                size = int.from_bytes(head, "little")
                if size < 18 or size > P.MAX_RESPONSE_FRAME:
                    raise ProtocolError(f"response length prefix {size}")
                try:
                    body = await rd.readexactly(size)
                except asyncio.IncompleteReadError:
                    raise ProtocolError("the connection closed inside a frame") from None
                self._dispatch(P.decode_response(body))
        except asyncio.CancelledError:
            raise
        except ProtocolError as e:
            why = f"the server sent a frame this client cannot read ({e}); the client closed the connection"
        except (OSError, ssl.SSLError) as e:
            why = f"reading from the server failed: {brief(e)}"
        except BaseException as e:  # a bug here must not leave callers waiting forever
            self.fail(f"the client's reader failed ({e!r}); the client closed the connection")
            raise
        self.fail(why)

    def _dispatch(self, r: P.Response) -> None:
        if r.op == P.Op.NOTICE:
            if r.status == P.Status.SESSION_ENDED:
                self._ended = P.end_reason(r.value)  # the server closes the connection next
            elif r.status in CLUSTER_NOTICES and self.on_notice is not None:
                self.on_notice(r)
            return
        if r.id == 0 and r.status in (P.Status.MALFORMED, P.Status.FRAME_TOO_LARGE):
            self._fatal = r.status
            return
        fut = self._pending.pop(r.id, None)
        if fut is not None and not fut.done():  # None: an abandoned request
            fut.set_result(r)

    async def _keepalive_loop(self) -> None:
        lease = self.hello.lease_ms / 1000.0
        while True:
            try:
                await asyncio.wait_for(self._lost.wait(), lease / 3)
                return  # lost
            except asyncio.TimeoutError:
                pass
            id = self.next_id()
            try:
                await asyncio.wait_for(self.call(id, P.encode_keepalive(id)), lease)
            except ConnectionLostError:
                return
            except asyncio.TimeoutError:
                self.fail(
                    f"the server answered no keepalive for a lease ({self.hello.lease_ms} ms): "
                    "it is stopped or unreachable; the client closed the connection",
                    unresponsive=True,
                )
                return


class AsyncGuard(AsyncUnlockOnExit):
    """A granted lock, as :class:`rangelock.Guard`, with ``await unlock()`` and
    ``async with``."""

    __slots__ = ("client", "id", "start", "end", "shared", "token", "_released")

    def __init__(
        self, client: AsyncClient, id: int, start: int, end: int, shared: bool, token: int
    ) -> None:
        self.client = client
        #: The request id of the LOCK: names the lock within the session.
        self.id = id
        self.start = start
        self.end = end
        self.shared = shared
        #: The fencing token.
        self.token = token
        self._released = False

    @property
    def released(self) -> bool:
        """Whether :meth:`unlock` was called."""
        return self._released

    @property
    def valid(self) -> bool:
        """Not unlocked, and the connection (so the session) is still up."""
        return not self._released and self.client.connected

    async def unlock(self) -> None:
        """Releases the lock and waits for the server's answer; again does nothing.
        Raises :class:`ConnectionLostError` if the connection is gone."""
        if self._released:
            return
        self._released = True
        await self.client.unlock(self.id)

    def __repr__(self) -> str:
        mode = "shared" if self.shared else "exclusive"
        state = "valid" if self.valid else ("released" if self._released else "lost")
        return f"<AsyncGuard id={self.id} {self.start}..{self.end} {mode} token={self.token} {state}>"


class AsyncLock(AsyncLockStyle[AsyncGuard]):
    """A lock on one range, as :class:`rangelock.Lock`: ``await acquire(blocking=True,
    timeout=None) -> bool``, ``await release()``, ``async with``. ``token`` is the fencing
    token while held (``None`` otherwise). Tasks sharing one :class:`AsyncLock` exclude
    each other as with :class:`asyncio.Lock`."""

    def __init__(
        self, client: AsyncClient, start: int, end: int, shared: bool = False, name: NameArg = None
    ) -> None:
        check_range(start, end, shared)
        super().__init__(start, end, shared, check_name(name))
        self.client = client

    async def _take(self, blocking: bool, timeout: Optional[float]) -> AsyncGuard:
        if not blocking:
            return await self.client.try_lock(
                self.start, self.end, shared=self.shared, name=self.name
            )
        return await self.client.lock(
            self.start, self.end, shared=self.shared, timeout=timeout, name=self.name
        )

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the current hold (``None`` while not held)."""
        g = self._guard
        return None if g is None else g.token

    async def locked(self) -> bool:
        """Whether anyone holds the range: this :class:`AsyncLock`, or any session (this
        client's other locks included) that holds an overlapping range in a conflicting
        mode (for a shared lock: an exclusive holder; for an exclusive one: any holder).
        Queued locks do not count, so ``False`` does not promise that a try succeeds (a
        conflicting waiter makes it fail, protocol §3). The meaning of redis-py's
        ``Lock.locked()``; :meth:`owned` says whether this lock holds it.

        A coroutine, unlike :meth:`asyncio.Lock.locked` (as in redis-py's asyncio
        ``Lock``): it asks the server with one ``stats()`` (its answer lists every holder
        and waiter, up to the server's ``--max-stats-entries``). If the server cut the
        list short and it shows no conflicting holder, it probes instead: a try-lock of the
        range, released at once when granted (``True`` if the try is refused: then a conflicting
        *queued* lock may be the cause). Raises :class:`ConnectionLostError`, and for the
        probe :class:`ForbiddenError` (a range outside the session's token)."""
        g = self._guard
        if g is not None and g.valid:
            return True
        # Before version 5 there are no names (a named lock's probe says so).
        if self.name is None or self.client.hello.version >= 5:
            stats = await self.client.stats(ALL_ENTRIES)
            held = held_in_conflict(stats, self.start, self.end, self.shared, self.name)
            if held is not None:
                return held
        try:
            probe = await self.client.try_lock(
                self.start, self.end, shared=self.shared, name=self.name
            )
        except WouldBlockError:
            return True
        await probe.unlock()
        return False

    def __repr__(self) -> str:
        mode = "shared" if self.shared else "exclusive"
        state = f"owned token={self.token}" if self.owned() else "not owned"
        return f"<rangelock.aio.AsyncLock {self.start}..{self.end} {mode} {state}>"


class AsyncClient:
    """A connection to ``rangelock serve`` for asyncio: one session. The arguments are
    those of :class:`rangelock.Client`. Nothing happens until :meth:`connect` (or
    ``async with AsyncClient(...) as client``, which connects and closes)."""

    def __init__(
        self,
        address: str = DEFAULT_ADDRESS,
        *,
        token: TokenArg = None,
        tls: TlsArg = None,
        server_hostname: Optional[str] = None,
        connect_timeout: float = 10.0,
        keepalive: bool = True,
    ) -> None:
        self._conn: Optional[_Connection] = None
        self._addr = parse_address(address)
        self._token = token_bytes(token)
        P.encode_client_hello(self._token)  # checks the token's length
        self._tls = tls_context(tls)
        if self._tls is not None and self._addr[0] == "unix":
            raise ValueError("TLS is for TCP addresses: the server's Unix socket speaks plain text")
        self._server_hostname = server_hostname
        self._connect_timeout = connect_timeout
        self._keepalive = keepalive
        self.address = address

    # ---------------------------------------------------------------- connecting

    async def connect(self) -> AsyncClient:
        """Connects and does the handshake (offering version 6, then the version an older
        server names); returns the client. Raises :class:`ConnectError` and its subclasses, as
        :class:`rangelock.Client` does."""
        if self._conn is not None:
            raise RuntimeError("the client is already connected")
        version = P.VERSION
        while True:
            rd, wr = await self._open()
            try:
                hello = await self._handshake(rd, wr, version)
                break
            except UnsupportedVersionError as e:
                wr.close()
                older = fallback_version(e, version)
                if older is None:
                    raise
                version = older
            except BaseException:
                wr.close()
                raise
        self._conn = _Connection(rd, wr, hello, self.address)
        self._conn.start(self._keepalive)
        return self

    async def _open(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        kind, host, port, path = self._addr
        address, timeout, ctx = self.address, self._connect_timeout, self._tls
        try:
            if kind == "unix":
                assert path is not None
                return await asyncio.wait_for(asyncio.open_unix_connection(path), timeout)
            if ctx is None:
                return await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
            name = self._server_hostname if self._server_hostname is not None else host
            return await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=ctx, server_hostname=name), timeout
            )
        except asyncio.TimeoutError:
            raise ConnectError(f"cannot connect to {address}: timed out after {timeout} s", address) from None
        except ssl.SSLCertVerificationError as e:
            raise TlsError(
                f"TLS handshake with {address} failed: the server's certificate is not "
                f"trusted: {e.verify_message or e.reason}",
                address,
            ) from None
        except ssl.SSLError as e:
            raise TlsError(f"TLS handshake with {address} failed: {e.reason or e}", address) from None
        except ConnectionResetError as e:
            if ctx is not None:
                raise TlsError(
                    f"TLS handshake with {address} failed: the server closed the connection "
                    "(does it speak TLS on this port?)",
                    address,
                ) from None
            raise ConnectError(f"cannot connect to {address}: {brief(e)}", address) from None
        except OSError as e:
            raise ConnectError(f"cannot connect to {address}: {brief(e)}", address) from None

    async def _handshake(
        self, rd: asyncio.StreamReader, wr: asyncio.StreamWriter, version: int
    ) -> P.ServerHello:
        address, timeout, tls = self.address, self._connect_timeout, self._tls is not None
        cert_hint = "(does the server require a client certificate, or refuse this one?)"
        try:
            wr.write(P.encode_client_hello(self._token, version))
            await asyncio.wait_for(wr.drain(), timeout)
            buf = await asyncio.wait_for(rd.readexactly(P.SERVER_HELLO_LEN), timeout)
        except asyncio.TimeoutError:
            raise HandshakeError(
                f"handshake with {address} failed: no server hello within {timeout} s", address
            ) from None
        except asyncio.IncompleteReadError as e:
            if tls:
                raise TlsError(
                    f"TLS session with {address} failed: the server closed the connection "
                    f"before its hello {cert_hint}",
                    address,
                ) from None
            raise HandshakeError(
                f"handshake with {address} failed: the server closed the connection "
                f"after {len(e.partial)} of the 24 bytes of its hello (not a rangelock "
                "server, or one that refused this hello's flags)",
                address,
            ) from None
        except ssl.SSLError as e:
            raise TlsError(
                f"TLS session with {address} failed during the hello: {e.reason or e} {cert_hint}",
                address,
            ) from None
        except OSError as e:
            if tls:
                raise TlsError(
                    f"TLS session with {address} failed during the hello: {brief(e)} {cert_hint}",
                    address,
                ) from None
            raise HandshakeError(f"handshake with {address} failed: {brief(e)}", address) from None
        return parse_server_hello(buf, address, version)

    # ---------------------------------------------------------------- session

    @property
    def _c(self) -> _Connection:
        c = self._conn
        if c is None:
            raise ClientClosedError("the client is not connected")
        return c

    @property
    def hello(self) -> P.ServerHello:
        """The server hello of this connection."""
        return self._c.hello

    @property
    def session(self) -> int:
        """The server-assigned session id."""
        return self._c.hello.session

    @property
    def lease(self) -> float:
        """The server's lease in seconds."""
        return self._c.hello.lease_ms / 1000.0

    @property
    def grant_mode(self) -> P.GrantMode:
        """How the server delivers grants of queued locks."""
        return self._c.hello.grant

    @property
    def max_frame(self) -> int:
        """The largest request frame the server accepts."""
        return self._c.hello.max_frame

    @property
    def connected(self) -> bool:
        """Whether the connection is up, as far as this client has seen."""
        return self._conn is not None and self._conn.connected

    @property
    def loss(self) -> Optional[str]:
        """Why the connection was lost (``None`` while it is up)."""
        loss = self._c._loss
        return None if loss is None else loss.message

    async def wait_lost(self, timeout: Optional[float] = None) -> Optional[ConnectionLostError]:
        """Waits until the connection is lost and returns the :class:`ConnectionLostError`
        calls now fail with; ``None`` if ``timeout`` seconds pass first."""
        c = self._c
        try:
            await asyncio.wait_for(c._lost.wait(), timeout)
        except asyncio.TimeoutError:
            return None
        return c.lost_error()

    async def close(self) -> None:
        """Closes the connection; the server releases the session's locks. Waiting calls
        raise :class:`ClientClosedError`. Closing again does nothing."""
        if self._conn is not None:
            await self._conn.close()

    async def __aenter__(self) -> AsyncClient:
        if self._conn is None:
            await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        if self._conn is None:
            return f"<rangelock.aio.AsyncClient {self.address} not connected>"
        state = "connected" if self.connected else "lost"
        return f"<rangelock.aio.AsyncClient {self.address} session={self.session} {state}>"

    # ---------------------------------------------------------------- locking

    async def lock(
        self,
        start: int,
        end: int,
        *,
        shared: bool = False,
        timeout: Optional[float] = None,
        name: NameArg = None,
    ) -> AsyncGuard:
        """As :meth:`rangelock.Client.lock` (``name``: a named resource). A cancelled wait
        withdraws the request."""
        wait, ms = lock_wait(timeout)
        return await self._lock(start, end, shared, wait, ms, name)

    async def try_lock(
        self, start: int, end: int, *, shared: bool = False, name: NameArg = None
    ) -> AsyncGuard:
        """As :meth:`rangelock.Client.try_lock`."""
        return await self._lock(start, end, shared, P.Wait.TRY, 0, name)

    def range_lock(
        self, start: int, end: int, *, shared: bool = False, name: NameArg = None
    ) -> AsyncLock:
        """An :class:`AsyncLock` on ``[start, end)`` of the resource ``name`` (``None``: the
        unnamed resource); nothing is sent until acquired."""
        return AsyncLock(self, start, end, shared, name)

    async def _lock(
        self,
        start: int,
        end: int,
        shared: bool,
        wait: P.Wait,
        timeout_ms: int,
        name: NameArg = None,
    ) -> AsyncGuard:
        check_range(start, end, shared)
        id, r = await self._lock_response(start, end, shared, wait, timeout_ms, name)
        if r.status != P.Status.OK:
            raise error_for_status(r.status, r.value, lock_what(start, end, shared))
        return AsyncGuard(self, id, start, end, shared, r.value)

    async def _lock_response(
        self,
        start: int,
        end: int,
        shared: bool,
        wait: P.Wait,
        timeout_ms: int,
        name: NameArg = None,
    ) -> Tuple[int, P.Response]:
        """As :meth:`rangelock.Client._lock_response`: the LOCK's id and final answer,
        whatever its status; a cancelled wait withdraws the request."""
        c = self._c
        raw = check_name(name, c.hello.version)
        id = c.next_id()
        mode = P.Mode.SHARED if shared else P.Mode.EXCLUSIVE
        frame = P.encode_lock(id, start, end, mode, wait, timeout_ms, raw)
        try:
            r = await c.call(id, frame)
            if r.status == P.Status.PENDING:
                r = await self._poll_until_done(c, id)
        except RangelockError:
            raise
        except BaseException:
            self._abandon(c, id)
            raise
        return id, r

    @staticmethod
    async def _poll_until_done(c: _Connection, target: int) -> P.Response:
        polls = 0
        backoff = 10e-6
        while True:
            id = c.next_id()
            r = await c.call(id, P.encode_poll(id, target))
            if r.status != P.Status.PENDING:
                return r
            polls += 1
            if polls <= _BACK_TO_BACK_POLLS:
                await asyncio.sleep(0)
            else:
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2e-3)

    # ---------------------------------------------------------------- for the cluster client

    def _watch(self, on_notice: NoticeHook, on_lost: LossHook) -> None:
        """Hands the connection's cluster notices and its loss to a cluster client (run
        by the reader task: the hooks must not wait)."""
        self._c.watch(on_notice, on_lost)

    async def _raw(
        self, build: Callable[[int], bytes], timeout: Optional[float]
    ) -> Tuple[int, Optional[P.Response]]:
        """Sends the frame ``build(id)`` under a fresh id; returns the id and the answer,
        ``None`` if ``timeout`` seconds pass first (a late answer is dropped)."""
        c = self._c
        id = c.next_id()
        try:
            return id, await asyncio.wait_for(c.call(id, build(id)), timeout)
        except asyncio.TimeoutError:
            return id, None

    def _send(self, build: Callable[[int], bytes]) -> None:
        """Writes the frame ``build(id)`` under a fresh id without waiting for its answer
        (which the reader drops); nothing if the connection is gone."""
        c = self._c
        if c.connected:
            try:
                c.writer.write(build(c.next_id()))
            except (OSError, RuntimeError):
                pass

    def _unlock_nowait(self, lock_id: int) -> None:
        """Releases (or withdraws) lock ``lock_id`` without waiting for the answer; nothing
        if the connection is gone."""
        if self._conn is not None:
            self._abandon(self._conn, lock_id)

    @staticmethod
    def _abandon(c: _Connection, id: int) -> None:
        """Withdraws (or releases) lock ``id`` whose caller stopped waiting (an UNLOCK,
        written without waiting for its answer)."""
        if c.connected:
            try:
                c.writer.write(P.encode_unlock(c.next_id(), id))
            except (OSError, RuntimeError):
                pass

    async def unlock(self, lock_id: int) -> None:
        """As :meth:`rangelock.Client.unlock`."""
        c = self._c
        id = c.next_id()
        r = await c.call(id, P.encode_unlock(id, lock_id))
        if r.status not in (P.Status.OK, P.Status.ALREADY_RELEASED):
            raise error_for_status(r.status, r.value, f"unlock of lock {lock_id}")

    # ---------------------------------------------------------------- other requests

    async def stats(self, max_entries: int = 1000) -> P.Stats:
        """As :meth:`rangelock.Client.stats`."""
        if not 0 <= max_entries <= 0xFFFF_FFFF:
            raise ValueError(f"max_entries must fit a u32, not {max_entries}")
        c = self._c
        id = c.next_id()
        r = await c.call(id, stats_encoder(c.hello.version)(id, max_entries))
        if r.status != P.Status.OK or r.stats is None:
            raise error_for_status(r.status, r.value, "stats")
        return r.stats

    async def ping(self) -> float:
        """One KEEPALIVE round trip; returns how long it took, in seconds."""
        c = self._c
        id = c.next_id()
        t0 = time.perf_counter()
        r = await c.call(id, P.encode_keepalive(id))
        elapsed = time.perf_counter() - t0
        if r.status != P.Status.OK:
            raise error_for_status(r.status, r.value, "keepalive")
        return elapsed


async def connect(
    address: str = DEFAULT_ADDRESS,
    *,
    token: TokenArg = None,
    tls: TlsArg = None,
    server_hostname: Optional[str] = None,
    connect_timeout: float = 10.0,
    keepalive: bool = True,
) -> AsyncClient:
    """``await AsyncClient(...).connect()``."""
    client = AsyncClient(
        address,
        token=token,
        tls=tls,
        server_hostname=server_hostname,
        connect_timeout=connect_timeout,
        keepalive=keepalive,
    )
    return await client.connect()


# The cluster client is built on AsyncClient (above).
from ._aio_cluster import AsyncClusterClient, AsyncClusterGuard, AsyncClusterLock  # noqa: E402
