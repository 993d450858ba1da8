"""Exceptions of the rangelock client.

Every exception derives from :class:`RangelockError` and from the builtin exception that
means the same thing, so ``except TimeoutError``, ``except ConnectionError`` or
``except ValueError`` catch what they should:

* :class:`ConnectError` (a :class:`ConnectionError`, so an :class:`OSError`): the
  connection could not be opened or the handshake failed. A refused hello:
  :class:`UnsupportedVersionError`, :class:`AuthRequiredError` and
  :class:`AuthFailedError` (also :class:`PermissionError`), :class:`TlsRequiredError`; a
  failed TLS handshake: :class:`TlsError`; a peer that is not a rangelock server:
  :class:`HandshakeError`.
* :class:`ConnectionLostError` (a :class:`ConnectionError`): an open connection is gone.
  The server has released (or releases as soon as it notices) every lock of the session:
  every guard of the client is stale, and every later call fails with this exception.
  When the server said why it ended the session (protocol version 4), the exception is a
  :class:`SessionEndedError` with the ``reason``: :class:`SessionExpiredError` (the lease
  lapsed), :class:`ServerShuttingDownError`, or :class:`SessionEndedError` itself.
* :class:`ServerError`: the server answered a request with a status other than success
  (``docs/PROTOCOL.md`` §2); one subclass per status, e.g. :class:`WouldBlockError` (a
  :class:`BlockingIOError`), :class:`TimedOutError` (a :class:`TimeoutError`),
  :class:`InvalidRangeError` (a :class:`ValueError`), :class:`ForbiddenError` (a
  :class:`PermissionError`). The request had no effect and the session goes on, except
  after :class:`ShuttingDownError` (a :class:`ConnectionError`): the server is stopping
  and closes the connection next. ``exc.status`` is the
  :class:`rangelock.protocol.Status`.
* :class:`ProtocolError` (a :class:`ValueError`): bytes that do not decode.
* The cluster client's own two: :class:`LockLostError` (a :class:`ConnectionError`): a
  cluster guard is lost, a piece could not be reclaimed after its node failed; and
  :class:`PartitionUnavailableError` (a :class:`BlockingIOError`): a try found a
  partition's owner unknown, unreachable, fenced or in its grace period.

The README's "Errors" table (``clients/python/README.md``) names the builtin of every
class; ``tests/test_api.py`` checks the classes against it.

The earlier names without the ``Error`` suffix (``TimedOut``, ``ConnectionLost``,
``WouldBlock``, ...) are deprecated aliases of the same classes, kept for one release:
using one warns with :class:`DeprecationWarning`.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Dict, Optional, Type

if TYPE_CHECKING:
    from ._cluster import LostReason
    from .protocol import EndReason, ServerHello, Status

__all__ = [
    "RangelockError",
    "ConnectError",
    "HandshakeError",
    "TlsError",
    "HelloRefusedError",
    "UnsupportedVersionError",
    "AuthRequiredError",
    "AuthFailedError",
    "TlsRequiredError",
    "ConnectionLostError",
    "ClientClosedError",
    "SessionEndedError",
    "SessionExpiredError",
    "ServerShuttingDownError",
    "ProtocolError",
    "ServerError",
    "LockNotGrantedError",
    "WouldBlockError",
    "TimedOutError",
    "LockCancelledError",
    "AlreadyReleasedError",
    "MalformedError",
    "UnknownOpError",
    "InvalidRangeError",
    "NotHeldError",
    "DuplicateIdError",
    "TooManyLocksError",
    "FrameTooLargeError",
    "NotWaitingError",
    "ShuttingDownError",
    "NotOwnerError",
    "InGraceError",
    "CrossesPartitionError",
    "ReclaimRefusedError",
    "FencedError",
    "NotClusteredError",
    "ShmUnavailableError",
    "ShmFullError",
    "ShmAlreadyAttachedError",
    "ForbiddenError",
    "BadNameError",
    "TooManyNamesError",
    "CacheUnavailableError",
    "NamesUnsupportedError",
    "LockLostError",
    "PartitionUnavailableError",
    "error_for_status",
    "session_ended_error",
]


class RangelockError(Exception):
    """Base of every exception this package raises."""


# --------------------------------------------------------------------------- connecting


class ConnectError(RangelockError, ConnectionError):
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


class HelloRefusedError(ConnectError):
    """The server refused the client hello (it closed the connection after). ``hello`` is
    the server hello: its ``version``, ``grant``, ``lease_ms`` and ``max_frame`` are the
    server's real ones."""

    def __init__(
        self, message: str, address: Optional[str] = None, hello: Optional[ServerHello] = None
    ) -> None:
        super().__init__(message, address)
        self.hello = hello


