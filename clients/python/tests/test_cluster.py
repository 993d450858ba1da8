"""The cluster clients (``rangelock.ClusterClient``, ``rangelock.aio.AsyncClusterClient``)
against a real cluster: a private etcd and three ``rangelock serve --cluster`` nodes of 8
partitions. Tests that take ``cluster_connect`` run with both clients.

The three-node cluster of most tests is shared by the module (the tests leave nothing
held); the failover test makes its own, since it kills a node. Without etcd the tests
skip, loudly, outside CI (install it with ``bash ci/install-etcd.sh``, or point
``RANGELOCK_ETCD`` at a binary); in CI (``CI`` set) they fail instead.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, TypeVar

import pytest

import rangelock
from conftest import Server, StartServer, server_binary
from rangelock import protocol as P
from test_names import (
    check_bad_names_are_refused_before_sending,
    check_names_are_separate_resources,
    check_range_lock_with_a_name,
)

#: The Python client's README.
README = Path(__file__).resolve().parents[1] / "README.md"

PARTITIONS = 8
#: Units per partition with 8 partitions.
SPAN = 1 << 61
T = TypeVar("T")

#: ``cluster_connect(seeds, **kwargs)``: a cluster client (blocking, or the asyncio one
#: behind the blocking interface).
ClusterConnect = Callable[..., Any]


# --------------------------------------------------------------------------- etcd and nodes


def etcd_binary() -> Optional[str]:
    """``$RANGELOCK_ETCD``, else ``etcd`` on ``PATH``, else ``/usr/bin/etcd``."""
    configured = os.environ.get("RANGELOCK_ETCD")
    if configured:
        return configured
    found = shutil.which("etcd")
    if found:
        return found
    return "/usr/bin/etcd" if os.access("/usr/bin/etcd", os.X_OK) else None


def in_ci() -> bool:
    return os.environ.get("CI", "") not in ("", "0", "false")


def require_etcd() -> str:
    binary = etcd_binary()
    if binary is None:
        if in_ci():
            pytest.fail("etcd is required in CI: run `bash ci/install-etcd.sh`", pytrace=False)
        pytest.skip(
            "SKIPPED: etcd is not installed, so the cluster tests did not run: install it with "
            "`bash ci/install-etcd.sh` (or set RANGELOCK_ETCD)"
        )
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def poll(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
    """Polls ``predicate`` until it returns a true value (returned); the test fails after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}", pytrace=False)
        time.sleep(interval)


