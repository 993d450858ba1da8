//! Binding the listeners: TCP with a configurable backlog, and a Unix socket that never
//! takes over a live server's path.
//!
//! # Unix socket paths
//!
//! `bind(2)` on a path fails if a file is there, so servers customarily delete an old
//! socket file first. Deleting it unconditionally lets a second server silently take a
//! live server's path: both keep running, clients of each see a different lock table,
//! and two of them can hold the same range at once. So, in order:
//!
//! 1. Take an exclusive `flock` on `PATH.lock` (created if missing, kept for the server's
//!    life, and left in place afterwards: removing a lock file races with the next
//!    server opening it). Two servers starting on one path at once are serialized here;
//!    the second is refused while the first lives.
//! 2. If a file is at `PATH`: refuse if it is not a socket; connect to it; if something
//!    answers, refuse ("a server is already listening on PATH"); if the connection is
//!    refused (no listener: the owner died without removing it) the file is stale and is
//!    removed.
//! 3. Bind and listen.
//!
//! Step 2 also covers a process that listens on the path without taking the lock (an
//! older `rangelock`, another program). Every error names the address or path.

use std::fs::File;
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use tokio::net::{TcpListener, TcpSocket, UnixListener, UnixSocket};

/// Prefixes `e` with what was being done, keeping its kind.
fn context(e: io::Error, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Binds and listens on `addr` with `backlog` pending connections (`SO_REUSEADDR` set, as
/// `std`'s `TcpListener::bind` does).
pub(crate) fn tcp(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let listen = || {
        let s = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
        s.set_reuseaddr(true)?;
        s.bind(addr)?;
        s.listen(backlog)
    };
    listen().map_err(|e| context(e, format_args!("cannot listen on {addr}")))
}

/// A bound Unix socket path and the lock that keeps it ours; see the module docs.
#[derive(Debug)]
pub(crate) struct SocketPath {
    path: PathBuf,
    /// Held (flock) while this lives; closing it releases the lock.
    _lock: File,
}

impl SocketPath {
    /// Removes the socket file (the path is still ours: we hold its lock), then releases
    /// the lock.
    pub(crate) fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Binds and listens on the Unix socket `path`; see the module docs.
pub(crate) fn unix(path: &Path, backlog: u32) -> io::Result<(UnixListener, SocketPath)> {
    let shown = path.display();
    let lock = lock_path(path).map_err(|e| context(e, format_args!("cannot listen on {shown}")))?;
    remove_if_stale(path)?;
    let listen = || {
        let s = UnixSocket::new_stream()?;
        s.bind(path)?;
        s.listen(backlog)
    };
    let listener = listen().map_err(|e| context(e, format_args!("cannot listen on {shown}")))?;
    Ok((listener, SocketPath { path: path.to_owned(), _lock: lock }))
}

/// Takes the exclusive lock on `PATH.lock` without waiting.
fn lock_path(path: &Path) -> io::Result<File> {
    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock_name = PathBuf::from(lock_name);
    let f =
        File::options().create(true).truncate(false).write(true).open(&lock_name).map_err(|e| {
            context(e, format_args!("cannot open lock file {}", lock_name.display()))
        })?;
    // SAFETY: flock(2) on a descriptor we own and keep open.
    let r = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(if e.kind() == io::ErrorKind::WouldBlock {
            io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "another rangelock server is running on this path (it holds {})",
                    lock_name.display()
                ),
            )
        } else {
            context(e, format_args!("cannot lock {}", lock_name.display()))
        });
    }
    Ok(f)
}

/// Removes a socket file nobody listens on; refuses a live socket or a non-socket file.
fn remove_if_stale(path: &Path) -> io::Result<()> {
    let shown = path.display();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(context(e, format_args!("cannot inspect {shown}"))),
    };
    if !meta.file_type().is_socket() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!("cannot listen on {shown}: the path exists and is not a socket"),
        ));
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!("cannot listen on {shown}: a server is already listening on it"),
        )),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
            tracing::info!(path = %shown, "removing a stale socket file (nobody listens on it)");
            std::fs::remove_file(path)
                .map_err(|e| context(e, format_args!("cannot remove stale socket {shown}")))
        }
        Err(e) => Err(context(e, format_args!("cannot probe the existing socket {shown}"))),
    }
}
