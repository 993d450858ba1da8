"""The blocking client of ``rangelock serve`` (protocol version 6, 5, 4 or 3, ``docs/PROTOCOL.md``).

One :class:`Client` is one connection, and so one server *session*: every lock it takes
lives as long as the connection. Any number of threads may share a client. Their requests
are pipelined on the one connection: each request carries an id, a reader thread reads
every response and hands it to the thread waiting for that id, so a thread blocked in a
long :meth:`Client.lock` does not hold up the others.

A keepalive thread sends ``KEEPALIVE`` every third of the server's lease, so a session
whose threads hold locks and do something else stays alive. If the connection is lost
(the server ended the session or closed the connection, a socket error, an undecodable
frame, or no keepalive answered for a whole lease), every waiting and later call raises
:class:`ConnectionLostError` and every guard becomes stale (``guard.valid`` is
``False``): the server releases a session's locks when its connection ends. When the
server said why it ended the session (a version 4 ``SESSION_ENDED`` notice), the error is
a :class:`SessionEndedError` naming the reason: :class:`SessionExpiredError` for a lapsed
lease, :class:`ServerShuttingDownError` for a shutdown. There is no automatic reconnect.

Two ways to lock: :meth:`Client.lock` returns a :class:`Guard` for a lock it holds (use it
in ``with``); :meth:`Client.range_lock` returns a :class:`Lock` for a range, with
``acquire(blocking=True, timeout=None) -> bool`` and ``release()`` like
:class:`threading.Lock`.

In *poll* grant mode (``rangelock serve --grant poll``, announced in the server hello) a
LOCK that must wait is answered ``PENDING`` and the client POLLs it until it is granted,
back to back a few times, then backing off from 10 us to 2 ms; callers see no difference.
"""

from __future__ import annotations

import itertools
import socket
import ssl
import threading
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
from ._lockstyle import LockStyle, UnlockOnExit
from ._transport import PlainTransport, TlsTransport, Transport
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

__all__ = ["Client", "Guard", "Lock", "DEFAULT_ADDRESS"]

#: Polls sent back to back (with only a yield between them) before backing off.
_BACK_TO_BACK_POLLS = 8


class _Slot:
    """Where the reader thread leaves the response to one request: ``lock`` is held
    until the response (or the loss of the connection) arrives."""

    __slots__ = ("lock", "response", "lost")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.lock.acquire()
        self.response: Optional[P.Response] = None
        self.lost = False