class Etcd:
    """A private single-member etcd on free loopback ports, its data in ``dir``."""

    def __init__(self, binary: str, dir: Path) -> None:
        for attempt in range(5):
            client, peer = free_port(), free_port()
            self.endpoint = f"http://127.0.0.1:{client}"
            peer_url = f"http://127.0.0.1:{peer}"
            self.log = dir / f"etcd-{attempt}.log"
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(
                    [
                        binary,
                        f"--name=rl{attempt}",
                        f"--data-dir={dir / f'etcd-data-{attempt}'}",
                        f"--listen-client-urls={self.endpoint}",
                        f"--advertise-client-urls={self.endpoint}",
                        f"--listen-peer-urls={peer_url}",
                        f"--initial-advertise-peer-urls={peer_url}",
                        f"--initial-cluster=rl{attempt}={peer_url}",
                        "--initial-cluster-state=new",
                        # Elects itself within milliseconds; leases of 1 s work.
                        "--heartbeat-interval=10",
                        "--election-timeout=100",
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            if self._healthy():
                return
            self.stop()
            if "address already in use" not in self.log.read_text(errors="replace"):
                break
        pytest.fail(f"etcd did not start; its log:\n{self.log.read_text(errors='replace')[-3000:]}", pytrace=False)

    def _healthy(self) -> bool:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{self.endpoint}/health", timeout=1) as r:
                    if b'"health":"true"' in r.read():
                        return True
            except OSError:
                pass
            time.sleep(0.02)
        return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class Cluster:
    """etcd and three nodes ``a``, ``b``, ``c`` of 8 partitions (etcd TTL 2 s, grace 3 s),
    balanced (every partition served, each node 2 or 3 of them) when made."""

    def __init__(self, dir: Path) -> None:
        self.etcd = Etcd(require_etcd(), dir)
        self.nodes: Dict[str, Server] = {}
        try:
            for id in "abc":
                flags = ["--cluster", self.etcd.endpoint, "--node-id", id, "--partitions", str(PARTITIONS)]
                flags += ["--etcd-ttl", "2", "--grace-ms", "3000", "--max-stats-entries", "4000"]
                self.nodes[id] = Server(flags, dir)
            self.wait_balanced()
        except BaseException:
            self.stop()
            raise

    @property
    def seeds(self) -> List[str]:
        """The addresses of the nodes still running."""
        return [s.address for s in self.nodes.values() if s.proc.poll() is None]

    def addr(self, id: str) -> str:
        return self.nodes[id].address

    def id_at(self, addr: str) -> str:
        return next(id for id, s in self.nodes.items() if s.address == addr)

    def wait_balanced(self, timeout: float = 30.0) -> None:
        """Waits until every running node's map has every partition served by a running
        node, each with at least ``P // n`` of them, and the maps agree."""
        live = {id for id, s in self.nodes.items() if s.proc.poll() is None}

        def balanced() -> bool:
            seen = set()
            for addr in self.seeds:
                m = node_map(addr)
                if m is None or any(o.state != P.PartitionState.SERVING for o in m.owners):
                    return False
                owners = tuple(owner_ids(m))
                if set(owners) - live or min(owners.count(id) for id in live) < PARTITIONS // len(live):
                    return False
                seen.add(owners)
            return len(seen) == 1

        poll(balanced, timeout, "the cluster to balance")

    def stop(self) -> None:
        """Stops the nodes (SIGTERM, all at once), then etcd."""
        for s in self.nodes.values():
            if s.proc.poll() is None:
                s.proc.send_signal(signal.SIGTERM)
        for s in self.nodes.values():
            s.stop()
        self.etcd.stop()


def node_map(addr: str) -> Optional[P.ClusterMap]:
    """The map node ``addr`` serves (``None`` while it has none, or is unreachable)."""
    try:
        with rangelock.Client(addr, connect_timeout=2.0) as c:
            _, r = c._raw(P.encode_map, 2.0)
    except rangelock.RangelockError:
        return None
    return None if r is None else r.map


def owner_ids(m: P.ClusterMap) -> List[Optional[str]]:
    """The owner's node id of each partition."""
    return [None if o.node is None else m.nodes[o.node].id for o in m.owners]


def entries_at(addr: str) -> List[P.StatsEntry]:
    """Every holder and waiter of node ``addr`` (STATS_NAMED via the single-server client)."""
    with rangelock.Client(addr) as c:
        st = c.stats(P.MAX_TIMEOUT_MS)
        assert st.omitted == 0
        return st.entries


def held_at(addr: str, start: int, end: int, token: int, name: Optional[bytes] = None) -> bool:
    """Whether a session (not a move's placeholder, session 0) holds exactly that lock at
    ``addr``."""
    return any(
        e.held and e.session != 0 and (e.start, e.end, e.token, e.name) == (start, end, token, name)
        for e in entries_at(addr)
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    yield c
    c.stop()


@pytest.fixture(params=["blocking", "asyncio"])
def cluster_connect(request: pytest.FixtureRequest) -> Iterator[ClusterConnect]:
    """``cluster_connect(seeds, **kwargs)``: a :class:`rangelock.ClusterClient`, or (the
    ``asyncio`` run) a :class:`rangelock.aio.AsyncClusterClient` behind the same
    interface (``tests/bridge.py``); every one is closed after the test."""
    made: List[Any] = []
    if request.param == "blocking":
        factory: Callable[..., Any] = rangelock.ClusterClient
    else:
        from bridge import BridgedClusterClient

        factory = BridgedClusterClient

    def connect(seeds: Any, **kwargs: Any) -> Any:
        c = factory(seeds, **kwargs)
        made.append(c)
        return c

    yield connect
    for c in made:
        c.close()
    if request.param == "asyncio":
        from bridge import stop_all

        stop_all()


# --------------------------------------------------------------------------- named resources


def test_names_are_separate_resources(cluster: Cluster, cluster_connect: ClusterConnect) -> None:
    with cluster_connect(cluster.seeds) as c1, cluster_connect(cluster.seeds) as c2:
        check_names_are_separate_resources(c1, c2)


def test_range_lock_with_a_name(cluster: Cluster, cluster_connect: ClusterConnect) -> None:
    with cluster_connect(cluster.seeds) as c1, cluster_connect(cluster.seeds) as c2:
        check_range_lock_with_a_name(c1, c2)


def test_bad_names_are_refused_before_sending(cluster: Cluster, cluster_connect: ClusterConnect) -> None:
    with cluster_connect(cluster.seeds) as c:
        check_bad_names_are_refused_before_sending(c)
        with pytest.raises(rangelock.InvalidRangeError, match="4097 stripes"):
            c.try_lock(0, (P.MAX_PARTITIONS << 24) + 1, name="long")


def test_the_readme_cluster_examples_run(cluster: Cluster) -> None:
    text = README.read_text()
    section = text[text.index("## Cluster\n") : text.index("## Fencing tokens")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2, "README, Cluster: a blocking and an asyncio example"
    seeds = '["10.0.0.1:7878", "10.0.0.2:7878"]'
    out = io.StringIO()
    for source in blocks:
        assert seeds in source
        with contextlib.redirect_stdout(out):
            exec(compile(source.replace(seeds, repr(cluster.seeds)), str(README), "exec"), {})
    lines = out.getvalue().splitlines()
    assert len(lines) == 4, lines
    assert re.fullmatch(rf"partition 0: 0\.\.{SPAN} token 0x[0-9a-f]+", lines[0])
    assert re.fullmatch(rf"partition 1: {SPAN}\.\.{2 * SPAN} token 0x[0-9a-f]+", lines[1])
    assert re.fullmatch(r"db/orders: token 0x[0-9a-f]+", lines[2])
    assert re.fullmatch(r"db/orders: tokens \['0x[0-9a-f]+'\]", lines[3])


# --------------------------------------------------------------------------- routing


def test_a_range_across_partitions_is_one_guard_with_a_token_per_piece(
    cluster: Cluster, cluster_connect: ClusterConnect
) -> None:
    with cluster_connect(cluster.seeds) as c, cluster_connect(cluster.seeds) as other:
        m = c.map
        g = c.lock(SPAN - 10, 3 * SPAN + 10)
        assert [(p.partition, p.start, p.end) for p in g.pieces] == [
            (0, SPAN - 10, SPAN),
            (1, SPAN, 2 * SPAN),
            (2, 2 * SPAN, 3 * SPAN),
            (3, 3 * SPAN, 3 * SPAN + 10),
        ]
        for piece in g.pieces:
            node, owner = m.owner_of(piece.partition)
            # epoch << 32 | seq of the piece's partition, held at its owner.
            assert P.token_epoch(piece.token) == owner.epoch and piece.token & 0xFFFF_FFFF >= 1
            assert held_at(node.addr, piece.start, piece.end, piece.token)
        g.unlock()
        assert not g.valid and g.released

        # A named range: one piece per stripe of 2**24 units, placed by the name's hash.
        s = 1 << P.NAME_STRIPE_SHIFT
        h = P.name_hash(b"wide")
        named = c.lock(s - 1, 2 * s + 1, name="wide", shared=True)
        assert [(p.partition, p.start, p.end) for p in named.pieces] == [
            (h % 8, s - 1, s),
            ((h + 1) % 8, s, 2 * s),
            ((h + 2) % 8, 2 * s, 2 * s + 1),
        ]
        for piece in named.pieces:
            assert held_at(m.owner_of(piece.partition)[0].addr, piece.start, piece.end, piece.token, b"wide")
        named.unlock()

        # All or nothing: partition 0's piece is granted, partition 1's is not; the first is
        # released before the error.
        held = c.lock(SPAN + 5, SPAN + 6)
        with pytest.raises(rangelock.WouldBlockError):
            other.try_lock(0, 2 * SPAN)
        with pytest.raises(rangelock.TimedOutError):
            other.lock(0, 2 * SPAN, timeout=0.2)
        assert not [e for e in entries_at(m.owner_of(0)[0].addr) if e.start < SPAN]
        held.unlock()
        other.try_lock(0, 2 * SPAN).unlock()


def test_a_lock_held_on_one_node_blocks_another_clients_try(
    cluster: Cluster, cluster_connect: ClusterConnect
) -> None:
    with cluster_connect(cluster.seeds) as c1, cluster_connect(cluster.seeds) as c2:
        p = 5
        start = p * SPAN
        owner = c1.map.owner_of(p)[0].addr
        g = c1.lock(start, start + 100)
        with pytest.raises(rangelock.WouldBlockError):
            c2.try_lock(start + 50, start + 150)
        assert not c2.range_lock(start + 50, start + 150).acquire(blocking=False)
        # At the node itself, through the single-server client: held there; any other
        # node does not own the partition.
        with rangelock.Client(owner) as direct:
            with pytest.raises(rangelock.WouldBlockError):
                direct.try_lock(start, start + 1)
        elsewhere = next(a for a in cluster.seeds if a != owner)
        with rangelock.Client(elsewhere) as direct:
            with pytest.raises(rangelock.NotOwnerError):
                direct.try_lock(start, start + 1)
        g.unlock()
        c2.try_lock(start + 50, start + 150).unlock()


def test_a_thousand_names_spread_over_the_nodes(cluster: Cluster) -> None:
    """One lock on each of 1 000 names: each node (counted with its own STATS) holds at
    most half of them, each name at its stripe's partition's owner."""
    with rangelock.ClusterClient(cluster.seeds) as c:
        m = c.map
        guards = [c.lock(0, 1, name=f"spread/{i}") for i in range(1000)]
        counts = {}
        for id, server in cluster.nodes.items():
            names = [e.name for e in entries_at(server.address) if e.name and e.name.startswith(b"spread/")]
            counts[id] = len(names)
            for name in names:
                p = P.split_named(PARTITIONS, P.name_hash(name), 0, 1)[0].partition
                assert owner_ids(m)[p] == id
        assert sum(counts.values()) == 1000
        assert max(counts.values()) <= 500, counts
        for g in guards:
            g.unlock()


def test_seeds_from_etcd_and_connect_errors(
    cluster: Cluster, cluster_connect: ClusterConnect, start_server: StartServer
) -> None:
    with cluster_connect(cluster.etcd.endpoint) as c:
        assert sorted(c.seeds) == sorted(cluster.seeds)
        c.try_lock(0, 1).unlock()
    with pytest.raises(rangelock.ConnectError, match="'nosuch' has no live node"):
        cluster_connect([cluster.etcd.endpoint], cluster_name="nosuch")
    with pytest.raises(ValueError, match="not both"):
        cluster_connect([cluster.etcd.endpoint, cluster.seeds[0]])
    single = start_server()
    with pytest.raises(rangelock.ConnectError, match="NOT_CLUSTERED"):
        cluster_connect([single.address])
    with pytest.raises(rangelock.ConnectError, match="no cluster node answered with a map: 127.0.0.1:1: "):
        cluster_connect(["127.0.0.1:1"])


class FencedNode:
    """A fake node that answers MAP ``FENCED`` (as a starting node does) ``fenced`` times,
    then with a one-partition map naming itself; WATCH_MAP and KEEPALIVE ``OK``."""

    def __init__(self, fenced: float) -> None:
        self.fenced = fenced
        self.maps = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            f = conn.makefile("rb")
            if len(f.read(P.CLIENT_HELLO_LEN)) < P.CLIENT_HELLO_LEN:
                return
            hello = P.ServerHello(5, P.HelloStatus.ACCEPTED, P.GrantMode.PUSH, 1, 10_000, 65_536)
            conn.sendall(hello.encode())
            while True:
                head = f.read(4)
                if len(head) < 4:
                    return
                req = P.decode_request(head + f.read(int.from_bytes(head, "little")))
                r = P.Response(req.op, req.id, P.Status.OK, 1)
                if req.op == P.Op.MAP:
                    self.maps += 1
                    if self.maps <= self.fenced:
                        r = P.Response(req.op, req.id, P.Status.FENCED, 0)
                    else:
                        owner = P.PartitionOwner(0, P.PartitionState.SERVING, 1)
                        r = P.Response(req.op, req.id, P.Status.OK, 0, map=P.ClusterMap(1, 1, (P.NodeInfo("f", self.address),), (owner,)))
                conn.sendall(P.encode_response(r))

    def close(self) -> None:
        self.listener.close()


def test_connect_asks_a_starting_node_again_for_up_to_map_wait(cluster_connect: ClusterConnect) -> None:
    starting = FencedNode(fenced=3)
    try:
        c = cluster_connect([starting.address])
        assert starting.maps == 4 and c.map.nodes[0].addr == starting.address
    finally:
        starting.close()
    never = FencedNode(fenced=float("inf"))
    try:
        t0 = time.monotonic()
        with pytest.raises(rangelock.ConnectError, match="FENCED"):
            cluster_connect([never.address], map_wait=0.3)
        assert time.monotonic() - t0 < 5 and never.maps >= 2
    finally:
        never.close()


# --------------------------------------------------------------------------- failures


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A cluster of this test's own (the test disturbs it)."""
    c = Cluster(tmp_path)
    yield c
    c.stop()


def named_in(m: P.ClusterMap, node: str, prefix: str) -> str:
    """A name whose unit 0 lies in a partition ``node`` owns."""
    for i in range(10_000):
        name = f"{prefix}{i}"
        p = P.split_named(m.partitions, P.name_hash(name.encode()), 0, 1)[0].partition
        if owner_ids(m)[p] == node:
            return name
    raise AssertionError(f"no name on {node}")


def test_a_moved_or_killed_nodes_locks_are_reclaimed_or_reported_lost(
    own_cluster: Cluster, cluster_connect: ClusterConnect
) -> None:
    cl = own_cluster
    c = cluster_connect(cl.seeds)
    # A client whose reclaim window ends before any node can take a killed node's
    # partitions over (etcd TTL 2 s): its guards there are lost.
    hasty = cluster_connect(cl.seeds, reclaim_window=0.5)
    m = c.refresh_map()
    owners = owner_ids(m)

    # 1. A planned move: the owner gives the partition up (a NOT_OWNER notice) and the
    # client reclaims the lock at the new owner, with its token.
    p = 1
    source = owners[p]
    target = next(id for id in "abc" if id != source)
    moved = c.lock(p * SPAN, p * SPAN + 100)
    token = moved.pieces[0].token
    run = subprocess.run(
        [str(server_binary()), "cluster", "move", str(p), "--to", str(target), "--etcd", cl.etcd.endpoint, "--no-rebalance"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    poll(lambda: held_at(cl.addr(target), p * SPAN, p * SPAN + 100, token), 20, "the reclaim after the move")
    assert moved.valid and moved.pieces[0].token == token
    moved.unlock()

    # 2. A node killed (SIGKILL) while guards are held on it.
    m = c.refresh_map()
    owners = owner_ids(m)
    victim = owners[0]
    assert victim is not None
    q = 0
    name = named_in(m, victim, "failover/")
    unnamed = c.lock(q * SPAN, q * SPAN + 100)
    named = c.lock(0, 10, name=name)
    elsewhere = next(r for r in range(PARTITIONS) if owners[r] != victim)
    untouched = c.lock(elsewhere * SPAN, elsewhere * SPAN + 1)
    doomed = hasty.lock(q * SPAN + 200, q * SPAN + 300)
    named_p = named.pieces[0].partition
    before = [unnamed.pieces[0].token, named.pieces[0].token]
    cl.nodes[victim].kill()
    # Until etcd expires the dead node's lease (TTL 2 s) no node may take its partitions
    # over: a try there finds no owner to ask.
    with pytest.raises(rangelock.PartitionUnavailableError, match="partition 0 is unavailable") as unavailable:
        c.try_lock(q * SPAN + 500, q * SPAN + 501)
    assert unavailable.value.partition == q and isinstance(unavailable.value, BlockingIOError)

    # The hasty client: no owner took the partition within its window.
    reason = doomed.wait_lost(timeout=20)
    assert reason is not None and reason.partition == q and reason.cause is rangelock.LostCause.WINDOW_MISSED
    assert doomed.lost and not doomed.valid
    with pytest.raises(rangelock.LockLostError, match="lock lost: partition 0"):
        doomed.check()
    with pytest.raises(rangelock.LockLostError) as info:
        doomed.unlock()
    assert isinstance(info.value, ConnectionError) and info.value.reason == reason

    # The other client: reclaimed at the partitions' new owners, tokens unchanged (older
    # than the new owners' epochs).
    def reclaimed() -> Optional[P.ClusterMap]:
        m = node_map(next(a for a in cl.seeds))
        if m is None:
            return None
        for g, partition, token in ((unnamed, q, before[0]), (named, named_p, before[1])):
            node, owner = m.owner_of(partition) or (None, None)
            if node is None or owner is None or node.id == victim or owner.epoch <= P.token_epoch(token):
                return None
            piece = g.pieces[0]
            if not held_at(node.addr, piece.start, piece.end, piece.token, g.name):
                return None
        return m

    after = poll(reclaimed, 30, "the reclaims after the kill")
    assert after is not None
    for g, token in ((unnamed, before[0]), (named, before[1])):
        assert g.valid and not g.lost and g.pieces[0].token == token
    unnamed.unlock()
    named.unlock()
    untouched.unlock()

    # A later lock works, granted in the new owner's epoch.
    later = c.lock(q * SPAN, q * SPAN + 100, timeout=20)
    assert P.token_epoch(later.pieces[0].token) >= after.owners[q].epoch > P.token_epoch(before[0])
    later.unlock()
    again = c.lock(0, 10, name=name, timeout=20)
    assert again.pieces[0].token > before[1]
    again.unlock()
    hasty.try_lock(q * SPAN + 200, q * SPAN + 300).unlock()
