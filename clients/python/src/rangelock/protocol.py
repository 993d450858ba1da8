"""The wire protocol of ``rangelock serve``, versions 3 to 5 (``docs/PROTOCOL.md``).

Pure encoders and decoders, no I/O: the client (``rangelock.client``) uses them, and the
tests check them byte for byte against the vectors of ``docs/PROTOCOL.md`` §8.

Every integer on the wire is little-endian. A connection opens with a *client hello*
(8 bytes, plus ``token_len u16 | token`` when the ``AUTH`` flag is set) answered by a
24-byte *server hello*; then both sides exchange *frames*
``len u32 | op u8 | id u64 | payload``. Every response's payload is
``status u8 | value u64``, and a few continue with a body (§2).

Version 4 adds one thing: before it ends a session on its own (a lapsed lease, its
shutdown, ...) the server sends a ``SESSION_ENDED`` notice whose value is the
:class:`EndReason` (§2.1). A version 4 server still accepts version 3 hellos and sends
those sessions no such notice. Version 5 adds named resources (§2.2).

The cluster's part (§7): the :class:`ClusterMap` of a ``MAP`` answer, ``RECLAIM`` and
``RECLAIM_NAMED``, and the placement of units and names on partitions (:func:`split`,
:func:`split_named`, :func:`name_hash`).
"""

from __future__ import annotations

import enum
import hashlib
import struct
from dataclasses import dataclass, field
from typing import List, NamedTuple, Optional, Tuple, Union

from .errors import ProtocolError

__all__ = [
    "MAGIC",
    "VERSION",
    "MIN_VERSION",
    "FLAG_AUTH",
    "MAX_TOKEN_LEN",
    "CLIENT_HELLO_LEN",
    "SERVER_HELLO_LEN",
    "MAX_RESPONSE_FRAME",
    "MAX_TIMEOUT_MS",
    "U64_MAX",
    "Op",
    "Status",
    "Mode",
    "Wait",
    "GrantMode",
    "HelloStatus",
    "EndReason",
    "ServerHello",
    "Request",
    "Response",
    "Counters",
    "StatsEntry",
    "Stats",
    "OwnerHint",
    "PartitionState",
    "NodeInfo",
    "PartitionOwner",
    "ClusterMap",
    "Piece",
    "MAX_PARTITIONS",
    "NAME_STRIPE_SHIFT",
    "ALL_PARTITIONS",
    "name_hash",
    "split",
    "split_named",
    "token_epoch",
    "encode_client_hello",
    "decode_client_hello",
    "decode_server_hello",
    "encode_lock",
    "encode_unlock",
    "encode_cancel",
    "encode_poll",
    "encode_keepalive",
    "encode_stats",
    "encode_stats_named",
    "encode_stats_cached",
    "encode_reclaim",
    "encode_reclaim_named",
    "encode_map",
    "encode_watch_map",
    "encode_shm_attach",
    "encode_cache_on",
    "encode_lock_cached",
    "encode_give_back",
    "decode_request",
    "encode_response",
    "encode_notice",
    "end_reason",
    "decode_response",
]

#: The four bytes every hello starts with.
MAGIC = b"RLCK"
#: The newest protocol version this package speaks (the one its hello offers). Version 6
#: adds cached locks (§2.3); this client never sends ``CACHE_ON``, so it stays uncached and
#: never gets a ``CALLBACK`` notice.
VERSION = 6
#: The oldest version it still speaks: it falls back to it when a server refuses
#: :data:`VERSION` and names this one.
MIN_VERSION = 3
#: Client hello ``flags`` bit 0: ``token_len u16 | token`` follows the 8-byte head.
FLAG_AUTH = 0x0001
#: Longest authentication token a hello may carry (§1.1).
MAX_TOKEN_LEN = 1024
#: Size of the client hello's fixed head (the whole hello without a token).
CLIENT_HELLO_LEN = 8
#: Size of a server hello.
SERVER_HELLO_LEN = 24
#: Largest response length prefix a client must accept (16 MiB, §2).
MAX_RESPONSE_FRAME = 16 * 1024 * 1024
#: Longest wait a LOCK can carry: ``timeout_ms`` is a ``u32``.
MAX_TIMEOUT_MS = 0xFFFF_FFFF
#: Largest ``u64``; ``0..U64_MAX`` is the whole unit space.
U64_MAX = 0xFFFF_FFFF_FFFF_FFFF

#: ``op id`` after the length prefix.
_HEAD = struct.Struct("<IBQ")
#: A response's fixed part: ``len u32 | op u8 | id u64 | status u8 | value u64``.
_RESP = struct.Struct("<IBQBQ")
_RESP_BODY = struct.Struct("<BQBQ")  # the same without the length prefix
_LOCK = struct.Struct("<IBQQQBBI")
_TARGET = struct.Struct("<IBQQ")
_STATS = struct.Struct("<IBQI")
_RECLAIM = struct.Struct("<IBQQQBQ")
_SERVER_HELLO = struct.Struct("<4sHBBQII")
_COUNTERS = struct.Struct("<11Q")
_NAMED_COUNTERS = struct.Struct("<13Q")
_CACHED_COUNTERS = struct.Struct("<17Q")
_ENTRY = struct.Struct("<QQQQBBQ")

#: ``len`` of a response without body: op, id, status, value.
_RESPONSE_MIN_LEN = 1 + 8 + 1 + 8