class _Core:
    """The connection: the transport, the waiting requests, the reader and keepalive
    threads. Shared by a :class:`Client` and nothing else (guards hold the client)."""

    def __init__(
        self, transport: Transport, hello: P.ServerHello, address: str, keepalive: bool
    ) -> None:
        self.transport = transport
        self.hello = hello
        self.address = address
        self._ids = itertools.count(1)
        self._id_lock = threading.Lock()  # next() of a count is atomic only under a GIL
        self._state = threading.Lock()
        self._pending: Dict[int, _Slot] = {}
        self._loss: Optional[Loss] = None
        self._lost = threading.Event()
        self._stop = threading.Event()
        #: Status of an id-0 error answer (MALFORMED, FRAME_TOO_LARGE) the server sends
        #: right before it closes the connection; named in the loss's message.
        self._fatal: Optional[P.Status] = None
        #: The reason of a SESSION_ENDED notice (version 4): the server closes next.
        self._ended: Union[P.EndReason, int, None] = None
        #: A cluster client's hooks (``Client._watch``), run on the reader thread.
        self.on_notice: Optional[NoticeHook] = None
        self.on_lost: Optional[LossHook] = None
        self._reader = threading.Thread(
            target=self._read_loop, name=f"rangelock-reader-{hello.session}", daemon=True
        )
        self._keepalive: Optional[threading.Thread] = None
        if keepalive:
            self._keepalive = threading.Thread(
                target=self._keepalive_loop,
                name=f"rangelock-keepalive-{hello.session}",
                daemon=True,
            )

    def next_id(self) -> int:
        """A fresh request id (ids are never reused within the session)."""
        with self._id_lock:
            return next(self._ids)

    def start(self) -> None:
        self._reader.start()
        if self._keepalive is not None:
            self._keepalive.start()

    # ---------------------------------------------------------------- requests

    def call(self, id: int, frame: bytes, timeout: Optional[float] = None) -> Optional[P.Response]:
        """Sends one request frame and waits for its response (``None`` only if
        ``timeout`` passed first). Raises :class:`ConnectionLostError`."""
        slot = _Slot()
        with self._state:
            if self._loss is not None:
                raise self._loss.error()
            self._pending[id] = slot
        try:
            self.send(frame)
            if timeout is None:
                slot.lock.acquire()
            elif not slot.lock.acquire(timeout=timeout):
                with self._state:
                    self._pending.pop(id, None)
                return None
        except BaseException:
            with self._state:
                self._pending.pop(id, None)
            raise
        if slot.lost:
            raise self.lost_error()
        return slot.response

    def request(self, id: int, frame: bytes) -> P.Response:
        """:meth:`call` without a timeout."""
        r = self.call(id, frame)
        assert r is not None
        return r

    def send(self, frame: bytes) -> None:
        """Writes one frame (or several, concatenated) without waiting for an answer."""
        try:
            self.transport.sendall(frame)
        except (OSError, ssl.SSLError) as e:
            self.fail(f"writing to the server failed: {brief(e)}")
            raise self.lost_error() from None

    # ---------------------------------------------------------------- loss

    @property
    def connected(self) -> bool:
        return self._loss is None

    def lost_error(self) -> ConnectionLostError:
        """A fresh exception for the loss (one per raise: tracebacks do not pile up)."""
        loss = self._loss
        assert loss is not None
        return loss.error()

    def loss_reason(self) -> Optional[str]:
        loss = self._loss
        return None if loss is None else loss.message

    def wait_lost(self, timeout: Optional[float]) -> Optional[ConnectionLostError]:
        if not self._lost.wait(timeout):
            return None
        return self.lost_error()

    def fail(self, why: str, closed: bool = False, unresponsive: bool = False) -> None:
        """Records the loss of the connection (the first one counts), wakes every waiting
        call and shuts the socket down (which ends the reader thread). ``unresponsive``:
        the server answered no keepalive for a lease."""
        if closed:
            loss = Loss.client_closed(self.address)
        else:
            h = self.hello
            loss = Loss.lost(self.address, h.session, why, self._ended, h.lease_ms)
            loss.unresponsive = unresponsive
        with self._state:
            if self._loss is not None:
                return
            self._loss = loss
            pending, self._pending = self._pending, {}
            hook = self.on_lost
        for slot in pending.values():
            slot.lost = True
            slot.lock.release()
        self._lost.set()
        self._stop.set()
        self.transport.shutdown()
        if hook is not None:
            hook(loss)

    def watch(self, on_notice: NoticeHook, on_lost: LossHook) -> None:
        """Sets the hooks; ``on_lost`` runs at once if the connection is lost already."""
        self.on_notice = on_notice
        with self._state:
            self.on_lost = on_lost
            loss = self._loss
        if loss is not None:
            on_lost(loss)

    def close(self) -> None:
        self.fail("", closed=True)
        me = threading.current_thread()
        for t in (self._reader, self._keepalive):
            if t is not None and t is not me and t.is_alive():
                t.join()
        self.transport.close()

    # ---------------------------------------------------------------- threads

    def _read_loop(self) -> None:
        t = self.transport
        buf = bytearray()
        try:
            while True:
                data = t.recv()
                if not data:
                    why = "the server closed the connection"
                    if self._fatal is not None:
                        why += f" after answering {self._fatal.name}"
                    break
                buf += data
                at, n = 0, len(buf)
                while n - at >= 4:
                    size = int.from_bytes(buf[at : at + 4], "little")
                    if size < 18 or size > P.MAX_RESPONSE_FRAME:
                        raise ProtocolError(f"response length prefix {size}")
                    if n - at - 4 < size:
                        break
                    self._dispatch(P.decode_response(bytes(buf[at + 4 : at + 4 + size])))
                    at += 4 + size
                if at:
                    del buf[:at]
        except ProtocolError as e:
            why = f"the server sent a frame this client cannot read ({e}); the client closed the connection"
        except (OSError, ssl.SSLError) as e:
            why = f"reading from the server failed: {brief(e)}"
        except BaseException as e:  # a bug here must not leave callers waiting forever
            why = f"the client's reader failed ({e!r}); the client closed the connection"
            self.fail(why)
            raise
        self.fail(why)

    def _dispatch(self, r: P.Response) -> None:
        if r.op == P.Op.NOTICE:
            if r.status == P.Status.SESSION_ENDED:
                self._ended = P.end_reason(r.value)  # the server closes the connection next
            elif r.status in CLUSTER_NOTICES and self.on_notice is not None:
                self.on_notice(r)  # else: a single-server client has nothing to reclaim
            return
        if r.id == 0 and r.status in (P.Status.MALFORMED, P.Status.FRAME_TOO_LARGE):
            self._fatal = r.status  # the server closes the connection next
            return
        with self._state:
            slot = self._pending.pop(r.id, None)
        if slot is not None:  # None: an abandoned request (see Client._abandon)
            slot.response = r
            slot.lock.release()

    def _keepalive_loop(self) -> None:
        lease = self.hello.lease_ms / 1000.0
        while not self._stop.wait(lease / 3):
            id = self.next_id()
            try:
                r = self.call(id, P.encode_keepalive(id), timeout=lease)
            except ConnectionLostError:
                return
            if r is None:
                self.fail(
                    f"the server answered no keepalive for a lease ({self.hello.lease_ms} ms): "
                    "it is stopped or unreachable; the client closed the connection",
                    unresponsive=True,
                )
                return


