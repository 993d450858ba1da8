//! Decoding is total (never panics on any bytes), encoding round-trips, and every body
//! that decodes re-encodes to the same bytes (the encoding is canonical).

use std::time::Duration;

use proptest::prelude::*;
use rangelock_proto::*;

fn mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Exclusive), Just(Mode::Shared)]
}

fn wait() -> impl Strategy<Value = Wait> {
    prop_oneof![
        Just(Wait::Try),
        Just(Wait::Forever),
        (0u64..=u32::MAX as u64).prop_map(|ms| Wait::Timeout(Duration::from_millis(ms))),
    ]
}

/// Resource names: one byte, a path, bytes that are not UTF-8 (a NUL among them), and the
/// longest allowed.
fn resource_name() -> impl Strategy<Value = &'static [u8]> {
    static LONGEST: std::sync::LazyLock<Vec<u8>> =
        std::sync::LazyLock::new(|| (0..MAX_RESOURCE_NAME_LEN).map(|i| i as u8).collect());
    prop_oneof![
        Just(&b"a"[..]),
        Just(&b"db/orders/7"[..]),
        Just(&b"\xff\x00\xfe"[..]),
        Just(&LONGEST[..]),
    ]
}

fn request() -> impl Strategy<Value = Request<'static>> {
    prop_oneof![
        (any::<u64>(), 1u64.., mode(), wait(), resource_name()).prop_map(
            |(s, l, mode, wait, name)| {
                let start = s.min(u64::MAX - 1);
                let end = start.saturating_add(l).max(start + 1);
                Request::LockNamed { start, end, mode, wait, name }
            }
        ),
        (any::<u64>(), 1u64.., mode(), any::<u64>(), resource_name()).prop_map(
            |(s, l, mode, token, name)| {
                let start = s.min(u64::MAX - 1);
                let end = start.saturating_add(l).max(start + 1);
                Request::ReclaimNamed { start, end, mode, token, name }
            }
        ),
        (any::<u64>(), 1u64.., mode(), wait()).prop_map(|(s, l, mode, wait)| {
            let start = s.min(u64::MAX - 1);
            let end = start.saturating_add(l).max(start + 1);
            Request::Lock { start, end, mode, wait }
        }),
        any::<u64>().prop_map(|target| Request::Unlock { target }),
        any::<u64>().prop_map(|target| Request::Cancel { target }),
        any::<u64>().prop_map(|target| Request::Poll { target }),
        Just(Request::Keepalive),
        any::<u32>().prop_map(|max_entries| Request::Stats { max_entries }),
        any::<u32>().prop_map(|max_entries| Request::StatsNamed { max_entries }),
        any::<u32>().prop_map(|max_entries| Request::StatsCached { max_entries }),
        (any::<u64>(), 1u64.., mode(), any::<u64>()).prop_map(|(s, l, mode, token)| {
            let start = s.min(u64::MAX - 1);
            let end = start.saturating_add(l).max(start + 1);
            Request::Reclaim { start, end, mode, token }
        }),
        Just(Request::Map),
        Just(Request::ShmAttach),
        Just(Request::WatchMap),
        Just(Request::CacheOn),
        (any::<u64>(), 1u64.., mode(), wait(), any::<(u64, u64)>(), resource_name(), any::<bool>())
            .prop_map(|(s, l, mode, wait, (below, above), name, unnamed)| {
                let start = s.min(u64::MAX - 1);
                let end = start.saturating_add(l).max(start + 1);
                let (desired_start, desired_end) =
                    (start.saturating_sub(below), end.saturating_add(above));
                let name = if unnamed { &b""[..] } else { name };
                Request::LockCached { start, end, mode, wait, desired_start, desired_end, name }
            }),
        (any::<u64>(), any::<u64>(), 1u64.., any::<bool>(), any::<Option<u32>>()).prop_map(
            |(target, s, l, downgrade, used)| {
                let start = s.min(u64::MAX - 1);
                let end = start.saturating_add(l).max(start + 1);
                Request::GiveBack { target, start, end, downgrade, used }
            }
        ),
    ]
}