class Op(enum.IntEnum):
    """Operation bytes (§2). A response carries ``op | 0x80``."""

    LOCK = 0x01
    UNLOCK = 0x02
    CANCEL = 0x03
    POLL = 0x04
    KEEPALIVE = 0x05
    STATS = 0x06
    RECLAIM = 0x07
    MAP = 0x08
    #: Server-pushed notice (cluster nodes only; §7.6).
    NOTICE = 0x09
    SHM_ATTACH = 0x0A
    #: Cluster only (§7.7): ask for ``MAP_CHANGED`` notices (the cluster client sends it).
    WATCH_MAP = 0x0B
    #: Version 5 (§2.2): LOCK of a range of a named resource; answered as a LOCK.
    LOCK_NAMED = 0x0C
    #: Version 5, cluster only (§2.2, §7.3): RECLAIM of a named lock.
    RECLAIM_NAMED = 0x0D
    #: Version 5 (§5.1): STATS with names and the names' counters.
    STATS_NAMED = 0x0E
    #: Version 6: ask for cached locks (§2.3; this client never does).
    CACHE_ON = 0x0F
    #: Version 6: a lock the server may grant wider, to be kept (§2.3).
    LOCK_CACHED = 0x10
    #: Version 6: release part of a held lock, or turn it shared (§2.3).
    GIVE_BACK = 0x11
    #: Version 6 (§5.2): STATS_NAMED with the cache's counters and kept extents marked.
    STATS_CACHED = 0x12
    #: The op of an ``UNKNOWN_OP`` answer: its op byte is ``0xff`` = ``0x7f | 0x80``.
    UNKNOWN = 0x7F


#: The bit set in a response's op byte.
RESPONSE_BIT = 0x80


class Status(enum.IntEnum):
    """Response statuses (§2). Codes ``>= 0x10`` are errors: the request had no effect."""

    OK = 0x00
    PENDING = 0x01
    WOULD_BLOCK = 0x02
    TIMED_OUT = 0x03
    CANCELLED = 0x04
    ALREADY_RELEASED = 0x05
    MALFORMED = 0x10
    UNKNOWN_OP = 0x11
    INVALID_RANGE = 0x12
    NOT_HELD = 0x13
    DUPLICATE_ID = 0x14
    TOO_MANY_LOCKS = 0x15
    FRAME_TOO_LARGE = 0x16
    NOT_WAITING = 0x17
    SHUTTING_DOWN = 0x18
    NOT_OWNER = 0x19
    IN_GRACE = 0x1A
    CROSSES_PARTITION = 0x1B
    RECLAIM_REFUSED = 0x1C
    FENCED = 0x1D
    NOT_CLUSTERED = 0x1E
    SHM_UNAVAILABLE = 0x1F
    SHM_FULL = 0x20
    SHM_ALREADY_ATTACHED = 0x21
    FORBIDDEN = 0x22
    #: Version 4, NOTICE only: the server ends the session; ``value`` is the reason.
    SESSION_ENDED = 0x23
    #: NOTICE only, to a session that sent ``WATCH_MAP`` (§7.7): the node's cluster map
    #: changed; ``value`` is its revision.
    MAP_CHANGED = 0x24
    #: LOCK_NAMED (§2.2): the name is empty or longer than 1024 bytes.
    BAD_NAME = 0x25
    #: LOCK_NAMED (§2.2) of a new name while the server has ``--max-names`` live names.
    TOO_MANY_NAMES = 0x26
    #: Version 6, a NOTICE only, after CACHE_ON: another session needs part of a lock.
    CALLBACK = 0x27
    #: Version 6: CACHE_ON to a server that caches nothing, or LOCK_CACHED / GIVE_BACK
    #: without CACHE_ON.
    CACHE_UNAVAILABLE = 0x28

    @property
    def is_error(self) -> bool:
        """Whether the status is an error (the request had no effect)."""
        return self >= 0x10


class Mode(enum.IntEnum):
    """Lock mode byte."""

    EXCLUSIVE = 0
    SHARED = 1


class Wait(enum.IntEnum):
    """How a LOCK waits: ``TRY`` never queues, ``TIMEOUT`` queues at most ``timeout_ms``,
    ``FOREVER`` queues without a limit."""

    TRY = 0
    TIMEOUT = 1
    FOREVER = 2


class GrantMode(str, enum.Enum):
    """How the server tells a client about the grant of a queued lock (§4)."""

    #: The LOCK is answered when it is granted.
    PUSH = "push"
    #: The LOCK is answered ``PENDING``; the client POLLs until ``OK``.
    POLL = "poll"

    @property
    def code(self) -> int:
        """The hello's ``grant`` byte."""
        return 0 if self is GrantMode.PUSH else 1

    @classmethod
    def from_code(cls, code: int) -> "GrantMode":
        if code == 0:
            return cls.PUSH
        if code == 1:
            return cls.POLL
        raise ProtocolError(f"server hello: unknown grant mode byte {code}")

    def __str__(self) -> str:
        return self.value


class EndReason(enum.IntEnum):
    """Why the server ended a session: the value of a ``SESSION_ENDED`` notice (§2.1).
    A reason code this package does not know stays a plain ``int``."""

    #: The server read nothing from the client for a whole lease.
    LEASE_EXPIRED = 1
    #: The server is shutting down.
    SHUTDOWN = 2
    #: Answers the client left unread passed the server's output limit.
    OUTPUT_OVER_LIMIT = 3
    #: The client sent requests without reading their answers for a lease.
    NOT_READING = 4
    #: The client sent a frame the server cannot delimit (length prefix too large or
    #: too small); the id-0 error answer before the notice says which.
    BAD_FRAMING = 5
    #: The server reloaded its auth file without this session's token (or changed the
    #: token's entry).
    TOKEN_REVOKED = 6

    @property
    def phrase(self) -> str:
        """What happened, in words."""
        return _END_PHRASES[self]


