"""The encoders and decoders against the test vectors of docs/PROTOCOL.md §8, byte for
byte in both directions, and decode errors."""

from __future__ import annotations

import re
from typing import Dict, Set

import pytest

from conftest import REPO
from rangelock import protocol as P
from rangelock.errors import ProtocolError


def load_vectors() -> Dict[str, bytes]:
    text = (REPO / "docs" / "PROTOCOL.md").read_text()
    block = re.search(r"<!-- vectors:begin -->\s*```text\n(.*?)```\s*<!-- vectors:end -->", text, re.S)
    assert block, "docs/PROTOCOL.md has no vectors block"
    vectors: Dict[str, bytes] = {}
    name = None
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        if line[0].isspace():
            assert name is not None, line
            vectors[name] += bytes.fromhex(line.replace(" ", ""))
            continue
        name, hex_ = (s.strip() for s in line.split("=", 1))
        assert name not in vectors, f"vector {name} twice"
        vectors[name] = bytes.fromhex(hex_.replace(" ", ""))
    return vectors


VECTORS = load_vectors()
COVERED: Set[str] = set()


def vec(name: str) -> bytes:
    COVERED.add(name)
    return VECTORS[name]


def test_client_hellos() -> None:
    assert P.VERSION == 6 and P.MIN_VERSION == 3
    assert P.encode_client_hello() == vec("client-hello")
    assert P.encode_client_hello(b"secret") == vec("client-hello-token")
    assert P.encode_client_hello(version=3) == vec("client-hello-v3")
    assert P.encode_client_hello(version=2) == vec("client-hello-v2")
    assert P.decode_client_hello(vec("client-hello")) == (6, None)
    assert P.decode_client_hello(vec("client-hello-token")) == (6, b"secret")
    assert P.decode_client_hello(vec("client-hello-v3")) == (3, None)
    assert P.decode_client_hello(vec("client-hello-v2")) == (2, None)


def test_token_length_is_checked_before_sending() -> None:
    P.encode_client_hello(b"x" * P.MAX_TOKEN_LEN)
    for bad in (b"", b"x" * (P.MAX_TOKEN_LEN + 1)):
        with pytest.raises(ValueError, match="1 to 1024 bytes"):
            P.encode_client_hello(bad)


@pytest.mark.parametrize(
    "name,version,status,grant,session",
    [
        ("server-hello", 6, P.HelloStatus.ACCEPTED, P.GrantMode.PUSH, 1),
        ("server-hello-v3", 3, P.HelloStatus.ACCEPTED, P.GrantMode.PUSH, 2),
        ("server-hello-refused", 6, P.HelloStatus.UNSUPPORTED_VERSION, P.GrantMode.POLL, 0),
        ("server-hello-auth-required", 6, P.HelloStatus.AUTH_REQUIRED, P.GrantMode.PUSH, 0),
        ("server-hello-auth-failed", 6, P.HelloStatus.AUTH_FAILED, P.GrantMode.PUSH, 0),
        ("server-hello-tls-required", 6, P.HelloStatus.TLS_REQUIRED, P.GrantMode.PUSH, 0),
    ],
)
def test_server_hellos(name: str, version: int, status: P.HelloStatus, grant: P.GrantMode, session: int) -> None:
    h = P.decode_server_hello(vec(name))
    assert h == P.ServerHello(version, status, grant, session, 10_000, 65_536)
    assert h.encode() == VECTORS[name]


def test_server_hello_errors() -> None:
    good = VECTORS["server-hello"]
    with pytest.raises(ProtocolError, match="bad magic"):
        P.decode_server_hello(b"HTTP" + good[4:])
    with pytest.raises(ProtocolError, match="status"):
        P.decode_server_hello(good[:6] + b"\x05" + good[7:])
    with pytest.raises(ProtocolError, match="grant"):
        P.decode_server_hello(good[:7] + b"\x02" + good[8:])
    with pytest.raises(ProtocolError):
        P.decode_server_hello(good[:23])


