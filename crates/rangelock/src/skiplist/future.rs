//! Async acquisition: [`LockFuture`], the future of [`RangeLock::lock_async`] and its
//! siblings.
//!
//! A future runs the same acquisition as a blocking call, one non-waiting step per poll
//! (`Core::listed_attempt`, `Core::shared_attempt`), and where the blocking call
//! would park on a wait word it registers its task's waker on that word (`wakers`) and
//! returns `Pending`. So async and blocking waiters follow one protocol: an async writer
//! links its pending node exactly like a blocking one (new readers back off from it, it
//! waits only for the readers that came first), and the releaser of a use wakes parked
//! threads and registered tasks alike.
//!
//! **Cancel safety.** Dropping a pending future gives up its acquisition the way a timed-out
//! blocking call does: a linked (pending) list node is unlinked and released, which wakes
//! whoever backed off from it; a private node goes back to the pool; a reader's node (never
//! announced while the future waits: it retracts first) is retired; the counts are undone
//! and the waker registration and the deadline's alarm removed, so no clone of any waker
//! it was polled with outlives it. A future dropped after it completed holds nothing.
//!
//! **Executors.** The futures depend on no runtime: any executor that polls on wake works.
//! Deadlines (the `_timeout` forms) are kept by one lazily started thread that wakes the
//! waker of the future's latest poll at its deadline (`wakers`, "Deadlines"), so a timed
//! future may be polled under different wakers (`select!`, `join`) and moved between tasks.

use core::fmt;
use core::future::Future;
use core::ops::Range;
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{Context, Poll};
use std::time::Instant;

use super::node::Node;
use super::wait::Wait;
use super::wakers::{Alarm, Registration};
use super::{Attempt, Kind, Listed, SkipList, SkipToken};
use crate::error::LockError;
use crate::lock::{Guard, Lock};
use crate::range::{check_range, Mode};
use crate::RangeGuard;

/// The future of a timed async acquisition
/// ([`RangeLock::lock_async_timeout`](crate::RangeLock::lock_async_timeout) and its
/// siblings): resolves to a [`RangeGuard`], or to [`LockError::TimedOut`]. Dropping it
/// before it resolves gives the acquisition up and leaves nothing behind.
#[must_use = "futures do nothing unless polled"]
pub struct LockFuture<'a> {
    lock: &'a Lock<SkipList>,
    range: Range<u64>,
    mode: Mode,
    deadline: Option<Instant>,
    state: State,
    registration: Registration,
    /// The timer's alarm for the deadline, from the first `Pending` until the future
    /// resolves or is dropped.
    alarm: Option<Alarm>,
}

/// Where an async acquisition is.
#[derive(Debug)]
enum State {
    /// Not started (or an invalid range, answered on the first poll).
    Start,
    /// Exclusive, on the list path: counted, `node` linked (pending) or not yet.
    Listed { node: NonNull<Node>, listed: Listed },
    /// Shared: counted, `node` announced before (and retracted) or not yet.
    Shared { node: NonNull<Node>, announced: bool },
    /// Resolved: holds nothing.
    Done,
}

// SAFETY: the nodes a future owns are private to its acquisition (or linked pending, which
// any thread may release), like a `SkipToken`'s; the lock is `Sync`.
unsafe impl Send for LockFuture<'_> {}

impl<'a> LockFuture<'a> {
    pub(crate) fn new(
        lock: &'a Lock<SkipList>,
        range: Range<u64>,
        mode: Mode,
        deadline: Option<Instant>,
    ) -> Self {
        LockFuture {
            lock,
            range,
            mode,
            deadline,
            state: State::Start,
            registration: Registration::new(),
            alarm: None,
        }
    }

