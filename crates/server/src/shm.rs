//! Shared-memory answer slots: the one-host analog of the seed's "combiner polling with
//! RDMA" (`docs/PROTOCOL.md` §9).
//!
//! # What
//!
//! A server started with `shm_slots > 0` creates one file of `shm_slots` × 64 bytes (one
//! cache line per slot) and maps it. A session on this host (a Unix socket, or TCP from a
//! loopback address) sends `SHM_ATTACH` and gets a slot index and the file's path; the
//! client maps the file read-only. From then on, every answer to one of the session's
//! `LOCK`s is **published in the slot before its frame is queued**: whoever produces the
//! answer (the combiner thread, a handler holding the table, a rangelock-engine handler)
//! goes through the session's [`ShmSink`], which writes the slot with the seqlock of
//! [`rangelock_proto::shm`] and then hands the frame on. A client learns of its grant by
//! reading a ready flag in the server's memory, without waiting for the socket; the frame
//! still follows, so a client that never looks at the slot sees plain push mode.
//!
//! # Why a file path, not a descriptor passed over the socket
//!
//! `SCM_RIGHTS` works only on Unix sockets, and the server writes its answers with plain
//! non-blocking writes from whichever thread produced them (the `reply` module): passing
//! a descriptor would need a `sendmsg` path of its own. A path works for Unix sockets
//! and TCP loopback alike, and `ls` shows it. The file is created with `O_EXCL` and mode
//! `0600` in the temp directory (or `shm_dir`), so only the server's user can map it —
//! the same trust a local client needs to be granted locks in the first place; the client
//! maps it read-only and can read, not forge, answers. The file is removed when the
//! server stops; a server killed with SIGKILL leaves it behind
//! (`rangelock-<pid>-<n>.slots`, safe to delete).
//!
//! # Invariants
//!
//! * A slot is leased to at most one session: the free list hands an index out once, and
//!   it returns only when the session's [`ShmSink`] is dropped — after the lock table and
//!   the read loop dropped their handles, so no answer of that session can be published
//!   afterwards. A new holder never sees a publication of the previous one (it resets
//!   the slot with its own session id; `seq` keeps increasing).
//! * Publications of one slot are serialized by the lease's mutex (the rangelock engine
//!   may answer a session's locks from two handler threads at once).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::protocol::shm::{publish, SlotState, SlotWords, MAX_SHM_PATH, SLOT_BYTES};
use crate::protocol::{op, ResponseFrame, ShmAttached, Status};
use crate::reply::{ReplySink, ReplyTo};

/// Distinguishes the slot files of several servers in one process.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

/// The mapped slot file and its free list; see the module docs.
#[derive(Debug)]
pub(crate) struct ShmArea {
    path: PathBuf,
    base: NonNull<SlotWords>,
    slots: u32,
    free: Mutex<Vec<u32>>,
}

// SAFETY: the mapping is only accessed through `AtomicU64`s (shared references to
// `SlotWords`), which are Sync; the pointer stays valid until `Drop` unmaps it, and `Drop`
// needs `&mut self`, so no reference handed out by `slot` outlives it.
unsafe impl Send for ShmArea {}
// SAFETY: see `Send` above: every access is atomic.
unsafe impl Sync for ShmArea {}

