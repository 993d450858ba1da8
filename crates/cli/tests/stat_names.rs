//! `rangelock stat` lists by resource: the names' counters, then every holder and waiter
//! with its resource (the unnamed one as `-`, names quoted, bytes that are not UTF-8 as
//! `\xNN`), grouped by resource.

mod common;

use common::{rangelock, ServerProc};
use rangelock_client::{Client, Endpoint, Mode, Wait};

#[test]
fn stat_lists_locks_by_resource_name() {
    let server = ServerProc::start(&[]);
    let ep: Endpoint = server.addr.parse().unwrap();
    let c = Client::connect(&ep).unwrap();
    let orders = c.resource("db/orders").unwrap();
    let raw = c.resource(b"\xffraw").unwrap();
    let _a = orders.lock(0..10, Mode::Exclusive, Wait::Forever).unwrap();
    let _b = c.lock(0..10, Mode::Exclusive, Wait::Forever).unwrap();
    let _c = raw.lock(5..6, Mode::Shared, Wait::Forever).unwrap();
    let _d = orders.lock(20..30, Mode::Shared, Wait::Forever).unwrap();
    let out = rangelock().args(["stat", "--server", &server.addr]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = String::from_utf8(out.stdout).unwrap();
    let field = |name: &str| s.lines().find(|l| l.starts_with(name)).unwrap_or_default();
    assert_eq!(field("names live"), "names live        2", "{s}");
    assert_eq!(field("named holders"), "named holders     3", "{s}");
    // Rows by resource: the unnamed one, then names in byte order; arrival order within.
    let rows: Vec<(&str, &str)> = s
        .lines()
        .filter(|l| l.starts_with("held") || l.starts_with("waiting"))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[5], *cols.last().unwrap())
        })
        .collect();
    assert_eq!(
        rows,
        [("0", "-"), ("0", r#""db/orders""#), ("20", r#""db/orders""#), ("5", r#""\xFFraw""#)],
        "{s}"
    );
}