REQUESTS = [
    ("lock-exclusive-forever", P.encode_lock(1, 0, 4096, P.Mode.EXCLUSIVE, P.Wait.FOREVER),
     P.Request(P.Op.LOCK, 1, 0, 4096, P.Mode.EXCLUSIVE, P.Wait.FOREVER, 0)),
    ("lock-shared-timeout", P.encode_lock(2, 100, 200, P.Mode.SHARED, P.Wait.TIMEOUT, 250),
     P.Request(P.Op.LOCK, 2, 100, 200, P.Mode.SHARED, P.Wait.TIMEOUT, 250)),
    ("lock-try-full-domain", P.encode_lock(3, 0, P.U64_MAX, P.Mode.EXCLUSIVE, P.Wait.TRY),
     P.Request(P.Op.LOCK, 3, 0, P.U64_MAX, P.Mode.EXCLUSIVE, P.Wait.TRY, 0)),
    ("lock-named", P.encode_lock_named(10, 0, 100, P.Mode.EXCLUSIVE, P.Wait.FOREVER, 0, b"db/orders"),
     P.Request(P.Op.LOCK_NAMED, 10, 0, 100, P.Mode.EXCLUSIVE, P.Wait.FOREVER, 0, name=b"db/orders")),
    ("unlock", P.encode_unlock(4, 1), P.Request(P.Op.UNLOCK, 4, target=1)),
    ("cancel", P.encode_cancel(5, 2), P.Request(P.Op.CANCEL, 5, target=2)),
    ("poll", P.encode_poll(6, 2), P.Request(P.Op.POLL, 6, target=2)),
    ("keepalive", P.encode_keepalive(7), P.Request(P.Op.KEEPALIVE, 7)),
    ("stats", P.encode_stats(8, 16), P.Request(P.Op.STATS, 8, max_entries=16)),
    ("stats-named", P.encode_stats_named(9, 16), P.Request(P.Op.STATS_NAMED, 9, max_entries=16)),
    ("reclaim", P.encode_reclaim(10, 0x1000, 0x2000, P.Mode.EXCLUSIVE, 0x00000007_00000003),
     P.Request(P.Op.RECLAIM, 10, 0x1000, 0x2000, P.Mode.EXCLUSIVE, token=0x00000007_00000003)),
    ("map", P.encode_map(11), P.Request(P.Op.MAP, 11)),
    ("shm-attach", P.encode_shm_attach(18), P.Request(P.Op.SHM_ATTACH, 18)),
    ("watch-map", P.encode_watch_map(24), P.Request(P.Op.WATCH_MAP, 24)),
    ("cache-on", P.encode_cache_on(26), P.Request(P.Op.CACHE_ON, 26)),
    ("lock-cached", P.encode_lock_cached(28, 0x1000, 0x2000, P.Mode.EXCLUSIVE, P.Wait.FOREVER, 0, 0, 0x100000),
     P.Request(P.Op.LOCK_CACHED, 28, 0x1000, 0x2000, P.Mode.EXCLUSIVE, P.Wait.FOREVER, 0, name=b"",
               desired_start=0, desired_end=0x100000)),
    ("give-back", P.encode_give_back(29, 28, 0x4000, 0x5000),
     P.Request(P.Op.GIVE_BACK, 29, 0x4000, 0x5000, target=28, downgrade=False)),
    ("give-back-used", P.encode_give_back(31, 28, 0x4000, 0x5000, used=3),
     P.Request(P.Op.GIVE_BACK, 31, 0x4000, 0x5000, target=28, downgrade=False, used=3)),
    ("stats-cached", P.encode_stats_cached(30, 16), P.Request(P.Op.STATS_CACHED, 30, max_entries=16)),
]


@pytest.mark.parametrize("name,encoded,decoded", REQUESTS, ids=[r[0] for r in REQUESTS])
def test_requests(name: str, encoded: bytes, decoded: P.Request) -> None:
    assert encoded == vec(name)
    assert P.decode_request(VECTORS[name]) == decoded