_END_PHRASES = {
    EndReason.LEASE_EXPIRED: "its lease lapsed (the server read nothing from this client "
    "for a whole lease)",
    EndReason.SHUTDOWN: "the server is shutting down",
    EndReason.OUTPUT_OVER_LIMIT: "this client left more answers unread than the server's "
    "output limit",
    EndReason.NOT_READING: "this client sent requests without reading their answers for "
    "a lease",
    EndReason.BAD_FRAMING: "this client sent a frame the server cannot delimit",
    EndReason.TOKEN_REVOKED: "this client's token was revoked (the server reloaded its "
    "auth file without it)",
}


def end_reason(code: int) -> Union[EndReason, int]:
    """The :class:`EndReason` of a notice's value, or the value itself if unknown."""
    try:
        return EndReason(code)
    except ValueError:
        return code


class HelloStatus(enum.IntEnum):
    """The server hello's ``status`` byte (§1). Every refusal closes the connection."""

    ACCEPTED = 0
    UNSUPPORTED_VERSION = 1
    AUTH_REQUIRED = 2
    AUTH_FAILED = 3
    TLS_REQUIRED = 4


# --------------------------------------------------------------------------- hellos


def encode_client_hello(token: Optional[bytes] = None, version: int = VERSION) -> bytes:
    """The client hello: ``"RLCK" | version u16 | flags u16``, then with a token
    ``token_len u16 | token`` and the ``AUTH`` flag.

    A token must be 1 to :data:`MAX_TOKEN_LEN` bytes (``ValueError`` otherwise)."""
    if token is None:
        return MAGIC + struct.pack("<HH", version, 0)
    if not 1 <= len(token) <= MAX_TOKEN_LEN:
        raise ValueError(
            f"an authentication token must be 1 to {MAX_TOKEN_LEN} bytes, not {len(token)}"
        )
    return MAGIC + struct.pack("<HHH", version, FLAG_AUTH, len(token)) + bytes(token)


def decode_client_hello(buf: bytes) -> Tuple[int, Optional[bytes]]:
    """Parses a whole client hello: ``(version, token or None)``."""
    if len(buf) < CLIENT_HELLO_LEN or buf[:4] != MAGIC:
        raise ProtocolError("client hello: bad magic or too short")
    version, flags = struct.unpack_from("<HH", buf, 4)
    if flags & ~FLAG_AUTH:
        raise ProtocolError(f"client hello: unknown flag bits {flags:#06x}")
    if not flags & FLAG_AUTH:
        if len(buf) != CLIENT_HELLO_LEN:
            raise ProtocolError("client hello: trailing bytes")
        return version, None
    if len(buf) < CLIENT_HELLO_LEN + 2:
        raise ProtocolError("client hello: truncated token length")
    (n,) = struct.unpack_from("<H", buf, CLIENT_HELLO_LEN)
    if not 1 <= n <= MAX_TOKEN_LEN:
        raise ProtocolError(f"client hello: token_len {n} outside 1..={MAX_TOKEN_LEN}")
    token = bytes(buf[CLIENT_HELLO_LEN + 2 :])
    if len(token) != n:
        raise ProtocolError("client hello: token length does not match")
    return version, token


@dataclass(frozen=True)
class ServerHello:
    """The server's 24-byte answer to the client hello."""

    version: int
    status: HelloStatus
    grant: GrantMode
    session: int
    lease_ms: int
    max_frame: int

    def encode(self) -> bytes:
        return _SERVER_HELLO.pack(
            MAGIC,
            self.version,
            int(self.status),
            self.grant.code,
            self.session,
            self.lease_ms,
            self.max_frame,
        )


def decode_server_hello(buf: bytes) -> ServerHello:
    """Parses exactly :data:`SERVER_HELLO_LEN` bytes."""
    if len(buf) != SERVER_HELLO_LEN:
        raise ProtocolError(f"server hello: {len(buf)} bytes, expected {SERVER_HELLO_LEN}")
    magic, version, status, grant, session, lease_ms, max_frame = _SERVER_HELLO.unpack(buf)
    if magic != MAGIC:
        raise ProtocolError(f"server hello: bad magic {bytes(magic)!r} (not a rangelock server)")
    try:
        hs = HelloStatus(status)
    except ValueError:
        raise ProtocolError(f"server hello: unknown status byte {status}") from None
    return ServerHello(version, hs, GrantMode.from_code(grant), session, lease_ms, max_frame)


# --------------------------------------------------------------------------- requests


def encode_lock(
    id: int,
    start: int,
    end: int,
    mode: int,
    wait: int,
    timeout_ms: int = 0,
    name: Optional[bytes] = None,
) -> bytes:
    """LOCK ``[start, end)``: 22-byte payload ``start, end, mode, wait, timeout_ms``; with
    ``name``, the LOCK_NAMED of that resource (:func:`encode_lock_named`)."""
    if name is not None:
        return encode_lock_named(id, start, end, mode, wait, timeout_ms, name)
    return _LOCK.pack(31, Op.LOCK, id, start, end, mode, wait, timeout_ms)


#: The longest resource name (§2.2), in bytes.
MAX_RESOURCE_NAME_LEN = 1024


def encode_lock_named(
    id: int, start: int, end: int, mode: int, wait: int, timeout_ms: int, name: bytes
) -> bytes:
    """LOCK_NAMED ``[start, end)`` of the resource ``name`` (version 5, §2.2): LOCK's
    payload, then ``name_len u16, name``."""
    head = _LOCK.pack(31 + 2 + len(name), Op.LOCK_NAMED, id, start, end, mode, wait, timeout_ms)
    return head + struct.pack("<H", len(name)) + name


