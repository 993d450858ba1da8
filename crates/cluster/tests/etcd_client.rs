//! The etcd client against a real etcd ([`LocalEtcd`]): key-value round trips,
//! transactions, leases, timeouts and failover. Each test skips loudly when etcd
//! is not installed (and fails in CI).

use std::net::TcpListener;
use std::time::{Duration, Instant};

use rangelock_cluster::etcd::{
    local_etcd_or_skip, CmpOp, Compare, Etcd, EtcdError, KeyValue, LocalEtcd, Txn, TxnOp,
    TxnOpResponse,
};

/// Generous: only the timeout test relies on a short one.
const TIMEOUT: Duration = Duration::from_secs(5);

/// Starts an etcd for the test, or returns from it (skipped).
macro_rules! local_etcd {
    ($test:literal) => {
        match local_etcd_or_skip($test) {
            Some(etcd) => etcd,
            None => return,
        }
    };
}

async fn client(local: &LocalEtcd) -> Etcd {
    Etcd::connect(&[local.endpoint()], TIMEOUT).await.expect("connect")
}

fn keys(kvs: &[KeyValue]) -> Vec<&[u8]> {
    kvs.iter().map(|kv| kv.key.as_slice()).collect()
}

/// A port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Polls `f` every 20 ms until it returns `Some`, failing after `deadline`.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    deadline: Duration,
    mut f: impl FnMut() -> F,
) -> T {
    let start = Instant::now();
    loop {
        if let Some(t) = f().await {
            return t;
        }
        assert!(start.elapsed() < deadline, "{what}: not within {deadline:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn kv_round_trips_with_binary_keys() {
    let local = local_etcd!("kv_round_trips_with_binary_keys");
    let etcd = client(&local).await;

    let (rev, missing) = etcd.get(b"p\x00").await.unwrap();
    assert!(rev >= 1 && missing.is_none());

    let written: [&[u8]; 6] = [b"p\x00", b"p\x01\xff", b"p\xff", b"p\xff\x00", b"q", b"\xff\xff"];
    let mut last = rev;
    for (i, key) in written.iter().enumerate() {
        let rev = etcd.put(key, &[i as u8, 0xff, 0], None).await.unwrap();
        assert!(rev > last, "revisions increase");
        last = rev;
        let (read_at, kv) = etcd.get(key).await.unwrap();
        let kv = kv.expect("written");
        assert_eq!(read_at, rev);
        assert_eq!(
            kv,
            KeyValue {
                key: key.to_vec(),
                value: vec![i as u8, 0xff, 0],
                create_revision: rev,
                mod_revision: rev,
                version: 1,
                lease: 0,
            }
        );
    }

    // A second write: version 2, new mod revision; an empty value reads back empty.
    let rev = etcd.put(b"p\x00", b"", None).await.unwrap();
    let kv = etcd.get(b"p\x00").await.unwrap().1.unwrap();
    assert_eq!((kv.version, kv.mod_revision, kv.value.len()), (2, rev, 0));
    assert!(kv.create_revision < rev);

    // Prefixes: sorted by key; the end of [p, 0xff] carries to "q" (excluded); a
    // prefix of only 0xff bytes and the empty prefix run to the last key.
    let (at, kvs) = etcd.get_prefix(b"p").await.unwrap();
    assert_eq!(at, rev);
    assert_eq!(keys(&kvs), [&b"p\x00"[..], b"p\x01\xff", b"p\xff", b"p\xff\x00"]);
    let (_, kvs) = etcd.get_prefix(b"p\xff").await.unwrap();
    assert_eq!(keys(&kvs), [&b"p\xff"[..], b"p\xff\x00"]);
    let (_, kvs) = etcd.get_prefix(b"\xff").await.unwrap();
    assert_eq!(keys(&kvs), [&b"\xff\xff"[..]]);
    let (_, kvs) = etcd.get_prefix(b"").await.unwrap();
    assert_eq!(kvs.len(), written.len());
    assert!(etcd.get_prefix(b"nothing").await.unwrap().1.is_empty());

    let (rev, deleted) = etcd.delete(b"p\x00").await.unwrap();
    assert_eq!(deleted, 1);
    assert!(etcd.get(b"p\x00").await.unwrap().1.is_none());
    let (same_rev, deleted) = etcd.delete(b"p\x00").await.unwrap();
    assert_eq!((same_rev, deleted), (rev, 0), "deleting nothing writes nothing");
}

#[tokio::test]
async fn txn_branches_on_each_compare() {
    let local = local_etcd!("txn_branches_on_each_compare");
    let etcd = client(&local).await;
    let k = || b"owner".to_vec();

    // Create-if-absent: the first wins, the second reads the winner.
    let create = |v: &str| {
        Txn::new()
            .when([Compare::CreateRevision(k(), CmpOp::Equal, 0)])
            .and_then([TxnOp::put(k(), v, None)])
            .or_else([TxnOp::get(k())])
    };
    let first = etcd.txn(create("a")).await.unwrap();
    assert!(first.succeeded);
    assert!(matches!(first.responses[..], [TxnOpResponse::Put]));
    let second = etcd.txn(create("b")).await.unwrap();
    assert!(!second.succeeded);
    assert_eq!(second.revision, first.revision, "the failure branch wrote nothing");
    let [TxnOpResponse::Range(kvs)] = &second.responses[..] else { panic!("{second:?}") };
    assert_eq!((kvs[0].value.as_slice(), kvs[0].mod_revision), (&b"a"[..], first.revision));

    // Compare-and-swap on the mod revision: once, and never with a stale one.
    let cas = |rev| {
        Txn::new()
            .when([Compare::ModRevision(k(), CmpOp::Equal, rev)])
            .and_then([TxnOp::put(k(), "c", None), TxnOp::get(k())])
    };
    let swapped = etcd.txn(cas(first.revision)).await.unwrap();
    assert!(swapped.succeeded);
    let [TxnOpResponse::Put, TxnOpResponse::Range(kvs)] = &swapped.responses[..] else {
        panic!("{swapped:?}")
    };
    assert_eq!((kvs[0].value.as_slice(), kvs[0].mod_revision), (&b"c"[..], swapped.revision));
    let stale = etcd.txn(cas(first.revision)).await.unwrap();
    assert!(!stale.succeeded && stale.responses.is_empty());

    let (lease, _) = etcd.grant_lease(Duration::from_secs(60), None).await.unwrap();
    let holds = |c: Compare| {
        let etcd = etcd.clone();
        async move { etcd.txn(Txn::new().when([c])).await.unwrap().succeeded }
    };
    // `owner` = "c", version 2, no lease.
    assert!(holds(Compare::Version(k(), CmpOp::Equal, 2)).await);
    assert!(holds(Compare::Version(k(), CmpOp::Less, 3)).await);
    assert!(!holds(Compare::Version(k(), CmpOp::Greater, 2)).await);
    assert!(holds(Compare::CreateRevision(k(), CmpOp::Equal, first.revision)).await);
    assert!(holds(Compare::ModRevision(k(), CmpOp::Greater, first.revision)).await);
    assert!(holds(Compare::ModRevision(k(), CmpOp::NotEqual, first.revision)).await);
    assert!(holds(Compare::Value(k(), CmpOp::Equal, b"c".to_vec())).await);
    assert!(holds(Compare::Value(k(), CmpOp::Less, b"d".to_vec())).await);
    assert!(holds(Compare::Value(k(), CmpOp::Greater, b"b\xff".to_vec())).await);
    assert!(!holds(Compare::Value(k(), CmpOp::NotEqual, b"c".to_vec())).await);
    assert!(holds(Compare::Lease(k(), CmpOp::Equal, 0)).await);
    assert!(!holds(Compare::Lease(k(), CmpOp::Equal, lease)).await);
    // A missing key: revisions and version 0, every value comparison false.
    assert!(holds(Compare::Version(b"none".to_vec(), CmpOp::Equal, 0)).await);
    assert!(!holds(Compare::Value(b"none".to_vec(), CmpOp::NotEqual, b"x".to_vec())).await);

    // Attach the lease; all compares must hold; delete and prefix reads in a branch.
    etcd.put(&k(), b"c", Some(lease)).await.unwrap();
    assert!(holds(Compare::Lease(k(), CmpOp::Equal, lease)).await);
    assert!(!holds(Compare::Lease(k(), CmpOp::NotEqual, lease)).await);
    etcd.put(b"owner/x", b"1", None).await.unwrap();
    let both = Txn::new()
        .when([
            Compare::Lease(k(), CmpOp::Equal, lease),
            Compare::Value(k(), CmpOp::Equal, b"wrong".to_vec()),
        ])
        .and_then([TxnOp::delete(k())])
        .or_else([TxnOp::delete(k()), TxnOp::delete(k()), TxnOp::get_prefix(k())]);
    let r = etcd.txn(both).await.unwrap();
    assert!(!r.succeeded);
    let [TxnOpResponse::Delete { deleted: 1 }, TxnOpResponse::Delete { deleted: 0 }, TxnOpResponse::Range(kvs)] =
        &r.responses[..]
    else {
        panic!("{r:?}")
    };
    assert_eq!(keys(kvs), [&b"owner/x"[..]], "the range sees the deletes before it");

    let empty = etcd.txn(Txn::new()).await.unwrap();
    assert!(empty.succeeded && empty.responses.is_empty());
}

#[tokio::test]
async fn lease_expires_without_keep_alive() {
    let local = local_etcd!("lease_expires_without_keep_alive");
    let etcd = client(&local).await;

    let (lease, ttl) = etcd.grant_lease(Duration::from_secs(1), None).await.unwrap();
    assert_eq!(ttl, Duration::from_secs(1), "etcd honours a 1 s TTL (short election timeout)");
    etcd.put(b"leased", b"v", Some(lease)).await.unwrap();
    assert_eq!(etcd.get(b"leased").await.unwrap().1.unwrap().lease, lease);

    let sent = Instant::now();
    assert_eq!(etcd.keep_alive(lease).await.unwrap(), Some(ttl));
    // No more refreshes: the key goes with the lease, but not before the TTL ran
    // from the keep-alive's send time (the bound lease holders rely on).
    eventually("the leased key expires", Duration::from_secs(10), || async {
        etcd.get(b"leased").await.unwrap().1.is_none().then_some(())
    })
    .await;
    assert!(sent.elapsed() >= ttl, "expired {:?} after the keep-alive", sent.elapsed());
    assert_eq!(etcd.keep_alive(lease).await.unwrap(), None);
    let e = etcd.put(b"leased", b"v", Some(lease)).await.unwrap_err();
    assert_eq!(e.code(), Some(5), "an expired lease is not found: {e}");

    // A chosen ID, a TTL rounded up to whole seconds; the ID cannot be granted twice.
    let id = 0x7a11;
    let (granted, ttl) = etcd.grant_lease(Duration::from_millis(1500), Some(id)).await.unwrap();
    assert_eq!((granted, ttl), (id, Duration::from_secs(2)));
    let e = etcd.grant_lease(Duration::from_secs(5), Some(id)).await.unwrap_err();
    assert!(
        matches!(&e, EtcdError::Status { code: 9, message } if message.contains("exists")),
        "{e}"
    );
}

#[tokio::test]
async fn revoke_deletes_attached_keys() {
    let local = local_etcd!("revoke_deletes_attached_keys");
    let etcd = client(&local).await;

    let (lease, _) = etcd.grant_lease(Duration::from_secs(60), None).await.unwrap();
    etcd.put(b"r/1", b"a", Some(lease)).await.unwrap();
    etcd.put(b"r/2", b"b", Some(lease)).await.unwrap();
    etcd.put(b"r/3", b"kept", None).await.unwrap();
    etcd.revoke(lease).await.unwrap();
    let (_, kvs) = etcd.get_prefix(b"r/").await.unwrap();
    assert_eq!(keys(&kvs), [&b"r/3"[..]]);
    assert_eq!(etcd.keep_alive(lease).await.unwrap(), None);
    // Revoking what is gone, or never was, is not an error.
    etcd.revoke(lease).await.unwrap();
    etcd.revoke(0x5eed).await.unwrap();
}

#[tokio::test]
async fn connect_to_a_closed_port_fails_fast_naming_it() {
    let port = closed_port();
    let start = Instant::now();
    let e = Etcd::connect(&[format!("127.0.0.1:{port}")], TIMEOUT).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
    assert!(matches!(e, EtcdError::Unreachable { .. }), "{e:?}");
    let message = e.to_string();
    assert!(message.contains(&format!("http://127.0.0.1:{port}")), "{message}");
    assert!(message.contains("refused"), "{message}");

    let e = Etcd::connect(&[], TIMEOUT).await.unwrap_err();
    assert!(e.to_string().contains("no endpoints"), "{e}");
}

#[tokio::test]
async fn paused_etcd_times_out_instead_of_hanging() {
    let local = local_etcd!("paused_etcd_times_out_instead_of_hanging");
    let timeout = Duration::from_millis(300);
    let slack = Duration::from_secs(1);
    let etcd = Etcd::connect(&[local.endpoint()], timeout).await.unwrap();
    let (lease, _) = etcd.grant_lease(Duration::from_secs(60), None).await.unwrap();

    local.pause().unwrap();
    let expect_timeout = |what: &str, started: Instant, result: Result<(), EtcdError>| {
        let took = started.elapsed();
        let e = result.expect_err(what);
        assert!(took >= timeout && took < timeout + slack, "{what} took {took:?}");
        assert!(
            matches!(&e, EtcdError::Timeout { endpoint, after, .. } if *endpoint == local.endpoint() && *after == timeout),
            "{what}: {e:?}"
        );
    };
    let started = Instant::now();
    expect_timeout("get", started, etcd.get(b"k").await.map(drop));
    let started = Instant::now();
    expect_timeout("keep_alive", started, etcd.keep_alive(lease).await.map(drop));
    let started = Instant::now();
    let connected = Etcd::connect(&[local.endpoint()], timeout).await;
    expect_timeout("connect", started, connected.map(drop));

    local.resume().unwrap();
    assert_eq!(etcd.keep_alive(lease).await.unwrap(), Some(Duration::from_secs(60)));
}

#[tokio::test]
async fn failover_skips_dead_endpoints() {
    let a = local_etcd!("failover_skips_dead_endpoints");
    let b = local_etcd!("failover_skips_dead_endpoints");
    let dead = format!("127.0.0.1:{}", closed_port());
    // Two separate single-member clusters stand in for two members of one: where a
    // write lands shows which endpoint served it.
    let etcd = Etcd::connect(&[dead.clone(), a.endpoint(), b.endpoint()], TIMEOUT).await.unwrap();
    assert_eq!(etcd.endpoints(), [format!("http://{dead}"), a.endpoint(), b.endpoint()]);
    let (direct_a, direct_b) = (client(&a).await, client(&b).await);

    etcd.put(b"k", b"1", None).await.unwrap();
    assert_eq!(direct_a.get(b"k").await.unwrap().1.unwrap().value, b"1");

    // A read after A died fails over (retried even if it went out on a pooled
    // connection to A: reads are safe to repeat); later calls start at B.
    a.kill().unwrap();
    assert_eq!(etcd.get(b"k").await.unwrap().1, None, "served by B");
    etcd.put(b"k", b"2", None).await.unwrap();
    assert_eq!(direct_b.get(b"k").await.unwrap().1.unwrap().value, b"2");

    b.kill().unwrap();
    let e = etcd.get(b"k").await.unwrap_err();
    let message = e.to_string();
    assert!(matches!(e, EtcdError::Unreachable { .. }), "{e:?}");
    assert!(message.contains(&a.endpoint()) && message.contains(&b.endpoint()), "{message}");
}

#[tokio::test]
async fn a_watch_sees_puts_and_deletes_under_its_prefix_and_ends_with_etcd() {
    use rangelock_cluster::etcd::{EventKind, WatchEvent};
    let local = local_etcd!("a_watch_sees_puts_and_deletes");
    let etcd = client(&local).await;
    let mut watch = etcd.watch_prefix(b"w/").await.unwrap();
    let (lease, _) = etcd.grant_lease(Duration::from_secs(60), None).await.unwrap();
    etcd.put(b"w/1", b"a", Some(lease)).await.unwrap();
    etcd.put(b"elsewhere", b"b", None).await.unwrap();
    etcd.delete(b"w/1").await.unwrap();
    etcd.put(b"w/2", b"c", Some(lease)).await.unwrap();
    etcd.revoke(lease).await.unwrap(); // deletes w/2
    let ev = |kind, key: &[u8]| WatchEvent { kind, key: key.to_vec() };
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let next = tokio::time::timeout(TIMEOUT, watch.next()).await.expect("events in time");
        seen.extend(next.unwrap());
    }
    assert_eq!(
        seen,
        [
            ev(EventKind::Put, b"w/1"),
            ev(EventKind::Delete, b"w/1"),
            ev(EventKind::Put, b"w/2"),
            ev(EventKind::Delete, b"w/2"),
        ]
    );
    // etcd goes away: the watch ends with an error (it never hangs on a closed stream).
    local.kill().unwrap();
    let end = tokio::time::timeout(TIMEOUT, watch.next()).await.expect("ends in time");
    assert!(end.is_err(), "{end:?}");
}

#[tokio::test]
async fn time_to_live_reports_live_leases_and_delete_prefix_spares_its_neighbours() {
    let local = local_etcd!("time_to_live_and_delete_prefix");
    let etcd = client(&local).await;

    let (lease, _) = etcd.grant_lease(Duration::from_secs(60), None).await.unwrap();
    let ttl = etcd.lease_time_to_live(lease).await.unwrap().expect("a live lease");
    assert_eq!(ttl.granted, Duration::from_secs(60));
    assert!(ttl.remaining <= ttl.granted && ttl.remaining >= Duration::from_secs(50), "{ttl:?}");
    etcd.revoke(lease).await.unwrap();
    assert_eq!(etcd.lease_time_to_live(lease).await.unwrap(), None, "a revoked lease is gone");
    assert_eq!(etcd.lease_time_to_live(0x5eed).await.unwrap(), None, "never granted");

    for k in [&b"p/a"[..], b"p/b/c", b"p0", b"o/a", b"p"] {
        etcd.put(k, b"v", None).await.unwrap();
    }
    let (_, deleted) = etcd.delete_prefix(b"p/").await.unwrap();
    assert_eq!(deleted, 2);
    let (_, kvs) = etcd.get_prefix(b"").await.unwrap();
    assert_eq!(keys(&kvs), [&b"o/a"[..], b"p", b"p0"]);
}
