//! `rangelock serve --metrics ADDR`: the URL is printed after the `listening on` line and
//! answers `GET /metrics` with the server's counters.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_rangelock");

#[test]
fn serve_prints_the_metrics_url_and_serves_it() {
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--metrics", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    out.read_line(&mut first).unwrap();
    out.read_line(&mut second).unwrap();
    assert!(first.starts_with("listening on 127.0.0.1:"), "{first:?}");
    let url = second.trim().strip_prefix("metrics on ").expect("the metrics line");
    let addr = url
        .strip_prefix("http://")
        .and_then(|u| u.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("a URL: {url}"));
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.contains("rangelock_sessions_total{engine=\"combiner\"} 0"), "{response}");
    // SAFETY: kill(2) on our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) }, 0);
    assert!(child.wait().unwrap().success());
}
