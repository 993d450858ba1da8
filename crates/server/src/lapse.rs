//! Whether a session's lease has really lapsed when its timer fires.
//!
//! A session ends when the server has read no frame of its client for a lease. A timer
//! measures that, and the timer also runs out when it is the *server* that stopped: a
//! `SIGSTOP`, a long stall, a suspended machine. Its clients went on sending keepalives,
//! which wait unread in the socket. After a stop the runtime may even fire the timer
//! before its I/O driver has seen them: `epoll_wait` fails with `EINTR` when the process
//! is continued, so the first turn of the driver after a `SIGCONT` runs the timers and
//! delivers no readiness. The server's own lapse of time is not the clients' fault, so
//! before it ends a session for its lease, [`judge`] looks:
//!
//! 1. **At the socket.** Bytes waiting in the kernel (a keepalive, any frame, or the
//!    client's close) mean the client did not fall silent: the session goes on, and the
//!    read that is still pending gets them. It looks again a moment later if no frame
//!    completed by then.
//! 2. **At the fence, in a cluster.** A node whose fence is closed grants nothing, and
//!    what it measured while it could not act says nothing about its clients. Releasing
//!    the session's locks now would also hide them from the new owner's grace period.
//!    So the session waits until the node either confirms its etcd lease again (the fence
//!    reopens: the node owned its partitions throughout, and the lease lapsed at a live
//!    owner, an ordinary lapse) or has given every partition up. In the second case the
//!    session's locks were (or are being) given up with `NOTICE FENCED`, and no grant of
//!    this node followed their release: the session ends after a `NOTICE FENCED` for
//!    all partitions, which tells the client to reclaim its locks at the new owner.
//!
//! Only what is left is a lapse: the client was silent for a lease while the server ran
//! and could act on it.

use std::os::fd::RawFd;
use std::time::Duration;

use crate::ownership::Ownership;

/// What a session whose lease timer ran out does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The client is not (known to be) silent: look again after this long, reading on.
    Alive(Duration),
    /// The lease lapsed: end the session and release its locks.
    Lapsed,
    /// The node gave every partition up while the lease ran out: end the session after a
    /// `NOTICE FENCED` for all partitions (the client reclaims its locks elsewhere).
    Fenced,
}

/// Decides what a session on socket `fd` does when its lease timer (of `lease`) ran out;
/// see the module docs. `ownership`: the node's, in a cluster.
pub(crate) fn judge(fd: RawFd, ownership: Option<&Ownership>, lease: Duration) -> Verdict {
    // A moment for the pending read to collect what is there (the I/O driver runs
    // before the next timer fires).
    let moment = (lease / 10).clamp(Duration::from_millis(10), Duration::from_millis(100));
    if has_input(fd) {
        return Verdict::Alive(moment);
    }
    match ownership {
        Some(own) if !own.fence().is_open() => {
            if own.owned().is_empty() {
                Verdict::Fenced
            } else {
                // The manager gives the partitions up, or confirms the lease, within a
                // round (plus an etcd request timeout).
                Verdict::Alive(moment)
            }
        }
        _ => Verdict::Lapsed,
    }
}

/// Whether the socket `fd` has bytes to read, or the peer's close, waiting in the kernel.
fn has_input(fd: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: `fd` is the session's socket, open for as long as its read half lives
    // (the caller holds it); `recv` with MSG_PEEK | MSG_DONTWAIT writes at most one byte
    // into `byte`, which is valid for the call, consumes nothing and never blocks.
    let n = unsafe {
        libc::recv(fd, (&mut byte as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
    };
    // 1: a byte; 0: the peer closed (the read finds the end). -1: nothing (EAGAIN), or an
    // error the read reports.
    n >= 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn unread_bytes_or_a_close_keep_a_session_and_silence_ends_it() {
        let lease = Duration::from_secs(2);
        let (mut client, server) = UnixStream::pair().unwrap();
        assert_eq!(judge(server.as_raw_fd(), None, lease), Verdict::Lapsed);
        client.write_all(b"k").unwrap();
        let moment = Duration::from_millis(100); // a tenth of the lease, at most 100 ms
        assert_eq!(judge(server.as_raw_fd(), None, lease), Verdict::Alive(moment));
        // Peeking consumed nothing.
        assert_eq!(judge(server.as_raw_fd(), None, lease), Verdict::Alive(moment));
        let (client, server) = UnixStream::pair().unwrap();
        drop(client);
        assert!(matches!(judge(server.as_raw_fd(), None, lease), Verdict::Alive(_)));
    }

    #[test]
    fn a_fenced_node_waits_until_it_owns_nothing() {
        use rangelock_proto::Partitioning;
        let lease = Duration::from_millis(500);
        let (_client, server) = UnixStream::pair().unwrap();
        let fd = server.as_raw_fd();
        let own = Ownership::new(Partitioning::new(2).unwrap(), "a");
        // Fenced, owns nothing: the session's locks are given up; tell the client.
        assert_eq!(judge(fd, Some(&own), lease), Verdict::Fenced);
        own.acquire(1, 7, None);
        // Fenced, still owns a partition: wait for the manager.
        assert_eq!(judge(fd, Some(&own), lease), Verdict::Alive(Duration::from_millis(50)));
        // The fence open: an ordinary lapse.
        own.fence().extend_until(crate::ownership::Fence::now(), Duration::from_secs(60));
        assert_eq!(judge(fd, Some(&own), lease), Verdict::Lapsed);
    }
}
