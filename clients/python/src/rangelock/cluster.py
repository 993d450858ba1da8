"""The blocking client of a rangelock **cluster** (``docs/CLUSTER.md``): the Python
counterpart of the Rust ``rangelock_client::cluster::ClusterClient``.

>>> import rangelock
>>> with rangelock.ClusterClient(["10.0.0.1:7878", "10.0.0.2:7878"]) as cluster:  # doctest: +SKIP
...     with cluster.lock(0, 1 << 62, timeout=5.0) as g:
...         for piece in g.pieces:
...             write(piece.start, piece.end, fencing_token=piece.token)
...     with cluster.lock(0, 4096, name="db/orders") as g:
...         ...

The unit space of a cluster is cut into partitions, each served by one node. The client
reads the cluster map (``MAP``) from the first seed that answers with one (a starting node
answers ``FENCED``: the client asks again, with backoff, for up to ``map_wait``), opens
one :class:`rangelock.Client` (one session) per node on first use and keeps it while it
is up. It sends ``WATCH_MAP`` on each, so nodes push map changes.

**Locking.** :meth:`ClusterClient.lock` splits the range at partition boundaries (a named
range at its stripes of ``2**24`` units, placed by the name's SHA-256), and locks the
pieces in ascending order, each at its partition's owner: following ``NOT_OWNER`` hints
(at most ``max_redirects``), re-reading the map, and retrying ``FENCED``, ``IN_GRACE`` and
unowned partitions with backoff (10 ms doubling to 200 ms, ended early by a pushed map
change) while it may wait. All or nothing: when a piece fails, the pieces already held
are released (and their nodes have confirmed it) before the error is raised. One timeout
bounds the whole acquisition. A try (:meth:`ClusterClient.try_lock`) fails with
:class:`WouldBlockError` when a piece is taken, and with
:class:`PartitionUnavailableError` when a partition has no serving owner (after one
re-read of the map).

**Reclaiming.** A :class:`ClusterGuard` has one fencing token per piece (``epoch << 32 |
seq`` of its partition). When a piece's node connection is lost, or the node sends a
``NOT_OWNER`` or ``FENCED`` notice for its partition, a thread reclaims the piece
(``RECLAIM``, ``RECLAIM_NAMED`` for a named one, with the piece's token) at the
partition's owner of a later epoch, within ``reclaim_window``. An accepted reclaim keeps
the token. If the owner refuses (``RECLAIM_REFUSED``), the window passes, or the node
ended the session for its lapsed lease, the guard is **lost**: ``guard.lost`` is true,
``guard.lost_reason`` says which partition and why, ``check()`` and ``unlock()`` raise
:class:`LockLostError`, ``wait_lost()`` returns, and its other pieces are released. The
guard never claims to hold what it lost; between a node's failure and the end of the
reclaim it is neither lost nor confirmed: fence writes with the tokens.

What the Rust client has and this one does not: ``on_lost`` callbacks (use
``wait_lost``), the ``safe_until`` instant of a loss, giving up a piece's wait when an
earlier piece is lost meanwhile (the loss is found when the wait ends), and the node
cache of the CLI's ``--cluster http://...``.
"""

from __future__ import annotations

import threading
import time
import weakref
from types import TracebackType
from typing import Dict, List, Optional, Type

from . import protocol as P
from ._cluster import (
    Backoff,
    ClusterState,
    Crosses,
    GuardPiece,
    GuardState,
    LostCause,
    LostReason,
    Node,
    Options,
    PieceAttempt,
    ReclaimItem,
    ReclaimJob,
    SeedsArg,
    Step,
    check_lock,
    etcd_nodes,
    lock_deadline,
    parse_seeds,
    pieces_of,
    reclaim_target,
)
from ._common import (
    Loss,
    NameArg,
    TlsArg,
    TokenArg,
    lock_wait,
    tls_context,
    token_bytes,
)
from ._lockstyle import LockStyle, UnlockOnExit
from .client import Client
from .errors import (
    AuthFailedError,
    AuthRequiredError,
    ClientClosedError,
    ConnectError,
    ConnectionLostError,
    FencedError,
    LockLostError,
    LockNotGrantedError,
    NotOwnerError,
    PartitionUnavailableError,
    ProtocolError,
    RangelockError,
    SessionExpiredError,
    WouldBlockError,
    error_for_status,
)

