"""The asyncio client of a rangelock cluster: :class:`rangelock.ClusterClient`'s surface,
awaited (exported as :mod:`rangelock.aio` ``.AsyncClusterClient``).

>>> import rangelock.aio
>>> async def main() -> None:                                   # doctest: +SKIP
...     async with rangelock.aio.AsyncClusterClient(["10.0.0.1:7878"]) as cluster:
...         async with await cluster.lock(0, 4096, name="db/orders") as g:
...             await write(fencing_tokens=[p.token for p in g.pieces])

One :class:`rangelock.aio.AsyncClient` per node, used from one event loop; reclaims run as
tasks of that loop. Routing, the all-or-nothing acquisition, reclaiming and lost guards
are those of the blocking client (``rangelock.cluster``), and so are the errors. A task
cancelled while its ``lock`` waits withdraws the request and releases the pieces it
holds (without waiting for the answers).
"""

from __future__ import annotations

import asyncio
import functools
import time
from types import TracebackType
from typing import Callable, Dict, List, Optional, Set, Type

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
from ._common import Loss, NameArg, TlsArg, TokenArg, lock_wait, tls_context, token_bytes
from ._lockstyle import AsyncLockStyle, AsyncUnlockOnExit
from .aio import AsyncClient
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

__all__ = ["AsyncClusterClient", "AsyncClusterGuard", "AsyncClusterLock"]


class AsyncClusterGuard(AsyncUnlockOnExit):
    """A range held in a cluster, as :class:`rangelock.ClusterGuard`, with ``await
    unlock()``, ``await wait_lost()`` and ``async with``."""

    __slots__ = ("client", "_state", "_ended")

    def __init__(self, client: AsyncClusterClient, state: GuardState[AsyncClient]) -> None:
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
        """The pieces in the order they were taken, each with its fencing token."""
        return self._state.pieces()

    @property
    def lost_reason(self) -> Optional[LostReason]:
        """Why the guard was lost (``None`` while it is not)."""
        return self._state.lost

    @property
    def lost(self) -> bool:
        """Whether the guard is lost: nothing of it is held any more."""
        return self._state.lost is not None

    @property
    def released(self) -> bool:
        """Whether :meth:`unlock` was called."""
        return self._ended

    @property
    def valid(self) -> bool:
        """Neither unlocked nor lost (nor ended by closing the client)."""
        return self._state.live and not self._ended and not self.client._st.closed

    def check(self) -> None:
        """Raises :class:`LockLostError` once the guard is lost."""
        reason = self._state.lost
        if reason is not None:
            raise LockLostError(f"{self._state.what()}: lock lost: {reason}", reason)

    async def wait_lost(self, timeout: Optional[float] = None) -> Optional[LostReason]:
        """Waits until the guard is lost and returns why; ``None`` if ``timeout`` seconds
        pass first, or the guard is released."""
        s = self._state
        await self.client._wait_for(lambda: not s.live, timeout)
        return s.lost

    async def unlock(self) -> None:
        """As :meth:`rangelock.ClusterGuard.unlock`: waits for a reclaim in flight, then
        releases every piece and waits for the answers; :class:`LockLostError` if the
        guard was lost."""
        if self._ended:
            return
        self._ended = True
        c = self.client
        await c._wait_for(self._state.settled, c._st.opts.reclaim_window + 1.0)
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
                await h.node.client.unlock(h.lock_id)
            except SessionExpiredError as e:
                reason = LostReason(partition, LostCause.SESSION_LAPSED)
                first = first or LockLostError(f"{self._state.what()}: lock lost: {reason} ({e})", reason)
            except ConnectionLostError:
                continue
            except RangelockError as e:
                first = first or e
        if first is not None:
            raise first

    async def release(self) -> None:
        """:meth:`unlock`."""
        await self.unlock()

    def __repr__(self) -> str:
        s = self._state
        mode = "shared" if s.shared else "exclusive"
        state = "lost" if self.lost else ("released" if self._ended else "valid")
        name = "" if s.name is None else f" name={s.name!r}"
        return f"<AsyncClusterGuard {s.start}..{s.end} {mode}{name} pieces={len(s.slots)} {state}>"


