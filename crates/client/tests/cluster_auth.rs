//! A cluster whose nodes run with auth tables: the cluster client carries its token in
//! [`ClusterOptions::connect`]. A missing or wrong token, a node that does not know the
//! token, and a range outside the token's ranges each fail at once with a clear error —
//! even a lock that may wait forever — and leave nothing held.
#![cfg(not(loom))]

mod cluster_support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cluster_support::*;
use rangelock_client::cluster::{ClusterClient, ClusterError, ClusterOptions};
use rangelock_client::{ClientError, ConnectOptions, Mode, Status, Wait};
use rangelock_server::AuthTable;

/// May lock anything.
const FULL: &str = "cluster-full-secret-1f2e3d";
/// May lock partition 0 and the first half of partition 1.
const PART: &str = "cluster-part-secret-4c5b6a";
/// Where `PART`'s range ends.
const PART_END: u64 = Q + Q / 2;

fn table(tokens: &[(&str, &str)]) -> Arc<AuthTable> {
    let mut text = String::new();
    for (name, secret) in tokens {
        text += &format!("[[token]]\nname = \"{name}\"\nsecret = \"{secret}\"\n");
        if *name == "part" {
            text += &format!("ranges = [\"0..{PART_END:#x}\"]\n");
        }
    }
    Arc::new(AuthTable::from_toml(Path::new("auth.toml"), &text).unwrap())
}

fn options(token: Option<&str>) -> ClusterOptions {
    let mut connect = ConnectOptions::new();
    if let Some(t) = token {
        connect = connect.token(t);
    }
    ClusterOptions { connect, ..ClusterOptions::default() }
}

/// At once: well within this (a lock that waits forever would hit it).
const PROMPTLY: Duration = Duration::from_secs(5);

#[test]
fn the_token_reaches_every_node_and_ranges_are_enforced_on_each() {
    let t = table(&[("full", FULL), ("part", PART)]);
    let c = two_nodes_with(|_, config| config.auth = Some(t.clone()));
    let rt = runtime();
    rt.block_on(async {
        let e = ClusterClient::connect(&c.seeds(), options(None)).await.unwrap_err();
        assert!(matches!(e, ClusterError::Client(ClientError::AuthRequired)), "{e}");
        assert_eq!(e.to_string(), "the server requires an authentication token and none was given");
        let wrong = options(Some("not-a-known-secret-0000"));
        let e = ClusterClient::connect(&c.seeds(), wrong).await.unwrap_err();
        assert!(matches!(e, ClusterError::Client(ClientError::AuthFailed)), "{e}");
        // A seed that is down as well: the refusal is still what the caller learns.
        let seeds = ["127.0.0.1:1".to_owned(), c.nodes[1].addr.clone()];
        let e = ClusterClient::connect(&seeds, options(None)).await.unwrap_err();
        assert!(matches!(e, ClusterError::Client(ClientError::AuthRequired)), "{e}");
        let full = c.client(options(Some(FULL))).await;
        let part = c.client(options(Some(PART))).await;
        // Across both nodes, inside the ranges.
        let g = part.lock(Q - 5..Q + 5, Mode::Exclusive, Wait::Forever).await.unwrap();
        assert_eq!(g.pieces().len(), 2);
        g.unlock().await.unwrap();
        // Partly outside: the first piece (on a) is granted, the second (on b) forbidden;
        // the lock fails at once and gives the first piece back.
        for wait in [Wait::Try, Wait::Forever] {
            let r = tokio::time::timeout(
                PROMPTLY,
                part.lock(Q - 5..PART_END + 1, Mode::Exclusive, wait),
            )
            .await
            .expect("a forbidden range fails at once");
            assert!(matches!(r, Err(ClusterError::Server(Status::Forbidden))), "{r:?}");
        }
        let e = part.lock(2 * Q..2 * Q + 1, Mode::Shared, Wait::Try).await.unwrap_err();
        assert_eq!(e.to_string(), "server error: range outside what this session's token may lock");
        // Nothing is left held: the full token takes the whole space at once.
        let g = full.lock(0..u64::MAX, Mode::Exclusive, Wait::Try).await.unwrap();
        assert_eq!(g.pieces().len(), 4);
        g.unlock().await.unwrap();
    });
}

#[test]
fn a_node_that_does_not_know_the_token_fails_the_lock_at_once() {
    // Node a knows the token; node b (partitions 1 and 3) does not.
    let (a, b) = (table(&[("full", FULL)]), table(&[("other", PART)]));
    let c =
        two_nodes_with(|i, config| config.auth = Some(if i == 0 { a.clone() } else { b.clone() }));
    let rt = runtime();
    rt.block_on(async {
        let client = c.client(options(Some(FULL))).await; // reads the map from a
        client.lock(0..10, Mode::Exclusive, Wait::Try).await.unwrap().unlock().await.unwrap();
        let r =
            tokio::time::timeout(PROMPTLY, client.lock(Q..Q + 10, Mode::Exclusive, Wait::Forever))
                .await
                .expect("not retried as if b were unreachable");
        assert!(matches!(r, Err(ClusterError::Client(ClientError::AuthFailed))), "{r:?}");
        let e = r.unwrap_err();
        assert!(e.to_string().contains("refused the authentication token"), "{e}");
    });
}
