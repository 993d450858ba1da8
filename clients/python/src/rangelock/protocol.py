"""The wire protocol of ``rangelock serve``, versions 3 and 4 (``docs/PROTOCOL.md``).

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
those sessions no such notice.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass, field
from typing import List, Optional, Tuple, Union

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
    "encode_reclaim",
    "encode_map",
    "encode_shm_attach",
    "decode_request",
    "encode_response",
    "encode_notice",
    "end_reason",
    "decode_response",
]

#: The four bytes every hello starts with.
MAGIC = b"RLCK"
#: The newest protocol version this package speaks (the one its hello offers).
VERSION = 5
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
    #: Cluster only (§7.7): ask for ``MAP_CHANGED`` notices. This client never sends it.
    WATCH_MAP = 0x0B
    #: Version 5 (§2.2): LOCK of a range of a named resource; answered as a LOCK.
    LOCK_NAMED = 0x0C
    #: Reserved for the cluster (§2.2). This client never sends it.
    RECLAIM_NAMED = 0x0D
    #: Version 5 (§5.1): STATS with names and the names' counters.
    STATS_NAMED = 0x0E
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
    #: changed; ``value`` is its revision. This client never asks for it.
    MAP_CHANGED = 0x24
    #: LOCK_NAMED (§2.2): the name is empty or longer than 1024 bytes. This client sends
    #: no named locks yet.
    BAD_NAME = 0x25
    #: LOCK_NAMED (§2.2) of a new name while the server has ``--max-names`` live names.
    TOO_MANY_NAMES = 0x26

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


def encode_reclaim(id: int, start: int, end: int, mode: int, token: int) -> bytes:
    """RECLAIM (cluster only, §7.3)."""
    return _RECLAIM.pack(34, Op.RECLAIM, id, start, end, mode, token)


def encode_map(id: int) -> bytes:
    """MAP (cluster only, §7.4)."""
    return _HEAD.pack(9, Op.MAP, id)


def encode_watch_map(id: int) -> bytes:
    """WATCH_MAP (cluster only, §7.7)."""
    return _HEAD.pack(9, Op.WATCH_MAP, id)


def encode_shm_attach(id: int) -> bytes:
    """SHM_ATTACH (§9)."""
    return _HEAD.pack(9, Op.SHM_ATTACH, id)


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
        Op.RECLAIM: 25,
        Op.MAP: 0,
        Op.SHM_ATTACH: 0,
        Op.WATCH_MAP: 0,
    }
    if op is Op.LOCK_NAMED and len(payload) >= 24:
        start, end, mode, wait, timeout_ms, n = struct.unpack_from("<QQBBIH", payload)
        if len(payload) != 24 + n:
            raise ProtocolError(f"LOCK_NAMED: bad payload size {len(payload)} for a {n}-byte name")
        return Request(op, id, start, end, Mode(mode), Wait(wait), timeout_ms, name=bytes(payload[24:]))
    if op not in sizes or len(payload) != sizes[op]:
        raise ProtocolError(f"{op.name}: bad payload size {len(payload)}")
    if op is Op.LOCK:
        start, end, mode, wait, timeout_ms = struct.unpack("<QQBBI", payload)
        return Request(op, id, start, end, Mode(mode), Wait(wait), timeout_ms)
    if op in (Op.UNLOCK, Op.CANCEL, Op.POLL):
        return Request(op, id, target=struct.unpack("<Q", payload)[0])
    if op in (Op.STATS, Op.STATS_NAMED):
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
    #: Named resources live now (only from STATS_NAMED; 0 from STATS).
    names_live: int = 0
    #: Locks held now on named resources, part of ``holders`` (only from STATS_NAMED).
    named_holders: int = 0


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
    #: STATS answer (only STATS_NAMED carries names).
    name: Optional[bytes] = None

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

    def encode(self, named: bool = False) -> bytes:
        """The body of a STATS answer, or with ``named`` of a STATS_NAMED answer."""
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
        out = [struct.pack(f"<{len(values)}Q", *values), struct.pack("<I", len(self.entries))]
        for e in self.entries:
            out.append(
                _ENTRY.pack(e.session, e.id, e.start, e.end, e.mode, 0 if e.held else 1, e.token)
            )
            if named:
                name = e.name or b""
                out.append(struct.pack("<H", len(name)) + name)
        return b"".join(out)

    @classmethod
    def decode(cls, body: bytes, omitted: int = 0, named: bool = False) -> "Stats":
        """Decodes a STATS body, or with ``named`` a STATS_NAMED body; ``omitted`` is the
        answer's ``value``."""
        head = _NAMED_COUNTERS if named else _COUNTERS
        what = "STATS_NAMED" if named else "STATS"
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
        for _ in range(count):
            session, id, start, end, mode, state, token = _ENTRY.unpack_from(body, at)
            at += _ENTRY.size
            if mode > 1 or state > 1:
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
            entries.append(StatsEntry(session, id, start, end, Mode(mode), state == 0, token, name))
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


@dataclass(frozen=True)
class Response:
    """A decoded response frame.

    ``op`` is the request's op (without the response bit): :attr:`Op.UNKNOWN` for an
    ``UNKNOWN_OP`` answer, :attr:`Op.NOTICE` for a server-pushed notice; an op byte this
    package does not know stays a plain ``int``. ``stats`` is set for a successful STATS,
    ``owner`` for a ``NOT_OWNER`` answer; the bodies this client never asks for (MAP,
    SHM_ATTACH) are kept undecoded in ``body``."""

    op: int
    id: int
    status: Status
    value: int
    stats: Optional[Stats] = None
    owner: Optional[OwnerHint] = None
    body: bytes = b""

    @property
    def is_notice(self) -> bool:
        return self.op == Op.NOTICE


def encode_response(r: Response) -> bytes:
    """The whole response frame, length prefix included."""
    if r.stats is not None:
        body = r.stats.encode(named=r.op == Op.STATS_NAMED)
    elif r.owner is not None:
        body = r.owner.encode()
    elif r.status == Status.NOT_OWNER and r.op != Op.NOTICE and not r.body:
        body = b"\x00\x00"  # the empty hint: owner unknown
    else:
        body = r.body
    return (
        _RESP.pack(_RESPONSE_MIN_LEN + len(body), r.op | RESPONSE_BIT, r.id, r.status, r.value)
        + body
    )


#: The statuses a NOTICE may carry: the cluster's two (§7.6), version 4's
#: ``SESSION_ENDED`` (§2.1) and ``MAP_CHANGED`` (§7.7, only after a ``WATCH_MAP``).
_NOTICE_STATUSES = (Status.NOT_OWNER, Status.FENCED, Status.SESSION_ENDED, Status.MAP_CHANGED)


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
        if id != 0 or status not in _NOTICE_STATUSES or body:
            raise ProtocolError("undecodable notice")
        return Response(op, id, status, value)
    if status == Status.NOT_OWNER:
        return Response(op, id, status, value, owner=OwnerHint.decode(body))
    if status == Status.OK and op in (Op.STATS, Op.STATS_NAMED):
        stats = Stats.decode(body, omitted=value, named=op == Op.STATS_NAMED)
        return Response(op, id, status, value, stats=stats)
    if status == Status.OK and op in (Op.MAP, Op.SHM_ATTACH):
        return Response(op, id, status, value, body=body)
    if body:
        raise ProtocolError(f"{len(body)} unexpected bytes after a {status.name} response")
    return Response(op, id, status, value)