S = P.Status
STATS_BODY = P.Stats(
    P.Counters(2, 3, 1, 0, 7, 5, 1, 0, 0, 0, 1),
    [P.StatsEntry(1, 1, 0, 4096, P.Mode.EXCLUSIVE, True, 7)],
)
NAMED = P.Stats(
    P.Counters(1, 1, 2, 0, 2, 0, 0, 0, 0, 0, 0, names_live=1, named_holders=1),
    [
        P.StatsEntry(1, 1, 0, 16, P.Mode.EXCLUSIVE, True, 1),
        P.StatsEntry(1, 2, 0, 16, P.Mode.SHARED, True, 2, name=b"db/orders"),
    ],
)
CACHED = P.Stats(
    P.Counters(2, 2, 1, 1, 1, 0, 0, 0, 0, 0, 0, cached_extents=1, callbacks=1, cache_expanded=1),
    [
        P.StatsEntry(1, 28, 0, 0x100000, P.Mode.EXCLUSIVE, True, 42, kept=True),
        P.StatsEntry(2, 1, 0x4000, 0x5000, P.Mode.SHARED, False, 0),
    ],
)
TRUNCATED = P.Stats(
    P.Counters(1, 2, 3, 1, 3, 0, 0, 0, 0, 0, 0),
    [P.StatsEntry(2, 5, 0, 16, P.Mode.SHARED, True, 1)],
    omitted=3,
)
RESPONSES = [
    ("resp-lock-granted", P.Response(P.Op.LOCK, 1, S.OK, 42)),
    ("resp-lock-pending", P.Response(P.Op.LOCK, 2, S.PENDING, 0)),
    ("resp-unlock-already-released", P.Response(P.Op.UNLOCK, 4, S.ALREADY_RELEASED, 0)),
    ("resp-unknown-op", P.Response(P.Op.UNKNOWN, 9, S.UNKNOWN_OP, 0)),
    ("resp-stats", P.Response(P.Op.STATS, 8, S.OK, 0, stats=STATS_BODY)),
    ("resp-stats-truncated", P.Response(P.Op.STATS, 23, S.OK, 3, stats=TRUNCATED)),
    ("resp-stats-named", P.Response(P.Op.STATS_NAMED, 9, S.OK, 0, stats=NAMED)),
    ("resp-reclaim-ok", P.Response(P.Op.RECLAIM, 10, S.OK, 0x00000007_00000003)),
    ("resp-map-not-clustered", P.Response(P.Op.MAP, 11, S.NOT_CLUSTERED, 0)),
    ("resp-lock-not-owner",
     P.Response(P.Op.LOCK, 12, S.NOT_OWNER, 41, owner=P.OwnerHint("n2", "10.0.0.2:7878"))),
    ("resp-lock-not-owner-unknown", P.Response(P.Op.LOCK, 13, S.NOT_OWNER, 0, owner=P.OwnerHint("", ""))),
    ("resp-lock-in-grace", P.Response(P.Op.LOCK, 14, S.IN_GRACE, 1500)),
    ("resp-lock-crosses-partition", P.Response(P.Op.LOCK, 15, S.CROSSES_PARTITION, 1 << 62)),
    ("resp-reclaim-refused", P.Response(P.Op.RECLAIM, 16, S.RECLAIM_REFUSED, 0)),
    ("resp-lock-fenced", P.Response(P.Op.LOCK, 17, S.FENCED, 0)),
    ("notice-not-owner", P.Response(P.Op.NOTICE, 0, S.NOT_OWNER, 2)),
    ("notice-fenced", P.Response(P.Op.NOTICE, 0, S.FENCED, P.U64_MAX)),
    ("resp-shm-unavailable", P.Response(P.Op.SHM_ATTACH, 19, S.SHM_UNAVAILABLE, 0)),
    ("resp-shm-full", P.Response(P.Op.SHM_ATTACH, 20, S.SHM_FULL, 16)),
    ("resp-shm-already-attached", P.Response(P.Op.SHM_ATTACH, 21, S.SHM_ALREADY_ATTACHED, 3)),
    ("resp-lock-forbidden", P.Response(P.Op.LOCK, 22, S.FORBIDDEN, 0)),
    ("notice-session-ended-lease", P.Response(P.Op.NOTICE, 0, S.SESSION_ENDED, 1)),
    ("notice-session-ended-shutdown", P.Response(P.Op.NOTICE, 0, S.SESSION_ENDED, 2)),
    ("notice-session-ended-token-revoked", P.Response(P.Op.NOTICE, 0, S.SESSION_ENDED, 6)),
    ("resp-watch-map", P.Response(P.Op.WATCH_MAP, 24, S.OK, 42)),
    ("resp-watch-map-not-clustered", P.Response(P.Op.WATCH_MAP, 25, S.NOT_CLUSTERED, 0)),
    ("notice-map-changed", P.Response(P.Op.NOTICE, 0, S.MAP_CHANGED, 43)),
    ("resp-cache-on", P.Response(P.Op.CACHE_ON, 26, S.OK, 1)),
    ("resp-cache-unavailable", P.Response(P.Op.CACHE_ON, 27, S.CACHE_UNAVAILABLE, 0)),
    ("resp-give-back", P.Response(P.Op.GIVE_BACK, 29, S.OK, 0)),
    ("resp-stats-cached", P.Response(P.Op.STATS_CACHED, 30, S.OK, 0, stats=CACHED)),
]


