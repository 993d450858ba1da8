"""What the blocking and the asyncio client share: parsing addresses, checking
arguments, reading the server hello, and the words of their errors. No I/O."""

from __future__ import annotations

import math
import os
import socket
import ssl
from typing import Callable, Optional, Tuple, Union

from . import protocol as P
from .errors import (
    AuthFailedError,
    AuthRequiredError,
    BadNameError,
    ClientClosedError,
    ConnectionLostError,
    HandshakeError,
    HelloRefusedError,
    InvalidRangeError,
    NamesUnsupportedError,
    ProtocolError,
    SessionEndedError,
    TlsRequiredError,
    UnsupportedVersionError,
    session_ended_error,
)

#: The port a server listens on unless told otherwise (``rangelock-proto``'s
#: ``DEFAULT_PORT``), and the port of an address without one.
DEFAULT_PORT = 7878

#: The server's default address.
DEFAULT_ADDRESS = f"127.0.0.1:{DEFAULT_PORT}"

#: What ``name=`` accepts: a resource name (``str`` is sent as UTF-8), or ``None`` for
#: the unnamed resource.
NameArg = Union[None, str, bytes]

#: What ``tls=`` accepts.
TlsArg = Union[None, bool, ssl.SSLContext, str, "os.PathLike[str]"]

#: What ``token=`` accepts.
TokenArg = Union[None, str, bytes]

#: A parsed address: ``("unix", None, None, path)`` or ``("tcp", host, port, None)``.
Address = Tuple[str, Optional[str], Optional[int], Optional[str]]


def parse_address(address: str) -> Address:
    """``(kind, host, port, path)`` of ``unix:/path``, ``host:port``, ``[v6]:port``, or a
    host alone (``host``, ``[v6]``), which means port :data:`DEFAULT_PORT`."""
    if not isinstance(address, str):
        raise TypeError(f"address must be a str like 'host:port' or 'unix:/path', not {address!r}")
    if address.startswith("unix:"):
        path = address[len("unix:") :]
        if not path:
            raise ValueError("empty unix socket path in address 'unix:'")
        return "unix", None, None, path
    if address.startswith("[") and address.endswith("]") and len(address) > 2:
        return "tcp", address[1:-1], DEFAULT_PORT, None
    if address and ":" not in address:
        return "tcp", address, DEFAULT_PORT, None
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"{address!r} is neither host, host:port nor unix:/path")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return "tcp", host, int(port), None


def tls_context(tls: TlsArg) -> Optional[ssl.SSLContext]:
    """The TLS context ``tls=`` asks for (``None``: plain text)."""
    if tls is None or tls is False:
        return None
    if tls is True:
        return ssl.create_default_context()
    if isinstance(tls, ssl.SSLContext):
        return tls
    if isinstance(tls, (str, os.PathLike)):
        return ssl.create_default_context(cafile=os.fspath(tls))
    raise TypeError(f"tls must be None, True, an ssl.SSLContext or a CA file path, not {tls!r}")


def token_bytes(token: TokenArg) -> Optional[bytes]:
    """The token as bytes (``str`` is UTF-8)."""
    if isinstance(token, str):
        return token.encode("utf-8")
    return token


def brief(e: BaseException) -> str:
    """An OS error as a short phrase: ``connection refused``. (asyncio's own message for
    a failed connect, "Connect call failed (host, port)", gives way to its errno's.)"""
    if isinstance(e, OSError) and (e.strerror or e.errno):
        s = e.strerror or ""
        plain = not isinstance(e, (socket.gaierror, ssl.SSLError))
        if plain and isinstance(e.errno, int) and e.errno > 0:
            s = os.strerror(e.errno)
        return s[:1].lower() + s[1:] if s[1:2].islower() else s
    return str(e) or type(e).__name__


def lock_what(start: int, end: int, shared: bool) -> str:
    """How messages name a LOCK: ``lock 0..10 exclusive``."""
    return f"lock {start}..{end} {'shared' if shared else 'exclusive'}"


