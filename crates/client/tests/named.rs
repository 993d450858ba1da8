//! Named resources from the Rust clients, blocking and async, against a real server:
//! different names never conflict, the same name does, and what cannot be sent is refused
//! before it is (`docs/PROTOCOL.md` §2.2).
#![cfg(not(loom))]

use std::io::{Read, Write};
use std::net::TcpListener;

use rangelock_client::{AsyncClient, Client, ClientError, Endpoint, Mode, Wait};
use rangelock_server::protocol::{GrantMode, HelloStatus, ServerHello, CLIENT_HELLO_LEN};
use rangelock_server::{EngineKind, Server, ServerConfig};

fn server(engine: EngineKind) -> (Server, Endpoint) {
    let srv = Server::start(ServerConfig { engine, ..ServerConfig::ephemeral() }).unwrap();
    let ep = Endpoint::from(srv.tcp_addr().unwrap());
    (srv, ep)
}

#[test]
fn the_blocking_client_locks_named_resources() {
    let engines = [
        EngineKind::Combiner,
        EngineKind::TreeMutex,
        EngineKind::TreeSingle,
        EngineKind::RangeLock,
    ];
    for engine in engines {
        let (srv, ep) = server(engine);
        let (a, b) = (Client::connect(&ep).unwrap(), Client::connect(&ep).unwrap());
        let held = a.resource("db/orders").unwrap().lock_exclusive(0..100).unwrap();
        // Another name, and the unnamed resource, on the same units: no conflict.
        let users = b.resource(b"db/users").unwrap();
        let other = users.lock(0..100, Mode::Exclusive, Wait::Try).unwrap();
        let unnamed = b.lock(0..100, Mode::Exclusive, Wait::Try).unwrap();
        // The same name conflicts, a byte string or a str alike.
        let orders = b.resource(String::from("db/orders")).unwrap();
        assert!(matches!(
            orders.lock(50..51, Mode::Shared, Wait::Try),
            Err(ClientError::WouldBlock)
        ));
        held.unlock().unwrap();
        let g = orders.lock(50..51, Mode::Shared, Wait::Try).unwrap();
        assert_eq!((g.range(), g.mode()), (50..51, Mode::Shared));
        assert_eq!(orders.name(), b"db/orders");
        drop((g, other, unnamed));
        b.flush().unwrap();
        srv.shutdown();
    }
}

#[test]
fn names_the_server_cannot_take_are_refused_before_sending() {
    let (srv, ep) = server(EngineKind::Combiner);
    let c = Client::connect(&ep).unwrap();
    assert!(matches!(c.resource(""), Err(ClientError::InvalidName { len: 0 })));
    let long = vec![b'n'; rangelock_client::MAX_RESOURCE_NAME_LEN + 1];
    assert!(matches!(c.resource(&long), Err(ClientError::InvalidName { len: 1025 })));
    c.resource(&long[1..]).unwrap().lock_exclusive(0..1).unwrap().unlock().unwrap();
    srv.shutdown();
}

#[tokio::test]
async fn the_async_client_locks_named_resources() {
    for engine in [EngineKind::Combiner, EngineKind::RangeLock] {
        let (srv, ep) = server(engine);
        let (a, b) =
            (AsyncClient::connect(&ep).await.unwrap(), AsyncClient::connect(&ep).await.unwrap());
        let held = a.resource("logs/7").unwrap().lock_exclusive(0..10).await.unwrap();
        let _other =
            b.resource("logs/8").unwrap().lock(0..10, Mode::Exclusive, Wait::Try).await.unwrap();
        let same = b.resource("logs/7").unwrap();
        assert!(matches!(
            same.lock(5..6, Mode::Exclusive, Wait::Try).await,
            Err(ClientError::WouldBlock)
        ));
        // A waiter on the name is granted when the holder lets go.
        let waiter = tokio::spawn(async move { same.lock_exclusive(5..6).await });
        held.unlock().await.unwrap();
        let g = waiter.await.unwrap().unwrap();
        assert_eq!(g.range(), 5..6, "{engine:?}");
        srv.shutdown();
    }
}

/// A client that fell back to version 4 (an older server refused its version) has no names:
/// `resource` says so without sending anything.
#[test]
fn a_session_before_version_5_has_no_names() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let ep = Endpoint::from(l.local_addr().unwrap());
    std::thread::scope(|s| {
        let server = s.spawn(|| {
            let mut conns = Vec::new();
            for status in [HelloStatus::UnsupportedVersion, HelloStatus::Accepted] {
                let (mut c, _) = l.accept().unwrap();
                let mut hello = [0u8; CLIENT_HELLO_LEN];
                c.read_exact(&mut hello).unwrap();
                let session = u64::from(status == HelloStatus::Accepted);
                let (grant, lease_ms, max_frame) = (GrantMode::Push, 10_000, 1 << 20);
                let mut out = Vec::new();
                ServerHello { version: 4, status, grant, session, lease_ms, max_frame }
                    .encode(&mut out);
                c.write_all(&out).unwrap();
                conns.push((hello, c));
            }
            conns
        });
        let client = Client::connect(&ep).unwrap();
        let conns = server.join().unwrap();
        assert_eq!(
            conns.iter().map(|(h, _)| h[4]).collect::<Vec<_>>(),
            [rangelock_server::protocol::VERSION as u8, 4],
            "offered its own version, then 4"
        );
        let e = client.resource("db/orders").unwrap_err();
        assert!(matches!(e, ClientError::NamesUnsupported { version: 4 }), "{e}");
        assert_eq!(
            e.to_string(),
            "the session speaks protocol version 4: named resources need version 5"
        );
    });
}
