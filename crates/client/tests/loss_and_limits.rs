//! The client finds a lost connection on its own (`wait_lost`, `lost`) — including a
//! server that keeps its socket open but answers nothing —, hands on the notices a
//! cluster node pushes, and refuses timeouts the protocol cannot carry instead of cutting
//! them short.
#![cfg(not(loom))]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use rangelock_client::{
    AsyncClient, Client, ClientError, Endpoint, LossCause, Mode, Notice, Status, Wait, MAX_TIMEOUT,
};
use rangelock_server::protocol::{
    op, EndReason, GrantMode, HelloStatus, ResponseFrame, ServerHello, ALL_PARTITIONS,
    CLIENT_HELLO_LEN, VERSION,
};
use rangelock_server::{Server, ServerConfig};

/// A fake server that accepts one connection and completes the handshake with a short
/// lease (so the client's keepalive runs every 20 ms); the caller then drops the stream
/// to end the "session" the way a server does when a lease lapses.
fn fake_server() -> (TcpListener, Endpoint) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = Endpoint::from(l.local_addr().unwrap());
    (l, ep)
}

fn handshake(l: &TcpListener) -> TcpStream {
    handshake_with_lease(l, 60)
}

fn handshake_with_lease(l: &TcpListener, lease_ms: u32) -> TcpStream {
    let (mut s, _) = l.accept().unwrap();
    let mut hello = [0u8; CLIENT_HELLO_LEN];
    s.read_exact(&mut hello).unwrap();
    let mut out = Vec::new();
    ServerHello {
        version: VERSION,
        status: HelloStatus::Accepted,
        grant: GrantMode::Push,
        session: 1,
        lease_ms,
        max_frame: 1 << 20,
    }
    .encode(&mut out);
    s.write_all(&out).unwrap();
    s
}

#[test]
fn the_keepalive_thread_finds_a_closed_session_and_wakes_wait_lost() {
    let (l, ep) = fake_server();
    let (client, server_side) = std::thread::scope(|s| {
        let h = s.spawn(|| handshake(&l));
        let client = Client::connect(&ep).unwrap();
        (client, h.join().unwrap())
    });
    assert!(client.wait_lost_timeout(Duration::from_millis(1)).is_none(), "still connected");
    drop(server_side);
    // No call of ours touches the socket: only the keepalive thread can find the loss.
    let loss = client.wait_lost_timeout(Duration::from_secs(30)).expect("loss noticed");
    assert_eq!(loss.cause, LossCause::ClosedByServer, "{loss:?}");
    assert_eq!(loss.lease, Duration::from_millis(60));
    assert!(!client.is_connected());
    assert_eq!(client.wait_lost(), loss, "later waits return at once");
    assert!(matches!(client.ping(), Err(ClientError::ConnectionLost)));
}

/// Ends a fake session the way a version 4 server ends one: the `SESSION_ENDED` notice,
/// then (once the client's next keepalive is read, so that closing sends a FIN rather than
/// a reset that could discard the notice) the close. With a lease of 3 s the keepalive
/// comes after a second, well before the async client would find the server
/// unresponsive (a lease without an answer).
fn end_session(mut server_side: TcpStream, reason: EndReason) {
    let mut out = Vec::new();
    ResponseFrame::session_ended(reason).encode(&mut out);
    server_side.write_all(&out).unwrap();
    let mut keepalive = [0u8; 13];
    server_side.read_exact(&mut keepalive).unwrap();
    assert_eq!(keepalive[4], op::KEEPALIVE);
}

#[test]
fn the_blocking_client_reports_why_the_server_ended_the_session() {
    let (l, ep) = fake_server();
    let (client, server_side) = std::thread::scope(|s| {
        let h = s.spawn(|| handshake_with_lease(&l, 3000));
        let client = Client::connect(&ep).unwrap();
        (client, h.join().unwrap())
    });
    end_session(server_side, EndReason::LeaseExpired);
    let loss = client.wait_lost_timeout(Duration::from_secs(30)).expect("loss noticed");
    assert_eq!(loss.cause, LossCause::SessionEnded(EndReason::LeaseExpired), "{loss:?}");
    assert!(loss.lease_lapsed(), "the server said so");
    assert!(loss.to_string().starts_with("session ended by the server: lease lapsed"), "{loss}");
    assert!(matches!(client.ping(), Err(ClientError::ConnectionLost)));
}