fn status() -> impl Strategy<Value = Status> {
    proptest::sample::select(Status::ALL.to_vec())
}

/// A node id or address: up to 255 bytes of UTF-8, often multi-byte.
fn name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9.:-]{0,24}",
        "\\PC{0,40}",
        (1usize..=85).prop_map(|n| "é€".repeat(n)).prop_map(|s| {
            let mut n = s.len().min(MAX_NAME_LEN);
            while !s.is_char_boundary(n) {
                n -= 1;
            }
            s[..n].to_owned()
        }),
    ]
}

fn hint() -> impl Strategy<Value = OwnerHint> {
    (name(), name()).prop_map(|(node, addr)| OwnerHint::new(node, addr).unwrap())
}

fn cluster_map() -> impl Strategy<Value = ClusterMap> {
    let nodes = proptest::collection::vec(
        (name(), name()).prop_map(|(id, addr)| NodeInfo::new(id, addr).unwrap()),
        0..5,
    );
    let bits = prop_oneof![4 => 0u32..=4, 1 => 5u32..=12];
    (any::<u64>(), bits, nodes)
        .prop_flat_map(|(revision, bits, nodes)| {
            let n = nodes.len() as u16;
            let node = if n == 0 { Just(None).boxed() } else { proptest::option::of(0..n).boxed() };
            let state = prop_oneof![
                Just(PartitionState::Unowned),
                Just(PartitionState::Grace),
                Just(PartitionState::Serving),
            ];
            let owner = (node, state, any::<u64>())
                .prop_map(|(node, state, epoch)| PartitionOwner { node, state, epoch });
            let owners = proptest::collection::vec(owner, 1usize << bits);
            (Just(revision), Just(bits), Just(nodes), owners)
        })
        .prop_map(|(revision, bits, nodes, owners)| {
            ClusterMap::new(revision, Partitioning::new(1 << bits).unwrap(), nodes, owners).unwrap()
        })
}

/// What a stats body carries: a STATS body has neither names nor the cache's counters, a
/// STATS_NAMED body names (and the names' counters), a STATS_CACHED body both (and kept
/// extents).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Plain,
    Named,
    Cached,
}

/// A stats body of `layout`.
fn stats_body(layout: Layout) -> impl Strategy<Value = StatsBody> {
    let (named, cached) = (layout != Layout::Plain, layout == Layout::Cached);
    let name = proptest::option::of(proptest::collection::vec(any::<u8>(), 1..=1024))
        .prop_map(move |n| n.filter(|_| named).map(Into::into));
    let entry = (any::<[u64; 5]>(), mode(), any::<(bool, bool)>(), name).prop_map(
        move |(v, mode, (held, kept), name)| StatsEntry {
            session: v[0],
            id: v[1],
            start: v[2],
            end: v[3],
            mode,
            state: if held { EntryState::Held } else { EntryState::Waiting },
            token: if held { v[4] } else { 0 },
            name,
            kept: cached && held && kept,
        },
    );
    let body = (any::<[u64; 17]>(), proptest::collection::vec(entry, 0..4), any::<u64>());
    body.prop_map(move |(c, entries, omitted)| StatsBody {
        counters: Counters {
            sessions_open: c[0],
            sessions_total: c[1],
            holders: c[2],
            waiters: c[3],
            grants: c[4],
            releases: c[5],
            released_by_close: c[6],
            would_block: c[7],
            timeouts: c[8],
            cancels: c[9],
            errors: c[10],
            names_live: if named { c[11] } else { 0 },
            named_holders: if named { c[12] } else { 0 },
            cached_extents: if cached { c[13] } else { 0 },
            callbacks: if cached { c[14] } else { 0 },
            give_backs: if cached { c[15] } else { 0 },
            cache_expanded: if cached { c[16] } else { 0 },
        },
        entries,
        omitted,
    })
}

