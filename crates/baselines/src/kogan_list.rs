//! `kogan-list`: Kogan, Dice et al.'s lock-free linked-list range lock ("Scalable RL"),
//! exclusive and reader-writer, with an atomic mark.
//!
//! # Algorithm
//!
//! Concurrent-range-locking thesis §2.1.3 (Kogan et al., "Scalable range locks for
//! scalable address spaces and beyond"): every held range is a node of one singly linked
//! list sorted by `start`. A node's `next` word carries a *mark* in bit 0: a marked node is
//! released (logically deleted). The head is never marked.
//!
//! * **Acquire** walks from the head. A marked node is unlinked with a CAS on its
//!   predecessor's `next` (and retired to the node pool, see "Memory" below); if the
//!   predecessor itself turns out marked, the walk restarts. For each live node `c`,
//!   comparing with the new range `n`:
//!   - `c` ends at or before `n.start`, or both are shared and `c.start <= n.start`:
//!     step past `c`;
//!   - `c` starts at or after `n.end`, or both are shared and `c.start > n.start`: insert
//!     `n` before `c` with one CAS on the predecessor's `next` (expected: unmarked `c`);
//!   - otherwise `c` conflicts: wait until `c` is marked (spin, then leave the epoch,
//!     yield and restart), or fail for `try_lock` / past the deadline.
//! * **Release** marks the node with one `fetch_or` on its `next` word. The thesis's port
//!   marked with a plain load and store, which can overwrite a concurrent CAS that
//!   unlinks the node's successor (or inserts after it) and loses the mark or resurrects a
//!   removed node; both break mutual exclusion. An atomic RMW cannot lose either update.
//! * **Reader-writer validation.** Shared nodes may overlap each other, so a node can be
//!   inserted *behind* an overlapping node that a concurrent acquisition has already walked
//!   past. After its insert CAS, a writer rescans from the head to its own node and waits
//!   for every overlapping node there to be released; a reader scans forward from its own
//!   node to the first node starting at or after its end, and if it meets an overlapping
//!   writer it *backs off*: marks its own node, waits for the writer to be released and
//!   starts over with a new node. Writers wait on readers, readers never wait while their
//!   node is in the list, so waits form no cycle. The exact validation rules of the
//!   original paper are not in the seed; these are ours, argued below.
//!
//! # Invariants and correctness
//!
//! * The list is sorted by `start` (ties only between shared nodes); a marked `next` word
//!   never changes again, so a CAS on a marked predecessor fails and a released node is
//!   unlinked exactly once, by the CAS that removes it.
//! * Every step of a walk reads `prev.next` unmarked, so each hop reflects the list at the
//!   moment of the read (a walk never follows the frozen `next` of a removed node).
//! * *Exclusive pairs* (Kogan's argument): a writer is inserted only between a predecessor
//!   ending at or before its start and a successor starting at or after its end, and the
//!   CAS validates that nothing changed in between; any later overlapping acquisition must
//!   walk past the writer's position and meets it.
//! * *Mixed pairs*: if a later acquisition does not meet an overlapping earlier node, the
//!   earlier one must be a reader inserted before it (a writer is only inserted before
//!   nodes starting at or after its end). Then the reader `r` precedes the other node `o`
//!   in the list. If `o` is a writer, both validate: `o` scans `head..o`, `r` scans
//!   `r..r.end`. Each acquisition issues a `SeqCst` fence between its insert CAS and its
//!   scan; of the two fences, the later one's scan sees the other's insert (the
//!   store-buffering pattern, which needs the fences: `SeqCst` on the accesses alone is
//!   not enough in the C++ model, and loom reports the race without them). So `o` waits
//!   for `r`, or `r` backs off. If `o` is a reader they are compatible.
//! * Acquisition happens after the conflicting release: the waiter (or the thread that
//!   unlinked the node, whose CAS the walker later reads) observes the mark with a
//!   `SeqCst` load, which synchronizes with the `SeqCst` `fetch_or` of the release.
//! * Memory: nodes are recycled through a per-lock pool refilled by epoch-based
//!   reclamation (the private `variants/reclaim.rs`); a node is reused only after
//!   every thread that could hold a pointer to it has left its epoch. A walker does not
//!   wait for long while pinned: after the spin phase it drops its pin and restarts. The
//!   exception is a backed-off reader, which stays pinned (yielding) until the writer it
//!   yielded to is released: restarting would re-insert it in front of that writer, which
//!   would wait for it again (a livelock); the cost is reclamation paused for the length
//!   of that writer's critical section.
//!
//! # Trade-offs
//!
//! No lock anywhere: acquisitions of disjoint ranges only contend on the CAS of a shared
//! predecessor. But every acquisition walks the list from the head, O(n) for n held
//! ranges, so it degrades with many held ranges (the thesis's W2), and waiting is
//! spin-then-yield (there is no queue to park on). Readers pay a forward validation scan
//! and back off from writers, so writers are favoured. `try_lock` fails on any conflicting
//! node it meets, including one whose acquisition is still validating and may yet back
//! off (an in-flight incompatible request counts as a holder).