class Guard(UnlockOnExit):
    """A granted lock: its range, mode and fencing token.

    Use it as a context manager (``with client.lock(0, 4096) as g: ...``), or call
    :meth:`unlock`. A guard that is neither is released only when the client closes.

    ``token`` is the lock's **fencing token**: pass it along with every write the lock
    protects, and have the storage reject a token lower than one it has already seen.
    ``valid`` turns ``False`` when the guard is unlocked or the client's connection is
    lost (the server then released the lock, and another client may hold it already)."""

    __slots__ = ("client", "id", "start", "end", "shared", "token", "_released")

    def __init__(
        self, client: Client, id: int, start: int, end: int, shared: bool, token: int
    ) -> None:
        self.client = client
        #: The request id of the LOCK: names the lock within the session.
        self.id = id
        self.start = start
        self.end = end
        self.shared = shared
        self.token = token
        self._released = False

    @property
    def released(self) -> bool:
        """Whether :meth:`unlock` was called."""
        return self._released

    @property
    def valid(self) -> bool:
        """Whether the lock is still held, as far as this client knows: not unlocked, and
        the connection (so the session) is still up."""
        return not self._released and self.client.connected

    def unlock(self) -> None:
        """Releases the lock and waits for the server's answer. Unlocking again does
        nothing. Raises :class:`ConnectionLostError` if the connection is gone (the
        server released the lock when it ended the session: maybe before this call)."""
        if self._released:
            return
        self._released = True
        self.client.unlock(self.id)

    def __repr__(self) -> str:
        mode = "shared" if self.shared else "exclusive"
        state = "valid" if self.valid else ("released" if self._released else "lost")
        return f"<Guard id={self.id} {self.start}..{self.end} {mode} token={self.token} {state}>"


