//! Locking several ranges at once, all or nothing: [`Lock::lock_many`] and its guard.
//!
//! The protocol, why it cannot deadlock and what it costs are documented on
//! [`Lock::lock_many`] (this module is private; its items are re-exported).

// Without `internals`, only what `RangeLock` calls is used.
#![cfg_attr(not(feature = "internals"), allow(dead_code))]

use core::fmt;
use core::ops::{Bound, Range, RangeBounds};
use std::thread;
use std::time::{Duration, Instant};

use crate::bounds::half_open;
use crate::error::{LockError, RangeError};
use crate::lock::{deadline_after, Guard, Lock};
use crate::range::{overlaps, Mode};
use crate::raw::RawRangeLock;

/// Failed attempts after which a request takes the fair path, where the variant has one
/// ([`RawRangeLock::ORDERED`]; docs of [`Lock::lock_many`], "Costs and fairness"). 1, 2
/// and 3 all bounded the waits of `examples/many_starvation` to tens of milliseconds; each
/// failed attempt costs a wait for its anchor first.
const ORDERED_AFTER: u32 = 2;

/// How long the acquisition of a request may wait.
#[derive(Clone, Copy, Debug)]
enum Wait {
    /// Never wait: fail with [`LockError::WouldBlock`] on the first conflict.
    Never,
    /// Wait as long as it takes.
    Forever,
    /// Wait until this instant, then fail with [`LockError::TimedOut`].
    Until(Instant),
}