__all__ = ["ClusterClient", "ClusterGuard", "ClusterLock", "GuardPiece", "LostCause", "LostReason"]


class ClusterGuard(UnlockOnExit):
    """A range held in a cluster: one lock per piece (partition, or stripe of a named
    resource), each at its partition's owner with its own fencing token
    (:attr:`pieces`). Use it in ``with``, or call :meth:`unlock` (:meth:`release`).

    While it is held the client reclaims its pieces when a node fails or gives a
    partition up; if that fails the guard is lost (:attr:`lost`), and says so: check
    :meth:`check` before acting on the guarded resource, and pass each piece's token to
    the storage."""

    __slots__ = ("client", "_state", "_ended")

    def __init__(self, client: ClusterClient, state: GuardState[Client]) -> None:
        self.client = client
        self._state = state
        self._ended = False

    @property
    def start(self) -> int:
        return self._state.start

    @property
    def end(self) -> int:
        return self._state.end

    @property
    def shared(self) -> bool:
        return self._state.shared

    @property
    def name(self) -> Optional[bytes]:
        """The resource's name (``None``: the unnamed resource)."""
        return self._state.name

    @property
    def pieces(self) -> List[GuardPiece]:
        """The pieces in the order they were taken, each with its partition and fencing
        token (kept by a reclaim)."""
        with self.client._st.mu:
            return self._state.pieces()

    @property
    def lost_reason(self) -> Optional[LostReason]:
        """Why the guard was lost (``None`` while it is not)."""
        return self._state.lost

    @property
    def lost(self) -> bool:
        """Whether the guard is lost: a piece could not be reclaimed. Nothing of it is
        held any more."""
        return self._state.lost is not None

    @property
    def released(self) -> bool:
        """Whether :meth:`unlock` was called."""
        return self._ended

    @property
    def valid(self) -> bool:
        """Neither unlocked nor lost (nor ended by closing the client). A piece may be
        being reclaimed: fence writes with the tokens."""
        return self._state.live and not self._ended and not self.client._st.closed

    def check(self) -> None:
        """Raises :class:`LockLostError` once the guard is lost."""
        reason = self._state.lost
        if reason is not None:
            raise LockLostError(f"{self._state.what()}: lock lost: {reason}", reason)

    def wait_lost(self, timeout: Optional[float] = None) -> Optional[LostReason]:
        """Blocks until the guard is lost and returns why; ``None`` if ``timeout`` seconds
        pass first, or the guard is released."""
        s = self._state
        with self.client._cv:
            self.client._cv.wait_for(lambda: not s.live, timeout)
        return s.lost

    def unlock(self) -> None:
        """Releases every piece at the node it lives on now and waits for the answers;
        again does nothing. A reclaim in flight is waited for first (at most the reclaim
        window), so that a loss is reported rather than hidden. Raises
        :class:`LockLostError` if the guard was lost (its pieces are released already),
        else the first failure a node reported; a piece whose connection is gone counts
        as released (the server released the session's locks), unless the node ended the
        session for its lapsed lease (:class:`LockLostError`)."""
        if self._ended:
            return
        self._ended = True
        c = self.client
        c._wait_settled(self._state)
        with c._st.mu:
            lost = self._state.lost
            held = c._st.end_guard(self._state)
        if lost is not None:
            raise LockLostError(f"{self._state.what()}: lock lost: {lost}", lost)
        if c._st.closed:
            raise ClientClosedError("the cluster client is closed; its locks are released")
        first: Optional[RangelockError] = None
        for partition, h in held:
            try:
                h.node.client.unlock(h.lock_id)
            except SessionExpiredError as e:
                reason = LostReason(partition, LostCause.SESSION_LAPSED)
                first = first or LockLostError(f"{self._state.what()}: lock lost: {reason} ({e})", reason)
            except ConnectionLostError:
                continue
            except RangelockError as e:
                first = first or e
        if first is not None:
            raise first

    def release(self) -> None:
        """:meth:`unlock`."""
        self.unlock()

    def __repr__(self) -> str:
        s = self._state
        mode = "shared" if s.shared else "exclusive"
        state = "lost" if self.lost else ("released" if self._ended else "valid")
        name = "" if s.name is None else f" name={s.name!r}"
        return f"<ClusterGuard {s.start}..{s.end} {mode}{name} pieces={len(s.slots)} {state}>"