use core::fmt;
use core::ops::Range;
use core::ptr::{self, NonNull};
use std::time::Instant;

use crossbeam_utils::CachePadded;

use super::reclaim::{Pin, Reclaim, Recyclable};
use super::sync::{fence, AtomicUsize, Backoff, Ordering};
use rangelock::internals::RawRangeLock;
use rangelock::Mode;

/// Bit 0 of a `next` word: the node owning the word is released.
const MARK: usize = 1;

/// One acquisition (held, or validating) in the list.
pub(crate) struct Node {
    /// Successor address with [`MARK`] in bit 0 (exposed provenance).
    next: AtomicUsize,
    /// Limbo / pool chain (`variants/reclaim.rs`). Separate from `next`: a retired node is
    /// still read by pinned walkers, who must keep seeing its frozen, marked `next`.
    link: AtomicUsize,
    start: u64,
    end: u64,
    shared: bool,
}

// SAFETY: `link` returns the dedicated `link` field, which the list never uses; `reinit`
// writes every other field through raw pointers or atomic stores.
unsafe impl Recyclable for Node {
    unsafe fn link(this: *const Self) -> *const AtomicUsize {
        // SAFETY: the caller guarantees `this` is live.
        unsafe { ptr::addr_of!((*this).link) }
    }

    unsafe fn reinit(this: *mut Self, value: Self) {
        // SAFETY: the caller owns the node; the link is only read atomically by others.
        unsafe {
            (*this).next.store(value.next.load(Ordering::Relaxed), Ordering::Relaxed);
            ptr::addr_of_mut!((*this).start).write(value.start);
            ptr::addr_of_mut!((*this).end).write(value.end);
            ptr::addr_of_mut!((*this).shared).write(value.shared);
        }
    }
}

#[inline]
fn is_marked(word: usize) -> bool {
    word & MARK != 0
}

#[inline]
fn to_ptr(word: usize) -> *mut Node {
    ptr::with_exposed_provenance_mut(word & !MARK)
}

#[inline]
fn to_word(node: *mut Node) -> usize {
    node.expose_provenance()
}

/// What the walk does at a live node `c` for the new range.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Step {
    /// `c` is entirely before, or a shared node the shared range may follow.
    Skip,
    /// The new range goes right before `c`.
    InsertBefore,
    /// `c` overlaps in an incompatible mode.
    Conflict,
}

#[inline]
fn classify(c: &Node, start: u64, end: u64, shared: bool) -> Step {
    let readers = shared && c.shared;
    if start >= c.end || (readers && start >= c.start) {
        Step::Skip
    } else if c.start >= end || readers {
        Step::InsertBefore
    } else {
        Step::Conflict
    }
}

/// How long an acquisition may wait.
#[derive(Clone, Copy, Debug)]
enum Wait {
    Try,
    Forever,
    Until(Instant),
}

impl Wait {
    #[inline]
    fn expired(self) -> bool {
        match self {
            Wait::Try => true,
            Wait::Forever => false,
            Wait::Until(deadline) => Instant::now() >= deadline,
        }
    }
}

/// Outcome of one attempt.
enum Attempt {
    Held(NonNull<Node>),
    Failed,
    /// Start over (after a long wait or a reader's back-off).
    Retry,
}