class Lock(LockStyle[Guard]):
    """A lock on one range of a :class:`Client`'s server, used like
    :class:`threading.Lock`: :meth:`acquire` and :meth:`release`, or ``with``.

    Made by :meth:`Client.range_lock`; it holds nothing until acquired. After a successful
    :meth:`acquire`, :attr:`token` is the grant's fencing token (and :attr:`guard` the
    :class:`Guard`); both are ``None`` while the lock is not held. Threads that share one
    :class:`Lock` exclude each other as with :class:`threading.Lock` (a second
    ``acquire`` waits until the first holder releases, whichever thread calls
    :meth:`release`); other :class:`Lock` objects, clients and processes are excluded by
    the server."""

    def __init__(
        self, client: Client, start: int, end: int, shared: bool = False, name: NameArg = None
    ) -> None:
        check_range(start, end, shared)
        super().__init__(start, end, shared, check_name(name))
        self.client = client

    def _take(self, blocking: bool, timeout: Optional[float]) -> Guard:
        if not blocking:
            return self.client.try_lock(self.start, self.end, shared=self.shared, name=self.name)
        return self.client.lock(
            self.start, self.end, shared=self.shared, timeout=timeout, name=self.name
        )

    @property
    def token(self) -> Optional[int]:
        """The fencing token of the current hold (``None`` while not held)."""
        g = self._guard
        return None if g is None else g.token

    def locked(self) -> bool:
        """Whether anyone holds the range: this :class:`Lock`, or any session (this
        client's other locks included) that holds an overlapping range in a conflicting
        mode (for a shared lock: an exclusive holder; for an exclusive one: any holder).
        Queued locks do not count, so ``False`` does not promise that a try succeeds (a
        conflicting waiter makes it fail, protocol §3). The meaning of redis-py's
        ``Lock.locked()``; :meth:`owned` says whether this lock holds it.

        Asks the server with one ``stats()`` (its answer lists every holder and waiter, up
        to the server's ``--max-stats-entries``). If the server cut the list short and it
        shows no conflicting holder, it probes instead: a try-lock of the range, released
        at once when granted (``True`` if the try is refused: then a conflicting
        *queued* lock may be the cause). Raises :class:`ConnectionLostError`, and for the
        probe :class:`ForbiddenError` (a range outside the session's token)."""
        g = self._guard
        if g is not None and g.valid:
            return True
        # Before version 5 there are no names (a named lock's probe says so).
        if self.name is None or self.client.hello.version >= 5:
            stats = self.client.stats(ALL_ENTRIES)
            held = held_in_conflict(stats, self.start, self.end, self.shared, self.name)
            if held is not None:
                return held
        try:
            probe = self.client.try_lock(self.start, self.end, shared=self.shared, name=self.name)
        except WouldBlockError:
            return True
        probe.unlock()
        return False

    def __repr__(self) -> str:
        mode = "shared" if self.shared else "exclusive"
        state = f"owned token={self.token}" if self.owned() else "not owned"
        return f"<rangelock.Lock {self.start}..{self.end} {mode} {state}>"