def encode_unlock(id: int, target: int) -> bytes:
    """UNLOCK the lock whose LOCK had request id ``target``."""
    return _TARGET.pack(17, Op.UNLOCK, id, target)


def encode_cancel(id: int, target: int) -> bytes:
    """CANCEL the queued lock ``target``."""
    return _TARGET.pack(17, Op.CANCEL, id, target)


def encode_poll(id: int, target: int) -> bytes:
    """POLL the queued lock ``target`` (poll grant mode)."""
    return _TARGET.pack(17, Op.POLL, id, target)


def encode_keepalive(id: int) -> bytes:
    """KEEPALIVE: no payload."""
    return _HEAD.pack(9, Op.KEEPALIVE, id)


def encode_stats(id: int, max_entries: int) -> bytes:
    """STATS with at most ``max_entries`` holder/waiter entries."""
    return _STATS.pack(13, Op.STATS, id, max_entries)


def encode_stats_named(id: int, max_entries: int) -> bytes:
    """STATS_NAMED (version 5, §5.1): STATS whose answer names each entry's resource."""
    return _STATS.pack(13, Op.STATS_NAMED, id, max_entries)


def encode_stats_cached(id: int, max_entries: int) -> bytes:
    """STATS_CACHED (version 6, §5.2): STATS_NAMED whose answer also counts the cache and
    marks each kept extent."""
    return _STATS.pack(13, Op.STATS_CACHED, id, max_entries)


def encode_reclaim(
    id: int, start: int, end: int, mode: int, token: int, name: Optional[bytes] = None
) -> bytes:
    """RECLAIM (cluster only, §7.3); with ``name``, the RECLAIM_NAMED of that resource
    (:func:`encode_reclaim_named`)."""
    if name is not None:
        return encode_reclaim_named(id, start, end, mode, token, name)
    return _RECLAIM.pack(34, Op.RECLAIM, id, start, end, mode, token)


def encode_reclaim_named(
    id: int, start: int, end: int, mode: int, token: int, name: bytes
) -> bytes:
    """RECLAIM_NAMED (version 5, cluster only, §2.2): RECLAIM's payload, then
    ``name_len u16, name``."""
    head = _RECLAIM.pack(34 + 2 + len(name), Op.RECLAIM_NAMED, id, start, end, mode, token)
    return head + struct.pack("<H", len(name)) + name


def encode_map(id: int) -> bytes:
    """MAP (cluster only, §7.4)."""
    return _HEAD.pack(9, Op.MAP, id)


def encode_watch_map(id: int) -> bytes:
    """WATCH_MAP (cluster only, §7.7)."""
    return _HEAD.pack(9, Op.WATCH_MAP, id)


def encode_shm_attach(id: int) -> bytes:
    """SHM_ATTACH (§9)."""
    return _HEAD.pack(9, Op.SHM_ATTACH, id)


def encode_cache_on(id: int) -> bytes:
    """CACHE_ON (version 6, §2.3): no payload."""
    return _HEAD.pack(9, Op.CACHE_ON, id)


def encode_lock_cached(
    id: int,
    start: int,
    end: int,
    mode: int,
    wait: int,
    timeout_ms: int,
    desired_start: int,
    desired_end: int,
    name: bytes = b"",
) -> bytes:
    """LOCK_CACHED (version 6, §2.3): LOCK's payload, then ``desired_start u64,
    desired_end u64, name_len u16, name`` (an empty name: the unnamed resource)."""
    head = _LOCK.pack(31 + 18 + len(name), Op.LOCK_CACHED, id, start, end, mode, wait, timeout_ms)
    return head + struct.pack("<QQH", desired_start, desired_end, len(name)) + name


def encode_give_back(
    id: int, target: int, start: int, end: int, downgrade: bool = False, used: Optional[int] = None
) -> bytes:
    """GIVE_BACK (version 6, §2.3): ``target u64, start u64, end u64, flags u8``, then
    ``used u32`` (the local locks the extent served) if given."""
    flags = int(downgrade) | (0 if used is None else 2)
    body = struct.pack("<QQQB", target, start, end, flags)
    if used is not None:
        body += struct.pack("<I", used)
    return _HEAD.pack(9 + len(body), Op.GIVE_BACK, id) + body


@dataclass(frozen=True)
class Request:
    """A decoded request frame (the client never needs this; tests and fake servers do).

    Fields a request does not have are ``None``."""

    op: Op
    id: int
    start: Optional[int] = None
    end: Optional[int] = None
    mode: Optional[Mode] = None
    wait: Optional[Wait] = None
    timeout_ms: Optional[int] = None
    target: Optional[int] = None
    max_entries: Optional[int] = None
    token: Optional[int] = None
    name: Optional[bytes] = None
    desired_start: Optional[int] = None
    desired_end: Optional[int] = None
    downgrade: Optional[bool] = None
    used: Optional[int] = None