/// Outcome of waiting for a conflicting node's release.
enum Waited {
    /// The node is marked now.
    Released,
    /// Give up: `try`, or the deadline passed.
    Expired,
    /// The spin phase is over; the pin was refreshed, restart from the head.
    Refreshed,
}

/// Kogan et al.'s lock-free list range lock.
///
/// See the [module documentation](self).
pub struct KoganList {
    /// First node's word; never marked. Padded: every acquisition reads it and inserts at
    /// the front CAS it.
    head: CachePadded<AtomicUsize>,
    reclaim: Reclaim<Node>,
}

/// A range held in a [`KoganList`]: its node.
#[derive(Debug)]
pub struct KoganToken {
    node: NonNull<Node>,
}

// SAFETY: a token is a pointer to a node only its holder releases, from any thread (the
// release is one atomic RMW).
unsafe impl Send for KoganToken {}

// SAFETY: all shared state is atomics; nodes are reached only under epoch protection.
unsafe impl Send for KoganList {}
// SAFETY: as above.
unsafe impl Sync for KoganList {}

impl KoganList {
    /// An empty lock.
    pub fn new() -> Self {
        KoganList { head: CachePadded::new(AtomicUsize::new(0)), reclaim: Reclaim::new() }
    }

    /// Unlinks the marked node `cur` (successor word `next`) from `prev`; returns the word
    /// to continue with.
    ///
    /// # Safety
    ///
    /// `prev` and `cur` are protected by `pin`.
    #[inline]
    unsafe fn unlink(
        &self,
        pin: &Pin<'_>,
        prev: &AtomicUsize,
        cur: *mut Node,
        next: usize,
    ) -> usize {
        let succ = next & !MARK;
        // SeqCst: list operations share one total order (see module docs); the success
        // also publishes to later walkers the release we observed through `next`.
        match prev.compare_exchange(to_word(cur), succ, Ordering::SeqCst, Ordering::SeqCst) {
            Ok(_) => {
                // SAFETY: our CAS removed `cur`; marked words never change, so nothing can
                // link it again and no other thread's CAS can remove it a second time.
                unsafe { self.reclaim.retire(pin, cur) };
                succ
            }
            Err(actual) => actual,
        }
    }

    /// Waits until `node` is marked, bounded by `wait`. With `refresh`, the wait also ends
    /// after the spin phase, refreshing the pin (the caller restarts its walk); without,
    /// it keeps yielding while pinned (used by a backed-off reader, which must not
    /// re-insert before the writer it yields to is done).
    ///
    /// # Safety
    ///
    /// `node` is protected by `pin`.
    unsafe fn wait_released(
        &self,
        pin: &mut Pin<'_>,
        node: *mut Node,
        wait: Wait,
        refresh: bool,
    ) -> Waited {
        let mut backoff = Backoff::new();
        loop {
            // SeqCst (acquire side): pairs with the release's `fetch_or`.
            // SAFETY: protected by `pin` (the caller).
            if is_marked(unsafe { &(*node).next }.load(Ordering::SeqCst)) {
                return Waited::Released;
            }
            if wait.expired() {
                return Waited::Expired;
            }
            if refresh && backoff.is_completed() {
                // Do not hold up reclamation during a long wait.
                pin.refresh();
                super::sync::yield_now();
                return Waited::Refreshed;
            }
            backoff.snooze();
        }
    }

    /// Marks `node` released.
    ///
    /// # Safety
    ///
    /// The caller owns `node` (it is in the list, unmarked) and does not touch it again.
    #[inline]
    unsafe fn mark(node: *mut Node) {
        // SeqCst: a release; pairs with the SeqCst loads that observe the mark. An atomic
        // RMW, so a concurrent CAS on this word (unlinking our successor) is never lost.
        // SAFETY: the caller owns `node`; it cannot be retired before it is marked.
        let prev = unsafe { &(*node).next }.fetch_or(MARK, Ordering::SeqCst);
        debug_assert!(!is_marked(prev), "kogan-list: node released twice");
    }