class ClusterLock(LockStyle[ClusterGuard]):
    """A lock on one range of a cluster, used like :class:`threading.Lock` (as
    :class:`rangelock.Lock` is for one server): :meth:`acquire`, :meth:`release`, ``with``.
    Made by :meth:`ClusterClient.range_lock`; :attr:`guard` is the
    :class:`ClusterGuard` while held."""

    _not_granted = (LockNotGrantedError, PartitionUnavailableError)

    def __init__(
        self, client: ClusterClient, start: int, end: int, shared: bool = False, name: NameArg = None
    ) -> None:
        super().__init__(start, end, shared, check_lock(start, end, shared, name))
        self.client = client

    def _take(self, blocking: bool, timeout: Optional[float]) -> ClusterGuard:
        if not blocking:
            return self.client.try_lock(self.start, self.end, shared=self.shared, name=self.name)
        return self.client.lock(self.start, self.end, shared=self.shared, timeout=timeout, name=self.name)

    def locked(self) -> bool:
        """Whether anyone holds the range in a conflicting mode: this lock, or (a probe:
        a try-lock of the range, released at once when granted) anyone else; a
        conflicting *queued* lock also makes the probe fail. Raises
        :class:`PartitionUnavailableError` when a partition has no serving owner."""
        g = self._guard
        if g is not None and g.valid:
            return True
        try:
            probe = self.client.try_lock(self.start, self.end, shared=self.shared, name=self.name)
        except WouldBlockError:
            return True
        probe.unlock()
        return False

    def __repr__(self) -> str:
        mode = "shared" if self.shared else "exclusive"
        state = "owned" if self.owned() else "not owned"
        return f"<rangelock.ClusterLock {self.start}..{self.end} {mode} {state}>"