    /// Resolves with `result`, holding nothing else.
    fn finish(
        &mut self,
        result: Result<SkipToken, LockError>,
    ) -> Poll<Result<RangeGuard<'a>, LockError>> {
        self.state = State::Done;
        self.registration.cancel();
        self.alarm = None;
        Poll::Ready(result.map(|token| {
            RangeGuard::from_inner(Guard::new(self.lock, self.range.clone(), self.mode, token))
        }))
    }

    /// Gives the acquisition up (timeout or drop): undo what the state holds.
    fn abandon(&mut self) {
        let raw = self.lock.raw().core();
        match core::mem::replace(&mut self.state, State::Done) {
            State::Listed { node, listed } => raw.abandon_listed(node, listed),
            State::Shared { node, announced } => raw.abandon_shared(node, announced),
            State::Start | State::Done => {}
        }
        self.registration.cancel();
        // Lets go of the waker at once (module docs of `wakers`, "Deadlines").
        self.alarm = None;
    }

    fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }
}

impl<'a> Future for LockFuture<'a> {
    type Output = Result<RangeGuard<'a>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let raw = this.lock.raw().core();
        loop {
            let attempt = match &mut this.state {
                State::Done => panic!("LockFuture polled after it resolved"),
                State::Start => {
                    if let Err(e) = check_range(&this.range) {
                        return this.finish(Err(e.into()));
                    }
                    let range = this.range.clone();
                    // Counted before the node becomes visible, as in the blocking paths.
                    this.state = match this.mode {
                        Mode::Exclusive => {
                            if let Some(token) =
                                raw.stripe_attempt(&range, Mode::Exclusive, Wait::Never)
                            {
                                return this.finish(Ok(token));
                            }
                            let node = raw.list_node(&range);
                            raw.stripes.count(&range);
                            State::Listed { node, listed: Listed::default() }
                        }
                        Mode::Shared => {
                            if let Some(token) =
                                raw.stripe_attempt(&range, Mode::Shared, Wait::Never)
                            {
                                return this.finish(Ok(token));
                            }
                            raw.stripes.count(&range);
                            let node = raw.reclaim.alloc();
                            // SAFETY: the node is private until announced.
                            unsafe { node.as_ref() }.init(&range, 0);
                            State::Shared { node, announced: false }
                        }
                    };
                    continue;
                }
                State::Listed { node, listed } => {
                    let Some(guard) = raw.reclaim.pin_for(Wait::Never) else {
                        // The epoch table is full for a moment: try again soon.
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    };
                    match raw.listed_attempt(*node, &this.range, listed, &guard) {
                        Attempt::Holds => {
                            let token = SkipToken(Kind::List(*node));
                            drop(guard);
                            return this.finish(Ok(token));
                        }
                        other => other,
                    }
                }
                State::Shared { node, announced } => {
                    let Some(guard) = raw.reclaim.pin_for(Wait::Never) else {
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    };
                    match raw.shared_attempt(*node, &this.range, announced, &guard) {
                        Attempt::Holds => {
                            let token = SkipToken(Kind::Shared(*node));
                            drop(guard);
                            return this.finish(Ok(token));
                        }
                        other => other,
                    }
                }
            };
            let Attempt::Wait(ticket) = attempt else { continue };
            if this.expired() {
                this.abandon();
                return Poll::Ready(Err(LockError::TimedOut));
            }
            if !this.registration.register(&ticket, cx.waker()) {
                continue; // over meanwhile: take another step
            }
            // The deadline wakes the waker of the latest poll, which may be another task's.
            match (&this.alarm, this.deadline) {
                (Some(alarm), _) => {
                    if !alarm.rearm(cx.waker()) {
                        // Fired meanwhile (so the deadline has passed), maybe waking a
                        // waker of an earlier poll: nobody would wake this one.
                        this.abandon();
                        return Poll::Ready(Err(LockError::TimedOut));
                    }
                }
                (None, Some(deadline)) => this.alarm = Some(Alarm::new(deadline, cx.waker())),
                (None, None) => {}
            }
            return Poll::Pending;
        }
    }
}

impl Drop for LockFuture<'_> {
    fn drop(&mut self) {
        self.abandon();
    }
}

impl fmt::Debug for LockFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LockFuture")
            .field("range", &self.range)
            .field("mode", &self.mode)
            .field("deadline", &self.deadline)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}