class AsyncClusterLock(AsyncLockStyle[AsyncClusterGuard]):
    """A lock on one range of a cluster, as :class:`rangelock.ClusterLock`: ``await
    acquire(blocking=True, timeout=None) -> bool``, ``await release()``, ``await
    locked()``, ``owned()``, ``async with``."""

    _not_granted = (LockNotGrantedError, PartitionUnavailableError)

    def __init__(
        self, client: AsyncClusterClient, start: int, end: int, shared: bool = False, name: NameArg = None
    ) -> None:
        super().__init__(start, end, shared, check_lock(start, end, shared, name))
        self.client = client

    async def _take(self, blocking: bool, timeout: Optional[float]) -> AsyncClusterGuard:
        if not blocking:
            return await self.client.try_lock(self.start, self.end, shared=self.shared, name=self.name)
        return await self.client.lock(
            self.start, self.end, shared=self.shared, timeout=timeout, name=self.name
        )

    async def locked(self) -> bool:
        """As :meth:`rangelock.ClusterLock.locked` (a probe: a try-lock, released at once)."""
        g = self._guard
        if g is not None and g.valid:
            return True
        try:
            probe = await self.client.try_lock(self.start, self.end, shared=self.shared, name=self.name)
        except WouldBlockError:
            return True
        await probe.unlock()
        return False

    def __repr__(self) -> str:
        mode = "shared" if self.shared else "exclusive"
        state = "owned" if self.owned() else "not owned"
        return f"<rangelock.aio.AsyncClusterLock {self.start}..{self.end} {mode} {state}>"