    fn acquire(&self, range: Range<u64>, mode: Mode, wait: Wait) -> Option<KoganToken> {
        let shared = mode == Mode::Shared;
        let mut spare: *mut Node = ptr::null_mut();
        let mut pin = self.reclaim.pin();
        loop {
            // SAFETY: `spare` is null or a node we allocated and never published.
            match unsafe { self.attempt(&mut pin, &range, shared, wait, &mut spare) } {
                Attempt::Held(node) => return Some(KoganToken { node }),
                Attempt::Failed => {
                    if !spare.is_null() {
                        // SAFETY: never published; retired once (see `reclaim` for why it
                        // is not pushed back directly).
                        unsafe { self.reclaim.retire(&pin, spare) };
                    }
                    return None;
                }
                Attempt::Retry => {}
            }
        }
    }

    /// One walk-insert-validate attempt.
    ///
    /// # Safety
    ///
    /// `*spare` is null or an unpublished node from `self.reclaim`.
    unsafe fn attempt(
        &self,
        pin: &mut Pin<'_>,
        range: &Range<u64>,
        shared: bool,
        wait: Wait,
        spare: &mut *mut Node,
    ) -> Attempt {
        let (start, end) = (range.start, range.end);
        let node = 'restart: loop {
            let mut prev: *const AtomicUsize = &*self.head;
            // SeqCst: see module docs.
            // SAFETY: (`prev` here and below) the head, or the `next` of a node
            // reached while pinned.
            // SAFETY: `prev` is the head or the `next` of a node protected by `pin`.
            let mut cur = unsafe { &*prev }.load(Ordering::SeqCst);
            loop {
                if is_marked(cur) {
                    // `prev`'s owner was released under us.
                    continue 'restart;
                }
                let c = to_ptr(cur);
                if !c.is_null() {
                    // SAFETY: `c` was reachable while we are pinned.
                    let cn = unsafe { &*c };
                    let next = cn.next.load(Ordering::SeqCst);
                    if is_marked(next) {
                        // SAFETY: both protected by `pin`.
                        cur = unsafe { self.unlink(pin, &*prev, c, next) };
                        continue;
                    }
                    match classify(cn, start, end, shared) {
                        Step::Skip => {
                            prev = &cn.next;
                            cur = next;
                            continue;
                        }
                        Step::Conflict => {
                            // SAFETY: `c` is protected by `pin`.
                            match unsafe { self.wait_released(pin, c, wait, true) } {
                                Waited::Released => {
                                    // Reload: the next round unlinks `c`.
                                    // SAFETY: `prev` is the head or the `next` of a node protected by `pin`.
                                    cur = unsafe { &*prev }.load(Ordering::SeqCst);
                                    continue;
                                }
                                Waited::Expired => return Attempt::Failed,
                                Waited::Refreshed => continue 'restart,
                            }
                        }
                        Step::InsertBefore => {}
                    }
                }
                // Insert between `prev` and `cur` (unmarked, possibly null).
                if spare.is_null() {
                    *spare = self.reclaim.alloc(
                        pin,
                        Node {
                            next: AtomicUsize::new(0),
                            link: AtomicUsize::new(0),
                            start,
                            end,
                            shared,
                        },
                    );
                }
                let n = *spare;
                // SAFETY: unpublished, owned by us.
                unsafe { &(*n).next }.store(cur, Ordering::Relaxed);
                // SeqCst: publishes the node (and its fields) and takes part in the total
                // order of the validation argument.
                // SAFETY: `prev` is protected by `pin`.
                match unsafe { &*prev }.compare_exchange(
                    cur,
                    to_word(n),
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                ) {
                    Ok(_) => {
                        *spare = ptr::null_mut();
                        break 'restart n;
                    }
                    // Something was linked or released at `prev`: look again from there
                    // (a marked word restarts from the head).
                    Err(actual) => cur = actual,
                }
            }
        };
        // SeqCst fence: orders our insert before the loads of our validation scan against
        // the same pair in a concurrent validating acquisition (store buffering): of two
        // such fences, the later one's scan sees the earlier one's insert. See the module
        // docs ("Mixed pairs").
        fence(Ordering::SeqCst);
        // SAFETY: `node` is ours, in the list and unmarked.
        unsafe {
            if shared {
                self.validate_reader(pin, node, wait)
            } else {
                self.validate_writer(pin, node, wait)
            }
        }
    }

    /// A writer waits for every overlapping node before it.
    ///
    /// # Safety
    ///
    /// `node` is ours, in the list and unmarked.
    unsafe fn validate_writer(&self, pin: &mut Pin<'_>, node: *mut Node, wait: Wait) -> Attempt {
        // SAFETY: ours.
        let (start, end) = unsafe { ((*node).start, (*node).end) };
        'rescan: loop {
            let mut prev: *const AtomicUsize = &*self.head;
            // SAFETY: (`prev` here and below) head, or the `next` of a pinned node.
            let mut cur = unsafe { &*prev }.load(Ordering::SeqCst);
            loop {
                if is_marked(cur) {
                    continue 'rescan;
                }
                let c = to_ptr(cur);
                if c == node {
                    return Attempt::Held(NonNull::new(node).expect("node is not null"));
                }
                // Our node is in the list and every hop reads a live predecessor, so the
                // walk reaches it before the end of the list.
                assert!(!c.is_null(), "kogan-list: writer validation lost its own node");
                // SAFETY: reached while pinned.
                let cn = unsafe { &*c };
                let next = cn.next.load(Ordering::SeqCst);
                if is_marked(next) {
                    // SAFETY: protected by `pin`.
                    cur = unsafe { self.unlink(pin, &*prev, c, next) };
                    continue;
                }
                if cn.start < end && start < cn.end {
                    // SAFETY: `c` is protected by `pin`.
                    match unsafe { self.wait_released(pin, c, wait, true) } {
                        Waited::Released => {
                            // SAFETY: `prev` is the head or the `next` of a node protected by `pin`.
                            cur = unsafe { &*prev }.load(Ordering::SeqCst);
                            continue;
                        }
                        Waited::Expired => {
                            // SAFETY: ours; we leave it to be unlinked by later walks.
                            unsafe { Self::mark(node) };
                            return Attempt::Failed;
                        }
                        Waited::Refreshed => continue 'rescan,
                    }
                }
                prev = &cn.next;
                cur = next;
            }
        }
    }

    /// A reader backs off from every overlapping writer after it.
    ///
    /// # Safety
    ///
    /// `node` is ours, in the list and unmarked.
    unsafe fn validate_reader(&self, pin: &mut Pin<'_>, node: *mut Node, wait: Wait) -> Attempt {
        // SAFETY: ours.
        let (start, end) = unsafe { ((*node).start, (*node).end) };
        'rescan: loop {
            // SAFETY: our node stays in the list while unmarked, so its `next` is valid.
            let mut prev: *const AtomicUsize = unsafe { &(*node).next };
            // SAFETY: (`prev` here and below) ours, or the `next` of a pinned node.
            let mut cur = unsafe { &*prev }.load(Ordering::SeqCst);
            loop {
                if is_marked(cur) {
                    continue 'rescan;
                }
                let c = to_ptr(cur);
                if c.is_null() {
                    break 'rescan;
                }
                // SAFETY: reached while pinned.
                let cn = unsafe { &*c };
                if cn.start >= end {
                    break 'rescan;
                }
                let next = cn.next.load(Ordering::SeqCst);
                if is_marked(next) {
                    // SAFETY: protected by `pin`.
                    cur = unsafe { self.unlink(pin, &*prev, c, next) };
                    continue;
                }
                if !cn.shared && start < cn.end {
                    // Back off: release our node so the writer can go, then wait for it.
                    // SAFETY: ours; not touched again.
                    unsafe { Self::mark(node) };
                    // SAFETY: `c` is protected by `pin` (no refresh here).
                    return match unsafe { self.wait_released(pin, c, wait, false) } {
                        Waited::Released | Waited::Refreshed => Attempt::Retry,
                        Waited::Expired => Attempt::Failed,
                    };
                }
                prev = &cn.next;
                cur = next;
            }
        }
        Attempt::Held(NonNull::new(node).expect("node is not null"))
    }
}

