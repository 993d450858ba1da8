//! The hex test vectors of `docs/PROTOCOL.md`, checked byte for byte in both directions.

use std::collections::BTreeMap;
use std::time::Duration;

use rangelock_proto::*;

const DOC: &str = include_str!("../../../docs/PROTOCOL.md");

/// `name = hex bytes` lines (continued on following lines without `=`) between the
/// vector markers of the document.
fn doc_vectors() -> BTreeMap<String, Vec<u8>> {
    let start = DOC.find("<!-- vectors:begin -->").expect("begin marker");
    let end = DOC.find("<!-- vectors:end -->").expect("end marker");
    let mut hex: Vec<(String, String)> = Vec::new();
    for line in DOC[start..end].lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with("```") || t.starts_with("<!--") {
            continue;
        }
        match t.split_once('=') {
            Some((name, h)) => hex.push((name.trim().to_owned(), h.to_owned())),
            None => hex.last_mut().expect("continuation after a vector").1.push_str(t),
        }
    }
    let mut out = BTreeMap::new();
    for (name, h) in hex {
        let h: String = h.chars().filter(|c| !c.is_whitespace()).collect();
        assert!(h.len() % 2 == 0, "odd hex length in {name}");
        let bytes = (0..h.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).expect("hex"))
            .collect();
        assert!(out.insert(name.clone(), bytes).is_none(), "duplicate {name}");
    }
    out
}

// A test table of a few dozen values: the size of the response variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Msg {
    ClientHello(ClientHello),
    ServerHello(ServerHello),
    Request(RequestFrame<'static>),
    Response(ResponseFrame),
}