impl<R: RawRangeLock> Lock<R> {
    /// Locks every range of `request` in its mode, all or nothing, waiting as long as it
    /// takes.
    ///
    /// `request` is a set of `(range, mode)` pairs in any order. Ranges must be valid
    /// ([`LockError::InvalidRange`] names the first bad one in request order) and pairwise
    /// disjoint: two ranges that overlap, in whatever modes, are rejected with
    /// [`LockError::Overlapping`] (merge them into one range first). Adjacent ranges do
    /// not overlap and are fine. An empty request succeeds at once with an empty guard. A
    /// rejected request locks nothing.
    ///
    /// On success every range is held until the returned [`Guards`] drops. The call
    /// cannot deadlock with other `lock_many` calls or single-range acquisitions, provided
    /// the calling thread holds no other guard of this lock (ranges held from earlier calls
    /// are outside the request and under the usual rules).
    ///
    /// # Protocol
    ///
    /// The request is validated, sorted by start, and acquired by a loop that **waits only
    /// while it holds nothing** (until the fair path, below):
    ///
    /// 1. Wait for one range, the *anchor* (at first the lowest), with a blocking (or
    ///    timed) acquisition, holding no other range of the request.
    /// 2. Take every other range with a non-blocking `try_lock`, in ascending order.
    /// 3. If an attempt fails, release everything held, yield once, and go back to 1 with
    ///    the range that failed as the anchor: waiting for it waits for the holder that
    ///    made the attempt fail. A timed request passes its one deadline to every wait and
    ///    checks it before each restart, so restarts never extend it.
    ///
    /// 4. **Fair path.** After two failed attempts, a blocking or timed request on a
    ///    variant that has an ordered acquisition ([`RawRangeLock::ORDERED`]: only
    ///    [`RangeLock`](crate::RangeLock)) takes its ranges one by one in ascending order,
    ///    each as a list writer (pending, then held; shared ranges are held exclusively and
    ///    downgraded once all are held), waiting for each while it holds the lower ones
    ///    (`rangelock::skiplist`'s `ordered` module docs).
    ///
    /// Steps 1 to 3 are the "smart and polite" algorithm that `std::lock` implementations
    /// use for mutexes (wait for the one that failed, yield before waiting), applied to
    /// ranges.
    ///
    /// # Why it cannot deadlock
    ///
    /// In steps 1 to 3 the request's ranges are held only from the end of step 1 to the
    /// end of step 2, and that stretch contains no wait: each `try_lock` returns at once.
    /// So every range the call holds is, after finitely many of its own steps, either
    /// released or handed to the caller, whatever other threads do. While it waits, in
    /// step 1, it holds nothing, so it is a single-range waiter like any other, and every
    /// variant grants a single-range waiter once the conflicting holders release. A cycle
    /// of waits needs a thread that waits while holding what another waiter needs, and
    /// steps 1 to 3 never do that. The fair path does, but only in a way no cycle can
    /// close: it holds list nodes only, and past its first range it waits only for linked
    /// nodes, never for a waiter that holds nothing; a cycle of such waits would need the
    /// ranges the requests wait for to start ever later, all the way round.
    ///
    /// *Why sorting is not enough.* Taking the sorted ranges with blocking calls is the
    /// classic lock ordering for mutexes, but in a range lock a *waiting* request can block
    /// others, so waits also point at waiters, not only at holders:
    ///
    /// * Pending writers ([`RangeLock`](crate::RangeLock): a list writer links its pending
    ///   node before it waits for readers, and new requests back off from it). A requests
    ///   `12..13` and `15..16` shared, B requests `10..20` exclusive. A holds `12..13`; B
    ///   links its pending node on `10..20` and waits for A's reader; A blocks on `15..16`
    ///   behind B's pending node. Deadlock. The same happens with every mode exclusive when
    ///   A holds `12..13` in a stripe slot and B's range spans stripes (B links, then waits
    ///   for the slot holder).
    /// * FIFO fairness ([`KernelTree`](crate::variants::KernelTree): a request counts
    ///   earlier *waiters* too). With every mode exclusive: A holds `12..13`, B waits for
    ///   it on `10..20`, and A's request for `15..16` queues behind B.
    ///
    /// So even "block while everything held is exclusive" deadlocks when a hold may be a
    /// stripe slot, or when waiters count. `lock_many` blocks while holding only on the
    /// fair path, where every hold is a skip-list node, which no writer can link over.
    ///
    /// # Costs and fairness
    ///
    /// A failed attempt throws away every range acquired so far, and the request gives up
    /// its place in the variant's wait order at each restart. Steps 1 to 3 alone are
    /// deadlock-free but not starvation-free: two requests whose sets cross can keep
    /// failing each other's attempts, and a request loses to a steady stream of
    /// single-range lockers, any of which makes an attempt fail by holding one of its
    /// ranges at that moment (beside async tasks that re-lock as soon as they release,
    /// blocking requests waited seconds: `examples/many_starvation`).
    ///
    /// On [`RangeLock`](crate::RangeLock) the fair path bounds the wait: a blocking
    /// request waits for at most two single-range acquisitions (its failed attempts'
    /// anchors), then for each of its ranges as a single list writer does, for the nodes
    /// linked and the stripe holders and readers visible before it, and at its first range
    /// for the older intents (`rangelock::skiplist`, "Trade-offs"). Whoever comes to one
    /// of its ranges later waits behind it. The price, on the fair path only: a list node
    /// per range, and readers of its shared ranges kept out until it holds them all. The
    /// other variants have no fair path, and [`try_lock_many_for`](Self::try_lock_many_for)
    /// is what bounds their wait.
    ///
    /// # Variants with false conflicts
    ///
    /// A variant may refuse disjoint ranges: [`Segments`](crate::variants::Segments) locks
    /// whole segments (and clamps units past its domain into the last one). If it refuses
    /// two ranges of one request against each other, the request can never be granted:
    /// `try_lock_many` fails, `try_lock_many_for` times out, and `lock_many` retries
    /// forever (each retry yields and then waits only for itself). There, keep a request's
    /// ranges in different segments, or make them shared.
    ///
    pub fn lock_many(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
    ) -> Result<Guards<'_, R>, LockError> {
        self.acquire_many(request, Wait::Forever)
    }

    /// Locks every range of `request` in its mode if none of them conflicts with a holder
    /// right now; otherwise locks nothing and fails with [`LockError::WouldBlock`].
    ///
    /// The request is validated as in [`lock_many`](Self::lock_many). Like
    /// [`try_lock`](Self::try_lock), an attempt that races with another acquisition of an
    /// overlapping range may fail even though the ranges are free by the time it returns.
    ///
    pub fn try_lock_many(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
    ) -> Result<Guards<'_, R>, LockError> {
        self.acquire_many(request, Wait::Never)
    }

    /// Locks every range of `request` in its mode, all or nothing, giving up after
    /// `timeout` with [`LockError::TimedOut`] (and nothing held).
    ///
    /// The request is validated as in [`lock_many`](Self::lock_many). The timeout bounds
    /// the whole call, across the protocol's restarts.
    ///
    pub fn try_lock_many_for(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
        timeout: Duration,
    ) -> Result<Guards<'_, R>, LockError> {
        self.try_lock_many_until(request, deadline_after(timeout))
    }

    /// Locks every range of `request` in its mode, all or nothing, giving up at `deadline`
    /// with [`LockError::TimedOut`] (and nothing held).
    ///
    /// See [`try_lock_many_for`](Self::try_lock_many_for).
    pub fn try_lock_many_until(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
        deadline: Instant,
    ) -> Result<Guards<'_, R>, LockError> {
        self.acquire_many(request, Wait::Until(deadline))
    }

    /// Validates `request` and runs the protocol of [`lock_many`](Self::lock_many).
    fn acquire_many(
        &self,
        request: impl IntoIterator<Item = impl LockRequest>,
        wait: Wait,
    ) -> Result<Guards<'_, R>, LockError> {
        let request = prepare(request)?;
        if request.is_empty() {
            return Ok(Guards { guards: Vec::new() });
        }
        let mut anchor = 0;
        let mut failed_attempts = 0;
        loop {
            if R::ORDERED && failed_attempts == ORDERED_AFTER {
                return self.acquire_ordered(request, wait);
            }
            // Nothing of the request is held here: this is the only place that waits.
            let (range, mode) = request[anchor].clone();
            let first = match wait {
                Wait::Never => self.try_lock_mode(range, mode)?,
                Wait::Forever => self.lock_mode(range, mode)?,
                Wait::Until(deadline) => self.try_lock_mode_until(range, mode, deadline)?,
            };
            match self.try_rest(&request, anchor, first) {
                Ok(guards) => return Ok(Guards { guards }),
                Err(failed) => {
                    // `try_rest` released everything before returning.
                    match wait {
                        Wait::Never => return Err(LockError::WouldBlock),
                        Wait::Until(deadline) if Instant::now() >= deadline => {
                            return Err(LockError::TimedOut)
                        }
                        Wait::Forever | Wait::Until(_) => {}
                    }
                    failed_attempts += 1;
                    // Polite: let the holder that made us fail run before we queue for it.
                    thread::yield_now();
                    anchor = failed;
                }
            }
        }
    }

    /// The fair path ([`RawRangeLock::lock_ordered`]) for the sorted `request`, which may
    /// wait (`wait` is not `Never`).
    #[cold]
    fn acquire_ordered(
        &self,
        request: Vec<(Range<u64>, Mode)>,
        wait: Wait,
    ) -> Result<Guards<'_, R>, LockError> {
        let deadline = match wait {
            Wait::Until(deadline) => Some(deadline),
            Wait::Forever => None,
            Wait::Never => unreachable!("a try never fails an attempt and goes on"),
        };
        let tokens = self.raw().lock_ordered(&request, deadline).ok_or(LockError::TimedOut)?;
        debug_assert_eq!(tokens.len(), request.len());
        let guards = tokens
            .into_iter()
            .zip(request)
            .map(|(token, (range, mode))| Guard::new(self, range, mode, token))
            .collect();
        Ok(Guards { guards })
    }

    /// With `request[anchor]` held as `first`, tries every other range of the sorted
    /// `request` in ascending order without waiting. Returns all the guards in ascending
    /// order, or (having dropped every guard) the index of the range that could not be
    /// taken.
    pub(crate) fn try_rest<'a>(
        &'a self,
        request: &[(Range<u64>, Mode)],
        anchor: usize,
        first: Guard<'a, R>,
    ) -> Result<Vec<Guard<'a, R>>, usize> {
        let mut first = Some(first);
        let mut guards = Vec::with_capacity(request.len());
        for (i, (range, mode)) in request.iter().enumerate() {
            if i == anchor {
                guards.extend(first.take());
                continue;
            }
            match self.try_lock_mode(range.clone(), *mode) {
                Ok(guard) => guards.push(guard),
                // Dropping `guards` and `first` releases everything held.
                Err(_) => return Err(i),
            }
        }
        Ok(guards)
    }
}

