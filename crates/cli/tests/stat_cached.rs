//! `rangelock stat` shows cached locks (protocol version 6): the cache's counters, and a
//! kept extent of a caching session as `kept` in the list.

mod common;

use common::{rangelock, ServerProc};
use rangelock_client::{BlockingCachedClient, Client, Endpoint, Mode, Wait};

fn stat(addr: &str) -> String {
    let out = rangelock().args(["stat", "--server", addr]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The line of `s` that starts with `name`.
fn field<'a>(s: &'a str, name: &str) -> &'a str {
    s.lines().find(|l| l.starts_with(name)).unwrap_or_default()
}

#[test]
fn stat_shows_a_kept_extent_and_the_cache_counters() {
    let server = ServerProc::start(&[]);
    let ep: Endpoint = server.addr.parse().unwrap();
    // Alone on the resource: the grant is the whole line, kept after the unlock.
    let cached = BlockingCachedClient::connect(&ep).unwrap();
    cached.lock_exclusive(0..10).unwrap().unlock().unwrap();
    assert_eq!(cached.kept_extents(), 1);
    // An ordinary lock of another session, on a name: held, not kept.
    let plain = Client::connect(&ep).unwrap();
    let _held = plain.resource("db").unwrap().lock(0..1, Mode::Shared, Wait::Try).unwrap();
    let s = stat(&server.addr);
    assert_eq!(field(&s, "cached extents"), "cached extents    1", "{s}");
    assert_eq!(field(&s, "callbacks"), "callbacks         0", "{s}");
    assert_eq!(field(&s, "give backs"), "give backs        0", "{s}");
    assert_eq!(field(&s, "grants expanded"), "grants expanded   1", "{s}");
    let rows: Vec<(&str, &str, &str)> = s
        .lines()
        .filter(|l| ["held ", "kept ", "waiting "].iter().any(|p| l.starts_with(p)))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[0], cols[3], *cols.last().unwrap())
        })
        .collect();
    assert_eq!(rows, [("kept", "exclusive", "-"), ("held", "shared", r#""db""#)], "{s}");
    // The extent goes back with its session: nothing kept any more.
    drop(cached);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let probe = Client::connect(&ep).unwrap();
    while probe.stats(0).unwrap().counters.cached_extents != 0 {
        assert!(std::time::Instant::now() < deadline, "the extent was never released");
        std::thread::yield_now();
    }
    let s = stat(&server.addr);
    assert_eq!(field(&s, "cached extents"), "cached extents    0", "{s}");
    assert!(!s.lines().any(|l| l.starts_with("kept ")), "{s}");
}