class UnsupportedVersionError(HelloRefusedError):
    """The server speaks no protocol version this client speaks (hello status 1)."""

    @property
    def server_version(self) -> Optional[int]:
        """The newest version the server speaks."""
        return None if self.hello is None else self.hello.version


class AuthRequiredError(HelloRefusedError, PermissionError):
    """The server has an auth file and the client sent no token (hello status 2): pass
    ``token=...`` to :class:`rangelock.Client`."""


class AuthFailedError(HelloRefusedError, PermissionError):
    """The server does not know the client's token (hello status 3)."""


class TlsRequiredError(HelloRefusedError):
    """A plain-text hello reached a TLS listener (hello status 4): pass ``tls=...`` to
    :class:`rangelock.Client`."""


# --------------------------------------------------------------------------- connection


class ConnectionLostError(RangelockError, ConnectionError):
    """The connection to the server is gone: the server has released every lock of this
    session (or releases them as soon as it notices), every guard of the client is stale
    and every call fails with this exception. There is no automatic reconnect: make a
    new :class:`rangelock.Client`."""


class ClientClosedError(ConnectionLostError):
    """The client was closed (:meth:`rangelock.Client.close`)."""


class SessionEndedError(ConnectionLostError):
    """The server ended the session and said why before it closed the connection
    (protocol version 4, ``docs/PROTOCOL.md`` §2.1). ``reason`` is the
    :class:`rangelock.protocol.EndReason`."""

    def __init__(self, message: str, reason: Optional[EndReason] = None) -> None:
        super().__init__(message)
        self.reason = reason


class SessionExpiredError(SessionEndedError):
    """The server read nothing from this client for a whole lease and ended the session
    (the process was stopped or starved, or sends no keepalives)."""


class ServerShuttingDownError(SessionEndedError):
    """The server is shutting down and ended every session."""


class ProtocolError(RangelockError, ValueError):
    """Bytes that do not decode as the protocol says. Received from a server, the client
    closes the connection (calls then fail with :class:`ConnectionLostError`)."""


# --------------------------------------------------------------------------- statuses


class ServerError(RangelockError):
    """The server answered a request with a non-success status. ``status`` is the
    :class:`rangelock.protocol.Status`, ``value`` the response's value field (meaningful
    for a few cluster statuses)."""

    #: The wire code of the status this class stands for.
    code: int = -1
    #: What the status means, in words.
    meaning: str = "the server refused the request"

    def __init__(
        self, message: Optional[str] = None, *, code: Optional[int] = None, value: int = 0
    ) -> None:
        if code is None:
            code = type(self).code
        self.code = code
        self.value = value
        if message is None:
            message = self.meaning
        super().__init__(message)

    @property
    def status(self) -> Status:
        """The status as a :class:`rangelock.protocol.Status`."""
        from .protocol import Status

        return Status(self.code)


class LockNotGrantedError(ServerError):
    """A LOCK was not granted (would block, timed out or was cancelled); nothing is held."""


class WouldBlockError(LockNotGrantedError, BlockingIOError):
    """A try-lock found the range taken (as ``fcntl.flock`` with ``LOCK_NB`` raises
    :class:`BlockingIOError`)."""

    code = 0x02
    meaning = "the range is locked: a conflicting holder or an earlier conflicting waiter exists"


class TimedOutError(LockNotGrantedError, TimeoutError):
    code = 0x03
    meaning = "the wait's timeout passed before the lock could be granted"


