"""Exceptions of the rangelock client.

Every exception derives from :class:`RangelockError`. Three families:

* :class:`ConnectError` — the connection could not be opened or the handshake failed
  (a refused hello: :class:`UnsupportedVersion`, :class:`AuthRequired`,
  :class:`AuthFailed`, :class:`TlsRequired`; a failed TLS handshake: :class:`TlsError`;
  a peer that is not a rangelock server: :class:`HandshakeError`).
* :class:`ConnectionLost` — an open connection is gone. The server has released (or
  releases as soon as it notices) every lock of the session: every guard of the client
  is stale, and every later call fails with this exception.
* :class:`ServerError` — the server answered a request with a status other than success
  (``docs/PROTOCOL.md`` §2); one subclass per status, e.g. :class:`WouldBlock`,
  :class:`TimedOut`, :class:`NotHeld`, :class:`Forbidden`. The request had no effect and the
  session goes on. ``exc.status`` is the :class:`rangelock.protocol.Status`.
"""

from __future__ import annotations

from typing import Dict, Optional, Type

__all__ = [
    "RangelockError",
    "ConnectError",
    "HandshakeError",
    "TlsError",
    "HelloRefused",
    "UnsupportedVersion",
    "AuthRequired",
    "AuthFailed",
    "TlsRequired",
    "ConnectionLost",
    "ClientClosed",
    "ProtocolError",
    "ServerError",
    "LockNotGranted",
    "WouldBlock",
    "TimedOut",
    "Cancelled",
    "AlreadyReleased",
    "Malformed",
    "UnknownOp",
    "InvalidRange",
    "NotHeld",
    "DuplicateId",
    "TooManyLocks",
    "FrameTooLarge",
    "NotWaiting",
    "ShuttingDown",
    "NotOwner",
    "InGrace",
    "CrossesPartition",
    "ReclaimRefused",
    "Fenced",
    "NotClustered",
    "ShmUnavailable",
    "ShmFull",
    "ShmAlreadyAttached",
    "Forbidden",
    "error_for_status",
]


class RangelockError(Exception):
    """Base of every exception this package raises."""


# --------------------------------------------------------------------------- connecting


class ConnectError(RangelockError):
    """Connecting or the handshake failed; nothing was locked. ``address`` is where the
    client tried to connect."""

    def __init__(self, message: str, address: Optional[str] = None) -> None:
        super().__init__(message)
        self.address = address


class HandshakeError(ConnectError):
    """The peer did not answer like a rangelock server (bad magic, closed the connection
    during the handshake, or did not answer within the connect timeout)."""


class TlsError(ConnectError):
    """The TLS handshake failed: the server's certificate is not trusted by the client's
    CA (or has expired, or is for another name), the server demanded a client
    certificate, or the listener does not speak TLS."""


class HelloRefused(ConnectError):
    """The server refused the client hello (it closed the connection after). ``hello`` is
    the server hello: its ``version``, ``grant``, ``lease_ms`` and ``max_frame`` are the
    server's real ones."""

    def __init__(self, message: str, address: Optional[str] = None, hello=None) -> None:
        super().__init__(message, address)
        self.hello = hello


class UnsupportedVersion(HelloRefused):
    """The server speaks another protocol version (hello status 1)."""

    @property
    def server_version(self) -> Optional[int]:
        return None if self.hello is None else self.hello.version


class AuthRequired(HelloRefused):
    """The server has an auth file and the client sent no token (hello status 2): pass
    ``token=...`` to :class:`rangelock.Client`."""


class AuthFailed(HelloRefused):
    """The server does not know the client's token (hello status 3)."""


class TlsRequired(HelloRefused):
    """A plain-text hello reached a TLS listener (hello status 4): pass ``tls=...`` to
    :class:`rangelock.Client`."""


# --------------------------------------------------------------------------- connection


class ConnectionLost(RangelockError):
    """The connection to the server is gone: the server has released every lock of this
    session (or releases them as soon as it notices), every guard of the client is stale
    and every call fails with this exception. There is no automatic reconnect: make a
    new :class:`rangelock.Client`."""


class ClientClosed(ConnectionLost):
    """The client was closed (:meth:`rangelock.Client.close`)."""


class ProtocolError(RangelockError, ValueError):
    """Bytes that do not decode as the protocol says. Received from a server, the client
    closes the connection (calls then fail with :class:`ConnectionLost`)."""


# --------------------------------------------------------------------------- statuses


