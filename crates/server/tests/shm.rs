//! Shared-memory answer slots (`docs/PROTOCOL.md` §9): what a slot shows, that the answer
//! frames still follow, bad input (no slots, asking twice, all slots taken, poll grants),
//! and that slots return when sessions end — closed, vanished, or silent past the lease.

mod common;

use std::time::{Duration, Instant};

use common::{lock, Raw};
use rangelock_client::{Client, ClientError, Endpoint};
use rangelock_server::protocol::shm::{word, SLOT_BYTES};
use rangelock_server::protocol::{op, GrantMode, Mode, Request, ShmAttached, Status, Wait};
use rangelock_server::{Server, ServerConfig};

fn server(slots: u32) -> Server {
    Server::start(ServerConfig { shm_slots: slots, ..ServerConfig::ephemeral() }).unwrap()
}

/// The eight words of slot `index`, read through the file (the page cache is the mapping).
fn slot_words(path: &str, index: u64) -> [u64; 8] {
    let bytes = std::fs::read(path).unwrap();
    let at = index as usize * SLOT_BYTES;
    std::array::from_fn(|w| {
        u64::from_le_bytes(bytes[at + 8 * w..at + 8 * w + 8].try_into().unwrap())
    })
}

fn attach(c: &mut Raw, id: u64) -> (u64, ShmAttached) {
    let r = c.call(id, Request::ShmAttach);
    assert_eq!(r.status, Status::Ok, "{r:?}");
    (r.value, r.shm.expect("an OK attach carries the file"))
}

/// Waits (bounded) until `cond` holds: slots return asynchronously, after the engine has
/// processed the session's end.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "not within 10 s: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn the_slot_shows_each_lock_answer_and_the_frame_still_follows() {
    let srv = server(4);
    let addr = srv.tcp_addr().unwrap();
    let mut a = Raw::connect(addr);
    let mut b = Raw::connect(addr);
    let (slot, body) = attach(&mut a, 1);
    assert_eq!(body.slots, 4);
    assert_eq!(Some(std::path::Path::new(&body.path)), srv.shm_path());
    let w = slot_words(&body.path, slot);
    assert_eq!(w[word::SESSION], a.hello.session);
    assert_eq!((w[word::ANSWERS], w[word::SEQ] % 2), (0, 0));

    // Granted at once: slot and frame agree.
    let r = a.call(2, lock(0, 100, Mode::Exclusive, Wait::Forever));
    assert_eq!(r.status, Status::Ok);
    let w = slot_words(&body.path, slot);
    assert_eq!(
        (w[word::ANSWERS], w[word::ID], w[word::STATUS], w[word::VALUE]),
        (1, 2, 0, r.value)
    );

    // A refusal is published too (try lock on a range b holds).
    assert_eq!(b.call(1, lock(200, 300, Mode::Exclusive, Wait::Forever)).status, Status::Ok);
    let r = a.call(3, lock(250, 260, Mode::Shared, Wait::Try));
    assert_eq!(r.status, Status::WouldBlock);
    let w = slot_words(&body.path, slot);
    assert_eq!(
        (w[word::ANSWERS], w[word::ID], w[word::STATUS]),
        (2, 3, Status::WouldBlock.code().into())
    );

    // A queued lock: nothing published while it waits; its grant is, with the frame.
    a.send(4, lock(250, 260, Mode::Exclusive, Wait::Forever));
    assert_eq!(a.call(5, Request::Keepalive).status, Status::Ok);
    assert_eq!(slot_words(&body.path, slot)[word::ANSWERS], 2, "the waiting lock is not answered");
    assert_eq!(b.call(2, Request::Unlock { target: 1 }).status, Status::Ok);
    let r = a.recv().unwrap();
    assert_eq!((r.op, r.id, r.status), (op::LOCK, 4, Status::Ok));
    let w = slot_words(&body.path, slot);
    assert_eq!((w[word::ANSWERS], w[word::ID], w[word::VALUE]), (3, 4, r.value));
    // Other answers are not published; b has no slot, so nothing of b's shows.
    assert_eq!(a.call(6, Request::Unlock { target: 4 }).status, Status::Ok);
    assert_eq!(slot_words(&body.path, slot)[word::ANSWERS], 3);
    drop((a, b));
    let path = body.path.clone();
    srv.shutdown();
    assert!(!std::path::Path::new(&path).exists(), "the slot file is removed on shutdown");
}