class AsyncClusterClient:
    """A client of a rangelock cluster for asyncio. The arguments are those of
    :class:`rangelock.ClusterClient`; nothing happens until :meth:`connect` (or ``async
    with AsyncClusterClient(...) as cluster``, which connects and closes)."""

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
        self._etcd, self._given = parse_seeds(seeds)
        self._token = token_bytes(token)
        P.encode_client_hello(self._token)  # checks the token's length
        self._tls = tls_context(tls)
        self.cluster_name = cluster_name
        opts = Options(connect_timeout, map_wait, reclaim_window, max_redirects, backoff_first, backoff_max)
        self._st: ClusterState[AsyncClient] = ClusterState(list(self._given), opts)
        self._news = 0
        self._changed: Optional[asyncio.Event] = None
        self._connecting: Dict[str, asyncio.Lock] = {}
        self._tasks: Set[asyncio.Task[None]] = set()
        self._connected = False

    # ---------------------------------------------------------------- connecting

    async def connect(self) -> AsyncClusterClient:
        """Reads the nodes from etcd (if given etcd endpoints) and the map from the first
        node that answers with one, as :class:`rangelock.ClusterClient` does; returns the
        client."""
        if self._connected:
            raise RuntimeError("the client is already connected")
        self._connected = True
        opts = self._st.opts
        if self._etcd:
            loop = asyncio.get_running_loop()
            read = functools.partial(etcd_nodes, self._given, self.cluster_name, opts.connect_timeout)
            self._st.seeds = await loop.run_in_executor(None, read)
        started, backoff = time.monotonic(), Backoff(opts)
        try:
            while True:
                failures = []
                refused: Optional[ConnectError] = None
                starting = False
                for seed in self._st.seeds:
                    try:
                        m = await self._read_map(seed)
                    except (AuthRequiredError, AuthFailedError) as e:
                        failures.append(f"{seed}: {e}")
                        refused = refused or e
                        continue
                    except FencedError as e:
                        starting = True  # a starting node has no map yet
                        failures.append(f"{seed}: {e}")
                        continue
                    except RangelockError as e:
                        failures.append(f"{seed}: {e}")
                        continue
                    self._st.offer(m, seed)
                    return self
                if refused is not None:
                    raise refused
                pause = backoff.next_pause()
                if not starting or time.monotonic() - started + pause > opts.map_wait:
                    raise ConnectError(
                        "no cluster node answered with a map: " + "; ".join(failures), self._st.seeds[0]
                    )
                await asyncio.sleep(pause)
        except BaseException:
            await self.close()
            raise

    async def _node(self, addr: str) -> Node[AsyncClient]:
        node = self._st.cached(addr)
        if node is not None:
            return node
        gate = self._connecting.setdefault(addr, asyncio.Lock())
        async with gate:
            node = self._st.cached(addr)
            if node is not None:
                return node
            if self._st.closed:
                raise ClientClosedError("the cluster client is closed")
            timeout = self._st.opts.connect_timeout
            client = AsyncClient(addr, token=self._token, tls=self._tls, connect_timeout=timeout)
            await client.connect()
            node = self._st.add_node(addr, client)
            client._watch(functools.partial(self._on_notice, node), functools.partial(self._on_lost, node))
            client._send(P.encode_watch_map)  # MAP_CHANGED notices from now on
            if self._st.closed:
                await client.close()
                raise ClientClosedError("the cluster client is closed")
            return node

    async def _read_map(self, addr: str) -> P.ClusterMap:
        node = await self._node(addr)
        limit = self._st.opts.connect_timeout
        _, r = await node.client._raw(P.encode_map, limit)
        if r is None:
            raise ConnectError(f"{addr}: no answer to MAP within {limit} s", addr)
        if r.status != P.Status.OK or r.map is None:
            raise error_for_status(r.status, r.value, f"MAP of {addr}")
        return r.map

    async def _refresh_map(self, avoid: Optional[str]) -> P.ClusterMap:
        """As the blocking client's: the newest map known after asking the candidates."""
        cached = self._st.map.revision
        failures: List[str] = []
        bad: Optional[ProtocolError] = None
        answered = False
        for addr in self._st.candidates(avoid) + ([avoid] if avoid else []):
            if addr == avoid and answered:
                break
            try:
                m = await self._read_map(addr)
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

    # ---------------------------------------------------------------- hooks (reader tasks)

    def _on_notice(self, node: Node[AsyncClient], r: P.Response) -> None:
        if r.status == P.Status.MAP_CHANGED:
            self._news += 1
            self._notify()
            return
        job = self._st.node_notice(node, r)
        if job is not None:
            self._start_reclaim(job)

    def _on_lost(self, node: Node[AsyncClient], loss: Loss) -> None:
        job = self._st.node_lost(node, loss)
        if job is not None:
            self._start_reclaim(job)

    def _notify(self) -> None:
        """Wakes every :meth:`_wait_for` (a guard changed, or a map change was pushed)."""
        ev, self._changed = self._changed, None
        if ev is not None:
            ev.set()

    async def _wait_for(self, predicate: Callable[[], bool], timeout: Optional[float]) -> bool:
        """Waits until ``predicate()`` is true (checked at every :meth:`_notify`), at most
        ``timeout`` seconds; returns it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not predicate():
            if self._changed is None:
                self._changed = asyncio.Event()
            ev = self._changed
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            try:
                await asyncio.wait_for(ev.wait(), left)
            except asyncio.TimeoutError:
                return predicate()
        return True

    async def _pause(self, seconds: float, since: int) -> None:
        await self._wait_for(lambda: self._news != since or self._st.closed, seconds)

    # ---------------------------------------------------------------- reclaiming

    def _start_reclaim(self, job: ReclaimJob[AsyncClient]) -> None:
        task = asyncio.ensure_future(self._reclaim(job))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _reclaim(self, job: ReclaimJob[AsyncClient]) -> None:
        opts, backoff = self._st.opts, Backoff(self._st.opts)
        while self._st.reclaimed(job):
            news = self._news
            try:
                m = await self._refresh_map(job.avoid)
            except RangelockError:
                m = self._st.map
            left = opts.reclaim_window - (time.monotonic() - job.started)
            limit = max(0.001, min(opts.connect_timeout, left))
            attempts = []
            for it in list(job.items):
                piece = it.wanted()
                addr = None if piece is None else reclaim_target(m, piece, it.hint, job.ask_old_owner)
                if piece is not None and addr is not None:
                    attempts.append(self._reclaim_one(it, piece, addr, limit))
            await asyncio.gather(*attempts)
            if not self._st.reclaimed(job):
                return
            left = opts.reclaim_window - (time.monotonic() - job.started)
            await self._pause(max(0.0, min(backoff.next_pause(), left)), news)

    async def _reclaim_one(
        self, it: ReclaimItem[AsyncClient], piece: GuardPiece, addr: str, limit: float
    ) -> None:
        g = it.guard
        try:
            node = await self._node(addr)
            since = len(node.notices)
            id, r = await node.client._raw(
                lambda id: P.encode_reclaim(id, piece.start, piece.end, g.mode, piece.token, g.name), limit
            )
        except RangelockError:
            return
        if r is None:
            node.client._unlock_nowait(id)  # releases a late acceptance
            return
        if r.status != P.Status.OK:
            self._st.refused(it, r)
            return
        try:
            job = self._st.place(g, piece, node, id, since, it.index)
        except (LockLostError, LookupError):
            return
        if job is not None:
            self._start_reclaim(job)

    # ---------------------------------------------------------------- locking

    async def lock(
        self,
        start: int,
        end: int,
        *,
        shared: bool = False,
        timeout: Optional[float] = None,
        name: NameArg = None,
    ) -> AsyncClusterGuard:
        """As :meth:`rangelock.ClusterClient.lock`. A cancelled wait withdraws the
        request and releases the pieces held."""
        wait, _ = lock_wait(timeout)
        return await self._lock(start, end, shared, wait, timeout, name)

    async def try_lock(
        self, start: int, end: int, *, shared: bool = False, name: NameArg = None
    ) -> AsyncClusterGuard:
        """As :meth:`rangelock.ClusterClient.try_lock`."""
        return await self._lock(start, end, shared, P.Wait.TRY, None, name)

    def range_lock(
        self, start: int, end: int, *, shared: bool = False, name: NameArg = None
    ) -> AsyncClusterLock:
        """An :class:`AsyncClusterLock` on ``[start, end)`` of the resource ``name``."""
        return AsyncClusterLock(self, start, end, shared, name)

    async def _lock(
        self, start: int, end: int, shared: bool, wait: P.Wait, timeout: Optional[float], name: NameArg
    ) -> AsyncClusterGuard:
        raw = check_lock(start, end, shared, name)
        if not self._connected:
            raise ClientClosedError("the cluster client is not connected")
        deadline = lock_deadline(timeout)
        crossings = 0
        while True:
            if self._st.closed:
                raise ClientClosedError("the cluster client is closed")
            g = self._st.new_guard(start, end, shared, raw, self._notify)
            try:
                for piece in pieces_of(g, self._st.map):
                    await self._acquire(g, piece, wait, deadline)
                return AsyncClusterGuard(self, g)
            except Crosses:
                await self._abandon(g)
                crossings += 1
                if crossings > self._st.opts.max_redirects:
                    raise NotOwnerError(
                        f"{g.what()}: gave up after {crossings} CROSSES_PARTITION answers "
                        "(the nodes' partitioning is not the map's)"
                    ) from None
                await self._refresh_map(None)
            except Exception:
                await self._abandon(g)
                raise
            except BaseException:
                for _, h in self._st.end_guard(g):
                    h.unlock_nowait()
                raise

    async def _abandon(self, g: GuardState[AsyncClient]) -> None:
        for _, h in self._st.end_guard(g):
            try:
                await h.node.client.unlock(h.lock_id)
            except RangelockError:
                pass

    async def _acquire(
        self, g: GuardState[AsyncClient], piece: P.Piece, wait: P.Wait, deadline: Optional[float]
    ) -> None:
        a = PieceAttempt(self._st.opts, piece, wait, deadline, g.what())
        while True:
            if self._st.closed:
                raise ClientClosedError("the cluster client is closed")
            addr = a.target(self._st.map)
            if addr is None:
                await self._unavailable(a, None)
                continue
            news = self._news
            try:
                node = await self._node(addr)
                since = len(node.notices)
                w, ms = a.lock_wait()
                id, r = await node.client._lock_response(piece.start, piece.end, g.shared, w, ms, g.name)
            except (AuthRequiredError, AuthFailedError):
                raise
            except (ConnectError, ConnectionLostError):
                await self._unavailable(a, addr)
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
                    newer = (await self._refresh_map(None)).revision > before
                except RangelockError:
                    newer = False
                if not newer:
                    await self._pause(a.pause(), news)
            elif step is Step.PAUSE:
                await self._pause(a.pause(), news)
            elif step is Step.UNAVAILABLE:
                await self._unavailable(a, addr)

    async def _unavailable(self, a: PieceAttempt, avoid: Optional[str]) -> None:
        news = self._news
        pause = a.unavailable()
        try:
            await self._refresh_map(avoid)
        except RangelockError:
            pass
        if pause:
            await self._pause(a.pause(), news)

    # ---------------------------------------------------------------- the rest

    @property
    def map(self) -> P.ClusterMap:
        """The cached cluster map (the newest read)."""
        return self._st.map

    async def refresh_map(self) -> P.ClusterMap:
        """Re-reads the map from a node and returns the newest the client knows."""
        return await self._refresh_map(None)

    @property
    def seeds(self) -> List[str]:
        """The node addresses the client started from (read from etcd, if given etcd
        endpoints)."""
        return list(self._st.seeds)

    async def close(self) -> None:
        """Closes every node connection (the nodes release the client's locks) and stops
        the reclaims. Closing again does nothing."""
        with self._st.mu:
            self._st.closed = True
            nodes = list(self._st.nodes.values())
        self._notify()
        for task in list(self._tasks):
            task.cancel()
        for node in nodes:
            await node.client.close()

    async def __aenter__(self) -> AsyncClusterClient:
        if not self._connected:
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
        state = "closed" if self._st.closed else ("connected" if self._connected else "not connected")
        return f"<rangelock.aio.AsyncClusterClient {','.join(self._st.seeds)} {state}>"