def decode_request(frame: bytes) -> Request:
    """Decodes a whole request frame (length prefix included)."""
    if len(frame) < 13:
        raise ProtocolError("request frame shorter than its header")
    n, op_byte, id = _HEAD.unpack_from(frame)
    if n != len(frame) - 4:
        raise ProtocolError(f"request length prefix {n} does not match {len(frame) - 4} bytes")
    payload = frame[13:]
    try:
        op = Op(op_byte)
    except ValueError:
        raise ProtocolError(f"unknown request op {op_byte:#04x}") from None
    sizes = {
        Op.LOCK: 22,
        Op.UNLOCK: 8,
        Op.CANCEL: 8,
        Op.POLL: 8,
        Op.KEEPALIVE: 0,
        Op.STATS: 4,
        Op.STATS_NAMED: 4,
        Op.STATS_CACHED: 4,
        Op.RECLAIM: 25,
        Op.MAP: 0,
        Op.SHM_ATTACH: 0,
        Op.WATCH_MAP: 0,
        Op.CACHE_ON: 0,
    }
    if op is Op.GIVE_BACK and len(payload) >= 25:
        target, start, end, flags = struct.unpack_from("<QQQB", payload)
        if flags > 3:
            raise ProtocolError(f"GIVE_BACK: bad flags byte {flags}")
        if len(payload) != (29 if flags & 2 else 25):
            raise ProtocolError(f"GIVE_BACK: bad payload size {len(payload)} for flags {flags}")
        used = struct.unpack_from("<I", payload, 25)[0] if flags & 2 else None
        return Request(op, id, start, end, target=target, downgrade=bool(flags & 1), used=used)
    if op is Op.LOCK_CACHED and len(payload) >= 40:
        start, end, mode, wait, timeout_ms, ds, de, n = struct.unpack_from("<QQBBIQQH", payload)
        if len(payload) != 40 + n:
            raise ProtocolError(f"LOCK_CACHED: bad payload size {len(payload)} for a {n}-byte name")
        return Request(
            op, id, start, end, Mode(mode), Wait(wait), timeout_ms,
            name=bytes(payload[40:]), desired_start=ds, desired_end=de,
        )
    if op is Op.LOCK_NAMED and len(payload) >= 24:
        start, end, mode, wait, timeout_ms, n = struct.unpack_from("<QQBBIH", payload)
        if len(payload) != 24 + n:
            raise ProtocolError(f"LOCK_NAMED: bad payload size {len(payload)} for a {n}-byte name")
        return Request(op, id, start, end, Mode(mode), Wait(wait), timeout_ms, name=bytes(payload[24:]))
    if op is Op.RECLAIM_NAMED and len(payload) >= 27:
        start, end, mode, token, n = struct.unpack_from("<QQBQH", payload)
        if len(payload) != 27 + n:
            raise ProtocolError(f"RECLAIM_NAMED: bad payload size {len(payload)} for a {n}-byte name")
        return Request(op, id, start, end, Mode(mode), token=token, name=bytes(payload[27:]))
    if op not in sizes or len(payload) != sizes[op]:
        raise ProtocolError(f"{op.name}: bad payload size {len(payload)}")
    if op is Op.LOCK:
        start, end, mode, wait, timeout_ms = struct.unpack("<QQBBI", payload)
        return Request(op, id, start, end, Mode(mode), Wait(wait), timeout_ms)
    if op in (Op.UNLOCK, Op.CANCEL, Op.POLL):
        return Request(op, id, target=struct.unpack("<Q", payload)[0])
    if op in (Op.STATS, Op.STATS_NAMED, Op.STATS_CACHED):
        return Request(op, id, max_entries=struct.unpack("<I", payload)[0])
    if op is Op.RECLAIM:
        start, end, mode, token = struct.unpack("<QQBQ", payload)
        return Request(op, id, start, end, Mode(mode), token=token)
    return Request(op, id)


# --------------------------------------------------------------------------- responses


@dataclass(frozen=True)
class Counters:
    """Server-wide counters of a STATS answer (§5), since the server started."""

    sessions_open: int
    sessions_total: int
    holders: int
    waiters: int
    grants: int
    releases: int
    released_by_close: int
    would_block: int
    timeouts: int
    cancels: int
    errors: int
    #: Named resources live now (only from STATS_NAMED and STATS_CACHED; 0 from STATS).
    names_live: int = 0
    #: Locks held now on named resources, part of ``holders`` (only from STATS_NAMED and
    #: STATS_CACHED).
    named_holders: int = 0
    #: Kept extents now: held locks that caching sessions may keep past their own unlock,
    #: part of ``holders`` (only from STATS_CACHED, version 6; 0 from the others).
    cached_extents: int = 0
    #: CALLBACK notices sent (only from STATS_CACHED).
    callbacks: int = 0
    #: GIVE_BACKs done (only from STATS_CACHED).
    give_backs: int = 0
    #: LOCK_CACHED grants wider than asked (only from STATS_CACHED).
    cache_expanded: int = 0


@dataclass(frozen=True)
class StatsEntry:
    """One holder or waiter of a STATS answer."""

    session: int
    id: int
    start: int
    end: int
    mode: Mode
    #: ``True`` for a held lock, ``False`` for a queued one.
    held: bool
    #: Fencing token (0 while waiting).
    token: int
    #: The resource's name; ``None`` for the unnamed resource, and for every entry of a
    #: STATS answer (only STATS_NAMED and STATS_CACHED carry names).
    name: Optional[bytes] = None
    #: A held lock that is a kept extent of a caching session (state byte ``2``; only
    #: STATS_CACHED says so, ``False`` in STATS and STATS_NAMED answers). ``held`` is
    #: ``True`` too.
    kept: bool = False

    @property
    def shared(self) -> bool:
        return self.mode is Mode.SHARED