class ClusterClient:
    """A client of a rangelock cluster (see the module docs).

    ``seeds``: node addresses (``host:port``), or the cluster's etcd endpoints
    (``http://host:port``: the live nodes are read from etcd's keys
    ``/rangelock/<cluster_name>/nodes/``); a list, or one comma-separated string.
    ``token`` and ``tls`` are those of :class:`rangelock.Client`, for every node.
    ``connect_timeout`` bounds connecting to a node and waiting for a ``MAP`` or
    ``RECLAIM`` answer; ``map_wait`` how long connecting asks starting nodes (answering
    ``FENCED``) again; ``reclaim_window`` how long after a node's failure a piece may be
    reclaimed (longer than the cluster's etcd TTL plus a manager round);
    ``max_redirects`` the ``NOT_OWNER`` answers one piece may get; ``backoff_first`` and
    ``backoff_max`` the pauses between retries (seconds).

    Raises :class:`ConnectError` when no seed answers with a map (the message says what
    each said; a node that is not part of a cluster answers ``NOT_CLUSTERED``),
    :class:`AuthRequiredError` or :class:`AuthFailedError` when a node refuses the
    token, ``ValueError`` for bad seeds."""

    def __init__(
        self,
        seeds: SeedsArg,
        *,
        token: TokenArg = None,
        tls: TlsArg = None,
        cluster_name: str = "default",
        connect_timeout: float = 2.0,
        map_wait: float = 10.0,
        reclaim_window: float = 30.0,
        max_redirects: int = 16,
        backoff_first: float = 0.01,
        backoff_max: float = 0.2,
    ) -> None:
        etcd, given = parse_seeds(seeds)
        self._token = token_bytes(token)
        P.encode_client_hello(self._token)  # checks the token's length
        self._tls = tls_context(tls)
        opts = Options(connect_timeout, map_wait, reclaim_window, max_redirects, backoff_first, backoff_max)
        self.cluster_name = cluster_name
        nodes = etcd_nodes(given, cluster_name, connect_timeout) if etcd else given
        self._st: ClusterState[Client] = ClusterState(nodes, opts)
        #: Wakes waits for a guard to settle or be lost, and pauses for a map change.
        self._cv = threading.Condition(self._st.mu)
        self._news = 0
        self._connecting: Dict[str, threading.Lock] = {}
        try:
            self._connect()
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- connecting

    def _connect(self) -> None:
        opts, started, backoff = self._st.opts, time.monotonic(), Backoff(self._st.opts)
        while True:
            failures = []
            refused: Optional[ConnectError] = None
            starting = False
            for seed in self._st.seeds:
                try:
                    m = self._read_map(seed)
                except (AuthRequiredError, AuthFailedError) as e:
                    failures.append(f"{seed}: {e}")
                    refused = refused or e
                    continue
                except FencedError as e:
                    # A node answers MAP with FENCED until it has registered in etcd and
                    # read the cluster's keys (or while its lease is in doubt).
                    starting = True
                    failures.append(f"{seed}: {e}")
                    continue
                except RangelockError as e:
                    failures.append(f"{seed}: {e}")
                    continue
                self._st.offer(m, seed)
                return
            if refused is not None:
                raise refused
            pause = backoff.next_pause()
            if not starting or time.monotonic() - started + pause > opts.map_wait:
                raise ConnectError(
                    "no cluster node answered with a map: " + "; ".join(failures), self._st.seeds[0]
                )
            time.sleep(pause)

    def _node(self, addr: str) -> Node[Client]:
        """The connection to ``addr``: the cached one while it is up, else a new one."""
        node = self._st.cached(addr)
        if node is not None:
            return node
        with self._st.mu:
            gate = self._connecting.setdefault(addr, threading.Lock())
        with gate:
            node = self._st.cached(addr)
            if node is not None:
                return node
            if self._st.closed:
                raise ClientClosedError("the cluster client is closed")
            timeout = self._st.opts.connect_timeout
            client = Client(addr, token=self._token, tls=self._tls, connect_timeout=timeout)
            node = self._st.add_node(addr, client)
            # The hooks hold the client weakly: a client dropped unclosed is collected
            # (and closed) as a Client is, although the node's reader thread lives on.
            me = weakref.ref(self)

            def on_notice(r: P.Response) -> None:
                c = me()
                if c is not None:
                    c._on_notice(node, r)

            def on_lost(loss: Loss) -> None:
                c = me()
                if c is not None:
                    c._on_lost(node, loss)

            client._watch(on_notice, on_lost)
            try:
                client._send(P.encode_watch_map)  # MAP_CHANGED notices from now on
            except ConnectionLostError:
                pass  # the hook has seen the loss
            if self._st.closed:
                client.close()
                raise ClientClosedError("the cluster client is closed")
            return node

    def _read_map(self, addr: str) -> P.ClusterMap:
        node = self._node(addr)
        limit = self._st.opts.connect_timeout
        _, r = node.client._raw(P.encode_map, limit)
        if r is None:
            raise ConnectError(f"{addr}: no answer to MAP within {limit} s", addr)
        if r.status != P.Status.OK or r.map is None:
            raise error_for_status(r.status, r.value, f"MAP of {addr}")
        return r.map

    def _refresh_map(self, avoid: Optional[str]) -> P.ClusterMap:
        """Re-reads the map, looking for a newer one than the cached: asks the nodes
        connected to, the map's, the seeds, and ``avoid`` (a node that is gone) only if
        no other answered. Returns the newest map known; raises only if none answered."""
        cached = self._st.map.revision
        failures: List[str] = []
        bad: Optional[ProtocolError] = None
        answered = False
        for addr in self._st.candidates(avoid) + ([avoid] if avoid else []):
            if addr == avoid and answered:
                break
            try:
                m = self._read_map(addr)
                newest = self._st.offer(m, addr)
            except ProtocolError as e:
                failures.append(f"{addr}: {e}")
                bad = e
                continue
            except RangelockError as e:
                failures.append(f"{addr}: {e}")
                continue
            if m.revision > cached:
                return newest
            answered = True
        if answered:
            return self._st.map
        if bad is not None:
            raise bad
        raise ConnectError("no cluster node answered: " + "; ".join(failures))

    # ---------------------------------------------------------------- hooks (reader threads)

    def _on_notice(self, node: Node[Client], r: P.Response) -> None:
        if r.status == P.Status.MAP_CHANGED:
            self._wake()
            return
        job = self._st.node_notice(node, r)
        if job is not None:
            self._start_reclaim(job)

    def _on_lost(self, node: Node[Client], loss: Loss) -> None:
        job = self._st.node_lost(node, loss)
        if job is not None:
            self._start_reclaim(job)

    def _wake(self) -> None:
        with self._cv:
            self._news += 1
            self._cv.notify_all()

    def _pause(self, seconds: float, since: int) -> None:
        """Sleeps ``seconds``, or until a node pushes a map change after ``since`` (the
        news count before the request whose answer made the client pause)."""
        with self._cv:
            self._cv.wait_for(lambda: self._news != since or self._st.closed, seconds)

    def _wait_settled(self, state: GuardState[Client]) -> None:
        with self._cv:
            self._cv.wait_for(state.settled, self._st.opts.reclaim_window + 1.0)

    # ---------------------------------------------------------------- reclaiming

    def _start_reclaim(self, job: ReclaimJob[Client]) -> None:
        threading.Thread(target=self._reclaim, args=(job,), name="rangelock-reclaim", daemon=True).start()

    def _reclaim(self, job: ReclaimJob[Client]) -> None:
        """Reclaims ``job``'s pieces, in rounds, until each is placed or lost."""
        opts, backoff = self._st.opts, Backoff(self._st.opts)
        while self._st.reclaimed(job):
            news = self._news
            try:
                m = self._refresh_map(job.avoid)
            except RangelockError:
                m = self._st.map
            left = opts.reclaim_window - (time.monotonic() - job.started)
            limit = max(0.001, min(opts.connect_timeout, left))
            for it in list(job.items):
                piece = it.wanted()
                addr = None if piece is None else reclaim_target(m, piece, it.hint, job.ask_old_owner)
                if piece is not None and addr is not None:
                    self._reclaim_one(it, piece, addr, limit)
            if not self._st.reclaimed(job):
                return
            left = opts.reclaim_window - (time.monotonic() - job.started)
            self._pause(max(0.0, min(backoff.next_pause(), left)), news)

    def _reclaim_one(self, it: ReclaimItem[Client], piece: GuardPiece, addr: str, limit: float) -> None:
        """One RECLAIM (RECLAIM_NAMED) of ``piece`` at ``addr``, answered within ``limit``."""
        g = it.guard
        try:
            node = self._node(addr)
            since = len(node.notices)
            id, r = node.client._raw(
                lambda id: P.encode_reclaim(id, piece.start, piece.end, g.mode, piece.token, g.name), limit
            )
        except RangelockError:
            return  # unreachable: next round
        if r is None:
            node.client._unlock_nowait(id)  # releases a late acceptance
            return
        if r.status != P.Status.OK:
            self._st.refused(it, r)
            return
        try:
            job = self._st.place(g, piece, node, id, since, it.index)
        except (LockLostError, LookupError):
            return  # released or lost meanwhile: the reclaimed lock was released
        if job is not None:
            self._start_reclaim(job)

    # ---------------------------------------------------------------- locking

    def lock(
        self,
        start: int,
        end: int,
        *,
        shared: bool = False,
        timeout: Optional[float] = None,
        name: NameArg = None,
    ) -> ClusterGuard:
        """Locks ``[start, end)`` (of the resource ``name``; ``None``: the unnamed one)
        across the partitions it touches, exclusive unless ``shared``, waiting at most
        ``timeout`` seconds for the whole range (``None``: as long as it takes). All
        pieces or none. Returns a :class:`ClusterGuard`.

        Raises :class:`TimedOutError`, :class:`NotOwnerError` (too many redirects),
        :class:`LockLostError` (a piece already held was lost meanwhile),
        :class:`InvalidRangeError` (also for a named range over more than 4096 stripes) and
        :class:`BadNameError` before sending, and a node's errors
        (:class:`ForbiddenError`, ...); nothing is held after any of them."""
        wait, _ = lock_wait(timeout)
        return self._lock(start, end, shared, wait, timeout, name)

    def try_lock(self, start: int, end: int, *, shared: bool = False, name: NameArg = None) -> ClusterGuard:
        """Locks ``[start, end)`` only if every piece can be granted at once: raises
        :class:`WouldBlockError` if one is taken, :class:`PartitionUnavailableError` if a
        partition has no serving owner (after one re-read of the map)."""
        return self._lock(start, end, shared, P.Wait.TRY, None, name)

    def range_lock(
        self, start: int, end: int, *, shared: bool = False, name: NameArg = None
    ) -> ClusterLock:
        """A :class:`ClusterLock` on ``[start, end)`` of the resource ``name``; nothing is
        sent until acquired. Raises :class:`InvalidRangeError` or :class:`BadNameError`
        at once."""
        return ClusterLock(self, start, end, shared, name)

    def _lock(
        self, start: int, end: int, shared: bool, wait: P.Wait, timeout: Optional[float], name: NameArg
    ) -> ClusterGuard:
        raw = check_lock(start, end, shared, name)
        deadline = lock_deadline(timeout)
        crossings = 0
        while True:
            if self._st.closed:
                raise ClientClosedError("the cluster client is closed")
            g = self._st.new_guard(start, end, shared, raw, self._cv.notify_all)
            try:
                for piece in pieces_of(g, self._st.map):
                    self._acquire(g, piece, wait, deadline)
                return ClusterGuard(self, g)
            except Crosses:
                self._abandon(g)
                crossings += 1
                if crossings > self._st.opts.max_redirects:
                    raise NotOwnerError(
                        f"{g.what()}: gave up after {crossings} CROSSES_PARTITION answers "
                        "(the nodes' partitioning is not the map's)"
                    ) from None
                self._refresh_map(None)
            except Exception:
                self._abandon(g)
                raise
            except BaseException:
                self._abandon(g, wait=False)
                raise

    def _abandon(self, g: GuardState[Client], wait: bool = True) -> None:
        """Releases the pieces of a failed acquisition; with ``wait``, waits for the nodes'
        answers (so that the range is free when the error reaches the caller)."""
        for _, h in self._st.end_guard(g):
            if not wait:
                h.unlock_nowait()
                continue
            try:
                h.node.client.unlock(h.lock_id)
            except RangelockError:
                pass  # a lost connection released it

    def _acquire(
        self, g: GuardState[Client], piece: P.Piece, wait: P.Wait, deadline: Optional[float]
    ) -> None:
        """Acquires one piece at its partition's owner and adds it to ``g``."""
        a = PieceAttempt(self._st.opts, piece, wait, deadline, g.what())
        while True:
            if self._st.closed:
                raise ClientClosedError("the cluster client is closed")
            addr = a.target(self._st.map)
            if addr is None:
                self._unavailable(a, None)
                continue
            news = self._news
            try:
                node = self._node(addr)
                since = len(node.notices)
                w, ms = a.lock_wait()
                id, r = node.client._lock_response(piece.start, piece.end, g.shared, w, ms, g.name)
            except (AuthRequiredError, AuthFailedError):
                raise  # the node will not take this client: retrying cannot help
            except (ConnectError, ConnectionLostError):
                self._unavailable(a, addr)
                continue
            if r.status == P.Status.OK:
                granted = GuardPiece(piece.partition, piece.start, piece.end, r.value)
                job = self._st.place(g, granted, node, id, since)
                if job is not None:
                    self._start_reclaim(job)
                return
            step = a.refused(r, addr)
            if step is Step.REFRESH:
                before = self._st.map.revision
                try:
                    newer = self._refresh_map(None).revision > before
                except RangelockError:
                    newer = False
                if not newer:
                    self._pause(a.pause(), news)
            elif step is Step.PAUSE:
                self._pause(a.pause(), news)
            elif step is Step.UNAVAILABLE:
                self._unavailable(a, addr)

    def _unavailable(self, a: PieceAttempt, avoid: Optional[str]) -> None:
        """The owner is unknown, unreachable or fenced: re-read the map, and pause (a try:
        once, then fail)."""
        news = self._news
        pause = a.unavailable()
        try:
            self._refresh_map(avoid)
        except RangelockError:
            pass
        if pause:
            self._pause(a.pause(), news)

    # ---------------------------------------------------------------- the rest

    @property
    def map(self) -> P.ClusterMap:
        """The cached cluster map (the newest read)."""
        return self._st.map

    def refresh_map(self) -> P.ClusterMap:
        """Re-reads the map from a node and returns the newest the client knows."""
        return self._refresh_map(None)

    @property
    def seeds(self) -> List[str]:
        """The node addresses the client started from (read from etcd, if it was given
        etcd endpoints)."""
        return list(self._st.seeds)

    def close(self) -> None:
        """Closes every node connection: the nodes release the client's locks, and its
        guards end (``valid`` is ``False``). Closing again does nothing."""
        st = getattr(self, "_st", None)
        if st is None:
            return
        with st.mu:
            st.closed = True
            nodes = list(st.nodes.values())
            self._cv.notify_all()
        for node in nodes:
            node.client.close()

    def __enter__(self) -> ClusterClient:
        return self

    def __del__(self) -> None:
        st = getattr(self, "_st", None)
        if st is not None and not st.closed:
            try:
                self.close()
            except Exception:
                pass

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._st.closed else "open"
        return f"<rangelock.ClusterClient {','.join(self._st.seeds)} {state}>"
