//! The shared object the workloads write: one anonymous memory map, pre-faulted.

use core::fmt;

use memmap2::{MmapMut, MmapOptions};

/// An anonymous shared mapping written by many threads under range locks.
///
/// The workloads stand in for a storage engine's buffer: a thread writes (memsets) the
/// bytes of a range only while holding that range exclusively, and reads them only while
/// holding it shared or exclusively. The lock under test is what makes that race-free,
/// which is why [`write`](Self::write) and [`read`](Self::read) are `unsafe`.
pub struct SharedRegion {
    map: MmapMut,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the region is plain memory; `write`/`read` put the burden of excluding data races
// on their callers (they hold the corresponding range lock), so sharing the pointer across
// threads is sound.
unsafe impl Send for SharedRegion {}
// SAFETY: as above.
unsafe impl Sync for SharedRegion {}

impl SharedRegion {
    /// Maps `len` bytes and touches every page, so page faults stay out of measurements.
    ///
    /// # Errors
    ///
    /// When the kernel refuses the mapping.
    pub fn new(len: usize) -> std::io::Result<Self> {
        let mut map = MmapOptions::new().len(len.max(1)).map_anon()?;
        map.fill(0);
        let ptr = map.as_mut_ptr();
        Ok(SharedRegion { map, ptr, len })
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// memsets `len` bytes at `offset` to `byte`.
    ///
    /// # Safety
    ///
    /// No other thread may access `offset..offset + len` during the call (the caller holds
    /// an exclusive lock covering it).
    ///
    /// # Panics
    ///
    /// If the bytes are outside the region.
    #[inline]
    pub unsafe fn write(&self, offset: usize, len: usize, byte: u8) {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len), "write outside region");
        // SAFETY: in bounds (checked above) of a live mapping owned by `self`; exclusive
        // access to these bytes is the caller's contract.
        unsafe { core::ptr::write_bytes(self.ptr.add(offset), byte, len) };
    }

    /// Sums `len` bytes at `offset` (a read the optimiser cannot drop).
    ///
    /// # Safety
    ///
    /// No other thread may write `offset..offset + len` during the call (the caller holds a
    /// shared or exclusive lock covering it).
    ///
    /// # Panics
    ///
    /// If the bytes are outside the region.
    #[inline]
    pub unsafe fn read(&self, offset: usize, len: usize) -> u64 {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len), "read outside region");
        // SAFETY: in bounds of the live mapping; no concurrent writer by the caller's contract.
        let bytes = unsafe { core::slice::from_raw_parts(self.ptr.add(offset), len) };
        bytes.iter().map(|&b| u64::from(b)).sum()
    }

    /// Copies `src` into the region at `offset` (a `memcpy`).
    ///
    /// # Safety
    ///
    /// No other thread may access `offset..offset + src.len()` during the call (the caller
    /// holds an exclusive lock covering it).
    ///
    /// # Panics
    ///
    /// If the bytes are outside the region.
    #[inline]
    pub unsafe fn copy_in(&self, offset: usize, src: &[u8]) {
        let fits = offset.checked_add(src.len()).is_some_and(|end| end <= self.len);
        assert!(fits, "copy_in outside region");
        // SAFETY: in bounds of the live mapping; `src` is a distinct Rust slice, so the two
        // do not overlap; exclusive access to the destination is the caller's contract.
        unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(offset), src.len()) };
    }

    /// Copies `dst.len()` bytes of the region at `offset` into `dst` (a `memcpy`).
    ///
    /// # Safety
    ///
    /// No other thread may write `offset..offset + dst.len()` during the call (the caller
    /// holds a shared or exclusive lock covering it).
    ///
    /// # Panics
    ///
    /// If the bytes are outside the region.
    #[inline]
    pub unsafe fn copy_out(&self, offset: usize, dst: &mut [u8]) {
        let fits = offset.checked_add(dst.len()).is_some_and(|end| end <= self.len);
        assert!(fits, "copy_out outside region");
        // SAFETY: in bounds of the live mapping; `dst` is an exclusive Rust slice, so the two
        // do not overlap; no concurrent writer by the caller's contract.
        unsafe {
            core::ptr::copy_nonoverlapping(self.ptr.add(offset), dst.as_mut_ptr(), dst.len())
        };
    }
}

impl fmt::Debug for SharedRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedRegion")
            .field("len", &self.len)
            .field("map", &self.map.as_ptr())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_then_read_back() {
        let r = SharedRegion::new(4096).unwrap();
        // SAFETY: single-threaded test; nobody else touches the region.
        unsafe {
            r.write(100, 10, 3);
            assert_eq!(r.read(95, 20), 30);
        }
    }

    #[test]
    fn copy_in_then_copy_out() {
        let r = SharedRegion::new(4096).unwrap();
        let mut back = [0u8; 4];
        // SAFETY: single-threaded test; nobody else touches the region.
        unsafe {
            r.copy_in(1000, &[1, 2, 3, 4]);
            r.copy_out(1000, &mut back);
        }
        assert_eq!(back, [1, 2, 3, 4]);
    }

    #[test]
    #[should_panic(expected = "outside region")]
    fn out_of_bounds_panics() {
        let r = SharedRegion::new(16).unwrap();
        // SAFETY: single-threaded; the call panics before touching memory.
        unsafe { r.write(10, 10, 0) };
    }
}