impl Default for KoganList {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for KoganList {
    fn drop(&mut self) {
        // `&mut self`: no walker and no holder is left; free every node still linked.
        let mut cur = to_ptr(self.head.load(Ordering::Relaxed));
        while !cur.is_null() {
            // SAFETY: linked nodes were allocated by `reclaim.alloc` (Box) and are owned by
            // the list now; unlinked ones are in the reclaimer, never here.
            let node = unsafe { Box::from_raw(cur) };
            cur = to_ptr(node.next.load(Ordering::Relaxed));
        }
    }
}

impl fmt::Debug for KoganList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KoganList").field("reclaim", &self.reclaim).finish_non_exhaustive()
    }
}

// SAFETY: see "Invariants and correctness" in the module docs.
unsafe impl RawRangeLock for KoganList {
    type Token = KoganToken;

    const NAME: &'static str = "kogan-list";

    #[inline]
    fn try_lock(&self, range: Range<u64>, mode: Mode) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        self.acquire(range, mode, Wait::Try)
    }

    #[inline]
    fn lock(&self, range: Range<u64>, mode: Mode) -> Self::Token {
        rangelock::internals::assert_valid(&range);
        match self.acquire(range, mode, Wait::Forever) {
            Some(token) => token,
            None => unreachable!("kogan-list: a wait without deadline gave up"),
        }
    }

    #[inline]
    fn lock_until(&self, range: Range<u64>, mode: Mode, deadline: Instant) -> Option<Self::Token> {
        rangelock::internals::assert_valid(&range);
        self.acquire(range, mode, Wait::Until(deadline))
    }

    #[inline]
    unsafe fn unlock(&self, token: Self::Token) {
        // SAFETY: the caller guarantees the token is held; the node is in the list.
        unsafe { Self::mark(token.node.as_ptr()) };
    }
}