/// One `(range, mode)` item of a many-range request ([`RangeLock::lock_many`] and its
/// siblings, [`SliceLock::lock_many`]): a pair of any `impl RangeBounds` and a [`Mode`], by
/// value or by reference, so a request is whatever the caller has: an array, a `Vec` or a
/// slice of pairs, a reference to one (`&v`), or an iterator.
///
/// ```
/// use std::ops::Range;
/// use rangelock::{Mode, RangeLock};
///
/// let lock = RangeLock::new();
/// let v: Vec<(Range<u64>, Mode)> = vec![(0..10, Mode::Exclusive), (20..30, Mode::Shared)];
/// drop(lock.lock_many(&v));                               // borrowed: `v` stays usable
/// drop(lock.lock_many(v.iter().filter(|(r, _)| r.start > 0)));
/// drop(lock.lock_many([(0..=9, Mode::Shared), (20..=29, Mode::Exclusive)]));
/// drop(lock.lock_many(v));                                // by value
/// ```
///
/// [`RangeLock::lock_many`]: crate::RangeLock::lock_many
/// [`SliceLock::lock_many`]: crate::SliceLock::lock_many
pub trait LockRequest<Idx = u64> {
    /// The bounds of the range, as the caller wrote them.
    fn bounds(&self) -> (Bound<Idx>, Bound<Idx>);
    /// The mode to hold the range in.
    fn mode(&self) -> Mode;
}