fn expected() -> Vec<(&'static str, Msg)> {
    let req = |id, request| Msg::Request(RequestFrame { id, request });
    let stats = StatsBody {
        counters: Counters {
            sessions_open: 2,
            sessions_total: 3,
            holders: 1,
            waiters: 0,
            grants: 7,
            releases: 5,
            released_by_close: 1,
            would_block: 0,
            timeouts: 0,
            cancels: 0,
            errors: 1,
            ..Counters::default()
        },
        entries: vec![StatsEntry {
            session: 1,
            id: 1,
            start: 0,
            end: 4096,
            mode: Mode::Exclusive,
            state: EntryState::Held,
            token: 7,
            name: None,
            kept: false,
        }],
        omitted: 0,
    };
    // Cut short: 3 holders and 1 waiter, one listed, 3 left out (the answer's value).
    let truncated = StatsBody {
        counters: Counters {
            sessions_open: 1,
            sessions_total: 2,
            holders: 3,
            waiters: 1,
            grants: 3,
            ..Counters::default()
        },
        entries: vec![StatsEntry {
            session: 2,
            id: 5,
            start: 0,
            end: 16,
            mode: Mode::Shared,
            state: EntryState::Held,
            token: 1,
            name: None,
            kept: false,
        }],
        omitted: 3,
    };
    // Version 5's STATS_NAMED: an unnamed and a named holder, with the names' counters.
    let entry = |id, mode, token, name: Option<&[u8]>| StatsEntry {
        session: 1,
        id,
        start: 0,
        end: 16,
        mode,
        state: EntryState::Held,
        token,
        name: name.map(Into::into),
        kept: false,
    };
    let named = StatsBody {
        counters: Counters {
            sessions_open: 1,
            sessions_total: 1,
            holders: 2,
            grants: 2,
            names_live: 1,
            named_holders: 1,
            ..Counters::default()
        },
        entries: vec![
            entry(1, Mode::Exclusive, 1, None),
            entry(2, Mode::Shared, 2, Some(b"db/orders")),
        ],
        omitted: 0,
    };
    // Version 6's STATS_CACHED, after `notice-callback`: session 1 keeps the extent of
    // `resp-lock-cached`, called back for session 2's shared wait.
    let cached = StatsBody {
        counters: Counters {
            sessions_open: 2,
            sessions_total: 2,
            holders: 1,
            waiters: 1,
            grants: 1,
            cached_extents: 1,
            callbacks: 1,
            cache_expanded: 1,
            ..Counters::default()
        },
        entries: vec![
            StatsEntry {
                session: 1,
                id: 28,
                start: 0,
                end: 0x10_0000,
                mode: Mode::Exclusive,
                state: EntryState::Held,
                token: 42,
                name: None,
                kept: true,
            },
            StatsEntry {
                session: 2,
                id: 1,
                start: 0x4000,
                end: 0x5000,
                mode: Mode::Shared,
                state: EntryState::Waiting,
                token: 0,
                name: None,
                kept: false,
            },
        ],
        omitted: 0,
    };
    vec![
        ("client-hello", Msg::ClientHello(ClientHello::new(VERSION))),
        // The token `secret`.
        ("client-hello-token", Msg::ClientHello(ClientHello::with_token(Some(b"secret")))),
        // A version 3 client's hello: accepted with `server-hello-v3`.
        ("client-hello-v3", Msg::ClientHello(ClientHello::new(MIN_VERSION))),
        // A version 2 client's hello: answered by `server-hello-refused`.
        ("client-hello-v2", Msg::ClientHello(ClientHello::new(2))),
        (
            "server-hello-v3",
            Msg::ServerHello(ServerHello {
                version: 3,
                status: HelloStatus::Accepted,
                grant: GrantMode::Push,
                session: 2,
                lease_ms: 10_000,
                max_frame: 65_536,
            }),
        ),
        (
            "server-hello",
            Msg::ServerHello(ServerHello {
                version: VERSION,
                status: HelloStatus::Accepted,
                grant: GrantMode::Push,
                session: 1,
                lease_ms: 10_000,
                max_frame: 65_536,
            }),
        ),
        (
            "server-hello-refused",
            Msg::ServerHello(ServerHello {
                version: VERSION,
                status: HelloStatus::UnsupportedVersion,
                grant: GrantMode::Poll,
                session: 0,
                lease_ms: 10_000,
                max_frame: 65_536,
            }),
        ),
        (
            "server-hello-auth-required",
            Msg::ServerHello(ServerHello {
                version: VERSION,
                status: HelloStatus::AuthRequired,
                grant: GrantMode::Push,
                session: 0,
                lease_ms: 10_000,
                max_frame: 65_536,
            }),
        ),
        (
            "server-hello-auth-failed",
            Msg::ServerHello(ServerHello {
                version: VERSION,
                status: HelloStatus::AuthFailed,
                grant: GrantMode::Push,
                session: 0,
                lease_ms: 10_000,
                max_frame: 65_536,
            }),
        ),
        (
            "server-hello-tls-required",
            Msg::ServerHello(ServerHello {
                version: VERSION,
                status: HelloStatus::TlsRequired,
                grant: GrantMode::Push,
                session: 0,
                lease_ms: 10_000,
                max_frame: 65_536,
            }),
        ),
        (
            "lock-exclusive-forever",
            req(
                1,
                Request::Lock { start: 0, end: 4096, mode: Mode::Exclusive, wait: Wait::Forever },
            ),
        ),
        (
            "lock-shared-timeout",
            req(
                2,
                Request::Lock {
                    start: 100,
                    end: 200,
                    mode: Mode::Shared,
                    wait: Wait::Timeout(Duration::from_millis(250)),
                },
            ),
        ),
        (
            "lock-try-full-domain",
            req(
                3,
                Request::Lock { start: 0, end: u64::MAX, mode: Mode::Exclusive, wait: Wait::Try },
            ),
        ),
        (
            "lock-named",
            req(
                10,
                Request::LockNamed {
                    start: 0,
                    end: 100,
                    mode: Mode::Exclusive,
                    wait: Wait::Forever,
                    name: b"db/orders",
                },
            ),
        ),
        ("unlock", req(4, Request::Unlock { target: 1 })),
        ("cancel", req(5, Request::Cancel { target: 2 })),
        ("poll", req(6, Request::Poll { target: 2 })),
        ("keepalive", req(7, Request::Keepalive)),
        ("stats", req(8, Request::Stats { max_entries: 16 })),
        ("stats-named", req(9, Request::StatsNamed { max_entries: 16 })),
        ("resp-lock-granted", Msg::Response(ResponseFrame::new(op::LOCK, 1, Status::Ok, 42))),
        ("resp-lock-pending", Msg::Response(ResponseFrame::new(op::LOCK, 2, Status::Pending, 0))),
        (
            "resp-unlock-already-released",
            Msg::Response(ResponseFrame::new(op::UNLOCK, 4, Status::AlreadyReleased, 0)),
        ),
        (
            "resp-unknown-op",
            Msg::Response(ResponseFrame::new(op::UNKNOWN, 9, Status::UnknownOp, 0)),
        ),
        ("resp-stats", Msg::Response(ResponseFrame::stats(8, stats))),
        ("resp-stats-truncated", Msg::Response(ResponseFrame::stats(23, truncated))),
        ("resp-stats-named", Msg::Response(ResponseFrame::stats_named(9, named))),
        // Cluster messages (§7).
        (
            "reclaim",
            req(
                10,
                Request::Reclaim {
                    start: 0x1000,
                    end: 0x2000,
                    mode: Mode::Exclusive,
                    token: token::pack(7, 3),
                },
            ),
        ),
        ("map", req(11, Request::Map)),
        (
            "resp-reclaim-ok",
            Msg::Response(ResponseFrame::new(op::RECLAIM, 10, Status::Ok, token::pack(7, 3))),
        ),
        ("resp-map", Msg::Response(ResponseFrame::map(11, cluster_map()))),
        (
            "resp-map-not-clustered",
            Msg::Response(ResponseFrame::new(op::MAP, 11, Status::NotClustered, 0)),
        ),
        (
            "resp-lock-not-owner",
            Msg::Response(ResponseFrame::not_owner(
                op::LOCK,
                12,
                41,
                OwnerHint::new("n2", "10.0.0.2:7878").unwrap(),
            )),
        ),
        (
            "resp-lock-not-owner-unknown",
            Msg::Response(ResponseFrame::not_owner(op::LOCK, 13, 0, OwnerHint::default())),
        ),
        (
            "resp-lock-in-grace",
            Msg::Response(ResponseFrame::new(op::LOCK, 14, Status::InGrace, 1500)),
        ),
        (
            "resp-lock-crosses-partition",
            Msg::Response(ResponseFrame::new(op::LOCK, 15, Status::CrossesPartition, 1 << 62)),
        ),
        (
            "resp-reclaim-refused",
            Msg::Response(ResponseFrame::new(op::RECLAIM, 16, Status::ReclaimRefused, 0)),
        ),
        ("resp-lock-fenced", Msg::Response(ResponseFrame::new(op::LOCK, 17, Status::Fenced, 0))),
        ("notice-not-owner", Msg::Response(ResponseFrame::notice(Status::NotOwner, 2))),
        ("notice-fenced", Msg::Response(ResponseFrame::notice(Status::Fenced, ALL_PARTITIONS))),
        ("shm-attach", req(18, Request::ShmAttach)),
        ("watch-map", req(24, Request::WatchMap)),
        ("resp-watch-map", Msg::Response(ResponseFrame::new(op::WATCH_MAP, 24, Status::Ok, 42))),
        (
            "resp-watch-map-not-clustered",
            Msg::Response(ResponseFrame::new(op::WATCH_MAP, 25, Status::NotClustered, 0)),
        ),
        ("notice-map-changed", Msg::Response(ResponseFrame::map_changed(43))),
        // Version 6: cached locks.
        ("cache-on", req(26, Request::CacheOn)),
        (
            "resp-cache-on",
            Msg::Response(ResponseFrame::new(op::CACHE_ON, 26, Status::Ok, CACHE_REPORTS_USE)),
        ),
        (
            "resp-cache-unavailable",
            Msg::Response(ResponseFrame::new(op::CACHE_ON, 27, Status::CacheUnavailable, 0)),
        ),
        (
            "lock-cached",
            req(
                28,
                Request::LockCached {
                    start: 0x1000,
                    end: 0x2000,
                    mode: Mode::Exclusive,
                    wait: Wait::Forever,
                    desired_start: 0,
                    desired_end: 0x10_0000,
                    name: b"",
                },
            ),
        ),
        (
            "resp-lock-cached",
            Msg::Response(ResponseFrame::lock_cached(
                28,
                42,
                CachedGrant { start: 0, end: 0x10_0000, cached: true },
            )),
        ),
        (
            "notice-callback",
            Msg::Response(ResponseFrame::callback(
                28,
                Callback { start: 0x4000, end: 0x5000, mode: Mode::Shared },
            )),
        ),
        (
            "give-back",
            req(
                29,
                Request::GiveBack {
                    target: 28,
                    start: 0x4000,
                    end: 0x5000,
                    downgrade: false,
                    used: None,
                },
            ),
        ),
        ("resp-give-back", Msg::Response(ResponseFrame::new(op::GIVE_BACK, 29, Status::Ok, 0))),
        (
            "give-back-used",
            req(
                31,
                Request::GiveBack {
                    target: 28,
                    start: 0x4000,
                    end: 0x5000,
                    downgrade: false,
                    used: Some(3),
                },
            ),
        ),
        ("stats-cached", req(30, Request::StatsCached { max_entries: 16 })),
        ("resp-stats-cached", Msg::Response(ResponseFrame::stats_cached(30, cached))),
        (
            "resp-shm-attached",
            Msg::Response(ResponseFrame::shm_attached(
                18,
                3,
                ShmAttached { slots: 16, path: "/tmp/rl.slots".into() },
            )),
        ),
        (
            "resp-shm-unavailable",
            Msg::Response(ResponseFrame::new(op::SHM_ATTACH, 19, Status::ShmUnavailable, 0)),
        ),
        (
            "resp-shm-full",
            Msg::Response(ResponseFrame::new(op::SHM_ATTACH, 20, Status::ShmFull, 16)),
        ),
        (
            "resp-shm-already-attached",
            Msg::Response(ResponseFrame::new(op::SHM_ATTACH, 21, Status::ShmAlreadyAttached, 3)),
        ),
        (
            "resp-lock-forbidden",
            Msg::Response(ResponseFrame::new(op::LOCK, 22, Status::Forbidden, 0)),
        ),
        (
            "notice-session-ended-lease",
            Msg::Response(ResponseFrame::session_ended(EndReason::LeaseExpired)),
        ),
        (
            "notice-session-ended-shutdown",
            Msg::Response(ResponseFrame::session_ended(EndReason::Shutdown)),
        ),
        (
            "notice-session-ended-token-revoked",
            Msg::Response(ResponseFrame::session_ended(EndReason::TokenRevoked)),
        ),
    ]
}

