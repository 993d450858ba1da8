//! Helpers shared by the server's integration tests.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rangelock_server::protocol::*;

/// A tiny xorshift RNG so tests need no extra dependency.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Checks mutual exclusion and the fencing property over a buffer of units.
#[derive(Debug)]
pub struct Checker {
    excl: Vec<AtomicU32>,
    shared: Vec<AtomicU32>,
    data: Vec<AtomicU64>,
}

impl Checker {
    pub fn new(units: usize) -> Self {
        Checker {
            excl: (0..units).map(|_| AtomicU32::new(0)).collect(),
            shared: (0..units).map(|_| AtomicU32::new(0)).collect(),
            data: (0..units).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Call while holding `range` exclusively with fencing `token`.
    pub fn exclusive(&self, start: u64, end: u64, token: u64) {
        for u in start as usize..end as usize {
            assert_eq!(
                self.excl[u].fetch_add(1, Ordering::SeqCst),
                0,
                "two exclusive holders of unit {u}"
            );
            assert_eq!(
                self.shared[u].load(Ordering::SeqCst),
                0,
                "reader inside a writer's unit {u}"
            );
            let prev = self.data[u].load(Ordering::SeqCst);
            assert!(
                prev < token,
                "fencing token {token} not above earlier writer's {prev} on unit {u}"
            );
            self.data[u].store(token, Ordering::SeqCst);
        }
        std::thread::yield_now();
        for u in start as usize..end as usize {
            assert_eq!(
                self.data[u].load(Ordering::SeqCst),
                token,
                "unit {u} overwritten while held"
            );
            self.excl[u].fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Call while holding `range` shared.
    pub fn shared(&self, start: u64, end: u64) {
        for u in start as usize..end as usize {
            self.shared[u].fetch_add(1, Ordering::SeqCst);
            assert_eq!(self.excl[u].load(Ordering::SeqCst), 0, "writer inside a reader's unit {u}");
        }
        std::thread::yield_now();
        for u in start as usize..end as usize {
            self.shared[u].fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// A raw protocol connection for hostile and exact-status tests.
#[derive(Debug)]
pub struct Raw {
    pub s: TcpStream,
    pub hello: ServerHello,
}

impl Raw {
    pub fn connect(addr: std::net::SocketAddr) -> Raw {
        let mut s = TcpStream::connect(addr).unwrap();
        let mut out = Vec::new();
        ClientHello { version: VERSION }.encode(&mut out);
        s.write_all(&out).unwrap();
        let mut buf = [0u8; SERVER_HELLO_LEN];
        s.read_exact(&mut buf).unwrap();
        let hello = ServerHello::decode(&buf).unwrap();
        assert_eq!(hello.status, HelloStatus::Accepted);
        Raw { s, hello }
    }

    pub fn send(&mut self, id: u64, request: Request) {
        let mut out = Vec::new();
        RequestFrame { id, request }.encode(&mut out);
        self.s.write_all(&out).unwrap();
    }

    pub fn send_bytes(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    /// Next response, or `None` at EOF.
    pub fn recv(&mut self) -> Option<ResponseFrame> {
        let mut len = [0u8; 4];
        if self.s.read_exact(&mut len).is_err() {
            return None;
        }
        let mut body = vec![0; u32::from_le_bytes(len) as usize];
        self.s.read_exact(&mut body).ok()?;
        Some(ResponseFrame::decode(&body).expect("server sends valid responses"))
    }

    pub fn call(&mut self, id: u64, request: Request) -> ResponseFrame {
        self.send(id, request);
        let r = self.recv().expect("response");
        assert_eq!(r.id, id);
        r
    }

    /// Whether the server closed the connection (reads EOF).
    pub fn closed_by_server(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.s.read(&mut b), Ok(0) | Err(_))
    }
}

pub fn lock(start: u64, end: u64, mode: Mode, wait: Wait) -> Request {
    Request::Lock { start, end, mode, wait }
}