impl<Idx: Clone, R: RangeBounds<Idx>> LockRequest<Idx> for (R, Mode) {
    fn bounds(&self) -> (Bound<Idx>, Bound<Idx>) {
        (self.0.start_bound().cloned(), self.0.end_bound().cloned())
    }

    fn mode(&self) -> Mode {
        self.1
    }
}

impl<Idx: Clone, R: RangeBounds<Idx>> LockRequest<Idx> for &(R, Mode) {
    fn bounds(&self) -> (Bound<Idx>, Bound<Idx>) {
        (**self).bounds()
    }

    fn mode(&self) -> Mode {
        self.1
    }
}

/// The half-open ranges of a request, each checked (the first that locks nothing, in
/// request order, is reported with the caller's bounds).
pub(crate) fn half_open_request(
    request: impl IntoIterator<Item = impl LockRequest>,
) -> Result<Vec<(Range<u64>, Mode)>, RangeError> {
    request.into_iter().map(|item| Ok((half_open(&item.bounds())?, item.mode()))).collect()
}

/// Validates a request: every range valid (the first bad one in request order is
/// reported), then sorted by start and pairwise disjoint.
pub(crate) fn prepare(
    request: impl IntoIterator<Item = impl LockRequest>,
) -> Result<Vec<(Range<u64>, Mode)>, LockError> {
    let mut request = half_open_request(request)?;
    request.sort_by_key(|(range, _)| (range.start, range.end));
    // Sorted by start, ranges are pairwise disjoint iff neighbours are: if `a` overlaps a
    // later `c` but not its successor `b`, then `a.end <= b.start <= c.start < a.end`.
    for pair in request.windows(2) {
        let (a, b) = (&pair[0].0, &pair[1].0);
        if overlaps(a, b) {
            return Err(LockError::Overlapping {
                first: (a.start, a.end),
                second: (b.start, b.end),
            });
        }
    }
    Ok(request)
}

/// The ranges of one [`Lock::lock_many`] request, all held; dropping it releases them all.
#[must_use = "the ranges are unlocked as soon as the guard is dropped"]
pub struct Guards<'a, R: RawRangeLock> {
    /// One guard per range, sorted by start.
    guards: Vec<Guard<'a, R>>,
}

impl<'a, R: RawRangeLock> Guards<'a, R> {
    /// The guards of a granted request, sorted by start.
    #[cfg_attr(loom, allow(dead_code))] // the async requests' (no futures under loom)
    pub(crate) fn new(guards: Vec<Guard<'a, R>>) -> Self {
        Guards { guards }
    }

    /// The held ranges with their modes, sorted by start.
    pub fn ranges(&self) -> impl ExactSizeIterator<Item = (Range<u64>, Mode)> + '_ {
        self.guards.iter().map(|guard| (guard.range(), guard.mode()))
    }

    /// How many ranges are held.
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether the request was empty (nothing is held).
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// One [`Guard`] per range, sorted by start, to release them separately.
    pub fn into_guards(self) -> Vec<Guard<'a, R>> {
        self.guards
    }
}

impl<R: RawRangeLock> fmt::Debug for Guards<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guards")
            .field("variant", &R::NAME)
            .field("ranges", &self.ranges().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::reversed_empty_ranges)] // an inverted range is the input under test
    fn requests_are_validated_in_order_then_sorted() {
        let bad = prepare([(0..10, Mode::Shared), (7..3, Mode::Exclusive), (4..4, Mode::Shared)]);
        assert_eq!(bad.unwrap_err(), LockError::InvalidRange(crate::RangeError::half_open(7, 3)));
        let sorted =
            prepare([(20..30, Mode::Shared), (10..20, Mode::Exclusive), (0..1, Mode::Shared)])
                .expect("adjacent ranges are disjoint");
        assert_eq!(
            sorted,
            [(0..1, Mode::Shared), (10..20, Mode::Exclusive), (20..30, Mode::Shared)]
        );
        assert!(prepare(Vec::<(Range<u64>, Mode)>::new()).expect("empty").is_empty());
    }

    #[test]
    fn overlaps_are_found_beyond_neighbours_in_request_order() {
        // 0..100 overlaps 50..60, which is not its neighbour in request order.
        let err =
            prepare([(0..100, Mode::Shared), (200..300, Mode::Shared), (50..60, Mode::Shared)])
                .unwrap_err();
        assert_eq!(err, LockError::Overlapping { first: (0, 100), second: (50, 60) });
        assert_eq!(
            err.to_string(),
            "ranges 0..100 and 50..60 of one request overlap: the ranges of a request must be \
             disjoint"
        );
        let dup = prepare([(5..6, Mode::Exclusive), (5..6, Mode::Exclusive)]).unwrap_err();
        assert_eq!(dup, LockError::Overlapping { first: (5, 6), second: (5, 6) });
    }
}