def check_name(name: Union[str, bytes, None], version: Optional[int] = None) -> Optional[bytes]:
    """The wire bytes of a resource name (``str`` as UTF-8), ``None`` for the unnamed
    resource. Raises :class:`BadNameError` for an empty name or one over 1024 bytes, and
    :class:`NamesUnsupportedError` when the session's protocol ``version`` is before 5;
    both before anything is sent."""
    if name is None:
        return None
    if isinstance(name, str):
        raw = name.encode("utf-8")
    elif isinstance(name, (bytes, bytearray, memoryview)):
        raw = bytes(name)
    else:
        raise TypeError(f"a resource name is str or bytes, not {type(name).__name__}")
    if not 1 <= len(raw) <= P.MAX_RESOURCE_NAME_LEN:
        raise BadNameError(f"a resource name of {len(raw)} bytes: names are 1 to {P.MAX_RESOURCE_NAME_LEN} bytes")
    if version is not None and version < 5:
        raise NamesUnsupportedError(f"the session speaks protocol version {version}: named resources need version 5")
    return raw


def check_range(start: int, end: int, shared: bool) -> None:
    """Raises ``TypeError`` or :class:`InvalidRangeError` before anything is sent."""
    what = lock_what(start, end, shared)
    if not isinstance(start, int) or not isinstance(end, int):
        raise TypeError(f"{what}: start and end must be ints")
    if start < 0 or end > P.U64_MAX or start >= end:
        raise InvalidRangeError(
            f"{what}: invalid range: a range must be non-empty (start < end) and inside "
            f"0..2**64-1 (checked before sending)"
        )


def lock_wait(timeout: Optional[float]) -> Tuple[P.Wait, int]:
    """The LOCK's ``wait`` and ``timeout_ms`` for ``timeout`` seconds (``None``: forever)."""
    if timeout is None:
        return P.Wait.FOREVER, 0
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or math.isnan(timeout)
        or timeout < 0
    ):
        raise ValueError(f"timeout must be a number of seconds >= 0 or None, not {timeout!r}")
    ms = math.ceil(timeout * 1000)
    if ms > P.MAX_TIMEOUT_MS:
        raise ValueError(
            f"timeout {timeout} s is longer than the protocol's maximum of "
            f"{P.MAX_TIMEOUT_MS / 1000} s (about 49.7 days): use timeout=None to wait forever"
        )
    return P.Wait.TIMEOUT, ms


def acquire_timeout(blocking: bool, timeout: Optional[float]) -> Optional[float]:
    """Checks ``acquire``'s arguments as :meth:`threading.Lock.acquire` does; returns the
    timeout to wait (``None``: forever, ``0``: try)."""
    if timeout is not None and timeout == -1:
        timeout = None
    if not blocking:
        if timeout is not None:
            raise ValueError("can't specify a timeout for a non-blocking call")
        return 0.0
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or math.isnan(timeout)
        or timeout < 0
    ):
        raise ValueError(f"timeout value must be a number >= 0, -1 or None, not {timeout!r}")
    return timeout


def parse_server_hello(buf: bytes, address: str, offered: int) -> P.ServerHello:
    """Checks the server's hello (exactly :data:`SERVER_HELLO_LEN` bytes) to a hello of
    version ``offered``: the hello if accepted, else raises the refusal."""
    try:
        sh = P.decode_server_hello(buf)
    except ProtocolError as e:
        raise HandshakeError(f"handshake with {address} failed: {e}", address) from None
    S = P.HelloStatus
    if sh.status == S.ACCEPTED:
        if not P.MIN_VERSION <= sh.version <= offered:
            raise HandshakeError(
                f"handshake with {address} failed: the server accepted the hello of "
                f"version {offered} but speaks version {sh.version}",
                address,
            )
        return sh
    raise hello_refused(sh, address, offered)


def hello_refused(sh: P.ServerHello, address: str, offered: int) -> HelloRefusedError:
    """The exception for a refused hello."""
    S = P.HelloStatus
    if sh.status == S.UNSUPPORTED_VERSION:
        return UnsupportedVersionError(
            f"{address} speaks protocol version {sh.version}, this client speaks "
            f"{P.MIN_VERSION} to {P.VERSION} (offered {offered})",
            address,
            sh,
        )
    if sh.status == S.AUTH_REQUIRED:
        return AuthRequiredError(
            f"{address} requires authentication: pass token=... (the server has an "
            "auth file and this client sent no token)",
            address,
            sh,
        )
    if sh.status == S.AUTH_FAILED:
        return AuthFailedError(
            f"{address} refused the token: it is not one the server knows", address, sh
        )
    return TlsRequiredError(
        f"{address} speaks TLS on this port: pass tls=... (a CA file, an ssl.SSLContext, "
        "or True for the system's CAs)",
        address,
        sh,
    )


