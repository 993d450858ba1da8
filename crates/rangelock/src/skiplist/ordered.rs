//! Ordered acquisition: the fair path of [`RangeLock::lock_many`](crate::RangeLock::lock_many)
//! ([`RawRangeLock::lock_ordered`]).
//!
//! `lock_many`'s usual protocol waits only while it holds nothing, and then needs every
//! range of its request free at one instant; beside holders that keep coming back (async
//! tasks re-locking on two executor threads did), that instant may not come for seconds. So
//! a request that has failed a few times takes its ranges the way a single list writer
//! takes one, one range after the other in ascending order of start, waiting for each
//! while it holds the ones before it:
//!
//! 1. Each range, in ascending order, goes to the list path (`Core::acquire_listed`):
//!    counted, linked as a node once no list node overlaps it (pending: new readers,
//!    stripe holders and list writers of the range back off from it), then drained of
//!    the stripe holders and readers that came first. No range takes a stripe slot or a
//!    reader announcement, whatever its mode, until every range is held.
//! 2. Only the first range waits for older intents (`intents`); a later range waits only
//!    for linked nodes. Every wait publishes an intent, so younger list writers queue
//!    behind the request's current range.
//! 3. With every range held, the shared ranges are downgraded (`RawRangeLockDowngrade`):
//!    a reader is announced, then the exclusive node released, which never waits.
//! 4. A deadline that passes releases what is held.
//!
//! # Why it cannot deadlock
//!
//! Ordered requests wait while holding only list nodes, and only for linked nodes (after
//! their first range) or, at their first range, for anything. Every other party waits
//! while holding nothing that an ordered request waits for: single-range waiters and
//! `lock_many` in its usual protocol hold nothing while they wait (the documented rule
//! for callers), stripe holders and readers never wait while visible, and a pending node
//! waits only for stripe holders and readers that were visible before it. So a cycle of
//! waits would consist of ordered requests only, each past its first range, each waiting
//! at its current range `c` for a node `h` of the next one with `h` overlapping `c`. The
//! next one's current range `c'` starts after `h` ends (its ranges are sorted and
//! disjoint, and `h` comes before `c'`), and `c.start < h.end <= c'.start`. Along the
//! cycle the starts of the current ranges would rise strictly and come back to where they
//! began: no cycle. Taking a shared range as a reader before the last wait would break
//! this (a writer that links over the reader's range and the next range waits for the
//! reader while the request waits for the writer), hence step 3; so would a stripe hold
//! (a pending writer waits for stripe holders), hence step 1.
//!
//! # What it bounds
//!
//! From the switch on, each range waits as one list writer does: for the nodes linked
//! before its link, the stripe holders and readers that were visible before it, and (the
//! first range) older intents; newcomers to a range queue behind the range the request is
//! waiting for, and behind the ones it holds. Readers of a shared range of the request are
//! excluded while the request waits (it holds that range exclusively until step 3), and
//! every range costs a node, an epoch guard and a skip-list insertion, so `lock_many`
//! takes this path only after its usual protocol has failed a few times.

use core::ops::Range;

use super::wait::Wait;
use super::{SkipList, SkipToken};
use crate::range::{overlaps, Mode};
use crate::raw::{RawRangeLock, RawRangeLockDowngrade};

impl SkipList {
    /// [`RawRangeLock::lock_ordered`] with `wait` (never `Wait::Never`): module docs.
    pub(super) fn acquire_ordered(
        &self,
        request: &[(Range<u64>, Mode)],
        wait: Wait,
    ) -> Option<Vec<SkipToken>> {
        debug_assert!(
            request.windows(2).all(|p| p[0].0.start <= p[1].0.start && !overlaps(&p[0].0, &p[1].0)),
            "an ordered request is sorted and disjoint: {request:?}"
        );
        let mut held = Vec::with_capacity(request.len());
        let core = self.core();
        for (i, (range, _)) in request.iter().enumerate() {
            crate::raw::assert_valid(range);
            match core.acquire_listed(core.list_node(range), range, wait, i > 0) {
                Some(token) => held.push(token),
                None => {
                    for token in held {
                        // SAFETY: acquired above from this lock, released once, here.
                        unsafe { self.unlock(token) };
                    }
                    return None;
                }
            }
        }
        let tokens = held.into_iter().zip(request).map(|(token, (range, mode))| match mode {
            Mode::Exclusive => token,
            // SAFETY: `token` is the exclusive hold of `range` acquired above, not released.
            Mode::Shared => unsafe { self.downgrade(token, range.clone()) },
        });
        Some(tokens.collect())
    }
}