#[cfg(all(test, loom))]
mod tests {
    //! Loom models of insert / mark / unlink and of the reader-writer validation. Each
    //! critical section touches a `loom::cell::UnsafeCell`, so loom also reports a missing
    //! happens-before edge between conflicting holders as a data race.

    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::thread;

    use super::*;

    fn excl(lock: &KoganList, range: Range<u64>) -> KoganToken {
        lock.lock(range, Mode::Exclusive)
    }

    /// Two overlapping writers: mutual exclusion and ordering of their critical sections.
    #[test]
    fn loom_overlapping_writers_exclude() {
        loom::model(|| {
            let lock = Arc::new(KoganList::new());
            let data = Arc::new(UnsafeCell::new(0u64));
            let handles: Vec<_> = [0..10u64, 5..15]
                .into_iter()
                .map(|range| {
                    let (lock, data) = (Arc::clone(&lock), Arc::clone(&data));
                    thread::spawn(move || {
                        let token = excl(&lock, range);
                        // SAFETY: `data` is only touched under overlapping exclusive ranges;
                        // loom reports a race if they were not excluded and ordered.
                        data.with_mut(|d| unsafe { *d += 1 });
                        // SAFETY: held by this thread.
                        unsafe { lock.unlock(token) };
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
            // SAFETY: every thread has joined.
            assert_eq!(data.with(|d| unsafe { *d }), 2);
        });
    }

    /// A release (mark) racing an insert right after the released node (a CAS on the same
    /// `next` word): neither update may be lost. A plain load+store mark loses one.
    #[test]
    fn loom_mark_races_insert_after() {
        loom::model(|| {
            let lock = Arc::new(KoganList::new());
            let a = excl(&lock, 0..10);
            let a = KoganTokenSend(a);
            let releaser = {
                let lock = Arc::clone(&lock);
                thread::spawn(move || {
                    let a = a;
                    // SAFETY: handed over by the main thread, still held.
                    unsafe { lock.unlock(a.0) };
                })
            };
            let inserter = {
                let lock = Arc::clone(&lock);
                thread::spawn(move || lock.try_lock(20..30, Mode::Exclusive).map(KoganTokenSend))
            };
            releaser.join().unwrap();
            let b = inserter.join().unwrap().expect("20..30 is disjoint from 0..10");
            // The mark was not lost: 0..10 is free. The insert was not lost: 20..30 is held.
            let again = lock.try_lock(0..10, Mode::Exclusive).expect("0..10 was released");
            assert!(lock.try_lock(25..26, Mode::Exclusive).is_none(), "20..30 is held");
            // SAFETY: both held.
            unsafe {
                lock.unlock(again);
                lock.unlock(b.0);
            }
        });
    }

    /// A release racing a blocked writer that waits for the mark and unlinks the node.
    #[test]
    fn loom_waiter_unlinks_released_node() {
        loom::model(|| {
            let lock = Arc::new(KoganList::new());
            let data = Arc::new(UnsafeCell::new(0u64));
            let a = KoganTokenSend(excl(&lock, 0..10));
            let waiter = {
                let (lock, data) = (Arc::clone(&lock), Arc::clone(&data));
                thread::spawn(move || {
                    let t = excl(&lock, 5..15);
                    // SAFETY: under 5..15, after 0..10 was released.
                    let seen = data.with(|d| unsafe { *d });
                    // SAFETY: held.
                    unsafe { lock.unlock(t) };
                    seen
                })
            };
            // SAFETY: under 0..10.
            data.with_mut(|d| unsafe { *d = 7 });
            // SAFETY: held by this thread.
            unsafe { lock.unlock(a.0) };
            assert_eq!(waiter.join().unwrap(), 7, "the waiter ran after the release");
        });
    }

    /// The reader-writer validation: a shared range inserted *before* an existing reader
    /// (so behind a writer that walked past the head) must still exclude that writer.
    #[test]
    fn loom_reader_behind_writer_is_validated() {
        loom::model(|| {
            let lock = Arc::new(KoganList::new());
            let data = Arc::new(UnsafeCell::new(0u64));
            // A held reader at 2..3: the writer 5..6 walks past it, the reader 0..10 is
            // inserted in front of it, so neither meets the other while walking.
            let x = KoganTokenSend(lock.lock(2..3, Mode::Shared));
            let reader = {
                let (lock, data) = (Arc::clone(&lock), Arc::clone(&data));
                thread::spawn(move || {
                    let t = lock.lock(0..10, Mode::Shared);
                    // SAFETY: a shared holder only reads.
                    let v = data.with(|d| unsafe { *d });
                    // SAFETY: held.
                    unsafe { lock.unlock(t) };
                    v
                })
            };
            let writer = {
                let (lock, data) = (Arc::clone(&lock), Arc::clone(&data));
                thread::spawn(move || {
                    let t = excl(&lock, 5..6);
                    // SAFETY: exclusive over 5..6; races with the reader if not excluded.
                    data.with_mut(|d| unsafe { *d = 1 });
                    // SAFETY: held.
                    unsafe { lock.unlock(t) };
                })
            };
            let v = reader.join().unwrap();
            writer.join().unwrap();
            assert!(v == 0 || v == 1);
            // SAFETY: held by this thread.
            unsafe { lock.unlock(x.0) };
        });
    }

    /// `try_lock` of a writer that meets a reader during validation backs out (marks its
    /// own node) and leaves the list consistent for a concurrent reader.
    #[test]
    fn loom_try_writer_backs_out_of_validation() {
        loom::model(|| {
            let lock = Arc::new(KoganList::new());
            let data = Arc::new(UnsafeCell::new(0u64));
            let x = KoganTokenSend(lock.lock(2..3, Mode::Shared));
            let reader = {
                let (lock, data) = (Arc::clone(&lock), Arc::clone(&data));
                thread::spawn(move || {
                    let t = lock.lock(0..10, Mode::Shared);
                    // SAFETY: a shared holder only reads.
                    data.with(|d| unsafe { *d });
                    // SAFETY: held.
                    unsafe { lock.unlock(t) };
                })
            };
            let writer = {
                let (lock, data) = (Arc::clone(&lock), Arc::clone(&data));
                thread::spawn(move || {
                    if let Some(t) = lock.try_lock(5..6, Mode::Exclusive) {
                        // SAFETY: exclusive over 5..6.
                        data.with_mut(|d| unsafe { *d = 1 });
                        // SAFETY: held.
                        unsafe { lock.unlock(t) };
                    }
                })
            };
            reader.join().unwrap();
            writer.join().unwrap();
            // SAFETY: held by this thread.
            unsafe { lock.unlock(x.0) };
            // Nothing is left held.
            let all = lock.try_lock(0..u64::MAX, Mode::Exclusive).expect("everything released");
            // SAFETY: held.
            unsafe { lock.unlock(all) };
        });
    }

    /// Moves a token into a loom thread.
    struct KoganTokenSend(KoganToken);
}