@dataclass(frozen=True)
class Stats:
    """A STATS answer: counters and (at most the asked number of) holders and waiters, in
    arrival order. The server may cut the list short (at ``max_entries``, at its
    ``--max-stats-entries``, or to keep the answer within its output and frame limits);
    ``omitted`` says how many entries it left out (0: the list is complete). On the wire
    ``omitted`` is the answer's ``value``, not part of the body."""

    counters: Counters
    entries: List[StatsEntry] = field(default_factory=list)
    omitted: int = 0

    def encode(self, named: bool = False, cached: bool = False) -> bytes:
        """The body of a STATS answer, with ``named`` of a STATS_NAMED answer, with
        ``cached`` of a STATS_CACHED answer (names too)."""
        named = named or cached
        c = self.counters
        values = [
            c.sessions_open,
            c.sessions_total,
            c.holders,
            c.waiters,
            c.grants,
            c.releases,
            c.released_by_close,
            c.would_block,
            c.timeouts,
            c.cancels,
            c.errors,
        ]
        if named:
            values += [c.names_live, c.named_holders]
        if cached:
            values += [c.cached_extents, c.callbacks, c.give_backs, c.cache_expanded]
        out = [struct.pack(f"<{len(values)}Q", *values), struct.pack("<I", len(self.entries))]
        for e in self.entries:
            state = (2 if cached and e.kept else 0) if e.held else 1
            out.append(_ENTRY.pack(e.session, e.id, e.start, e.end, e.mode, state, e.token))
            if named:
                name = e.name or b""
                out.append(struct.pack("<H", len(name)) + name)
        return b"".join(out)

    @classmethod
    def decode(
        cls, body: bytes, omitted: int = 0, named: bool = False, cached: bool = False
    ) -> "Stats":
        """Decodes a STATS body, with ``named`` a STATS_NAMED body, with ``cached`` a
        STATS_CACHED body; ``omitted`` is the answer's ``value``."""
        named = named or cached
        head = _CACHED_COUNTERS if cached else _NAMED_COUNTERS if named else _COUNTERS
        what = "STATS_CACHED" if cached else "STATS_NAMED" if named else "STATS"
        if len(body) < head.size + 4:
            raise ProtocolError(f"{what} body truncated")
        counters = Counters(*head.unpack_from(body))
        (count,) = struct.unpack_from("<I", body, head.size)
        at = head.size + 4
        entry_len = _ENTRY.size + (2 if named else 0)
        # Named entries are at least this long; unnamed ones exactly.
        if len(body) < at + count * entry_len:
            raise ProtocolError(
                f"{what} body: {count} entries need {at + count * entry_len} bytes, "
                f"got {len(body)}"
            )
        entries = []
        most_state = 2 if cached else 1
        for _ in range(count):
            session, id, start, end, mode, state, token = _ENTRY.unpack_from(body, at)
            at += _ENTRY.size
            if mode > 1 or state > most_state:
                raise ProtocolError(f"{what} entry: bad mode {mode} or state {state}")
            name: Optional[bytes] = None
            if named:
                if len(body) < at + 2:
                    raise ProtocolError(f"{what} body truncated")
                (n,) = struct.unpack_from("<H", body, at)
                name = bytes(body[at + 2 : at + 2 + n]) if n else None
                if n > MAX_RESOURCE_NAME_LEN or len(body) < at + 2 + n:
                    raise ProtocolError(f"{what} entry: bad name length {n}")
                at += 2 + n
            held, kept = state != 1, state == 2
            entries.append(
                StatsEntry(session, id, start, end, Mode(mode), held, token, name, kept)
            )
        if at != len(body):
            raise ProtocolError(f"{what} body: {len(body) - at} bytes after its entries")
        return cls(counters, entries, omitted)


@dataclass(frozen=True)
class OwnerHint:
    """The body of a ``NOT_OWNER`` answer (§7.5): who owns the partition, if known."""

    node: str
    addr: str

    def encode(self) -> bytes:
        n, a = self.node.encode(), self.addr.encode()
        return bytes([len(n)]) + n + bytes([len(a)]) + a

    @classmethod
    def decode(cls, body: bytes) -> "OwnerHint":
        try:
            at = 0
            parts = []
            for _ in range(2):
                n = body[at]
                part = body[at + 1 : at + 1 + n]
                if len(part) != n:
                    raise IndexError
                parts.append(part.decode("utf-8"))
                at += 1 + n
        except (IndexError, UnicodeDecodeError):
            raise ProtocolError("NOT_OWNER: undecodable owner hint") from None
        if at != len(body):
            raise ProtocolError("NOT_OWNER: bytes after the owner hint")
        return cls(parts[0], parts[1])


# --------------------------------------------------------------------------- cluster


#: The most partitions a cluster may have (§7.1).
MAX_PARTITIONS = 4096
#: ``log2`` of the units in a stripe of a named resource (§7.1): stripes of ``2**24`` units.
NAME_STRIPE_SHIFT = 24
#: A notice's ``value`` meaning every partition of the node (§7.6).
ALL_PARTITIONS = U64_MAX
#: The most nodes a map may list (§7.4).
_MAX_NODES = 1024
#: A map's owner entry naming no node.
_NO_NODE = 0xFFFF
_MAP_HEAD = struct.Struct("<QIH")
_OWNER = struct.Struct("<HBQ")


class PartitionState(enum.IntEnum):
    """Where a partition stands in a :class:`ClusterMap` (§7.4)."""

    #: No node serves it now (its owner failed, or it was never assigned).
    UNOWNED = 0
    #: Its new owner accepts only RECLAIMs until the grace period ends.
    GRACE = 1
    #: Its owner grants locks.
    SERVING = 2


@dataclass(frozen=True)
class NodeInfo:
    """A cluster node as the map lists it: its id and the ``host:port`` clients reach."""

    id: str
    addr: str


@dataclass(frozen=True)
class PartitionOwner:
    """Who owns one partition: an index into :attr:`ClusterMap.nodes` (``None``: no owner
    known), its state, and its epoch (the high half of its fencing tokens)."""

    node: Optional[int]
    state: PartitionState
    epoch: int


