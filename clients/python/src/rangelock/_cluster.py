"""What the blocking and the asyncio cluster clients share: options, seeds (node
addresses, or etcd endpoints to read the live nodes from), the cached map, the state of
each guard's pieces, the decisions on a node's refusals and the bookkeeping of reclaims.
No I/O, except :func:`etcd_nodes` (blocking; the asyncio client runs it in a thread).

Every object here is shared by the caller's threads (or tasks), the node connections'
reader threads (their hooks) and the reclaims: :class:`ClusterState` holds one re-entrant
lock for all of it, taken briefly and never across I/O.
"""

from __future__ import annotations

import base64
import enum
import json
import math
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import (
    Callable,
    Dict,
    Generic,
    List,
    Optional,
    Protocol,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

from . import protocol as P
from ._common import Loss, brief, check_name, check_range, lock_what, parse_address
from .errors import (
    ConnectError,
    InvalidRangeError,
    LockLostError,
    NotOwnerError,
    PartitionUnavailableError,
    ProtocolError,
    error_for_status,
)

#: What ``seeds=`` accepts: node addresses (``host:port``) or the cluster's etcd endpoints
#: (``http://host:port``), as a list or one comma-separated string.
SeedsArg = Union[str, Sequence[str]]

#: The most pieces a lock on a named resource may have (one per stripe of ``2**24``
#: units): as many as a cluster may have partitions.
MAX_NAMED_PIECES = P.MAX_PARTITIONS


@dataclass(frozen=True)
class Options:
    """How a cluster client routes, reclaims and connects (the arguments of
    :class:`rangelock.ClusterClient`)."""

    connect_timeout: float = 2.0
    map_wait: float = 10.0
    reclaim_window: float = 30.0
    max_redirects: int = 16
    backoff_first: float = 0.01
    backoff_max: float = 0.2


class LostCause(str, enum.Enum):
    """How a piece of a cluster guard failed to be reclaimed."""

    #: The partition's new owner refused the RECLAIM: another holder reclaimed a
    #: conflicting lock first, or the owner serves new locks (no grace period: the
    #: session ended at an owner that is still alive).
    RECLAIM_REFUSED = "the new owner refused the reclaim"
    #: No owner accepted the RECLAIM within the reclaim window.
    WINDOW_MISSED = "no owner accepted the reclaim within the reclaim window"
    #: The node ended the piece's session because its lease lapsed (this process was
    #: silent for a lease): the node released the lock; it is not reclaimed anywhere.
    SESSION_LAPSED = "the session's lease lapsed and the node released the lock"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class LostReason:
    """Why a cluster guard was lost: the partition of the piece that could not be
    reclaimed, and how."""

    partition: int
    cause: LostCause

    def __str__(self) -> str:
        return f"partition {self.partition}: {self.cause}"


@dataclass(frozen=True)
class GuardPiece:
    """One piece of a cluster guard: the part of its range in one partition, and the
    fencing token granted there (``epoch << 32 | seq`` of that partition; a reclaim keeps
    it). Compare it only with tokens of the same partition."""

    partition: int
    start: int
    end: int
    token: int


# --------------------------------------------------------------------------- seeds


def parse_seeds(seeds: SeedsArg) -> Tuple[bool, List[str]]:
    """``(etcd, addresses)``: whether ``seeds`` are etcd endpoints (``http://...``) rather
    than node addresses. Raises ``ValueError`` for none, or a mix of the two."""
    if isinstance(seeds, str):
        seeds = seeds.split(",")
    found = [s.strip() for s in seeds if s.strip()]
    if not found:
        raise ValueError("no seed: give node addresses (host:port) or etcd endpoints (http://host:port)")
    etcd = [s.startswith(("http://", "https://")) for s in found]
    if any(etcd) and not all(etcd):
        raise ValueError("seeds are etcd endpoints (http://...) or node addresses (host:port), not both")
    if not etcd[0]:
        for s in found:
            parse_address(s)  # ValueError for a bad one
    return etcd[0], found


def _prefix_end(prefix: bytes) -> bytes:
    """etcd's range end of every key that starts with ``prefix``."""
    b = bytearray(prefix)
    while b:
        if b[-1] < 0xFF:
            b[-1] += 1
            return bytes(b)
        b.pop()
    return b"\x00"


def etcd_nodes(endpoints: Sequence[str], cluster: str, timeout: float) -> List[str]:
    """The addresses of the live nodes of ``cluster``, read from etcd's v3 JSON gateway
    (``POST /v3/kv/range`` of the keys ``/rangelock/<cluster>/nodes/``, each
    ``{"addr": "host:port"}``), from the first endpoint that answers. Raises
    :class:`ConnectError` naming each endpoint's failure, or a cluster without nodes."""
    prefix = f"/rangelock/{cluster}/nodes/".encode()
    query = json.dumps(
        {
            "key": base64.b64encode(prefix).decode(),
            "range_end": base64.b64encode(_prefix_end(prefix)).decode(),
        }
    ).encode()
    failures = []
    for endpoint in endpoints:
        url = endpoint.rstrip("/") + "/v3/kv/range"
        req = urllib.request.Request(url, data=query, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as answer:
                reply = json.loads(answer.read())
            nodes = []
            for kv in reply.get("kvs", []):
                value = json.loads(base64.b64decode(kv["value"]))
                nodes.append((base64.b64decode(kv["key"]), str(value["addr"])))
        except urllib.error.HTTPError as e:
            failures.append(f"{endpoint}: HTTP {e.code} {e.reason}")
            continue
        except urllib.error.URLError as e:
            why = brief(e.reason) if isinstance(e.reason, OSError) else str(e.reason)
            failures.append(f"{endpoint}: {why}")
            continue
        except (OSError, ValueError, KeyError, TypeError) as e:
            failures.append(f"{endpoint}: {brief(e)}")
            continue
        if not nodes:
            raise ConnectError(f"cluster {cluster!r} has no live node (etcd at {endpoint})", endpoint)
        return [addr for _, addr in sorted(nodes)]
    raise ConnectError(
        f"cannot read the nodes of cluster {cluster!r} from etcd: {'; '.join(failures)}",
        endpoints[0],
    )


# --------------------------------------------------------------------------- waiting


class Backoff:
    """The pause before a retry while the cluster converges: from ``backoff_first``
    doubling to ``backoff_max`` (10 to 200 ms by default). A map change a node pushes
    (``MAP_CHANGED``) ends a pause early."""

    def __init__(self, opts: Options) -> None:
        self._next = min(opts.backoff_first, opts.backoff_max)
        self._max = opts.backoff_max

    def next_pause(self) -> float:
        pause = self._next
        self._next = min(self._next * 2, self._max)
        return pause


# --------------------------------------------------------------------------- nodes and guards


class NodeClient(Protocol):
    """What the cluster's bookkeeping does itself with a node connection
    (:class:`rangelock.Client` or :class:`rangelock.aio.AsyncClient`)."""

    def _unlock_nowait(self, lock_id: int) -> None: ...


C = TypeVar("C", bound=NodeClient)


@dataclass
class Node(Generic[C]):
    """A connection (one session) to a node. ``serial`` tells connections to the same
    address apart; ``notices`` logs the partitions the node gave up on it (``None``: all),
    so that a piece granted while a notice was on its way is not missed."""

    addr: str
    serial: int
    client: C
    notices: List[Optional[int]] = field(default_factory=list)
    lost: bool = False

    def gave_up(self, partition: int, since: int) -> bool:
        """Whether the connection is gone, or the node gave ``partition`` up in a notice
        after the first ``since`` ones."""
        return self.lost or any(q is None or q == partition for q in self.notices[since:])


@dataclass
class Held(Generic[C]):
    """A piece held on a node: the connection and the LOCK's (or RECLAIM's) request id."""

    node: Node[C]
    lock_id: int

    def unlock_nowait(self) -> None:
        self.node.client._unlock_nowait(self.lock_id)


@dataclass
class _Slot(Generic[C]):
    piece: GuardPiece
    #: Where the piece lives now; ``None`` while it is being reclaimed (or after the end).
    at: Optional[Held[C]]


class GuardState(Generic[C]):
    """The pieces of one cluster guard, where each lives now, and whether the guard is
    lost or released. Changed under :attr:`ClusterState.mu`; ``notify`` (the client's) is
    called after each change, to wake whoever waits for the guard to settle or be lost."""

    def __init__(
        self,
        id: int,
        start: int,
        end: int,
        shared: bool,
        name: Optional[bytes],
        notify: Callable[[], None],
    ) -> None:
        self.id = id
        self.start = start
        self.end = end
        self.shared = shared
        self.name = name
        self.hashed = None if name is None else P.name_hash(name)
        self.notify = notify
        self.slots: List[_Slot[C]] = []
        self.lost: Optional[LostReason] = None
        #: Unlocked or abandoned: nothing more is reclaimed, and it can no longer be lost.
        self.released = False
        #: The connections (serials) it was ever registered on.
        self.serials: set[int] = set()

    @property
    def mode(self) -> P.Mode:
        return P.Mode.SHARED if self.shared else P.Mode.EXCLUSIVE

    @property
    def live(self) -> bool:
        return not self.released and self.lost is None

    def what(self) -> str:
        """How messages name the lock: ``lock 0..10 exclusive of b'db/orders'``."""
        what = lock_what(self.start, self.end, self.shared)
        return what if self.name is None else f"{what} of {self.name!r}"

    def pieces(self) -> List[GuardPiece]:
        return [s.piece for s in self.slots]

    def settled(self) -> bool:
        """No piece is being reclaimed (or the guard is lost or released)."""
        return not self.live or all(s.at is not None for s in self.slots)

    def lose(self, reason: LostReason) -> None:
        """Marks the guard lost (the first reason wins; nothing once released) and
        releases its other pieces, best effort (without waiting for the answers)."""
        if not self.live:
            return
        self.lost = reason
        for slot in self.slots:
            held, slot.at = slot.at, None
            if held is not None:
                held.unlock_nowait()
        self.notify()

    def release(self) -> List[Tuple[int, Held[C]]]:
        """Ends the guard; returns the pieces still held (with their partitions), for the
        caller to release."""
        self.released = True
        held = [(s.piece.partition, s.at) for s in self.slots if s.at is not None]
        for s in self.slots:
            s.at = None
        self.notify()
        return held


@dataclass
class ReclaimItem(Generic[C]):
    """A piece to reclaim, and the owner a ``NOT_OWNER`` answer named (address, epoch)."""

    guard: GuardState[C]
    index: int
    hint: Optional[Tuple[str, int]] = None

    def lose(self, cause: LostCause) -> None:
        self.guard.lose(LostReason(self.guard.slots[self.index].piece.partition, cause))

    def wanted(self) -> Optional[GuardPiece]:
        """The piece, while it still needs a reclaim (detached, guard live)."""
        slot = self.guard.slots[self.index]
        return slot.piece if self.guard.live and slot.at is None else None


@dataclass
class ReclaimJob(Generic[C]):
    """Pieces a node dropped, to reclaim together: ``avoid`` is a node that is gone (asked
    for the map last); ``ask_old_owner``: send the RECLAIM to the owner of the token's own
    epoch too (a live one refuses it at once: the lock is lost)."""

    items: List[ReclaimItem[C]]
    avoid: Optional[str]
    ask_old_owner: bool
    started: float = field(default_factory=time.monotonic)


class ClusterState(Generic[C]):
    """The map, the node connections and the guards of one cluster client (see the
    module docs)."""

    def __init__(self, seeds: List[str], opts: Options) -> None:
        self.seeds = seeds
        self.opts = opts
        self.mu = threading.RLock()
        self._map: Optional[P.ClusterMap] = None
        self.nodes: Dict[str, Node[C]] = {}
        self._serials = 0
        self._guard_ids = 0
        #: serial -> guard id -> guard, for the guards with a piece on that connection.
        self._registry: Dict[int, Dict[int, GuardState[C]]] = {}
        self.closed = False

    # ---------------------------------------------------------------- the map

    @property
    def map(self) -> P.ClusterMap:
        m = self._map
        assert m is not None, "a map is read before the client is handed out"
        return m

    def offer(self, m: P.ClusterMap, addr: str) -> P.ClusterMap:
        """Keeps ``m`` if it is at least as new as the cached map; returns the newest.
        Raises :class:`ProtocolError` for a map of another partition count."""
        with self.mu:
            old = self._map
            if old is not None and old.partitions != m.partitions:
                raise ProtocolError(
                    f"{addr} serves a map of {m.partitions} partitions, the cluster has {old.partitions}"
                )
            if old is not None and old.revision > m.revision:
                return old
            self._map = m
            return m

    def candidates(self, avoid: Optional[str]) -> List[str]:
        """Where to ask for the map: the nodes connected to, the map's nodes, the seeds,
        each once, without ``avoid``."""
        with self.mu:
            live = [a for a, n in self.nodes.items() if not n.lost]
            known = [n.addr for n in self._map.nodes] if self._map is not None else []
        out: List[str] = []
        for addr in live + known + self.seeds:
            if addr != avoid and addr not in out:
                out.append(addr)
        return out

    # ---------------------------------------------------------------- nodes and guards

    def cached(self, addr: str) -> Optional[Node[C]]:
        with self.mu:
            node = self.nodes.get(addr)
            return node if node is not None and not node.lost else None

    def add_node(self, addr: str, client: C) -> Node[C]:
        with self.mu:
            self._serials += 1
            node = Node(addr, self._serials, client)
            self.nodes[addr] = node
            return node

    def new_guard(
        self, start: int, end: int, shared: bool, name: Optional[bytes], notify: Callable[[], None]
    ) -> GuardState[C]:
        with self.mu:
            self._guard_ids += 1
            return GuardState(self._guard_ids, start, end, shared, name, notify)

    def place(
        self,
        guard: GuardState[C],
        piece: GuardPiece,
        node: Node[C],
        lock_id: int,
        since: int,
        index: Optional[int] = None,
    ) -> Optional[ReclaimJob[C]]:
        """Adds a granted piece (or, with ``index``, a reclaimed one) to ``guard``, living
        on ``node`` under ``lock_id``. If the guard is no longer live the lock is released
        and :class:`LockLostError` (lost) or ``LookupError`` (released) raised. If the node
        gave the partition up after its ``since`` first notices (or its connection is
        gone), the piece is detached at once: returns the reclaim to start."""
        held = Held(node, lock_id)
        with self.mu:
            if not guard.live:
                held.unlock_nowait()
                if guard.lost is not None:
                    raise LockLostError(f"{guard.what()}: lock lost: {guard.lost}", guard.lost)
                raise LookupError("the guard was released")
            if index is None:
                guard.slots.append(_Slot(piece, held))
                index = len(guard.slots) - 1
            elif guard.slots[index].at is None:
                guard.slots[index].at = held
            else:
                held.unlock_nowait()  # another reclaim of the piece got there first
                return None
            guard.serials.add(node.serial)
            self._registry.setdefault(node.serial, {})[guard.id] = guard
            if not node.gave_up(piece.partition, since):
                guard.notify()
                return None
            guard.slots[index].at = None
        # A lost connection: the node may still own the partition (the session ended), so
        # it is asked too, and refuses at once.
        return ReclaimJob([ReclaimItem(guard, index)], node.addr if node.lost else None, node.lost)

    def end_guard(self, guard: GuardState[C]) -> List[Tuple[int, Held[C]]]:
        """Ends ``guard`` (released: no more reclaims, no loss); returns the pieces still
        held, for the caller to release."""
        with self.mu:
            for serial in guard.serials:
                self._registry.get(serial, {}).pop(guard.id, None)
            return guard.release()

    def _detach(
        self, serial: int, covers: Callable[[int], bool]
    ) -> List[ReclaimItem[C]]:
        items = []
        for guard in list(self._registry.get(serial, {}).values()):
            if not guard.live:
                continue
            for i, slot in enumerate(guard.slots):
                if slot.at is not None and slot.at.node.serial == serial and covers(slot.piece.partition):
                    slot.at = None  # the node no longer has it: no UNLOCK to send
                    items.append(ReclaimItem(guard, i))
        return items

    def node_lost(self, node: Node[C], loss: Loss) -> Optional[ReclaimJob[C]]:
        """Connection ``node`` is gone: its pieces are to be reclaimed (returned), except
        after the client's own close, and when the node ended the session for its lapsed
        lease (the guards are lost at once: the node released their locks, and may have
        granted them since)."""
        with self.mu:
            node.lost = True
            if self.nodes.get(node.addr) is node:
                del self.nodes[node.addr]
            if loss.closed or self.closed:
                self._registry.pop(node.serial, None)
                return None
            items = self._detach(node.serial, lambda p: True)
            self._registry.pop(node.serial, None)
            if loss.reason is P.EndReason.LEASE_EXPIRED:
                for it in items:
                    it.lose(LostCause.SESSION_LAPSED)
                return None
        if not items:
            return None
        # A silent node is not asked (it would not answer); a live owner that ended the
        # session refuses the reclaim at once, and the guard is reported lost.
        return ReclaimJob(items, node.addr, not loss.unresponsive)

    def node_notice(self, node: Node[C], r: P.Response) -> Optional[ReclaimJob[C]]:
        """Connection ``node`` said it gave partition ``r.value`` up (all, for
        :data:`rangelock.protocol.ALL_PARTITIONS`): its pieces there are to be reclaimed
        at a later owner (returned)."""
        partition = None if r.value == P.ALL_PARTITIONS else r.value
        with self.mu:
            node.notices.append(partition)
            items = self._detach(node.serial, lambda p: partition is None or p == partition)
        return ReclaimJob(items, None, False) if items else None

    def reclaimed(self, job: ReclaimJob[C]) -> bool:
        """Drops the items no longer wanted; whether any are left. Past the window, the
        guards of those left are lost."""
        with self.mu:
            job.items = [it for it in job.items if it.wanted() is not None]
            if not job.items or self.closed:
                return False
            if time.monotonic() - job.started >= self.opts.reclaim_window:
                for it in job.items:
                    it.lose(LostCause.WINDOW_MISSED)
                return False
            return True

    def refused(self, item: ReclaimItem[C], r: P.Response) -> bool:
        """Handles a refused RECLAIM; whether the item is done (its guard lost)."""
        with self.mu:
            piece = item.wanted()
            if piece is None:
                return True
            if r.status == P.Status.RECLAIM_REFUSED:
                item.guard.lose(LostReason(piece.partition, LostCause.RECLAIM_REFUSED))
                return True
            if r.status == P.Status.NOT_OWNER and r.owner is not None and r.owner.addr:
                item.hint = (r.owner.addr, r.value)
            return False


def reclaim_target(
    m: P.ClusterMap, piece: GuardPiece, hint: Optional[Tuple[str, int]], ask_old_owner: bool
) -> Optional[str]:
    """Where to send the RECLAIM of ``piece``: an owner of a later epoch than its token's
    (only such an owner accepts it), from the map or a ``NOT_OWNER`` hint, whichever knows
    the later epoch; with ``ask_old_owner`` also the owner of the token's own epoch.
    ``None`` while neither names one (the old owner's etcd lease has not expired yet)."""
    granted_in = P.token_epoch(piece.token)
    from_map = None
    owner = m.owner_of(piece.partition)
    if owner is not None:
        node, o = owner
        if o.state != P.PartitionState.UNOWNED and (
            o.epoch > granted_in or ask_old_owner and o.epoch == granted_in
        ):
            from_map = (node.addr, o.epoch)
    from_hint = hint if hint is not None and hint[1] > granted_in else None
    if from_map is not None and from_hint is not None:
        return from_hint[0] if from_hint[1] > from_map[1] else from_map[0]
    best = from_map or from_hint
    return None if best is None else best[0]


# --------------------------------------------------------------------------- acquiring


class Step(enum.Enum):
    """What to do after a node refused a piece's LOCK."""

    #: Ask again at once (a redirect to the owner a hint named).
    RETRY = 0
    #: Re-read the map, and pause if it has nothing newer.
    REFRESH = 1
    #: The owner is unknown, unreachable or fenced (:meth:`PieceAttempt.unavailable`).
    UNAVAILABLE = 2
    #: Pause (at most :attr:`PieceAttempt.cap` seconds) and ask again.
    PAUSE = 3


class Crosses(Exception):
    """A node answered ``CROSSES_PARTITION``: the map's partitioning is not the node's.
    The lock starts over after a re-read of the map."""


def check_lock(
    start: int, end: int, shared: bool, name: Union[str, bytes, None]
) -> Optional[bytes]:
    """Checks a cluster lock's arguments before anything is sent; its name as bytes."""
    check_range(start, end, shared)
    raw = check_name(name)
    if raw is not None:
        stripes = ((end - 1) >> P.NAME_STRIPE_SHIFT) - (start >> P.NAME_STRIPE_SHIFT) + 1
        if stripes > MAX_NAMED_PIECES:
            raise InvalidRangeError(
                f"{lock_what(start, end, shared)}: the named range spans {stripes} stripes of "
                f"2**{P.NAME_STRIPE_SHIFT} units; a lock has at most {MAX_NAMED_PIECES} pieces"
            )
    return raw


def pieces_of(guard: GuardState[C], m: P.ClusterMap) -> List[P.Piece]:
    """The pieces to acquire, in the order every client takes them."""
    if guard.hashed is None:
        return P.split(m.partitions, guard.start, guard.end)
    return P.split_named(m.partitions, guard.hashed, guard.start, guard.end)


class PieceAttempt:
    """The acquisition of one piece (sans I/O): where to send its LOCK, with what wait,
    and what to do after a refusal. A blocking or awaited loop drives it."""

    def __init__(
        self,
        opts: Options,
        piece: P.Piece,
        wait: P.Wait,
        deadline: Optional[float],
        what: str,
    ) -> None:
        self.opts = opts
        self.piece = piece
        self.wait = wait
        self.deadline = deadline
        self.what = what
        self.redirects = 0
        #: The latest epoch of the partition's owner heard of.
        self.known_epoch = 0
        #: An owner a NOT_OWNER answer named, with a later epoch than any known.
        self.hinted: Optional[str] = None
        #: A try gives up on an unavailable owner after one re-read of the map.
        self.reread = False
        #: The most a PAUSE may last (an IN_GRACE answer's milliseconds left).
        self.cap: Optional[float] = None
        self.backoff = Backoff(opts)

    def target(self, m: P.ClusterMap) -> Optional[str]:
        """The node to ask: the hinted owner, else the map's; ``None`` if none is known."""
        p = self.piece.partition
        self.known_epoch = max(self.known_epoch, m.owners[p].epoch)
        hinted, self.hinted = self.hinted, None
        if hinted is not None:
            return hinted
        owner = m.owner_of(p)
        if owner is None or owner[1].state == P.PartitionState.UNOWNED:
            return None
        return owner[0].addr

    def lock_wait(self) -> Tuple[P.Wait, int]:
        """The LOCK's ``wait`` and ``timeout_ms``: what is left of the deadline, rounded up."""
        if self.deadline is None or self.wait == P.Wait.TRY:
            return self.wait, 0
        left = max(0.0, self.deadline - time.monotonic())
        return P.Wait.TIMEOUT, min(P.MAX_TIMEOUT_MS, math.ceil(left * 1000))

    def refused(self, r: P.Response, addr: str) -> Step:
        """The next step after ``addr`` refused the LOCK with ``r``; raises when the lock
        fails (``WOULD_BLOCK``, ``TIMED_OUT``, too many redirects, other errors)."""
        s = r.status
        if s == P.Status.NOT_OWNER:
            self.redirects += 1
            if self.redirects > self.opts.max_redirects:
                raise NotOwnerError(
                    f"{self.what}: partition {self.piece.partition}: gave up after "
                    f"{self.redirects} redirects (the nodes disagree about its owner)",
                    value=r.value,
                )
            hint = r.owner
            if hint is not None and hint.addr and hint.addr != addr and r.value > self.known_epoch:
                self.known_epoch = r.value
                self.hinted = hint.addr
                return Step.RETRY
            return Step.REFRESH
        if s == P.Status.IN_GRACE:
            if self.wait == P.Wait.TRY:
                raise self.unavailable_error()
            self.cap = max(r.value, 1) / 1000.0
            return Step.PAUSE
        if s == P.Status.CROSSES_PARTITION:
            raise Crosses()
        if s in (P.Status.FENCED, P.Status.SHUTTING_DOWN):
            return Step.UNAVAILABLE
        raise error_for_status(s, r.value, self.what)

    def unavailable_error(self) -> PartitionUnavailableError:
        return PartitionUnavailableError(
            f"{self.what}: partition {self.piece.partition} is unavailable (its owner is "
            "unknown, unreachable, fenced or in its grace period)",
            self.piece.partition,
        )

    def unavailable(self) -> bool:
        """The owner is unknown, unreachable or fenced: whether to pause after re-reading
        the map. A try re-reads the map once, then fails."""
        if self.wait == P.Wait.TRY:
            if self.reread:
                raise self.unavailable_error()
            self.reread = True
            return False
        return True

    def pause(self) -> float:
        """The next pause: the backoff's, at most :attr:`cap`, not past the deadline;
        raises :class:`TimedOutError` if the deadline has passed."""
        pause = self.backoff.next_pause()
        if self.cap is not None:
            pause, self.cap = min(pause, self.cap), None
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise error_for_status(P.Status.TIMED_OUT, 0, self.what)
            pause = min(pause, left)
        return pause


def lock_deadline(timeout: Optional[float]) -> Optional[float]:
    return None if timeout is None else time.monotonic() + timeout
