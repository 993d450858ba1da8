//! Decoding is total (never panics on any bytes) and encoding round-trips.

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

fn request() -> impl Strategy<Value = Request> {
    prop_oneof![
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
    ]
}

fn status() -> impl Strategy<Value = Status> {
    proptest::sample::select(Status::ALL.to_vec())
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
    }

    /// Random bytes behind a plausible header reach the payload decoders.
    #[test]
    fn decoders_never_panic_past_the_header(
        op in 0u8..8, kind in prop_oneof![0x80u8..0x88, any::<u8>()],
        tail in proptest::collection::vec(any::<u8>(), 0..160),
    ) {
        let mut b = vec![op];
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&tail);
        let _ = RequestFrame::decode(&b);
        b[0] = kind;
        let _ = ResponseFrame::decode(&b);
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

    #[test]
    fn responses_round_trip(op in 1u8..0x7f, id in any::<u64>(), st in status(), value in any::<u64>()) {
        let r = ResponseFrame::new(op, id, st, value);
        let mut out = Vec::new();
        r.encode(&mut out);
        let back = ResponseFrame::decode(&out[4..]);
        if op == op::STATS && st == Status::Ok {
            // A successful STATS response must carry a body.
            prop_assert!(back.is_err());
        } else {
            prop_assert_eq!(back.unwrap(), r);
        }
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