/// Any valid response: an answer (with the body its op and status call for) or a notice;
/// the responses with a body are weighted up.
fn response() -> impl Strategy<Value = ResponseFrame> {
    let op_byte = prop_oneof![1u8..=op::STATS_CACHED, Just(op::UNKNOWN), 0u8..op::UNKNOWN];
    let answer = (op_byte, any::<u64>(), status(), any::<u64>())
        .prop_filter("not a notice", |(op, ..)| *op != op::NOTICE)
        .prop_flat_map(|(op, id, st, value)| {
            let r = ResponseFrame::new(op, id, st, value);
            if st == Status::NotOwner {
                hint().prop_map(move |h| ResponseFrame::not_owner(op, id, value, h)).boxed()
            } else if st == Status::Ok && op == op::STATS {
                stats_body(Layout::Plain).prop_map(move |b| ResponseFrame::stats(id, b)).boxed()
            } else if st == Status::Ok && op == op::STATS_NAMED {
                let named = stats_body(Layout::Named);
                named.prop_map(move |b| ResponseFrame::stats_named(id, b)).boxed()
            } else if st == Status::Ok && op == op::STATS_CACHED {
                let cached = stats_body(Layout::Cached);
                cached.prop_map(move |b| ResponseFrame::stats_cached(id, b)).boxed()
            } else if st == Status::Ok && op == op::MAP {
                cluster_map().prop_map(move |m| ResponseFrame::map(id, m)).boxed()
            } else if st == Status::Ok && op == op::SHM_ATTACH {
                (any::<u32>(), name())
                    .prop_map(move |(slots, path)| {
                        let body = ShmAttached { slots, path };
                        ResponseFrame { shm: Some(body), ..r.clone() }
                    })
                    .boxed()
            } else if st == Status::Ok && op == op::LOCK_CACHED {
                (any::<u64>(), 1u64.., any::<bool>())
                    .prop_map(move |(s, l, cached)| {
                        let start = s.min(u64::MAX - 1);
                        let end = start.saturating_add(l).max(start + 1);
                        ResponseFrame::lock_cached(id, value, CachedGrant { start, end, cached })
                    })
                    .boxed()
            } else {
                Just(r).boxed()
            }
        });
    let callback = (any::<u64>(), any::<u64>(), 1u64.., mode()).prop_map(|(lock, s, l, mode)| {
        let start = s.min(u64::MAX - 1);
        let end = start.saturating_add(l).max(start + 1);
        ResponseFrame::callback(lock, Callback { start, end, mode })
    });
    let map = (any::<u64>(), cluster_map()).prop_map(|(id, m)| ResponseFrame::map(id, m));
    let stats =
        (any::<u64>(), stats_body(Layout::Plain)).prop_map(|(id, b)| ResponseFrame::stats(id, b));
    let stats_named = (any::<u64>(), stats_body(Layout::Named))
        .prop_map(|(id, b)| ResponseFrame::stats_named(id, b));
    let stats_cached = (any::<u64>(), stats_body(Layout::Cached))
        .prop_map(|(id, b)| ResponseFrame::stats_cached(id, b));
    let not_owner =
        (prop_oneof![Just(op::LOCK), Just(op::RECLAIM)], any::<u64>(), any::<u64>(), hint())
            .prop_map(|(op, id, epoch, h)| ResponseFrame::not_owner(op, id, epoch, h));
    let notice = (
        prop_oneof![
            Just(Status::NotOwner),
            Just(Status::Fenced),
            Just(Status::SessionEnded),
            Just(Status::MapChanged)
        ],
        any::<u64>(),
    )
        .prop_map(|(st, value)| ResponseFrame::notice(st, value));
    prop_oneof![
        3 => answer,
        2 => map,
        1 => stats,
        1 => stats_named,
        1 => stats_cached,
        1 => not_owner,
        1 => notice,
        1 => callback
    ]
}

fn encode_response(r: &ResponseFrame) -> Vec<u8> {
    let mut out = Vec::new();
    r.encode(&mut out);
    let len = u32::from_le_bytes(out[..4].try_into().unwrap()) as usize;
    assert_eq!(len, out.len() - 4);
    out.split_off(4)
}

