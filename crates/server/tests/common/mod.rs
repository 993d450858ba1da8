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
        Raw::handshake(TcpStream::connect(addr).unwrap())
    }

    /// Connects with an authentication token in the hello.
    pub fn connect_with_token(addr: std::net::SocketAddr, token: &[u8]) -> Raw {
        Raw::handshake_with(
            TcpStream::connect(addr).unwrap(),
            &ClientHello::with_token(Some(token)),
        )
    }

    /// Connects with a hello of protocol `version`.
    pub fn connect_version(addr: std::net::SocketAddr, version: u16) -> Raw {
        Raw::handshake_with(TcpStream::connect(addr).unwrap(), &ClientHello::new(version))
    }

    fn handshake(s: TcpStream) -> Raw {
        Raw::handshake_with(s, &ClientHello::new(VERSION))
    }

    fn handshake_with(mut s: TcpStream, hello: &ClientHello) -> Raw {
        let mut out = Vec::new();
        hello.encode(&mut out);
        s.write_all(&out).unwrap();
        let mut buf = [0u8; SERVER_HELLO_LEN];
        s.read_exact(&mut buf).unwrap();
        let hello = ServerHello::decode(&buf).unwrap();
        assert_eq!(hello.status, HelloStatus::Accepted);
        Raw { s, hello }
    }

    /// Like [`Raw::connect`], with the socket's receive buffer fixed at `rcvbuf` bytes
    /// before connecting (which turns the kernel's autotuning off: a peer that reads
    /// nothing then buffers at most that much on its side).
    pub fn connect_with_rcvbuf(addr: std::net::SocketAddr, rcvbuf: i32) -> Raw {
        use std::os::fd::FromRawFd;
        let std::net::SocketAddr::V4(v4) = addr else { panic!("IPv4 only") };
        // SAFETY: plain socket calls on a descriptor this function owns; the sockaddr_in
        // is fully initialised and its size is passed; on success the descriptor is
        // handed to TcpStream, which closes it.
        let fd = unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
            let r = libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&rcvbuf as *const i32).cast(),
                std::mem::size_of::<i32>() as libc::socklen_t,
            );
            assert_eq!(r, 0, "setsockopt: {}", std::io::Error::last_os_error());
            let sa = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from(*v4.ip()).to_be() },
                sin_zero: [0; 8],
            };
            let r = libc::connect(
                fd,
                (&sa as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            );
            assert_eq!(r, 0, "connect: {}", std::io::Error::last_os_error());
            fd
        };
        // SAFETY: `fd` is a connected TCP socket nobody else owns.
        let s = unsafe { TcpStream::from_raw_fd(fd) };
        Raw::handshake(s)
    }

    pub fn send(&mut self, id: u64, request: Request<'_>) {
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

    /// Sends a request that is not answered yet (a LOCK that waits) and returns once the
    /// server has taken it: a STATS sent after it on the same session is answered after it.
    pub fn queue(&mut self, id: u64, request: Request<'_>) {
        self.send(id, request);
        self.call(u64::MAX, Request::Stats { max_entries: 0 });
    }

    pub fn call(&mut self, id: u64, request: Request<'_>) -> ResponseFrame {
        self.send(id, request);
        let r = self.recv().expect("response");
        assert_eq!(r.id, id);
        r
    }

    /// Whether the server closed the connection (reads EOF), after at most the
    /// `SESSION_ENDED` notice a version 4 session gets first (PROTOCOL.md §2.1).
    pub fn closed_by_server(&mut self) -> bool {
        self.end_reason().is_ok()
    }

    /// Reads until the server closes the connection; the reason of the `SESSION_ENDED`
    /// notice it sent first (`None`: no notice). `Err` if anything else arrives.
    pub fn end_reason(&mut self) -> Result<Option<EndReason>, String> {
        let mut reason = None;
        loop {
            let mut len = [0u8; 4];
            match self.s.read(&mut len[..1]) {
                Ok(0) | Err(_) => return Ok(reason),
                Ok(_) => {}
            }
            self.s.read_exact(&mut len[1..]).map_err(|e| e.to_string())?;
            let mut body = vec![0; u32::from_le_bytes(len) as usize];
            self.s.read_exact(&mut body).map_err(|e| e.to_string())?;
            let r = ResponseFrame::decode(&body).map_err(|e| e.to_string())?;
            match (r.is_notice() && r.status == Status::SessionEnded, reason) {
                (true, None) => reason = Some(EndReason::from_code(r.value)),
                _ => return Err(format!("a frame after the session ended: {r:?}")),
            }
        }
    }
}

pub fn lock(start: u64, end: u64, mode: Mode, wait: Wait) -> Request<'static> {
    Request::Lock { start, end, mode, wait }
}