#[test]
fn the_async_client_reports_why_the_server_ended_the_session() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (l, ep) = fake_server();
    std::thread::scope(|s| {
        let h = s.spawn(|| handshake_with_lease(&l, 3000));
        rt.block_on(async {
            let client = AsyncClient::connect(&ep).await.unwrap();
            let server_side = h.join().unwrap();
            let ended = tokio::task::spawn_blocking(move || {
                end_session(server_side, EndReason::OutputOverLimit)
            });
            tokio::time::timeout(Duration::from_secs(30), client.lost())
                .await
                .expect("loss noticed");
            ended.await.unwrap();
            let loss = client.loss().unwrap();
            assert_eq!(loss.cause, LossCause::SessionEnded(EndReason::OutputOverLimit));
            assert_eq!(
                loss.to_string(),
                "session ended by the server: the client left more answers unread than the \
                 server's output limit"
            );
        });
    });
}

/// A version 3 server: refuses the client's hello (naming version 3), then accepts the
/// version 3 hello of the next connection. Returns the two hellos it read and the
/// accepted connection.
fn version_3_server(l: &TcpListener) -> ([Vec<u8>; 2], TcpStream) {
    let mut hellos = [Vec::new(), Vec::new()];
    let mut accepted = None;
    for (i, status) in
        [HelloStatus::UnsupportedVersion, HelloStatus::Accepted].into_iter().enumerate()
    {
        let (mut s, _) = l.accept().unwrap();
        let mut hello = vec![0u8; CLIENT_HELLO_LEN];
        s.read_exact(&mut hello).unwrap();
        let mut out = Vec::new();
        let session = u64::from(status == HelloStatus::Accepted);
        let grant = GrantMode::Push;
        ServerHello { version: 3, status, grant, session, lease_ms: 10_000, max_frame: 1 << 20 }
            .encode(&mut out);
        s.write_all(&out).unwrap();
        hellos[i] = hello;
        accepted = Some(s);
    }
    (hellos, accepted.unwrap())
}

#[test]
fn both_clients_fall_back_to_version_3_for_a_version_3_server() {
    // The client's own version first (little-endian), then the one the server named.
    let hello = |v: u16| [&b"RLCK"[..], &v.to_le_bytes(), &[0, 0]].concat();
    let want = [hello(VERSION), hello(3)];
    let (l, ep) = fake_server();
    std::thread::scope(|s| {
        let h = s.spawn(|| version_3_server(&l));
        let client = Client::connect(&ep).unwrap();
        assert_eq!(client.session(), 1);
        let (hellos, _conn) = h.join().unwrap();
        assert_eq!(hellos, want);
    });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    std::thread::scope(|s| {
        let h = s.spawn(|| version_3_server(&l));
        rt.block_on(async {
            let client = AsyncClient::connect(&ep).await.unwrap();
            assert_eq!(client.session(), 1);
        });
        let (hellos, _conn) = h.join().unwrap();
        assert_eq!(hellos, want);
    });
}

#[test]
fn the_async_client_reports_a_closed_session() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (l, ep) = fake_server();
    std::thread::scope(|s| {
        let h = s.spawn(|| handshake(&l));
        rt.block_on(async {
            let client = AsyncClient::connect(&ep).await.unwrap();
            let server_side = h.join().unwrap();
            assert!(tokio::time::timeout(Duration::from_millis(1), client.lost()).await.is_err());
            drop(server_side);
            tokio::time::timeout(Duration::from_secs(30), client.lost())
                .await
                .expect("loss noticed");
            assert!(!client.is_connected());
        });
    });
}