def _put_name(s: str) -> bytes:
    raw = s.encode("utf-8")
    if len(raw) > 255:
        raise ValueError(f"a node id or address of {len(raw)} bytes: at most 255")
    return bytes([len(raw)]) + raw


@dataclass(frozen=True)
class ClusterMap:
    """The body of a successful ``MAP`` answer (§7.4): which node owns which partition."""

    #: The etcd revision the map was read at: a larger revision is a newer map.
    revision: int
    #: The partition count ``P``, a power of two, at most :data:`MAX_PARTITIONS`.
    partitions: int
    nodes: Tuple[NodeInfo, ...]
    #: One entry per partition, partition 0 first.
    owners: Tuple[PartitionOwner, ...]

    def owner_of(self, partition: int) -> Optional[Tuple[NodeInfo, PartitionOwner]]:
        """The owner of ``partition`` and its entry; ``None`` if no owner is known."""
        if not 0 <= partition < len(self.owners):
            return None
        owner = self.owners[partition]
        if owner.node is None or owner.node >= len(self.nodes):
            return None
        return self.nodes[owner.node], owner

    def encode(self) -> bytes:
        out = [_MAP_HEAD.pack(self.revision, self.partitions, len(self.nodes))]
        for n in self.nodes:
            out.append(_put_name(n.id) + _put_name(n.addr))
        for o in self.owners:
            node = _NO_NODE if o.node is None else o.node
            out.append(_OWNER.pack(node, o.state, o.epoch))
        return b"".join(out)

    @classmethod
    def decode(cls, body: bytes) -> "ClusterMap":
        """Decodes a MAP body; raises :class:`ProtocolError` for a bad partition count,
        node count, node index, state byte or UTF-8, a short body or bytes left over."""
        if len(body) < _MAP_HEAD.size:
            raise ProtocolError("MAP body truncated")
        revision, partitions, node_count = _MAP_HEAD.unpack_from(body)
        if partitions < 1 or partitions > MAX_PARTITIONS or partitions & (partitions - 1):
            raise ProtocolError(
                f"MAP: partition count {partitions} is not a power of two up to {MAX_PARTITIONS}"
            )
        if node_count > _MAX_NODES:
            raise ProtocolError(f"MAP: {node_count} nodes, more than {_MAX_NODES}")
        at = _MAP_HEAD.size
        nodes = []
        try:
            for _ in range(node_count):
                parts = []
                for _ in range(2):
                    n = body[at]
                    raw = body[at + 1 : at + 1 + n]
                    if len(raw) != n:
                        raise IndexError
                    parts.append(raw.decode("utf-8"))
                    at += 1 + n
                nodes.append(NodeInfo(parts[0], parts[1]))
        except IndexError:
            raise ProtocolError("MAP body truncated in its node list") from None
        except UnicodeDecodeError:
            raise ProtocolError("MAP: a node id or address is not UTF-8") from None
        if len(body) - at != partitions * _OWNER.size:
            raise ProtocolError(
                f"MAP: {len(body) - at} bytes of owner entries for {partitions} partitions"
            )
        owners = []
        for p in range(partitions):
            node, state, epoch = _OWNER.unpack_from(body, at)
            at += _OWNER.size
            if node != _NO_NODE and node >= node_count:
                raise ProtocolError(f"MAP: partition {p} names node {node} of {node_count}")
            if state > 2:
                raise ProtocolError(f"MAP: partition {p} has state byte {state}")
            owners.append(PartitionOwner(None if node == _NO_NODE else node, PartitionState(state), epoch))
        return cls(revision, partitions, tuple(nodes), tuple(owners))


class Piece(NamedTuple):
    """The part of a range that lies in one partition (§7.1)."""

    partition: int
    start: int
    end: int


def _bits(partitions: int) -> int:
    if partitions < 1 or partitions > MAX_PARTITIONS or partitions & (partitions - 1):
        raise ValueError(f"partition count {partitions} is not a power of two up to {MAX_PARTITIONS}")
    return partitions.bit_length() - 1


def split(partitions: int, start: int, end: int) -> List[Piece]:
    """``[start, end)`` of the unnamed resource cut at partition boundaries, in ascending
    partition order (§7.1: partition of unit ``u`` is ``u >> (64 - b)``, the last
    partition ends at ``2**64 - 1``)."""
    b = _bits(partitions)
    pieces = []
    at = start
    while at < end:
        p = at >> (64 - b) if b else 0
        p_end = U64_MAX if p + 1 == partitions else (p + 1) << (64 - b)
        stop = min(end, p_end)
        pieces.append(Piece(p, at, stop))
        at = stop
    return pieces


def name_hash(name: bytes) -> int:
    """The placement hash of a resource name (§7.1): the first 8 bytes of its SHA-256,
    big-endian."""
    return int.from_bytes(hashlib.sha256(name).digest()[:8], "big")


def split_named(partitions: int, hashed: int, start: int, end: int) -> List[Piece]:
    """``[start, end)`` of the name whose :func:`name_hash` is ``hashed``, cut at stripe
    boundaries (none with one partition), in ascending unit order: stripe ``k = u >> 24``
    lies in partition ``(hashed + k) mod P`` (§7.1)."""
    b = _bits(partitions)
    pieces = []
    at = start
    while at < end:
        k = at >> NAME_STRIPE_SHIFT
        p = (hashed + k) % partitions
        stop = end if b == 0 else min(end, (k + 1) << NAME_STRIPE_SHIFT, U64_MAX)
        pieces.append(Piece(p, at, stop))
        at = stop
    return pieces