def fallback_version(e: UnsupportedVersionError, offered: int) -> Optional[int]:
    """The version to offer next after ``e`` refused a hello of version ``offered``: the
    server's, if this client speaks it (``None``: give up)."""
    v = e.server_version
    if v is not None and P.MIN_VERSION <= v < offered:
        return v
    return None


class Loss:
    """Why a connection was lost: makes the exception every call then raises (a fresh one
    per raise, so tracebacks do not pile up)."""

    __slots__ = ("message", "closed", "reason", "unresponsive")

    def __init__(
        self,
        message: str,
        *,
        closed: bool = False,
        reason: Union[P.EndReason, int, None] = None,
    ) -> None:
        self.message = message
        self.closed = closed
        self.reason = reason
        #: The server answered no keepalive for a lease (it is stopped or unreachable).
        self.unresponsive = False

    @classmethod
    def client_closed(cls, address: str) -> "Loss":
        return cls(f"the client of {address} is closed; its locks are released", closed=True)

    @classmethod
    def lost(
        cls,
        address: str,
        session: int,
        why: str,
        reason: Union[P.EndReason, int, None] = None,
        lease_ms: int = 0,
    ) -> "Loss":
        """A lost connection; with ``reason`` (a ``SESSION_ENDED`` notice came first) the
        server said why it ended the session, and that is the message."""
        if reason is not None:
            if isinstance(reason, P.EndReason):
                said = reason.phrase
                if reason is P.EndReason.LEASE_EXPIRED:
                    said = f"{said}; the lease is {lease_ms} ms"
            else:
                said = f"reason code {reason}, which this client does not know"
            return cls(
                f"the server at {address} ended session {session}: {said}; it released "
                "every lock of the session",
                reason=reason,
            )
        return cls(
            f"connection to {address} lost: {why}; the server releases every lock of "
            f"session {session}"
        )

    def error(self) -> ConnectionLostError:
        if self.closed:
            return ClientClosedError(self.message)
        if self.reason is not None:
            if isinstance(self.reason, P.EndReason):
                return session_ended_error(self.reason, self.message)
            return SessionEndedError(self.message)
        return ConnectionLostError(self.message)


#: The notices a cluster client is told about (``Client._watch``): a partition given up
#: (``NOT_OWNER``, ``FENCED``) and a new map (``MAP_CHANGED``).
CLUSTER_NOTICES = (P.Status.NOT_OWNER, P.Status.FENCED, P.Status.MAP_CHANGED)

#: What a cluster client hears of one node connection: its notices (the frame) and its
#: loss (the :class:`Loss`), called on the thread or task that reads the connection.
NoticeHook = Callable[[P.Response], None]
LossHook = Callable[["Loss"], None]


#: The ``max_entries`` of the STATS that ``Lock.locked()`` sends: every entry the server
#: will send (it cuts the list at its ``--max-stats-entries`` and output limit).
ALL_ENTRIES = 0xFFFF_FFFF


def stats_encoder(version: int) -> Callable[[int, int], bytes]:
    """The request ``stats()`` sends in a session of ``version``: STATS_CACHED from 6
    (names, the cache's counters, kept extents marked), STATS_NAMED from 5 (names), else
    STATS."""
    if version >= 6:
        return P.encode_stats_cached
    if version >= 5:
        return P.encode_stats_named
    return P.encode_stats


def held_in_conflict(
    stats: P.Stats, start: int, end: int, shared: bool, name: Optional[bytes] = None
) -> Optional[bool]:
    """Whether a STATS_NAMED (or STATS_CACHED) answer shows a *held* lock (a kept extent
    is one) on the resource ``name`` (``None``: the unnamed one) that overlaps
    ``[start, end)`` in a mode that conflicts with ``shared`` (exclusive conflicts with
    everything, shared with exclusive); queued locks do not count. ``None`` when the answer shows none but the server left entries out
    (``stats.omitted``): then it cannot tell. (A session before version 5 gets a STATS
    answer without names; its server has no named locks.)"""
    for e in stats.entries:
        if e.name != name:
            continue
        if e.held and e.start < end and start < e.end and not (shared and e.shared):
            return True
    return False if stats.omitted == 0 else None