#[test]
fn bad_input_gets_clear_errors() {
    // No slots on this server.
    let plain = Server::start(ServerConfig::ephemeral()).unwrap();
    let mut c = Raw::connect(plain.tcp_addr().unwrap());
    let r = c.call(1, Request::ShmAttach);
    assert_eq!((r.status, r.shm), (Status::ShmUnavailable, None));
    let client = Client::connect(&Endpoint::from(plain.tcp_addr().unwrap())).unwrap();
    let e = client.attach_shm().unwrap_err();
    assert!(matches!(e, ClientError::ShmRefused(Status::ShmUnavailable)), "{e}");
    assert!(e.to_string().contains("--shm-slots"), "{e}");
    // The session goes on.
    assert!(client.lock_exclusive(0..1).is_ok());

    // Poll grants cannot carry slot answers: refused at start.
    let e = Server::start(ServerConfig {
        shm_slots: 2,
        grant: GrantMode::Poll,
        ..ServerConfig::ephemeral()
    })
    .unwrap_err();
    assert!(e.to_string().contains("push grants"), "{e}");

    let srv = server(2);
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    // Asking twice.
    let a = Client::connect(&ep).unwrap();
    let slot = a.attach_shm().unwrap();
    let e = a.attach_shm().unwrap_err();
    assert!(matches!(e, ClientError::ShmRefused(Status::ShmAlreadyAttached)), "{e}");
    let mut raw = Raw::connect(srv.tcp_addr().unwrap());
    let (s, _) = attach(&mut raw, 1);
    let r = raw.call(2, Request::ShmAttach);
    assert_eq!((r.status, r.value), (Status::ShmAlreadyAttached, s));
    assert_ne!(u64::from(slot), s);
    // Every slot taken.
    let mut third = Raw::connect(srv.tcp_addr().unwrap());
    let r = third.call(1, Request::ShmAttach);
    assert_eq!((r.status, r.value), (Status::ShmFull, 2));
    let e = Client::connect(&ep).unwrap().attach_shm().unwrap_err();
    assert!(matches!(e, ClientError::ShmRefused(Status::ShmFull)), "{e}");
    // Refusals harm nobody: a's slot still shows a's grant. (Whether a's client took it
    // from the slot or, past its polling time on a loaded machine, from the frame is timing.)
    let g = a.lock_exclusive(10..20).unwrap();
    let (index, path) = a.shm_slot().unwrap();
    let w = slot_words(path, index.into());
    assert_eq!((w[word::SESSION], w[word::ANSWERS], w[word::VALUE]), (a.session(), 1, g.token()));
    assert!(a.shm_hits() <= 1);
    drop(g);
}

#[test]
fn slots_return_when_sessions_end_closed_vanished_or_silent() {
    let srv = Server::start(ServerConfig {
        shm_slots: 3,
        lease: Duration::from_millis(300),
        ..ServerConfig::ephemeral()
    })
    .unwrap();
    let addr = srv.tcp_addr().unwrap();
    assert_eq!(srv.shm_free_slots(), 3);
    // A client that closes, one that vanishes mid-wait, one that falls silent.
    let closing = Client::connect(&Endpoint::from(addr)).unwrap();
    closing.attach_shm().unwrap();
    let held = closing.lock_exclusive(0..10).unwrap();
    let mut vanishing = Raw::connect(addr);
    let (vslot, body) = attach(&mut vanishing, 1);
    vanishing.send(2, lock(5, 15, Mode::Exclusive, Wait::Forever));
    let mut silent = Raw::connect(addr);
    let (sslot, _) = attach(&mut silent, 1);
    assert_eq!(srv.shm_free_slots(), 0);
    assert_eq!(Raw::connect(addr).call(1, Request::ShmAttach).status, Status::ShmFull);

    drop(held);
    drop(closing);
    drop(vanishing); // the socket closes with a lock still queued
    eventually("the closed and vanished sessions' slots return", || srv.shm_free_slots() >= 2);
    assert_eq!(slot_words(&body.path, vslot)[word::SESSION], 0, "a free slot shows no session");
    // The silent session keeps its slot until its lease passes.
    assert_eq!(slot_words(&body.path, sslot)[word::SESSION], silent.hello.session);
    eventually("the silent session's slot returns", || srv.shm_free_slots() == 3);
    assert!(silent.closed_by_server());

    // A new session gets a slot, reset to show it, and a clean answer count.
    let mut fresh = Raw::connect(addr);
    let (slot, _) = attach(&mut fresh, 1);
    let w = slot_words(&body.path, slot);
    assert_eq!((w[word::SESSION], w[word::ANSWERS]), (fresh.hello.session, 0));
    assert_eq!(fresh.call(2, lock(0, 20, Mode::Exclusive, Wait::Try)).status, Status::Ok);
    assert_eq!(slot_words(&body.path, slot)[word::ANSWERS], 1);
}