class Client:
    """A connection to ``rangelock serve``: one session.

    ``address`` is ``host:port`` (``[::1]:port`` for IPv6), a host alone (port 7878), or
    ``unix:/path``. ``token`` (``str`` or ``bytes``, 1 to 1024 bytes) authenticates the
    session to a server started with ``--auth-file``; a server without one ignores it.
    ``tls`` turns on TLS: ``True`` (the system's CAs), a CA file path, or an
    :class:`ssl.SSLContext` (load a client certificate into it for ``--tls-client-ca``
    servers); ``server_hostname`` is the name to check the certificate against (default:
    the host of ``address``). ``connect_timeout`` (seconds) bounds connecting, the TLS
    handshake and the hello. ``keepalive=False`` sends no keepalives (the session then
    ends after a lease without requests; for tests).

    The client offers protocol version 6; an older server refuses it naming its version (5,
    4 or 3) and is asked again, on a new connection, with that one (``client.hello.version``
    tells which one the session speaks).

    Raises :class:`ConnectError` (or a subclass: :class:`AuthRequiredError`,
    :class:`AuthFailedError`, :class:`TlsRequiredError`, :class:`UnsupportedVersionError`,
    :class:`TlsError`, :class:`HandshakeError`).
    """

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
        self._core: Optional[_Core] = None
        kind, host, port, path = parse_address(address)
        tok = token_bytes(token)
        P.encode_client_hello(tok)  # checks the token's length
        ctx = tls_context(tls)
        if ctx is not None and kind == "unix":
            raise ValueError("TLS is for TCP addresses: the server's Unix socket speaks plain text")
        self.address = address
        version = P.VERSION
        while True:
            transport = self._connect(kind, host, port, path, ctx, server_hostname, connect_timeout)
            try:
                hello = P.encode_client_hello(tok, version)
                server_hello = self._handshake(transport, hello, version, connect_timeout)
                transport.settimeout(None)
                break
            except UnsupportedVersionError as e:
                transport.close()
                older = fallback_version(e, version)
                if older is None:
                    raise
                version = older
            except BaseException:
                transport.close()
                raise
        self._core = _Core(transport, server_hello, address, keepalive)
        self._core.start()

    # ---------------------------------------------------------------- connecting

    def _connect(
        self,
        kind: str,
        host: Optional[str],
        port: Optional[int],
        path: Optional[str],
        ctx: Optional[ssl.SSLContext],
        server_hostname: Optional[str],
        timeout: float,
    ) -> Transport:
        address = self.address
        try:
            if kind == "unix":
                assert path is not None
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    sock.settimeout(timeout)
                    sock.connect(path)
                except BaseException:
                    sock.close()
                    raise
            else:
                sock = socket.create_connection((host, port), timeout=timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except socket.timeout:
            raise ConnectError(f"cannot connect to {address}: timed out after {timeout} s", address) from None
        except OSError as e:
            raise ConnectError(f"cannot connect to {address}: {brief(e)}", address) from None
        if ctx is None:
            return PlainTransport(sock)
        t = TlsTransport(sock, ctx, server_hostname if server_hostname is not None else host)
        try:
            t.handshake()
        except ssl.SSLCertVerificationError as e:
            t.close()
            raise TlsError(
                f"TLS handshake with {address} failed: the server's certificate is not "
                f"trusted: {e.verify_message or e.reason}",
                address,
            ) from None
        except ssl.SSLError as e:
            t.close()
            raise TlsError(f"TLS handshake with {address} failed: {e.reason or e}", address) from None
        except EOFError:
            t.close()
            raise TlsError(
                f"TLS handshake with {address} failed: the server closed the connection "
                "(does it speak TLS on this port?)",
                address,
            ) from None
        except socket.timeout:
            t.close()
            raise TlsError(f"TLS handshake with {address} timed out after {timeout} s", address) from None
        except OSError as e:
            t.close()
            raise TlsError(f"TLS handshake with {address} failed: {brief(e)}", address) from None
        return t

    def _handshake(self, t: Transport, hello: bytes, version: int, timeout: float) -> P.ServerHello:
        address = self.address
        tls = isinstance(t, TlsTransport)
        # With TLS 1.3 the client's side of the TLS handshake ends before the server has
        # checked the client's certificate: a refusal shows up here, as an alert or as
        # the connection closing.
        cert_hint = "(does the server require a client certificate, or refuse this one?)"
        buf = b""
        try:
            t.sendall(hello)
            while len(buf) < P.SERVER_HELLO_LEN:
                data = t.recv()
                if not data and tls:
                    raise TlsError(
                        f"TLS session with {address} failed: the server closed the connection "
                        f"before its hello {cert_hint}",
                        address,
                    )
                if not data:
                    raise HandshakeError(
                        f"handshake with {address} failed: the server closed the connection "
                        f"after {len(buf)} of the 24 bytes of its hello (not a rangelock "
                        "server, or one that refused this hello's flags)",
                        address,
                    )
                buf += data
        except socket.timeout:
            raise HandshakeError(
                f"handshake with {address} failed: no server hello within {timeout} s", address
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
        sh = parse_server_hello(buf[: P.SERVER_HELLO_LEN], address, version)
        if len(buf) > P.SERVER_HELLO_LEN:
            raise HandshakeError(f"handshake with {address} failed: bytes after the server hello", address)
        return sh

    # ---------------------------------------------------------------- session

    @property
    def hello(self) -> P.ServerHello:
        """The server hello of this connection (``hello.version``: the protocol version
        the session speaks)."""
        return self._c.hello

    @property
    def session(self) -> int:
        """The server-assigned session id."""
        return self._c.hello.session

    @property
    def lease(self) -> float:
        """The server's lease in seconds: a session silent this long ends."""
        return self._c.hello.lease_ms / 1000.0

    @property
    def grant_mode(self) -> P.GrantMode:
        """How the server delivers grants of queued locks (``"push"`` or ``"poll"``)."""
        return self._c.hello.grant

    @property
    def max_frame(self) -> int:
        """The largest request frame the server accepts."""
        return self._c.hello.max_frame

    @property
    def connected(self) -> bool:
        """Whether the connection is up, as far as this client has seen (a loss is found
        by the reader thread at once when the server closes the connection, and by the
        keepalive thread within a lease when it stops answering)."""
        return self._core is not None and self._core.connected

    @property
    def loss(self) -> Optional[str]:
        """Why the connection was lost (``None`` while it is up)."""
        return self._c.loss_reason()

    def wait_lost(self, timeout: Optional[float] = None) -> Optional[ConnectionLostError]:
        """Blocks until the connection is lost and returns the :class:`ConnectionLostError`
        (not raised) that calls now fail with; ``None`` if ``timeout`` seconds pass first."""
        return self._c.wait_lost(timeout)

    @property
    def _c(self) -> _Core:
        core = self._core
        if core is None:
            raise ClientClosedError("the client is not connected")
        return core

    def close(self) -> None:
        """Closes the connection; the server releases the session's locks. Calls waiting
        in other threads raise :class:`ClientClosedError`. Closing again does nothing."""
        if self._core is not None:
            self._core.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __del__(self) -> None:
        core = getattr(self, "_core", None)
        if core is not None and core.connected:
            try:
                core.close()
            except Exception:
                pass

    def __repr__(self) -> str:
        if self._core is None:
            return f"<rangelock.Client {self.address} not connected>"
        state = "connected" if self.connected else "lost"
        return f"<rangelock.Client {self.address} session={self.session} {state}>"

    # ---------------------------------------------------------------- locking

    def lock(
        self,
        start: int,
        end: int,
        *,
        shared: bool = False,
        timeout: Optional[float] = None,
        name: NameArg = None,
    ) -> Guard:
        """Locks ``[start, end)``, exclusive unless ``shared``, waiting at most ``timeout``
        seconds (``None``: as long as it takes). Returns a :class:`Guard`.

        Raises :class:`TimedOutError` when the timeout passes (``timeout=0`` waits not at
        all but still queues, so it is answered ``TimedOutError``, never
        ``WouldBlockError``: use :meth:`try_lock`), :class:`InvalidRangeError` for an empty
        range or one outside ``0..2**64-1`` (before sending), :class:`ForbiddenError` for a
        range outside the token's, :class:`ConnectionLostError`. An interrupted wait
        (``KeyboardInterrupt``) withdraws the request.

        ``name`` locks the range of that named resource instead of the unnamed one
        (protocol version 5, §2.2): locks on different names never conflict. A ``str`` is
        sent as UTF-8; :class:`BadNameError` for an empty name or one over 1024 bytes,
        :class:`NamesUnsupportedError` for a session before version 5, both before
        sending."""
        wait, ms = lock_wait(timeout)
        return self._lock(start, end, shared, wait, ms, name)

    def try_lock(
        self, start: int, end: int, *, shared: bool = False, name: NameArg = None
    ) -> Guard:
        """Locks ``[start, end)`` (of the resource ``name``, as :meth:`lock`) only if that
        is possible at once; raises :class:`WouldBlockError` if a conflicting lock is held
        or queued."""
        return self._lock(start, end, shared, P.Wait.TRY, 0, name)

    def range_lock(
        self, start: int, end: int, *, shared: bool = False, name: NameArg = None
    ) -> Lock:
        """A :class:`Lock` on ``[start, end)`` (of the resource ``name``, as :meth:`lock`)
        with ``acquire``/``release`` (nothing is sent until :meth:`Lock.acquire`). Raises
        :class:`InvalidRangeError` or :class:`BadNameError` at once for an invalid range
        or name."""
        return Lock(self, start, end, shared, name)

    def _lock(
        self,
        start: int,
        end: int,
        shared: bool,
        wait: P.Wait,
        timeout_ms: int,
        name: NameArg = None,
    ) -> Guard:
        check_range(start, end, shared)
        id, r = self._lock_response(start, end, shared, wait, timeout_ms, name)
        if r.status != P.Status.OK:
            raise error_for_status(r.status, r.value, lock_what(start, end, shared))
        return Guard(self, id, start, end, shared, r.value)

    def _lock_response(
        self,
        start: int,
        end: int,
        shared: bool,
        wait: P.Wait,
        timeout_ms: int,
        name: NameArg = None,
    ) -> Tuple[int, P.Response]:
        """Sends a LOCK (LOCK_NAMED of ``name``) and returns its id and final answer,
        whatever its status (the cluster client reads refusals' owner hints). Polls in
        poll grant mode; an interrupted wait withdraws the request."""
        core = self._c
        raw = check_name(name, core.hello.version)
        id = core.next_id()
        mode = P.Mode.SHARED if shared else P.Mode.EXCLUSIVE
        frame = P.encode_lock(id, start, end, mode, wait, timeout_ms, raw)
        try:
            r = core.request(id, frame)
            if r.status == P.Status.PENDING:
                r = self._poll_until_done(core, id)
        except RangelockError:
            raise
        except BaseException:
            self._abandon(core, id)
            raise
        return id, r

    def _poll_until_done(self, core: _Core, target: int) -> P.Response:
        """Poll grant mode: POLLs the queued lock ``target`` until its wait is over."""
        polls = 0
        backoff = 10e-6
        while True:
            id = core.next_id()
            r = core.request(id, P.encode_poll(id, target))
            if r.status != P.Status.PENDING:
                return r
            polls += 1
            if polls <= _BACK_TO_BACK_POLLS:
                time.sleep(0)
            else:
                time.sleep(backoff)
                backoff = min(backoff * 2, 2e-3)

    # ---------------------------------------------------------------- for the cluster client

    def _watch(self, on_notice: NoticeHook, on_lost: LossHook) -> None:
        """Hands the connection's cluster notices and its loss to a cluster client (on
        the reader thread: the hooks must not wait for an answer of this connection)."""
        self._c.watch(on_notice, on_lost)

    def _raw(
        self, build: Callable[[int], bytes], timeout: Optional[float]
    ) -> Tuple[int, Optional[P.Response]]:
        """Sends the frame ``build(id)`` under a fresh id; returns the id and the answer,
        ``None`` if ``timeout`` seconds pass first (a late answer is dropped)."""
        core = self._c
        id = core.next_id()
        return id, core.call(id, build(id), timeout)

    def _send(self, build: Callable[[int], bytes]) -> None:
        """Sends the frame ``build(id)`` under a fresh id without waiting for its answer
        (which the reader drops)."""
        core = self._c
        core.send(build(core.next_id()))

    def _unlock_nowait(self, lock_id: int) -> None:
        """Releases (or withdraws) lock ``lock_id`` without waiting for the answer; nothing
        if the connection is gone (the server released the session's locks)."""
        core = self._core
        if core is not None:
            self._abandon(core, lock_id)

    @staticmethod
    def _abandon(core: _Core, id: int) -> None:
        """Withdraws (or releases) lock ``id`` whose caller stopped waiting: an UNLOCK of
        a queued lock withdraws it, of a granted one releases it. Its answer, and the
        LOCK's, are dropped by the reader (no thread waits for their ids)."""
        if core.connected:
            unlock_id = core.next_id()
            try:
                core.send(P.encode_unlock(unlock_id, id))
            except ConnectionLostError:
                pass

    def unlock(self, lock_id: int) -> None:
        """Releases the lock whose LOCK had request id ``lock_id`` (``guard.id``) and waits
        for the answer; withdraws it if it is still queued. A lock this session already
        released is fine (unlock is idempotent). Raises :class:`NotHeldError` for an id
        that names no lock of this session, :class:`ConnectionLostError`."""
        core = self._c
        id = core.next_id()
        r = core.request(id, P.encode_unlock(id, lock_id))
        if r.status not in (P.Status.OK, P.Status.ALREADY_RELEASED):
            raise error_for_status(r.status, r.value, f"unlock of lock {lock_id}")

    # ---------------------------------------------------------------- other requests

    def stats(self, max_entries: int = 1000) -> P.Stats:
        """The server's counters and up to ``max_entries`` holders and waiters (the
        server caps it too: ``--max-stats-entries``, and what fits in its output limit);
        ``Stats.omitted`` counts the entries it left out. In a session of version 5 (a
        ``STATS_NAMED``) each entry carries its resource's ``name`` (``None``: the unnamed
        resource) and the counters ``names_live`` and ``named_holders``; before 5 a STATS,
        without them. In a session of version 6 (a ``STATS_CACHED``) the counters also
        carry the cache's (``cached_extents``, ``callbacks``, ``give_backs``,
        ``cache_expanded``) and an entry that is a kept extent of a caching session has
        ``kept`` set; before 6 those counters are 0 and no entry is kept."""
        if not 0 <= max_entries <= 0xFFFF_FFFF:
            raise ValueError(f"max_entries must fit a u32, not {max_entries}")
        core = self._c
        id = core.next_id()
        r = core.request(id, stats_encoder(core.hello.version)(id, max_entries))
        if r.status != P.Status.OK or r.stats is None:
            raise error_for_status(r.status, r.value, "stats")
        return r.stats

    def ping(self) -> float:
        """One KEEPALIVE round trip; returns how long it took, in seconds."""
        core = self._c
        id = core.next_id()
        t0 = time.perf_counter()
        r = core.request(id, P.encode_keepalive(id))
        elapsed = time.perf_counter() - t0
        if r.status != P.Status.OK:
            raise error_for_status(r.status, r.value, "keepalive")
        return elapsed