/// If `body` decodes, it is the canonical encoding of what it decodes to.
fn assert_canonical(body: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(r) = RequestFrame::decode(body) {
        let mut out = Vec::new();
        r.encode(&mut out);
        prop_assert_eq!(&out[4..], body);
    }
    if let Ok(r) = ResponseFrame::decode(body) {
        prop_assert_eq!(encode_response(&r), body);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = RequestFrame::decode(&bytes);
        let _ = ResponseFrame::decode(&bytes);
        let _ = ClientHello::decode(&bytes);
        let _ = ServerHello::decode(&bytes);
        let _ = RequestFrame::peek_header(&bytes);
        assert_canonical(&bytes)?;
    }

    /// Random bytes behind a plausible header reach the payload decoders.
    #[test]
    fn decoders_never_panic_past_the_header(
        op in 0u8..12, kind in prop_oneof![0x80u8..0x8c, any::<u8>()],
        tail in proptest::collection::vec(any::<u8>(), 0..160),
    ) {
        let mut b = vec![op];
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&tail);
        let _ = RequestFrame::decode(&b);
        assert_canonical(&b)?;
        b[0] = kind;
        let _ = ResponseFrame::decode(&b);
        assert_canonical(&b)?;
        // The bodies behind a status that calls for them: MAP OK, any NOT_OWNER, STATS OK,
        // SHM_ATTACH OK.
        for (kind, status) in [(0x88, 0x00), (0x81, 0x19), (0x87, 0x19), (0x86, 0x00), (0x8a, 0x00)] {
            let mut r = vec![kind];
            r.extend_from_slice(&7u64.to_le_bytes());
            r.push(status);
            r.extend_from_slice(&tail);
            let _ = ResponseFrame::decode(&r);
            assert_canonical(&r)?;
        }
        // A stats response whose count field claims far more entries than the bytes hold.
        let mut s = vec![0x86];
        s.extend_from_slice(&1u64.to_le_bytes());
        s.push(0);
        s.extend_from_slice(&[0; 8 + 88]);
        s.extend_from_slice(&u32::MAX.to_le_bytes());
        s.extend_from_slice(&tail);
        prop_assert!(ResponseFrame::decode(&s).is_err());
    }

    #[test]
    fn requests_round_trip(id in any::<u64>(), req in request()) {
        let f = RequestFrame { id, request: req };
        let mut out = Vec::new();
        f.encode(&mut out);
        let len = u32::from_le_bytes(out[..4].try_into().unwrap()) as usize;
        prop_assert_eq!(len, out.len() - 4);
        let back = RequestFrame::decode(&out[4..]).unwrap();
        // Timeouts travel in whole milliseconds.
        prop_assert_eq!(back, f);
    }

    /// `ResponseFrame::new` (no body) round-trips unless the op and status call for a body.
    #[test]
    fn bodiless_responses_round_trip(
        op in 1u8..0x7f, id in prop_oneof![Just(0), any::<u64>()], st in status(),
        value in any::<u64>(),
    ) {
        let r = ResponseFrame::new(op, id, st, value);
        let back = ResponseFrame::decode(&encode_response(&r));
        if op == op::NOTICE {
            // A notice has id 0 and status NOT_OWNER, FENCED, SESSION_ENDED or
            // MAP_CHANGED (a CALLBACK notice needs its body).
            let notice_status = matches!(
                st,
                Status::NotOwner | Status::Fenced | Status::SessionEnded | Status::MapChanged
            );
            let valid = id == 0 && notice_status;
            prop_assert_eq!(back.is_ok(), valid);
            if valid {
                prop_assert_eq!(back.unwrap(), r);
            }
        } else if st == Status::Ok
            && matches!(
                op,
                op::STATS
                    | op::STATS_NAMED
                    | op::STATS_CACHED
                    | op::MAP
                    | op::SHM_ATTACH
                    | op::LOCK_CACHED
            )
        {
            // A successful STATS, STATS_NAMED, STATS_CACHED, MAP, SHM_ATTACH or LOCK_CACHED
            // response must carry a body.
            prop_assert!(back.is_err());
        } else if st == Status::NotOwner {
            // Without a hint, NOT_OWNER carries the empty one ("owner unknown").
            prop_assert_eq!(back.unwrap(), ResponseFrame::not_owner(op, id, value, OwnerHint::default()));
        } else {
            prop_assert_eq!(back.unwrap(), r);
        }
    }

    #[test]
    fn responses_round_trip(r in response()) {
        let body = encode_response(&r);
        prop_assert_eq!(ResponseFrame::decode(&body).unwrap(), r);
    }

    /// Every truncation of a valid response is an error; any one-byte change decodes to an
    /// error or to a message whose encoding is the changed bytes.
    #[test]
    fn damaged_responses_never_panic(
        r in response(), cut in any::<proptest::sample::Index>(),
        at in any::<proptest::sample::Index>(), byte in any::<u8>(),
    ) {
        let body = encode_response(&r);
        let cut = cut.index(body.len());
        prop_assert!(ResponseFrame::decode(&body[..cut]).is_err());
        let mut changed = body.clone();
        changed[at.index(body.len())] = byte;
        assert_canonical(&changed)?;
    }

    /// Every truncation of a valid request is an error, not a panic or a different request.
    #[test]
    fn truncations_are_errors(id in any::<u64>(), req in request(), cut in 0usize..40) {
        let mut out = Vec::new();
        RequestFrame { id, request: req }.encode(&mut out);
        let body = &out[4..];
        if cut < body.len() {
            prop_assert!(RequestFrame::decode(&body[..cut]).is_err());
        }
    }

    /// Any one-byte change of a valid request decodes to an error or canonically.
    #[test]
    fn damaged_requests_never_panic(
        id in any::<u64>(), req in request(), at in any::<proptest::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut out = Vec::new();
        RequestFrame { id, request: req }.encode(&mut out);
        let mut body = out.split_off(4);
        let at = at.index(body.len());
        body[at] = byte;
        assert_canonical(&body)?;
    }
}