def test_cached_lock_bodies() -> None:
    # Version 6: this client never sends CACHE_ON, but it decodes what a cached session
    # would get: a LOCK_CACHED grant and a CALLBACK notice, bodies kept as bytes.
    r = P.decode_response(vec("resp-lock-cached")[4:])
    assert (r.op, r.id, r.status, r.value) == (P.Op.LOCK_CACHED, 28, S.OK, 42)
    assert r.cached_grant() == (0, 0x100000, True)
    assert P.encode_response(r) == VECTORS["resp-lock-cached"]
    n = P.decode_response(vec("notice-callback")[4:])
    assert n.is_notice and (n.status, n.value) == (S.CALLBACK, 28)
    assert n.callback() == (0x4000, 0x5000, P.Mode.SHARED)
    assert P.encode_response(n) == VECTORS["notice-callback"]
    # A CALLBACK notice without its body, a LOCK_CACHED grant without one: refused.
    with pytest.raises(ProtocolError):
        P.decode_response(VECTORS["notice-callback"][4:22])
    with pytest.raises(ProtocolError):
        P.decode_response(VECTORS["resp-lock-cached"][4:22])


def test_session_ended_notices() -> None:
    for name, reason in (
        ("notice-session-ended-lease", P.EndReason.LEASE_EXPIRED),
        ("notice-session-ended-shutdown", P.EndReason.SHUTDOWN),
        ("notice-session-ended-token-revoked", P.EndReason.TOKEN_REVOKED),
    ):
        r = P.decode_response(VECTORS[name][4:])
        assert r.is_notice and P.end_reason(r.value) is reason
        assert P.encode_notice(S.SESSION_ENDED, reason) == VECTORS[name]
    # A reason a later server may add is kept as a number.
    assert P.end_reason(99) == 99 and not isinstance(P.end_reason(99), P.EndReason)


@pytest.mark.parametrize("name,decoded", RESPONSES, ids=[r[0] for r in RESPONSES])
def test_responses(name: str, decoded: P.Response) -> None:
    frame = vec(name)
    assert int.from_bytes(frame[:4], "little") == len(frame) - 4
    assert P.decode_response(frame[4:]) == decoded
    assert P.encode_response(decoded) == frame


def test_bodies_this_client_keeps_undecoded() -> None:
    # SHM_ATTACH answers: this client never asks for them; their bodies are kept as bytes
    # (and re-encoded unchanged). A MAP answer's body is kept too, besides its map.
    for name, op, id, value in (("resp-map", P.Op.MAP, 11, 0), ("resp-shm-attached", P.Op.SHM_ATTACH, 18, 3)):
        frame = vec(name)
        r = P.decode_response(frame[4:])
        assert (r.op, r.id, r.status, r.value) == (op, id, S.OK, value)
        assert r.body == frame[4 + 18 :]
        assert P.encode_response(r) == frame


