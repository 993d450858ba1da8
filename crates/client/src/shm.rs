//! The client side of the shared-memory answer slots (`docs/PROTOCOL.md` §9): a read-only
//! mapping of the server's slot file, and how a `LOCK` waits on it.
//!
//! After [`Client::attach_shm`](crate::Client::attach_shm), the server publishes each
//! answer to one of this session's `LOCK`s in the session's slot before it sends the
//! answer frame. A `LOCK` call then writes its frame and, instead of reading the socket,
//! reads the slot until it shows the answer to this lock (the one-host analog of the
//! seed's polling of a ready flag with one-sided RDMA reads):
//!
//! 1. spin on the slot for [`SPIN_FOR`] (a grant that comes at once, or within a few
//!    microseconds, is seen without a system call);
//! 2. then re-read it after a `sched_yield` each time, until [`YIELD_UNTIL`] (lets a
//!    descheduled server thread or another client run on a busy machine);
//! 3. then fall back to waiting for the answer frame on the socket (a lock that waits
//!    longer gets no benefit from polling, and a blocked thread costs nothing).
//!
//! The frame still arrives; the call records the lock's id as answered early and the
//! connection's reader drops that frame when it reads it. So that such frames do not pile
//! up unread, a call that finds [`DRAIN_AT`] or more owed frames reads them first.
//! Correctness never depends on the slot: it shows only the last answer, so a call that
//! misses its own (another thread's lock was answered right after) finds it in the frame.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::time::Duration;

use rangelock_proto::shm::{read_slot, SlotState, SlotWords, SLOT_BYTES};
use rangelock_proto::ShmAttached;

use crate::error::ClientError;

/// How long a `LOCK` spins on its slot before it starts yielding.
pub(crate) const SPIN_FOR: Duration = Duration::from_micros(5);
/// How long a `LOCK` polls its slot (spinning, then yielding) before it waits for the
/// answer frame instead.
pub(crate) const YIELD_UNTIL: Duration = Duration::from_micros(50);
/// Owed frames (answers taken from the slot, pipelined unlocks) that make a call read
/// them off the socket first.
pub(crate) const DRAIN_AT: usize = 32;

/// A read-only mapping of the server's slot file, and this session's slot in it.
#[derive(Debug)]
pub(crate) struct ShmView {
    base: NonNull<SlotWords>,
    len: usize,
    index: u32,
    session: u64,
    path: String,
}

// SAFETY: the mapping is only read through `AtomicU64`s (`SlotWords`), which are Sync;
// it stays mapped until `Drop`, which needs `&mut self`.
unsafe impl Send for ShmView {}
// SAFETY: see `Send`: every access is an atomic load.
unsafe impl Sync for ShmView {}

impl ShmView {
    /// Maps `body.path` read-only and checks that slot `index` shows `session`.
    pub(crate) fn map(body: &ShmAttached, index: u32, session: u64) -> Result<Self, ClientError> {
        let fail = |error| ClientError::ShmMap { path: body.path.clone(), error };
        if index >= body.slots {
            let msg = format!("slot {index} is outside the {} slots of the file", body.slots);
            return Err(fail(std::io::Error::other(msg)));
        }
        let file = File::open(&body.path).map_err(fail)?;
        let len = body.slots as usize * SLOT_BYTES;
        if file.metadata().map_err(fail)?.len() < len as u64 {
            return Err(fail(std::io::Error::other("the file is shorter than its slots")));
        }
        // SAFETY: a fresh read-only shared mapping of `len` bytes of an open file at least
        // that long; the kernel picks the address.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(fail(std::io::Error::last_os_error()));
        }
        let base = NonNull::new(p.cast::<SlotWords>()).expect("mmap returned a non-null address");
        let view = ShmView { base, len, index, session, path: body.path.clone() };
        // The server reset the slot to our session before it answered.
        let shown = (0..1 << 20).find_map(|_| {
            std::hint::spin_loop();
            view.read()
        });
        let shown = shown.map_or(0, |st| st.session);
        if shown != session {
            let msg = format!("slot {index} shows session {shown}, not ours ({session})");
            return Err(fail(std::io::Error::other(msg)));
        }
        Ok(view)
    }

    /// The slot's index.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// A consistent snapshot of the slot (`None` while the server writes it).
    #[inline]
    pub(crate) fn read(&self) -> Option<SlotState> {
        // SAFETY: `index < slots` (checked in `map`), so the slot lies inside the mapping
        // (page-aligned, `len` bytes), which lives as long as `self`; every access is an
        // atomic load.
        let slot = unsafe { &*self.base.as_ptr().add(self.index as usize) };
        read_slot(slot)
    }

    /// The answer to this session's `LOCK` `id`, if the slot shows it: `(status, value)`.
    #[inline]
    pub(crate) fn answer_to(&self, id: u64) -> Option<(u8, u64)> {
        let st = self.read()?;
        (st.session == self.session && st.answers > 0 && st.id == id)
            .then_some((st.status, st.value))
    }

    /// The mapped file.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }
}

impl Drop for ShmView {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, of this length; `&mut self` means no slot
        // reference is alive.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