class ServerError(RangelockError):
    """The server answered a request with a non-success status. ``status`` is the
    :class:`rangelock.protocol.Status`, ``value`` the response's value field (meaningful
    for a few cluster statuses)."""

    #: The wire code of the status this class stands for.
    code: int = -1
    #: What the status means, in words.
    meaning: str = "the server refused the request"

    def __init__(self, message: Optional[str] = None, *, code: Optional[int] = None, value: int = 0):
        if code is None:
            code = self.code
        self.code = code
        self.value = value
        if message is None:
            message = self.meaning
        super().__init__(message)

    @property
    def status(self):
        """The status as a :class:`rangelock.protocol.Status`."""
        from .protocol import Status

        return Status(self.code)


class LockNotGranted(ServerError):
    """A LOCK was not granted (would block, timed out or was cancelled); nothing is held."""


class WouldBlock(LockNotGranted):
    code = 0x02
    meaning = "the range is locked: a conflicting holder or an earlier conflicting waiter exists"


class TimedOut(LockNotGranted):
    code = 0x03
    meaning = "the wait's timeout passed before the lock could be granted"


class Cancelled(LockNotGranted):
    code = 0x04
    meaning = "the waiting lock was withdrawn"


class AlreadyReleased(ServerError):
    code = 0x05
    meaning = "the lock was already released"


class Malformed(ServerError):
    code = 0x10
    meaning = "the server could not parse the request (MALFORMED): a client bug"


class UnknownOp(ServerError):
    code = 0x11
    meaning = "the server does not know this operation (UNKNOWN_OP)"


class InvalidRange(ServerError, ValueError):
    """An empty or inverted range (``start >= end``), or one outside ``0..2**64-1``.
    Checked by the client before sending, and by the server."""

    code = 0x12
    meaning = "invalid range: a range must be non-empty (start < end)"


class NotHeld(ServerError):
    code = 0x13
    meaning = "this session holds no such lock (NOT_HELD)"


class DuplicateId(ServerError):
    code = 0x14
    meaning = "a live lock of this session already has this request id (DUPLICATE_ID)"


class TooManyLocks(ServerError):
    code = 0x15
    meaning = "this session is at the server's limit of held + queued locks (--max-locks)"


class FrameTooLarge(ServerError):
    code = 0x16
    meaning = "the request frame is larger than the server's max_frame"


class NotWaiting(ServerError):
    code = 0x17
    meaning = "the lock is already granted, so it cannot be cancelled (unlock it)"


class ShuttingDown(ServerError):
    code = 0x18
    meaning = "the server is shutting down: nothing is granted any more"


class NotOwner(ServerError):
    code = 0x19
    meaning = "cluster: this node does not own the range's partition"


class InGrace(ServerError):
    code = 0x1A
    meaning = "cluster: the partition is in its grace period (only reclaims are served)"


class CrossesPartition(ServerError):
    code = 0x1B
    meaning = "cluster: the range spans more than one partition"


class ReclaimRefused(ServerError):
    code = 0x1C
    meaning = "cluster: the reclaim was refused; the lock is lost"


class Fenced(ServerError):
    code = 0x1D
    meaning = "cluster: the node cannot confirm its lease and grants nothing"


class NotClustered(ServerError):
    code = 0x1E
    meaning = "the server is not a cluster node"


class ShmUnavailable(ServerError):
    code = 0x1F
    meaning = "the server has no shared-memory slots for this connection"


class ShmFull(ServerError):
    code = 0x20
    meaning = "every shared-memory slot is leased"


class ShmAlreadyAttached(ServerError):
    code = 0x21
    meaning = "this session already holds a shared-memory slot"


class Forbidden(ServerError):
    code = 0x22
    meaning = (
        "forbidden: the range is outside the ranges this session's token may lock "
        "(see the server's auth file)"
    )


_BY_CODE: Dict[int, Type[ServerError]] = {
    cls.code: cls
    for cls in (
        WouldBlock,
        TimedOut,
        Cancelled,
        AlreadyReleased,
        Malformed,
        UnknownOp,
        InvalidRange,
        NotHeld,
        DuplicateId,
        TooManyLocks,
        FrameTooLarge,
        NotWaiting,
        ShuttingDown,
        NotOwner,
        InGrace,
        CrossesPartition,
        ReclaimRefused,
        Fenced,
        NotClustered,
        ShmUnavailable,
        ShmFull,
        ShmAlreadyAttached,
        Forbidden,
    )
}


def error_for_status(code: int, value: int = 0, what: str = "") -> ServerError:
    """The exception for a response status ``code`` (one of ``docs/PROTOCOL.md`` §2),
    with a message that starts with ``what`` (the request, e.g. ``"lock 0..4096"``)."""
    from .protocol import Status

    cls = _BY_CODE.get(code, ServerError)
    try:
        name = Status(code).name
    except ValueError:
        name = f"status {code:#04x}"
    meaning = cls.meaning
    if name not in meaning:
        meaning = f"{meaning} ({name})"
    message = f"{what}: {meaning}" if what else meaning
    return cls(message, code=code, value=value)