#[test]
fn a_unix_socket_client_reads_its_grants_from_the_slot() {
    let dir = std::env::temp_dir().join(format!("rl-shm-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("s.sock");
    let srv = Server::start(ServerConfig {
        tcp: None,
        unix: Some(sock.clone()),
        shm_slots: 2,
        shm_dir: Some(dir.clone()),
        ..ServerConfig::default()
    })
    .unwrap();
    assert!(srv.shm_path().unwrap().starts_with(&dir));
    let c = Client::connect(&Endpoint::Unix(sock)).unwrap();
    let slot = c.attach_shm().unwrap();
    assert_eq!(c.shm_slot().map(|(i, _)| i), Some(slot));
    let mut last = 0;
    for i in 0..200u64 {
        let g = c.lock_exclusive(i..i + 8).unwrap();
        assert!(g.token() > last, "tokens increase");
        last = g.token();
        g.unlock_pipelined().unwrap();
    }
    c.flush().unwrap();
    assert!(c.shm_hits() > 0, "grants were read from the slot");
    drop(c);
    srv.shutdown();
    let _ = std::fs::remove_dir_all(&dir);
}

/// Threads sharing one attached client: the slot shows only the last answer, so a thread
/// often finds another's there and must take its own from the frame. The exclusivity
/// checker (holders write their token over their range and verify it) must still hold,
/// and the counters must balance.
#[test]
fn threads_sharing_an_attached_client_stay_exclusive() {
    use std::sync::Arc;
    const UNITS: u64 = 64;
    let srv = server(1);
    let c = Arc::new(Client::connect(&Endpoint::from(srv.tcp_addr().unwrap())).unwrap());
    c.attach_shm().unwrap();
    let checker = Arc::new(common::Checker::new(UNITS as usize));
    let granted: u64 = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4u64)
            .map(|t| {
                let (c, checker) = (c.clone(), checker.clone());
                s.spawn(move || {
                    let mut rng = common::Rng(0xABCD + t * 31);
                    let mut granted = 0;
                    for k in 0..300 {
                        let start = rng.below(UNITS - 1);
                        let end = (start + 1 + rng.below(12)).min(UNITS);
                        let mode = if rng.below(4) == 0 { Mode::Shared } else { Mode::Exclusive };
                        let wait = if k % 10 == 0 { Wait::Try } else { Wait::Forever };
                        match c.lock(start..end, mode, wait) {
                            Ok(g) => {
                                granted += 1;
                                match mode {
                                    Mode::Exclusive => checker.exclusive(start, end, g.token()),
                                    Mode::Shared => checker.shared(start, end),
                                }
                                g.unlock_pipelined().unwrap();
                            }
                            Err(ClientError::WouldBlock) if wait == Wait::Try => {}
                            Err(e) => panic!("unexpected error {e}"),
                        }
                    }
                    granted
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    c.flush().unwrap();
    let st = c.stats(10).unwrap();
    assert_eq!((st.counters.holders, st.counters.waiters), (0, 0));
    assert_eq!((st.counters.grants, st.counters.releases), (granted, granted));
    assert!(c.shm_hits() > 0, "some answers came from the slot");
}