#: The map of ``resp-map`` (§8): revision 42, 4 partitions, nodes n1 and n2; partition 0
#: served by n1 in epoch 40, 1 by n2 in epoch 41, 2 in n2's grace period in epoch 42, 3
#: unowned.
MAP = P.ClusterMap(
    42,
    4,
    (P.NodeInfo("n1", "10.0.0.1:7878"), P.NodeInfo("n2", "10.0.0.2:7878")),
    (
        P.PartitionOwner(0, P.PartitionState.SERVING, 40),
        P.PartitionOwner(1, P.PartitionState.SERVING, 41),
        P.PartitionOwner(1, P.PartitionState.GRACE, 42),
        P.PartitionOwner(None, P.PartitionState.UNOWNED, 0),
    ),
)


def test_map_body() -> None:
    frame = vec("resp-map")
    r = P.decode_response(frame[4:])
    assert r.map == MAP
    assert MAP.encode() == frame[4 + 18 :]
    assert P.encode_response(P.Response(P.Op.MAP, 11, S.OK, 0, map=MAP)) == frame
    assert MAP.owner_of(2) == (MAP.nodes[1], MAP.owners[2])
    assert MAP.owner_of(3) is None and MAP.owner_of(4) is None
    body = frame[4 + 18 :]
    for bad, match in (
        (body[:-1], "owner entries"),
        (body + b"\x00", "owner entries"),
        (body[:8] + (3).to_bytes(4, "little") + body[12:], "power of two"),
        (body[:14] + b"\x02\xff\xfe" + body[17:], "UTF-8"),
        (body[:16], "truncated"),
        (body[:-22] + b"\x07\x00" + body[-20:], "names node 7"),
        (body[:-20] + b"\x03" + body[-19:], "state byte 3"),
    ):
        with pytest.raises(ProtocolError, match=match):
            P.ClusterMap.decode(bad)
    with pytest.raises(ProtocolError):
        P.decode_response(frame[4:-1])


def test_reclaim_named() -> None:
    # RECLAIM_NAMED (no vector in §8): RECLAIM's payload, then name_len u16, name.
    frame = P.encode_reclaim(12, 0x1000, 0x2000, P.Mode.SHARED, 7 << 32 | 3, b"db/orders")
    assert frame == P.encode_reclaim_named(12, 0x1000, 0x2000, P.Mode.SHARED, 7 << 32 | 3, b"db/orders")
    assert frame[4] == P.Op.RECLAIM_NAMED and len(frame) == 4 + 9 + 27 + 9
    assert frame[4 + 9 :] == VECTORS["reclaim"][4 + 9 :][:16] + b"\x01" + VECTORS["reclaim"][-8:] + b"\x09\x00db/orders"
    assert P.decode_request(frame) == P.Request(
        P.Op.RECLAIM_NAMED, 12, 0x1000, 0x2000, P.Mode.SHARED, token=7 << 32 | 3, name=b"db/orders"
    )
    with pytest.raises(ProtocolError, match="RECLAIM_NAMED"):
        P.decode_request(frame[: 4 + 9 + 25] + b"\x0a\x00db/orders")


def test_placement() -> None:
    """§7.1: partitions by the top bits, names by stripes of 2**24 units from their hash."""
    assert P.name_hash(b"abc") == 0xBA7816BF8F01CFEA
    assert P.name_hash(b"") == 0xE3B0C44298FC1C14
    # The crossing of resp-lock-crosses-partition: 4 partitions split at 2**62.
    boundary = int.from_bytes(VECTORS["resp-lock-crosses-partition"][-8:], "little")
    assert P.split(4, boundary - 1, boundary + 1) == [
        P.Piece(0, boundary - 1, boundary),
        P.Piece(1, boundary, boundary + 1),
    ]
    assert P.split(4, 0, 1 << 62) == [P.Piece(0, 0, 1 << 62)]
    assert len(P.split(4096, 0, P.U64_MAX)) == 4096
    assert P.split(4096, 0, P.U64_MAX)[-1].end == P.U64_MAX
    assert P.split(1, 0, P.U64_MAX) == [P.Piece(0, 0, P.U64_MAX)]
    s = 1 << P.NAME_STRIPE_SHIFT
    assert P.split_named(4, 6, s - 1, 2 * s + 5) == [
        P.Piece(2, s - 1, s),
        P.Piece(3, s, 2 * s),
        P.Piece(0, 2 * s, 2 * s + 5),
    ]
    assert P.split_named(4, P.U64_MAX, s, s + 1) == [P.Piece(0, s, s + 1)]
    assert P.split_named(4, 0, P.U64_MAX - 3, P.U64_MAX) == [P.Piece(3, P.U64_MAX - 3, P.U64_MAX)]
    assert P.split_named(1, 9, 0, P.U64_MAX) == [P.Piece(0, 0, P.U64_MAX)]
    assert P.token_epoch(7 << 32 | 3) == 7
    with pytest.raises(ValueError):
        P.split(3, 0, 1)