/// Revision 42, 4 partitions on 2 nodes: 0 served by n1 (epoch 40), 1 by n2 (epoch 41),
/// 2 in n2's grace period (epoch 42), 3 unowned.
fn cluster_map() -> ClusterMap {
    let owner = |node, state, epoch| PartitionOwner { node, state, epoch };
    ClusterMap::new(
        42,
        Partitioning::new(4).unwrap(),
        vec![
            NodeInfo::new("n1", "10.0.0.1:7878").unwrap(),
            NodeInfo::new("n2", "10.0.0.2:7878").unwrap(),
        ],
        vec![
            owner(Some(0), PartitionState::Serving, 40),
            owner(Some(1), PartitionState::Serving, 41),
            owner(Some(1), PartitionState::Grace, 42),
            owner(None, PartitionState::Unowned, 0),
        ],
    )
    .unwrap()
}

#[test]
fn every_vector_encodes_and_decodes_byte_for_byte() {
    let doc = doc_vectors();
    let want = expected();
    let count = want.len();
    let mut mismatches = Vec::new();
    for (name, msg) in want {
        let mut bytes = Vec::new();
        match &msg {
            Msg::ClientHello(h) => h.encode(&mut bytes),
            Msg::ServerHello(h) => h.encode(&mut bytes),
            Msg::Request(r) => r.encode(&mut bytes),
            Msg::Response(r) => r.encode(&mut bytes),
        }
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let Some(doc_bytes) = doc.get(name) else {
            mismatches.push(format!("{name} missing from the document; encoding is {hex}"));
            continue;
        };
        if *doc_bytes != bytes {
            mismatches.push(format!("{name}: document differs; encoding is {hex}"));
            continue;
        }
        // Decoding the document's bytes gives the value back.
        match msg {
            Msg::ClientHello(h) => assert_eq!(ClientHello::decode(doc_bytes).unwrap(), h),
            Msg::ServerHello(h) => assert_eq!(ServerHello::decode(doc_bytes).unwrap(), h),
            Msg::Request(r) => {
                let len = u32::from_le_bytes(doc_bytes[..4].try_into().unwrap()) as usize;
                assert_eq!(len, doc_bytes.len() - 4, "{name}: length prefix");
                assert_eq!(RequestFrame::decode(&doc_bytes[4..]).unwrap(), r);
            }
            Msg::Response(r) => {
                let len = u32::from_le_bytes(doc_bytes[..4].try_into().unwrap()) as usize;
                assert_eq!(len, doc_bytes.len() - 4, "{name}: length prefix");
                assert_eq!(ResponseFrame::decode(&doc_bytes[4..]).unwrap(), r);
            }
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert_eq!(doc.len(), count, "the document and this test list the same vectors");
}
