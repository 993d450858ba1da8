//! `fcntl-ofd`: Linux open-file-description byte-range locks, the kernel's range lock.
//!
//! Each worker opens the lock file itself, so each has its own open file description and
//! OFD locks of different workers conflict like those of different processes; a shared hold
//! is `F_RDLCK`, an exclusive one `F_WRLCK`. Waiting uses `F_OFD_SETLKW`, trying and
//! unlocking `F_OFD_SETLK`. The kernel keeps the locks of a file in one list per inode under
//! a spinlock and scans it on every request, so the cost grows with the number of locks held.
//!
//! # Mapping `u64` ranges onto `off_t`
//!
//! The kernel takes `l_start`/`l_len` as `off_t` (`i64`) and rejects bytes beyond
//! `OFFSET_MAX = i64::MAX`. [`flock_span`] maps `[start, end)` to the bytes
//! `[min(start, MAX), min(end - 1, MAX)]` (with `l_len = 0`, "to `OFFSET_MAX`", when the end
//! is clipped). The map preserves overlap: ranges that overlap in `u64` overlap as bytes, so
//! no conflict is ever lost; ranges above `i64::MAX` are coarsened into a single byte and
//! may conflict spuriously. The benchmark ranges lie far below that limit.
//!
//! Same-owner locks merge in the kernel: one descriptor holding `[0, 1)` and `[1, 2)` holds
//! one lock `[0, 2)`. Workloads therefore give each thread its own descriptor and keep the
//! ranges a holder keeps in the background apart from each other.

use core::fmt;
use core::ops::Range;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rangelock::Mode;

/// A lock file in the temporary directory, removed on drop.
pub struct FcntlOfd {
    path: PathBuf,
}

/// One open file description of the lock file: the owner of the OFD locks taken through it.
#[derive(Debug)]
pub struct OfdFd {
    file: File,
}

impl FcntlOfd {
    /// The peer's report name.
    pub const NAME: &'static str = "fcntl-ofd";

    /// Creates a fresh lock file in [`std::env::temp_dir`].
    ///
    /// # Errors
    ///
    /// When the file cannot be created.
    pub fn in_temp_dir() -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("rangelock-ofd-{}-{n}.lock", std::process::id()));
        OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
        Ok(FcntlOfd { path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens a new open file description (a new lock owner).
    ///
    /// # Errors
    ///
    /// When the file cannot be opened.
    pub fn open(&self) -> io::Result<OfdFd> {
        Ok(OfdFd { file: OpenOptions::new().read(true).write(true).open(&self.path)? })
    }
}

impl Drop for FcntlOfd {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

impl fmt::Debug for FcntlOfd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FcntlOfd").field("path", &self.path).finish()
    }
}

/// `(l_start, l_len)` of `range` (non-empty); see the module docs for the mapping.
pub fn flock_span(range: &Range<u64>) -> (libc::off_t, libc::off_t) {
    const MAX: u64 = i64::MAX as u64;
    let start = range.start.min(MAX);
    let last = range.end.saturating_sub(1).max(range.start).min(MAX);
    if last == MAX {
        (start as libc::off_t, 0) // to OFFSET_MAX
    } else {
        (start as libc::off_t, (last - start + 1) as libc::off_t)
    }
}

impl OfdFd {
    /// Sets `range` to `kind` (`F_RDLCK`, `F_WRLCK` or `F_UNLCK`); `wait` selects
    /// `F_OFD_SETLKW`. Returns `Ok(false)` when a non-waiting request meets a conflict.
    ///
    /// # Errors
    ///
    /// What the kernel reports besides a conflict (`ENOLCK`, `EINVAL`, ...).
    pub fn set(&self, range: &Range<u64>, kind: libc::c_int, wait: bool) -> io::Result<bool> {
        let (start, len) = flock_span(range);
        // SAFETY: `flock` is a plain C struct for which all-zero bytes are a valid value.
        let mut fl: libc::flock = unsafe { core::mem::zeroed() };
        fl.l_type = kind as libc::c_short;
        fl.l_whence = libc::SEEK_SET as libc::c_short;
        fl.l_start = start;
        fl.l_len = len;
        fl.l_pid = 0; // required for OFD locks
        let cmd = if wait { libc::F_OFD_SETLKW } else { libc::F_OFD_SETLK };
        loop {
            // SAFETY: the fd is open for the lifetime of `self.file`, and `fl` is a valid,
            // initialised `flock` that outlives the call.
            let rc =
                unsafe { libc::fcntl(self.file.as_raw_fd(), cmd, &mut fl as *mut libc::flock) };
            if rc == 0 {
                return Ok(true);
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EAGAIN | libc::EACCES) if !wait => return Ok(false),
                _ => return Err(err),
            }
        }
    }
}

/// The `fcntl` lock type of `mode`.
pub fn kind(mode: Mode) -> libc::c_int {
    match mode {
        Mode::Exclusive => libc::F_WRLCK,
        Mode::Shared => libc::F_RDLCK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_clip_at_offset_max_and_preserve_overlap() {
        const MAX: u64 = i64::MAX as u64;
        assert_eq!(flock_span(&(0..1)), (0, 1));
        assert_eq!(flock_span(&(1024..2048)), (1024, 1024));
        assert_eq!(flock_span(&(5..u64::MAX)), (5, 0));
        assert_eq!(flock_span(&(MAX - 1..MAX)), (i64::MAX - 1, 1));
        assert_eq!(flock_span(&(MAX..MAX + 1)), (i64::MAX, 0));
        assert_eq!(flock_span(&(u64::MAX - 1..u64::MAX)), (i64::MAX, 0));
    }

    #[test]
    fn descriptors_exclude_each_other_and_share_reads() {
        let lock = FcntlOfd::in_temp_dir().unwrap();
        let (a, b) = (lock.open().unwrap(), lock.open().unwrap());
        let held = {
            assert!(a.set(&(0..10), kind(Mode::Exclusive), false).unwrap());
            0..10
        };
        assert!(!b.set(&(9..20), kind(Mode::Exclusive), false).unwrap());
        assert!(!b.set(&(9..20), kind(Mode::Shared), false).unwrap());
        let adjacent = {
            assert!(b.set(&(10..20), kind(Mode::Exclusive), false).unwrap());
            10..20
        };
        a.set(&held, libc::F_UNLCK, false).unwrap();
        let again = {
            assert!(b.set(&(0..10), kind(Mode::Exclusive), false).unwrap());
            0..10
        };
        b.set(&again, libc::F_UNLCK, false).unwrap();
        b.set(&adjacent, libc::F_UNLCK, false).unwrap();
        let r1 = {
            assert!(a.set(&(0..u64::MAX), kind(Mode::Shared), false).unwrap());
            0..u64::MAX
        };
        let r2 = {
            assert!(b.set(&(5..6), kind(Mode::Shared), false).unwrap());
            5..6
        };
        assert!(!b.set(&(u64::MAX - 2..u64::MAX), kind(Mode::Exclusive), false).unwrap());
        a.set(&r1, libc::F_UNLCK, false).unwrap();
        b.set(&r2, libc::F_UNLCK, false).unwrap();
        let path = lock.path().to_owned();
        drop((a, b));
        drop(lock);
        assert!(!path.exists(), "the lock file is removed on drop");
    }
}