def test_response_decode_errors() -> None:
    granted = VECTORS["resp-lock-granted"][4:]
    with pytest.raises(ProtocolError, match="shorter than 18"):
        P.decode_response(granted[:17])
    with pytest.raises(ProtocolError, match="not a response"):
        P.decode_response(b"\x01" + granted[1:])
    with pytest.raises(ProtocolError, match="unknown status"):
        P.decode_response(granted[:9] + b"\x29" + granted[10:])
    with pytest.raises(ProtocolError, match="unexpected bytes"):
        P.decode_response(granted + b"\x00")
    stats = VECTORS["resp-stats"][4:]
    with pytest.raises(ProtocolError, match="STATS body"):
        P.decode_response(stats[:-1])
    named = VECTORS["resp-stats-named"][4:]
    for cut in (1, 9, 11):
        with pytest.raises(ProtocolError, match="STATS_NAMED"):
            P.decode_response(named[:-cut])
    with pytest.raises(ProtocolError, match="after its entries"):
        P.decode_response(named + b"\x00")
    # State 2 (a kept extent) is STATS_CACHED's alone; its body is cut like STATS_NAMED's.
    cached = VECTORS["resp-stats-cached"][4:]
    kept_at = 18 + 17 * 8 + 4 + 33
    assert cached[kept_at] == 2
    as_named = bytes([0x8E]) + named[1:18] + cached[18 : 18 + 13 * 8] + cached[18 + 17 * 8 :]
    with pytest.raises(ProtocolError, match="STATS_NAMED entry: bad mode 0 or state 2"):
        P.decode_response(as_named)
    with pytest.raises(ProtocolError, match="STATS_CACHED entry: bad mode 0 or state 3"):
        P.decode_response(cached[:kept_at] + b"\x03" + cached[kept_at + 1 :])
    for cut in (1, 9, 100):
        with pytest.raises(ProtocolError, match="STATS_CACHED"):
            P.decode_response(cached[:-cut])
    with pytest.raises(ProtocolError, match="notice"):
        P.decode_response(b"\x89" + (5).to_bytes(8, "little") + granted[9:])


def test_every_status_has_its_exception() -> None:
    import rangelock.errors as E

    for status in P.Status:
        if status in (S.OK, S.PENDING, S.SESSION_ENDED, S.MAP_CHANGED, S.CALLBACK):
            continue  # SESSION_ENDED, MAP_CHANGED, CALLBACK: notices' statuses, never answers
        e = E.error_for_status(status, 0, "lock 0..1 exclusive")
        assert type(e) is not E.ServerError, status
        assert e.status is status
        assert str(e).startswith("lock 0..1 exclusive: "), str(e)
        assert status.name in str(e) or type(e).meaning in str(e)
    assert isinstance(E.error_for_status(S.FORBIDDEN), E.ForbiddenError)
    assert isinstance(E.error_for_status(S.WOULD_BLOCK), E.LockNotGrantedError)
    assert isinstance(E.error_for_status(S.INVALID_RANGE), ValueError)


def test_every_vector_is_checked() -> None:
    # Runs last in this file (pytest keeps file order): a vector added to the document
    # must get a check here.
    assert set(VECTORS) - COVERED == set()