#[test]
fn notice_is_not_a_request() {
    let mut body = vec![op::NOTICE];
    body.extend_from_slice(&1u64.to_le_bytes());
    assert_eq!(RequestFrame::decode(&body).unwrap_err(), DecodeError::UnknownOp(op::NOTICE));
    assert_eq!(DecodeError::UnknownOp(op::NOTICE).status(), Status::UnknownOp);
}

#[test]
fn reclaim_validates_like_lock() {
    let reclaim = RequestFrame {
        id: 1,
        request: Request::Reclaim { start: 0, end: 1, mode: Mode::Shared, token: 5 },
    };
    let mut out = Vec::new();
    reclaim.encode(&mut out);
    assert_eq!(out.len() - 4, 9 + 25);
    let mut inverted = out[4..].to_vec();
    inverted[9..17].copy_from_slice(&5u64.to_le_bytes());
    inverted[17..25].copy_from_slice(&5u64.to_le_bytes());
    assert_eq!(
        RequestFrame::decode(&inverted).unwrap_err(),
        DecodeError::InvalidRange { start: 5, end: 5 }
    );
    let mut bad_mode = out[4..].to_vec();
    bad_mode[25] = 2;
    assert_eq!(RequestFrame::decode(&bad_mode).unwrap_err().status(), Status::Malformed);
    let mut long = out[4..].to_vec();
    long.push(0);
    assert_eq!(RequestFrame::decode(&long).unwrap_err(), DecodeError::TrailingBytes(1));
    // MAP has no payload.
    let mut map = vec![op::MAP];
    map.extend_from_slice(&2u64.to_le_bytes());
    assert_eq!(RequestFrame::decode(&map).unwrap(), RequestFrame { id: 2, request: Request::Map });
    map.push(0);
    assert_eq!(RequestFrame::decode(&map).unwrap_err(), DecodeError::TrailingBytes(1));
}