#[test]
fn the_async_client_declares_a_server_that_answers_nothing_lost_and_closes() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (l, ep) = fake_server();
    std::thread::scope(|s| {
        let h = s.spawn(|| handshake(&l));
        let (client, mut server_side) = rt.block_on(async {
            let client = AsyncClient::connect(&ep).await.unwrap();
            (client, h.join().unwrap())
        });
        // Like a stopped process: the socket stays open, nothing is answered.
        let t0 = std::time::Instant::now();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), client.lost())
                .await
                .expect("an unanswered keepalive is noticed");
        });
        let loss = client.loss().expect("lost");
        assert_eq!(loss.cause, LossCause::Unresponsive, "{loss}");
        assert!(loss.to_string().contains("answered no keepalive"), "{loss}");
        // Not before the lease (60 ms) passed without an answer.
        assert!(t0.elapsed() >= Duration::from_millis(60), "{:?}", t0.elapsed());
        assert!(!client.is_connected());
        let r = rt.block_on(client.ping());
        assert!(matches!(r, Err(ClientError::ConnectionLost)), "{r:?}");
        // The client closed its socket: the "server" reads its keepalives, then EOF.
        server_side.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut sink = Vec::new();
        server_side.read_to_end(&mut sink).expect("EOF, not a timeout");
        assert!(!sink.is_empty() && sink.len() % 13 == 0, "keepalive frames: {}", sink.len());
    });
}

#[test]
fn notices_are_recognised_by_their_op_byte_and_reach_every_receiver() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (l, ep) = fake_server();
    std::thread::scope(|s| {
        // A long lease: this "server" answers no keepalive, and must not look stopped.
        let h = s.spawn(|| handshake_with_lease(&l, 60_000));
        rt.block_on(async {
            let client = AsyncClient::connect(&ep).await.unwrap();
            let mut server_side = h.join().unwrap();
            let (mut a, mut b) = (client.notices(), client.notices());
            let mut out = Vec::new();
            ResponseFrame::notice(Status::NotOwner, 2).encode(&mut out);
            // An id-0 answer that is not a notice is not delivered as one.
            ResponseFrame::new(op::LOCK, 0, Status::FrameTooLarge, 0).encode(&mut out);
            ResponseFrame::notice(Status::Fenced, ALL_PARTITIONS).encode(&mut out);
            server_side.write_all(&out).unwrap();
            for rx in [&mut a, &mut b] {
                let n = tokio::time::timeout(Duration::from_secs(30), rx.recv()).await;
                let n = n.expect("delivered").unwrap();
                assert_eq!(n, Notice { status: Status::NotOwner, partition: Some(2), value: 2 });
                assert!(n.covers(2) && !n.covers(3));
                let n = rx.recv().await.unwrap();
                assert_eq!(n, Notice { status: Status::Fenced, partition: None, value: u64::MAX });
                assert!(n.covers(0) && n.covers(u32::MAX));
            }
            assert!(client.is_connected(), "a notice is no reason to close");
        });
    });
}

#[test]
fn connect_errors_name_the_endpoint_and_the_cause_once() {
    let ep = {
        let (l, ep) = fake_server();
        drop(l);
        ep
    };
    let e = Client::connect(&ep).unwrap_err();
    assert!(matches!(e, ClientError::Connect { .. }), "{e:?}");
    assert_eq!(e.to_string(), format!("cannot connect to {ep}: connection refused"));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let e = rt.block_on(AsyncClient::connect(&ep)).unwrap_err();
    assert_eq!(e.to_string(), format!("cannot connect to {ep}: connection refused"));
}

#[test]
fn timeouts_longer_than_the_protocol_field_are_refused_before_sending() {
    let srv = Server::start(ServerConfig::ephemeral()).unwrap();
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    let client = Client::connect(&ep).unwrap();
    let too_long = MAX_TIMEOUT + Duration::from_millis(1);
    match client.lock(0..10, Mode::Exclusive, Wait::Timeout(too_long)) {
        Err(ClientError::TimeoutTooLong { timeout, max }) => {
            assert_eq!((timeout, max), (too_long, MAX_TIMEOUT));
        }
        other => panic!("expected TimeoutTooLong, got {other:?}"),
    }
    // Nothing was sent: the range is free, and the longest legal timeout is accepted.
    let g = client.lock(0..10, Mode::Exclusive, Wait::Timeout(MAX_TIMEOUT)).unwrap();
    let st = client.stats(0).unwrap();
    assert_eq!((st.counters.grants, st.counters.holders), (1, 1));
    drop(g);

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let client = AsyncClient::connect(&ep).await.unwrap();
        let r = client.lock(0..10, Mode::Shared, Wait::Timeout(Duration::MAX)).await;
        assert!(matches!(r, Err(ClientError::TimeoutTooLong { .. })), "{r:?}");
    });
    srv.shutdown();
}