impl ShmArea {
    /// Creates and maps a file of `slots` slots in `dir` (default: the temp directory).
    pub(crate) fn create(dir: Option<&Path>, slots: u32) -> io::Result<ShmArea> {
        let dir = match dir {
            Some(d) => std::path::absolute(d)?,
            None => std::env::temp_dir(),
        };
        let len = slots as usize * SLOT_BYTES;
        let (path, file) = loop {
            // Relaxed: only uniqueness matters.
            let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
            let path = dir.join(format!("rangelock-{}-{n}.slots", std::process::id()));
            // O_EXCL: never reuse (or follow a symlink to) a file someone else put there.
            match File::options().read(true).write(true).create_new(true).mode(0o600).open(&path) {
                Ok(f) => break (path, f),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1 << 20 => continue,
                Err(e) => {
                    let what = format!("cannot create the shm slot file {}", path.display());
                    return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
                }
            }
        };
        let cleanup = |e: io::Error| {
            let _ = std::fs::remove_file(&path);
            e
        };
        if path.to_str().is_none_or(|p| p.len() > MAX_SHM_PATH) {
            return Err(cleanup(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the shm slot file path {} is not UTF-8 or longer than {MAX_SHM_PATH} \
                     bytes (choose another shm_dir)",
                    path.display()
                ),
            )));
        }
        file.set_len(len as u64).map_err(cleanup)?;
        // SAFETY: a fresh shared mapping of `len` bytes of a file we own and just sized;
        // the kernel picks the address. Nothing else in this process maps it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(cleanup(io::Error::last_os_error()));
        }
        let base = NonNull::new(p.cast::<SlotWords>()).expect("mmap returned a non-null address");
        Ok(ShmArea { path, base, slots, free: Mutex::new((0..slots).rev().collect()) })
    }

    /// The file clients map.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Slots in the file.
    pub(crate) fn slots(&self) -> u32 {
        self.slots
    }

    /// Slots not leased now.
    pub(crate) fn free_slots(&self) -> usize {
        self.free.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    fn slot(&self, index: u32) -> &SlotWords {
        assert!(index < self.slots, "slot index out of range");
        // SAFETY: `index < slots`, so the slot lies inside the mapping (page-aligned, hence
        // 64-byte aligned slots, `slots * 64` bytes long), which lives as long as `self`;
        // the words are only ever accessed as atomics, by us and by clients.
        unsafe { &*self.base.as_ptr().add(index as usize) }
    }

    /// Leases a free slot to `session` and resets it to show that session; `None` when
    /// every slot is leased.
    pub(crate) fn attach(self: &Arc<Self>, session: u64) -> Option<SlotLease> {
        let index = self.free.lock().unwrap_or_else(PoisonError::into_inner).pop()?;
        let lease = SlotLease { area: self.clone(), index, session, answers: Mutex::new(0) };
        publish(self.slot(index), &SlotState { session, ..SlotState::default() });
        Some(lease)
    }
}

impl Drop for ShmArea {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `create`, of this length; `&mut self` means no slot
        // reference is alive (leases hold an `Arc` of the area).
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.slots as usize * SLOT_BYTES);
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// One session's slot; returned to the free list when dropped.
#[derive(Debug)]
pub(crate) struct SlotLease {
    area: Arc<ShmArea>,
    index: u32,
    session: u64,
    /// `LOCK` answers published; the mutex serializes publications of this slot.
    answers: Mutex<u64>,
}

impl SlotLease {
    /// The slot's index in the file.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// Publishes the answer to `LOCK` `id`.
    fn publish(&self, id: u64, status: Status, value: u64) {
        let mut answers = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        *answers += 1;
        let state = SlotState {
            session: self.session,
            answers: *answers,
            id,
            status: status.code(),
            value,
        };
        publish(self.area.slot(self.index), &state);
    }
}

impl Drop for SlotLease {
    fn drop(&mut self) {
        let _serial = self.answers.lock().unwrap_or_else(PoisonError::into_inner);
        publish(self.area.slot(self.index), &SlotState::default());
        self.area.free.lock().unwrap_or_else(PoisonError::into_inner).push(self.index);
    }
}

/// A session's reply sink on a server with slots: publishes `LOCK` answers in the
/// session's slot (once attached), then passes every frame on.
#[derive(Debug)]
pub(crate) struct ShmSink {
    inner: ReplySink,
    slot: OnceLock<SlotLease>,
}

impl ShmSink {
    /// Wraps the session's sink; no slot yet.
    pub(crate) fn new(inner: ReplySink) -> ShmSink {
        ShmSink { inner, slot: OnceLock::new() }
    }

    /// The answer to `SHM_ATTACH` request `id` of `session` on a connection from this
    /// host (`local`); leases a slot on success.
    pub(crate) fn attach(
        &self,
        area: &Arc<ShmArea>,
        session: u64,
        id: u64,
        local: bool,
    ) -> ResponseFrame {
        let refuse = |status, value| ResponseFrame::new(op::SHM_ATTACH, id, status, value);
        if !local {
            return refuse(Status::ShmUnavailable, 0);
        }
        if let Some(lease) = self.slot.get() {
            return refuse(Status::ShmAlreadyAttached, lease.index().into());
        }
        let Some(lease) = area.attach(session) else {
            return refuse(Status::ShmFull, area.slots().into());
        };
        let index = lease.index();
        // Only the session's read loop attaches, and it found the cell empty above.
        let _ = self.slot.set(lease);
        let path = area.path().to_str().expect("checked when the area was created").to_owned();
        ResponseFrame::shm_attached(id, index, ShmAttached { slots: area.slots(), path })
    }
}

impl ReplyTo for ShmSink {
    #[inline]
    fn queue(&self, r: &ResponseFrame) -> bool {
        if r.op == op::LOCK {
            if let Some(lease) = self.slot.get() {
                lease.publish(r.id, r.status, r.value);
            }
        }
        self.inner.queue(r)
    }

    fn flush(&self) {
        self.inner.flush()
    }
}