class LockCancelledError(LockNotGrantedError):
    code = 0x04
    meaning = "the waiting lock was withdrawn"


class AlreadyReleasedError(ServerError):
    code = 0x05
    meaning = "the lock was already released"


class MalformedError(ServerError):
    code = 0x10
    meaning = "the server could not parse the request (MALFORMED): a client bug"


class UnknownOpError(ServerError):
    code = 0x11
    meaning = "the server does not know this operation (UNKNOWN_OP)"


class InvalidRangeError(ServerError, ValueError):
    """An empty or inverted range (``start >= end``), or one outside ``0..2**64-1``.
    Checked by the client before sending, and by the server."""

    code = 0x12
    meaning = "invalid range: a range must be non-empty (start < end)"


class NotHeldError(ServerError):
    code = 0x13
    meaning = "this session holds no such lock (NOT_HELD)"


class DuplicateIdError(ServerError):
    code = 0x14
    meaning = "a live lock of this session already has this request id (DUPLICATE_ID)"


class TooManyLocksError(ServerError):
    code = 0x15
    meaning = "this session is at the server's limit of held + queued locks (--max-locks)"


class FrameTooLargeError(ServerError):
    code = 0x16
    meaning = "the request frame is larger than the server's max_frame"


class NotWaitingError(ServerError):
    code = 0x17
    meaning = "the lock is already granted, so it cannot be cancelled (unlock it)"


class ShuttingDownError(ServerError, ConnectionError):
    """The server is stopping: it answered a waiting (or new) LOCK this, and closes the
    connection next. A :class:`ConnectionError`, like the :class:`ServerShuttingDownError`
    that the same stop raises when the connection closes before the answer arrives, so
    ``except ConnectionError`` catches a server that stops while a lock waits."""

    code = 0x18
    meaning = "the server is shutting down: nothing is granted any more"


class NotOwnerError(ServerError):
    code = 0x19
    meaning = "cluster: this node does not own the range's partition"


class InGraceError(ServerError):
    code = 0x1A
    meaning = "cluster: the partition is in its grace period (only reclaims are served)"


class CrossesPartitionError(ServerError):
    code = 0x1B
    meaning = "cluster: the range spans more than one partition"


class ReclaimRefusedError(ServerError):
    code = 0x1C
    meaning = "cluster: the reclaim was refused; the lock is lost"


class FencedError(ServerError):
    code = 0x1D
    meaning = "cluster: the node cannot confirm its lease and grants nothing"


class NotClusteredError(ServerError):
    code = 0x1E
    meaning = "the server is not a cluster node"


class ShmUnavailableError(ServerError):
    code = 0x1F
    meaning = "the server has no shared-memory slots for this connection"


class ShmFullError(ServerError):
    code = 0x20
    meaning = "every shared-memory slot is leased"


class ShmAlreadyAttachedError(ServerError):
    code = 0x21
    meaning = "this session already holds a shared-memory slot"


class ForbiddenError(ServerError, PermissionError):
    code = 0x22
    meaning = (
        "forbidden: the range is outside the ranges this session's token may lock "
        "(see the server's auth file)"
    )


class BadNameError(ServerError, ValueError):
    code = 0x25
    meaning = "a resource name must be 1 to 1024 bytes"


class TooManyNamesError(ServerError):
    code = 0x26
    meaning = "the server has its most live resource names (--max-names)"


class CacheUnavailableError(ServerError):
    code = 0x28
    meaning = (
        "cached locks unavailable: the server caches nothing, or the session never sent "
        "CACHE_ON (this client never does)"
    )


class NamesUnsupportedError(RangelockError, NotImplementedError):
    """A named lock on a session before protocol version 5 (an older server): raised
    before anything is sent."""


# --------------------------------------------------------------------------- cluster


class LockLostError(RangelockError, ConnectionError):
    """A cluster guard is lost: a piece could not be reclaimed at its partition's new
    owner after its node failed or gave the partition up (``reason``: the partition, and
    how). Nothing of the guard is held any more; its other pieces were released."""

    def __init__(self, message: str, reason: Optional[LostReason] = None) -> None:
        super().__init__(message)
        self.reason = reason