def token_epoch(token: int) -> int:
    """The epoch of a cluster fencing token ``epoch << 32 | seq`` (§7.2)."""
    return token >> 32


@dataclass(frozen=True)
class Response:
    """A decoded response frame.

    ``op`` is the request's op (without the response bit): :attr:`Op.UNKNOWN` for an
    ``UNKNOWN_OP`` answer, :attr:`Op.NOTICE` for a server-pushed notice; an op byte this
    package does not know stays a plain ``int``. ``stats`` is set for a successful STATS,
    ``owner`` for a ``NOT_OWNER`` answer, ``map`` for a successful MAP (whose ``body`` is
    kept too); the bodies this client never asks for are kept undecoded in ``body``: a
    successful SHM_ATTACH's, a successful LOCK_CACHED's (``start u64, end u64, cached
    u8``, :meth:`cached_grant`) and a CALLBACK notice's (``start u64, end u64, mode u8``,
    :meth:`callback`)."""

    op: int
    id: int
    status: Status
    value: int
    stats: Optional[Stats] = None
    owner: Optional[OwnerHint] = None
    body: bytes = b""
    map: Optional[ClusterMap] = None

    @property
    def is_notice(self) -> bool:
        return self.op == Op.NOTICE

    def cached_grant(self) -> Tuple[int, int, bool]:
        """A successful LOCK_CACHED's body: the granted ``(start, end, cached)``."""
        start, end, cached = _CACHED_BODY.unpack(self.body)
        return start, end, bool(cached)

    def callback(self) -> Tuple[int, int, Mode]:
        """A CALLBACK notice's body: the part wanted ``(start, end, mode)``."""
        start, end, mode = _CACHED_BODY.unpack(self.body)
        return start, end, Mode(mode)


#: The body of a LOCK_CACHED answer and of a CALLBACK notice (version 6, §2.3).
_CACHED_BODY = struct.Struct("<QQB")


def encode_response(r: Response) -> bytes:
    """The whole response frame, length prefix included."""
    if r.stats is not None:
        body = r.stats.encode(named=r.op == Op.STATS_NAMED, cached=r.op == Op.STATS_CACHED)
    elif r.owner is not None:
        body = r.owner.encode()
    elif r.status == Status.NOT_OWNER and r.op != Op.NOTICE and not r.body:
        body = b"\x00\x00"  # the empty hint: owner unknown
    elif r.map is not None and not r.body:
        body = r.map.encode()
    else:
        body = r.body
    return (
        _RESP.pack(_RESPONSE_MIN_LEN + len(body), r.op | RESPONSE_BIT, r.id, r.status, r.value)
        + body
    )


#: The statuses a NOTICE may carry: the cluster's two (§7.6), version 4's
#: ``SESSION_ENDED`` (§2.1), ``MAP_CHANGED`` (§7.7, only after a ``WATCH_MAP``) and version
#: 6's ``CALLBACK`` (§2.3, only after a ``CACHE_ON``, with a body).
_NOTICE_STATUSES = (
    Status.NOT_OWNER,
    Status.FENCED,
    Status.SESSION_ENDED,
    Status.MAP_CHANGED,
    Status.CALLBACK,
)


def encode_notice(status: Status, value: int) -> bytes:
    """A server-pushed notice (op ``0x89``, id 0, no body)."""
    return encode_response(Response(Op.NOTICE, 0, status, value))


def decode_response(frame: bytes) -> Response:
    """Decodes a response frame *without* its length prefix (the ``len`` bytes after it)."""
    if len(frame) < _RESPONSE_MIN_LEN:
        raise ProtocolError(f"response frame of {len(frame)} bytes is shorter than 18")
    kind, id, status_byte, value = _RESP_BODY.unpack_from(frame)
    if not kind & RESPONSE_BIT:
        raise ProtocolError(f"frame op {kind:#04x} is not a response (bit 0x80 clear)")
    op_byte = kind & ~RESPONSE_BIT
    try:
        op = Op(op_byte)
    except ValueError:
        op = op_byte
    try:
        status = Status(status_byte)
    except ValueError:
        raise ProtocolError(f"response with unknown status {status_byte:#04x}") from None
    body = bytes(frame[_RESPONSE_MIN_LEN:])
    if op == Op.NOTICE:
        with_body = status == Status.CALLBACK
        if id != 0 or status not in _NOTICE_STATUSES or (len(body) != _CACHED_BODY.size if with_body else body):
            raise ProtocolError("undecodable notice")
        return Response(op, id, status, value, body=body)
    if status == Status.NOT_OWNER:
        return Response(op, id, status, value, owner=OwnerHint.decode(body))
    if status == Status.OK and op in (Op.STATS, Op.STATS_NAMED, Op.STATS_CACHED):
        named, cached = op == Op.STATS_NAMED, op == Op.STATS_CACHED
        stats = Stats.decode(body, omitted=value, named=named, cached=cached)
        return Response(op, id, status, value, stats=stats)
    if status == Status.OK and op == Op.MAP:
        return Response(op, id, status, value, body=body, map=ClusterMap.decode(body))
    if status == Status.OK and op == Op.SHM_ATTACH:
        return Response(op, id, status, value, body=body)
    if status == Status.OK and op == Op.LOCK_CACHED:
        if len(body) != _CACHED_BODY.size:
            raise ProtocolError(f"LOCK_CACHED answer with a {len(body)}-byte body")
        return Response(op, id, status, value, body=body)
    if body:
        raise ProtocolError(f"{len(body)} unexpected bytes after a {status.name} response")
    return Response(op, id, status, value)
