//! Resizable arrays built on EPVS (seed paper Figs. 3–6), reusable by benchmarks.
//!
//! * [`ResizableArray`] — the simple scheme (Fig. 3): reads, writes and pushes run in
//!   protected regions; a push that finds the array full advances the version with a
//!   critical section that swaps in a copy twice as large. Everything else pauses while
//!   the copy runs.
//! * [`TwoPhaseArray`] — the two-phase scheme (Figs. 4–6): growing is a state machine
//!   with a semi-stable [`COPYING`] phase in which reads, writes and pushes continue. The
//!   old run is copied in chunks; a write into a chunk copies it first (or waits the
//!   moment another thread takes to copy it) and then goes to the new run.
//!
//! Elements are `u64` in `AtomicU64` slots (no `unsafe` element access). Each operation
//! comes in two forms: `op(..)` enters and leaves a region per call; `op_with(guard, ..)`
//! runs in a region the caller holds ([`ResizableArray::enter`]) and refreshes
//! periodically — the "pinned" variant, which saves the epoch announcement per call but
//! holds back resizes until the caller refreshes.
//!
//! Positions are handed out by an atomic counter, so `len()` counts pushes that have
//! reserved a position; a position whose push is still storing reads as 0.
//!
//! # Correctness
//!
//! The storage pointers live in `UnsafeCell`s that only critical sections of the
//! array's own `Epvs` write and only its protected regions read; EPVS runs critical
//! sections in mutual exclusion with every region (see [`crate::version`]), so the
//! old run can be freed inside the critical section that replaces it. In the two-phase
//! array, the `REST -> COPYING` section runs only after every push that stored into the
//! old run has left its region, and every position handed out afterwards lies past the
//! old run. In `COPYING` nobody writes the old run: each chunk of it is claimed by one
//! copier (a compare-and-swap on the chunk's state), and a write into its range, or a push
//! whose position falls inside it (reserved before an earlier resize, then waiting
//! unprotected through it), stores into the new run only after loading the chunk's
//! `COPIED` state with Acquire, which the copier stored with Release after copying: the
//! copy happens before the write, so it cannot overwrite it. Reads take the new run for
//! copied chunks, the old run otherwise. The seed's Figs. 4–6 let writes into the old run
//! wait for the rest state instead, which stalls every writer for the length of a slow
//! resize (Fig. 13). The loom model `loom_writes_and_reads_during_the_chunked_copy` fails
//! if either ordering is weakened or the chunk check is skipped. (The seed's Fig. 6 also
//! assumes positions inside the old run are never pushed while copying;
//! `concurrent_pushers` caught that as a lost push.)

mod error;
mod resizable;
mod slots;
mod two_phase;

pub use error::OutOfBounds;

/// An instrumentation hook run once per resize (see `with_copy_hook`).
type CopyHook = Box<dyn Fn() + Send + Sync>;
pub use resizable::ResizableArray;
pub use two_phase::{TwoPhaseArray, COPYING};

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    use std::sync::Arc;

    /// The copy hook runs exactly once per resize (one version step each), on the
    /// resizing path, and leaves the array usable.
    macro_rules! copy_hook_runs_once_per_resize {
        ($name:ident, $array:ty) => {
            #[test]
            fn $name() {
                let calls = Arc::new(AtomicUsize::new(0));
                let c = calls.clone();
                let a = <$array>::with_copy_hook(2, move || {
                    c.fetch_add(1, Relaxed);
                });
                for v in 0..100 {
                    a.push(v);
                }
                let resizes = a.epvs().state().version() as usize;
                assert!(
                    resizes >= 5,
                    "2 -> 100 elements takes at least 5 doublings, saw {resizes}"
                );
                assert_eq!(calls.load(Relaxed), resizes);
                assert_eq!(a.read(99), Some(99));
            }
        };
    }

    copy_hook_runs_once_per_resize!(resizable_copy_hook, super::ResizableArray);
    copy_hook_runs_once_per_resize!(two_phase_copy_hook, super::TwoPhaseArray);
}