/// A named request's name is 1 to `MAX_RESOURCE_NAME_LEN` bytes: an empty or longer one is
/// `BAD_NAME`, whatever else is wrong after it; the longest is the largest request there is.
#[test]
fn resource_names_are_one_to_the_limit_of_bytes() {
    let longest_cached = Request::LockCached {
        start: 0,
        end: 1,
        mode: Mode::Exclusive,
        wait: Wait::Try,
        desired_start: 0,
        desired_end: 1,
        name: &[b'n'; MAX_RESOURCE_NAME_LEN],
    };
    let mut out = Vec::new();
    RequestFrame { id: 3, request: longest_cached }.encode(&mut out);
    assert_eq!(out.len() - 4, MAX_REQUEST_FRAME as usize, "the largest request");
    let longest = vec![b'n'; MAX_RESOURCE_NAME_LEN];
    let named = |name: &[u8], reclaim: bool| {
        let request = if reclaim {
            Request::ReclaimNamed { start: 0, end: 1, mode: Mode::Shared, token: 5, name }
        } else {
            Request::LockNamed { start: 0, end: 1, mode: Mode::Exclusive, wait: Wait::Try, name }
        };
        let mut out = Vec::new();
        RequestFrame { id: 3, request }.encode(&mut out);
        out.split_off(4)
    };
    for reclaim in [false, true] {
        let body = named(&longest, reclaim);
        let back = RequestFrame::decode(&body).unwrap();
        assert!(matches!(back.request,
            Request::LockNamed { name, .. } | Request::ReclaimNamed { name, .. } if name == &longest[..]));
        for bad in [0, MAX_RESOURCE_NAME_LEN + 1, usize::from(u16::MAX)] {
            let body = named(&vec![b'n'; bad], reclaim);
            let err = RequestFrame::decode(&body).unwrap_err();
            assert_eq!(err, DecodeError::BadName(bad as u16));
            assert_eq!(err.status(), Status::BadName);
        }
        // A name_len that claims more bytes than follow is a truncated frame.
        let mut short = named(b"abc", reclaim);
        short.pop();
        assert_eq!(RequestFrame::decode(&short).unwrap_err(), DecodeError::Truncated);
    }
}

#[test]
fn every_request_fits_the_smallest_max_frame() {
    let longest = vec![0xffu8; MAX_RESOURCE_NAME_LEN];
    let largest = [
        Request::LockNamed {
            start: 0,
            end: 1,
            mode: Mode::Shared,
            wait: Wait::Forever,
            name: &longest,
        },
        Request::ReclaimNamed { start: 0, end: 1, mode: Mode::Shared, token: 0, name: &longest },
        Request::Lock { start: 0, end: 1, mode: Mode::Shared, wait: Wait::Forever },
        Request::Reclaim { start: 0, end: 1, mode: Mode::Shared, token: 0 },
        Request::Stats { max_entries: 0 },
        Request::StatsNamed { max_entries: 0 },
        Request::StatsCached { max_entries: 0 },
        Request::Map,
        Request::Keepalive,
        Request::Unlock { target: 0 },
    ];
    for request in largest {
        let mut out = Vec::new();
        RequestFrame { id: 0, request }.encode(&mut out);
        assert!(out.len() - 4 <= MAX_REQUEST_FRAME as usize, "{request:?}");
    }
}

#[test]
fn invalid_fields_map_to_their_status() {
    let mut out = Vec::new();
    RequestFrame {
        id: 1,
        request: Request::Lock { start: 0, end: 1, mode: Mode::Shared, wait: Wait::Try },
    }
    .encode(&mut out);
    let mut inverted = out[4..].to_vec();
    inverted[9..17].copy_from_slice(&5u64.to_le_bytes());
    inverted[17..25].copy_from_slice(&5u64.to_le_bytes());
    assert_eq!(RequestFrame::decode(&inverted).unwrap_err().status(), Status::InvalidRange);
    let mut bad_mode = out[4..].to_vec();
    bad_mode[25] = 9;
    assert_eq!(RequestFrame::decode(&bad_mode).unwrap_err().status(), Status::Malformed);
    let mut bad_op = out[4..].to_vec();
    bad_op[0] = 0x42;
    assert_eq!(RequestFrame::decode(&bad_op).unwrap_err(), DecodeError::UnknownOp(0x42));
    let mut long = out[4..].to_vec();
    long.push(0);
    assert_eq!(RequestFrame::decode(&long).unwrap_err(), DecodeError::TrailingBytes(1));
}
