//! BRAVO: a biased reader-writer lock (Dice & Kogan, "BRAVO — Biased Locking for
//! Reader-Writer Locks", USENIX ATC 2019), the peer EPVS is measured against in
//! seed 2 §6 (Figs. 14, 17, 18).
//!
//! # Algorithm
//!
//! BRAVO wraps an ordinary reader-writer lock (here `parking_lot`'s raw rwlock) and adds
//! a *read-biased* fast path that never writes to a cache line shared by all readers:
//!
//! * A **visible-readers table** ([`VisibleReaders`]) is an array of word-sized slots,
//!   shared by many locks (one process-wide table by default, as in the paper). A slot
//!   holds `0` (empty) or the identity (address) of a lock that some reader holds.
//! * Each lock has a **bias flag** `rbias`. While it is set, a reader hashes
//!   (thread, lock) to a slot, CASes `0 -> lock` into it, then *re-checks* `rbias`. If the
//!   flag is still set the reader holds the lock without touching the underlying rwlock;
//!   otherwise it clears its slot and takes the slow path. A reader whose slot is taken
//!   (a collision, or a nested read) also takes the slow path.
//! * The **slow path** takes the underlying lock in shared mode. If the bias is off and the
//!   inhibition window has passed, the slow reader re-enables the bias (it may: it holds
//!   the shared lock, so no writer is inside).
//! * A **writer** takes the underlying lock exclusively (which excludes slow readers and
//!   new bias re-enables), then, if the bias is on, *revokes* it: clears `rbias` and waits
//!   until no slot of the table holds this lock's identity.
//! * After a revocation that took time `d`, the bias stays off until `now + N·d`
//!   (`N` = [`INHIBIT_MULTIPLIER`] = 9, the paper's value), which bounds the fraction of
//!   time writers spend revoking to about `1/(N+1)` under write-heavy loads.
//!
//! # Correctness argument
//!
//! *Exclusion between fast readers and writers* is a Dekker handshake. A reader does
//! `CAS(slot, 0, lock)` then `load(rbias)`; a writer does `store(rbias, false)` then loads
//! every slot. All four are `SeqCst`, so in the single total order either the reader's
//! load follows the writer's store (the reader sees `false` and backs off to the slow
//! path, where the underlying lock excludes it), or the writer's slot scan follows the
//! reader's CAS (the writer sees the reader and waits for its release). A reader that
//! saw `true` from a *non-SeqCst* re-enable store is covered too: that store was made under
//! the shared lock, so it happens-before the next writer's `SeqCst` clear, and a `SeqCst`
//! load cannot read a store that happens-before a `SeqCst` store earlier in the total
//! order; hence the writer's clear comes after the reader's load, and its scan sees the
//! reader's slot.
//!
//! *Visibility of data*: a fast reader's `SeqCst` (hence acquire) re-check reads `true`
//! from a re-enable store made by a slow reader under the shared lock, which came after
//! the last writer's exclusive unlock, so that writer's writes happen-before the fast
//! reader's reads. A fast reader releases with a `Release` store of `0`, and the writer
//! observes it with `SeqCst` loads, so the reader's reads happen-before the writer's
//! writes. Slow readers and writers are ordered by the underlying lock.
//!
//! *No stale slots*: a slot holds a lock's address only while a guard borrowing that lock
//! exists (or for the few instructions between a failed re-check and the clear), so a lock
//! can be moved or freed only when none of its slots is published.
//!
//! # Trade-offs
//!
//! * Fast-path reads cost one CAS on a slot that is, with a large table, private to the
//!   thread; writers pay a scan of the whole table (4096 slots = 32 KiB by default) on each
//!   revocation, and then bias stays off for a while, so write-heavy loads run at the speed
//!   of the underlying lock.
//! * Slots are not padded (the paper's layout): eight per cache line; with a large table
//!   the hash spreads threads out. A small table raises collisions, and BRAVO has no
//!   collision handling beyond the slow path (seed 2 Fig. 14/18 measure exactly this).
//! * The read lock is not reentrant: a nested read hashes to the slot the outer read holds,
//!   falls to the slow path, and can deadlock behind a waiting writer (as with
//!   `parking_lot::RwLock::read`).
//! * Why `parking_lot::RawRwLock` underneath: a one-word lock with an uncontended
//!   fast path of one CAS, parking (not spinning) when contended, and a raw
//!   `lock_api::RawRwLock` interface, which BRAVO needs because a read guard holds either a
//!   slot or the underlying shared lock, decided at run time. `std::sync::RwLock` has no
//!   raw interface.
//!
//! # Loom
//!
//! Under `--cfg loom` the atomics, the thread-local and the back-off come from loom, the
//! underlying lock is a small loom spin lock with the same interface, the clock stands
//! still (the inhibition window is empty) and every thread hashes to slot 0; the models in
//! `loom_tests.rs` check the fast-reader/writer handshake, the re-enabled bias and
//! `try_write`. loom models `SeqCst` fences exactly but `SeqCst` accesses more weakly, so
//! the two handshake sides end with `primitive::handshake_fence`, a `SeqCst` fence
//! under loom and nothing otherwise (the argument above needs only the `SeqCst`
//! accesses).

mod clock;
mod lock;
mod primitive;
mod table;

#[cfg(all(test, loom))]
mod loom_tests;
#[cfg(all(test, not(loom)))]
mod tests;

pub use clock::INHIBIT_MULTIPLIER;
pub use lock::{Bravo, BravoReadGuard, BravoWriteGuard};
pub use table::{VisibleReaders, DEFAULT_TABLE_SLOTS};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