class PartitionUnavailableError(RangelockError, BlockingIOError):
    """A cluster try-lock found a partition's owner unknown, unreachable, fenced or in
    its grace period (a waiting lock retries instead); nothing is held. ``partition``
    names it."""

    def __init__(self, message: str, partition: Optional[int] = None) -> None:
        super().__init__(message)
        self.partition = partition


_BY_CODE: Dict[int, Type[ServerError]] = {
    cls.code: cls
    for cls in (
        WouldBlockError,
        TimedOutError,
        LockCancelledError,
        AlreadyReleasedError,
        MalformedError,
        UnknownOpError,
        InvalidRangeError,
        NotHeldError,
        DuplicateIdError,
        TooManyLocksError,
        FrameTooLargeError,
        NotWaitingError,
        ShuttingDownError,
        NotOwnerError,
        InGraceError,
        CrossesPartitionError,
        ReclaimRefusedError,
        FencedError,
        NotClusteredError,
        ShmUnavailableError,
        ShmFullError,
        ShmAlreadyAttachedError,
        ForbiddenError,
        BadNameError,
        TooManyNamesError,
        CacheUnavailableError,
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


def session_ended_error(reason: EndReason, message: str) -> SessionEndedError:
    """The exception for a session the server ended for ``reason``."""
    from .protocol import EndReason

    if reason is EndReason.LEASE_EXPIRED:
        return SessionExpiredError(message, reason)
    if reason is EndReason.SHUTDOWN:
        return ServerShuttingDownError(message, reason)
    return SessionEndedError(message, reason)


# --------------------------------------------------------------------------- old names

#: The earlier names without the ``Error`` suffix, deprecated: each maps to its ``Error``-suffixed class.
DEPRECATED_ALIASES: Dict[str, str] = {
    "HelloRefused": "HelloRefusedError",
    "UnsupportedVersion": "UnsupportedVersionError",
    "AuthRequired": "AuthRequiredError",
    "AuthFailed": "AuthFailedError",
    "TlsRequired": "TlsRequiredError",
    "ConnectionLost": "ConnectionLostError",
    "ClientClosed": "ClientClosedError",
    "LockNotGranted": "LockNotGrantedError",
    "WouldBlock": "WouldBlockError",
    "TimedOut": "TimedOutError",
    "Cancelled": "LockCancelledError",
    "AlreadyReleased": "AlreadyReleasedError",
    "Malformed": "MalformedError",
    "UnknownOp": "UnknownOpError",
    "InvalidRange": "InvalidRangeError",
    "NotHeld": "NotHeldError",
    "DuplicateId": "DuplicateIdError",
    "TooManyLocks": "TooManyLocksError",
    "FrameTooLarge": "FrameTooLargeError",
    "NotWaiting": "NotWaitingError",
    "ShuttingDown": "ShuttingDownError",
    "NotOwner": "NotOwnerError",
    "InGrace": "InGraceError",
    "CrossesPartition": "CrossesPartitionError",
    "ReclaimRefused": "ReclaimRefusedError",
    "Fenced": "FencedError",
    "NotClustered": "NotClusteredError",
    "ShmUnavailable": "ShmUnavailableError",
    "ShmFull": "ShmFullError",
    "ShmAlreadyAttached": "ShmAlreadyAttachedError",
    "Forbidden": "ForbiddenError",
}


def deprecated_alias(name: str) -> Type[RangelockError]:
    """The class an old name stands for, with a :class:`DeprecationWarning`; raises
    :class:`AttributeError` for any other name."""
    new = DEPRECATED_ALIASES.get(name)
    if new is None:
        raise AttributeError(f"module 'rangelock' has no attribute {name!r}")
    warnings.warn(
        f"rangelock.{name} is deprecated and will be removed in the next release: "
        f"use rangelock.{new}",
        DeprecationWarning,
        stacklevel=3,
    )
    cls: Type[RangelockError] = globals()[new]
    return cls


def __getattr__(name: str) -> Type[RangelockError]:
    return deprecated_alias(name)
