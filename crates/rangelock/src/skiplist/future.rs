//! Async acquisition: the futures of [`RangeLock::lock_async`] and its siblings.
//!
//! Every future is built on [`Acquire`], which runs the same acquisition as a blocking call,
//! one non-waiting step per poll (`Core::listed_attempt`, `Core::shared_attempt`), and where
//! the blocking call would park on a wait word it registers its task's waker on that word
//! (`wakers`) and returns `Pending`. So async and blocking waiters follow one protocol: an
//! async writer links its pending node exactly like a blocking one (new readers back off
//! from it, it waits only for the readers that came first), and the releaser of a use wakes
//! parked threads and registered tasks alike. The public futures only wrap the token
//! `Acquire` yields into their guard: [`LockFuture`] and [`OwnedLockFuture`] (no deadline:
//! they resolve to the guard), [`TryLockFuture`] and [`OwnedTryLockFuture`] (a deadline or
//! an invalid range: they resolve to a `Result`), and [`ManyLockFuture`] /
//! [`TryManyLockFuture`] for many ranges at once.
//!
//! **Cancel safety.** Dropping a pending future gives up its acquisition the way a timed-out
//! blocking call does: a linked (pending) list node is unlinked and released, which wakes
//! whoever backed off from it; a private node goes back to the pool; a reader's node (never
//! announced while the future waits: it retracts first) is retired; the counts are undone
//! and the waker registration and the deadline's alarm removed, so no clone of any waker
//! it was polled with outlives it. A future dropped after it completed holds nothing. A
//! many-range future holds ranges only inside one poll (it takes the rest without waiting
//! once its anchor is held, or releases them all), so dropping it between polls leaves
//! nothing either.
//!
//! **Executors.** The futures depend on no runtime: any executor that polls on wake works.
//! Deadlines (the `_for` and `_until` forms) are kept by one lazily started thread that
//! wakes the waker of the future's latest poll at its deadline (`wakers`, "Deadlines"), so
//! a timed future may be polled under different wakers (`select!`, `join`) and moved
//! between tasks.

use core::fmt;
use core::future::Future;
use core::ops::{Deref, Range};
use core::pin::Pin;
use core::ptr::NonNull;
use core::task::{ready, Context, Poll};
use std::sync::Arc;
use std::time::Instant;

use super::node::Node;
use super::wait::Wait;
use super::wakers::{Alarm, Registration};
use super::{Attempt, Kind, Listed, SkipToken};
use crate::error::{LockError, RangeError};
use crate::guard::{ManyGuard, OwnedRangeGuard};
use crate::lock::Guard;
use crate::many::Guards;
use crate::range::Mode;
use crate::{RangeGuard, RangeLock};

/// One async acquisition of a range of the lock `L` (`&RangeLock` or `Arc<RangeLock>`):
/// the state machine under every future of this module. It yields the token; the public
/// futures wrap it into their guard.
pub(crate) struct Acquire<L: Deref<Target = RangeLock>> {
    lock: L,
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
    /// Not started.
    Start,
    /// The caller's range locks nothing: answered on the first poll.
    Invalid(RangeError),
    /// Exclusive, on the list path: counted, `node` linked (pending) or not yet.
    Listed { node: NonNull<Node>, listed: Listed },
    /// Shared: counted, `node` announced before (and retracted) or not yet.
    Shared { node: NonNull<Node>, announced: bool },
    /// Resolved: holds nothing.
    Done,
}

// SAFETY: the nodes an acquisition owns are private to it (or linked pending, which any
// thread may release), like a `SkipToken`'s; the lock handle `L` is `Send` (the bound).
unsafe impl<L: Deref<Target = RangeLock> + Send> Send for Acquire<L> {}

impl<L: Deref<Target = RangeLock>> Acquire<L> {
    /// The acquisition of `range` (as the caller wrote it, checked: an invalid range
    /// resolves to [`LockError::InvalidRange`] with the caller's bounds) in `mode`.
    pub(crate) fn new(
        lock: L,
        range: Result<Range<u64>, RangeError>,
        mode: Mode,
        deadline: Option<Instant>,
    ) -> Self {
        let (range, state) = match range {
            Ok(range) => (range, State::Start),
            Err(e) => (0..0, State::Invalid(e)),
        };
        Acquire {
            lock,
            range,
            mode,
            deadline,
            state,
            registration: Registration::new(),
            alarm: None,
        }
    }

    /// The lock this acquisition is on.
    pub(crate) fn lock(&self) -> &L {
        &self.lock
    }

    /// The range (valid once the acquisition succeeded) and the mode.
    pub(crate) fn request(&self) -> (Range<u64>, Mode) {
        (self.range.clone(), self.mode)
    }

    /// Resolves with `result`, holding nothing else.
    fn finish(
        &mut self,
        result: Result<SkipToken, LockError>,
    ) -> Poll<Result<SkipToken, LockError>> {
        self.state = State::Done;
        self.registration.cancel();
        self.alarm = None;
        Poll::Ready(result)
    }

    /// Gives the acquisition up (timeout or drop): undo what the state holds.
    fn abandon(&mut self) {
        match core::mem::replace(&mut self.state, State::Done) {
            State::Listed { node, listed } => {
                self.lock.inner().raw().core().abandon_listed(node, listed)
            }
            State::Shared { node, announced } => {
                self.lock.inner().raw().core().abandon_shared(node, announced)
            }
            State::Start | State::Invalid(_) | State::Done => {}
        }
        self.registration.cancel();
        // Lets go of the waker at once (module docs of `wakers`, "Deadlines").
        self.alarm = None;
    }

    fn expired(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// One step of the acquisition: the token of the held range, an error, or `Pending`
    /// with the waker registered.
    ///
    /// # Panics
    ///
    /// If polled after it resolved.
    pub(crate) fn poll_token(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<SkipToken, LockError>> {
        let this = self;
        let raw = this.lock.inner().raw().core();
        loop {
            let attempt = match &mut this.state {
                State::Done => panic!("a lock future polled after it resolved"),
                State::Invalid(e) => {
                    let e = *e;
                    return this.finish(Err(e.into()));
                }
                State::Start => {
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

impl<L: Deref<Target = RangeLock>> Drop for Acquire<L> {
    fn drop(&mut self) {
        self.abandon();
    }
}

impl<L: Deref<Target = RangeLock>> fmt::Debug for Acquire<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Acquire")
            .field("range", &self.range)
            .field("mode", &self.mode)
            .field("deadline", &self.deadline)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// The held range of a resolved borrowed acquisition.
fn borrowed<'a>(acquire: &Acquire<&'a RangeLock>, token: SkipToken) -> RangeGuard<'a> {
    let lock: &'a RangeLock = acquire.lock;
    let (range, mode) = acquire.request();
    RangeGuard::from_inner(Guard::new(lock.inner(), range, mode, token))
}

/// The held range of a resolved owned acquisition.
fn owned(acquire: &Acquire<Arc<RangeLock>>, token: SkipToken) -> OwnedRangeGuard {
    let (range, mode) = acquire.request();
    // SAFETY: `token` is what `acquire`, an acquisition of `range` in `mode` on this lock,
    // resolved to: held, and released by nobody else.
    unsafe { OwnedRangeGuard::from_token(Arc::clone(acquire.lock()), range, mode, token) }
}

#[cold]
fn cannot_fail(e: LockError) -> ! {
    unreachable!("a checked request without a deadline always resolves, got {e}")
}

/// The future of an untimed async acquisition ([`RangeLock::lock_async`],
/// [`lock_shared_async`](RangeLock::lock_shared_async),
/// [`lock_mode_async`](RangeLock::lock_mode_async)): resolves to the [`RangeGuard`].
/// Dropping it before it resolves gives the acquisition up and leaves nothing behind.
#[must_use = "futures do nothing unless polled"]
pub struct LockFuture<'a>(Acquire<&'a RangeLock>);

impl<'a> LockFuture<'a> {
    /// The future of `range` (checked by the caller) in `mode`.
    pub(crate) fn new(lock: &'a RangeLock, range: Range<u64>, mode: Mode) -> Self {
        LockFuture(Acquire::new(lock, Ok(range), mode, None))
    }
}

impl<'a> Future for LockFuture<'a> {
    type Output = RangeGuard<'a>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<RangeGuard<'a>> {
        let token = ready!(self.0.poll_token(cx)).unwrap_or_else(|e| cannot_fail(e));
        Poll::Ready(borrowed(&self.0, token))
    }
}

impl fmt::Debug for LockFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LockFuture").field(&self.0).finish()
    }
}

/// The future of a timed async acquisition ([`RangeLock::try_lock_async_for`],
/// [`try_lock_async_until`](RangeLock::try_lock_async_until) and their `_shared` and
/// `_mode` forms): resolves to the [`RangeGuard`], or to [`LockError::TimedOut`] at the
/// deadline, or to [`LockError::InvalidRange`] (with the bounds the caller passed) for a
/// range that locks nothing. Dropping it before it resolves gives the acquisition up and
/// leaves nothing behind.
#[must_use = "futures do nothing unless polled"]
pub struct TryLockFuture<'a>(Acquire<&'a RangeLock>);

impl<'a> TryLockFuture<'a> {
    pub(crate) fn new(
        lock: &'a RangeLock,
        range: Result<Range<u64>, RangeError>,
        mode: Mode,
        deadline: Instant,
    ) -> Self {
        TryLockFuture(Acquire::new(lock, range, mode, Some(deadline)))
    }
}

impl<'a> Future for TryLockFuture<'a> {
    type Output = Result<RangeGuard<'a>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let token = ready!(self.0.poll_token(cx));
        Poll::Ready(token.map(|token| borrowed(&self.0, token)))
    }
}

impl fmt::Debug for TryLockFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TryLockFuture").field(&self.0).finish()
    }
}

/// The future of an untimed async acquisition through an `Arc`
/// ([`RangeLock::lock_owned_async`] and its `_shared` and `_mode` forms): `'static`,
/// resolves to an [`OwnedRangeGuard`]. Cancel-safe as [`LockFuture`].
#[must_use = "futures do nothing unless polled"]
pub struct OwnedLockFuture(Acquire<Arc<RangeLock>>);

impl OwnedLockFuture {
    pub(crate) fn new(lock: Arc<RangeLock>, range: Range<u64>, mode: Mode) -> Self {
        OwnedLockFuture(Acquire::new(lock, Ok(range), mode, None))
    }
}

impl Future for OwnedLockFuture {
    type Output = OwnedRangeGuard;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<OwnedRangeGuard> {
        let token = ready!(self.0.poll_token(cx)).unwrap_or_else(|e| cannot_fail(e));
        Poll::Ready(owned(&self.0, token))
    }
}

impl fmt::Debug for OwnedLockFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OwnedLockFuture").field(&self.0).finish()
    }
}

/// The future of a timed async acquisition through an `Arc`
/// ([`RangeLock::try_lock_owned_async_for`] and its siblings): `'static`, resolves as
/// [`TryLockFuture`] does, to an [`OwnedRangeGuard`].
#[must_use = "futures do nothing unless polled"]
pub struct OwnedTryLockFuture(Acquire<Arc<RangeLock>>);

impl OwnedTryLockFuture {
    pub(crate) fn new(
        lock: Arc<RangeLock>,
        range: Result<Range<u64>, RangeError>,
        mode: Mode,
        deadline: Instant,
    ) -> Self {
        OwnedTryLockFuture(Acquire::new(lock, range, mode, Some(deadline)))
    }
}

impl Future for OwnedTryLockFuture {
    type Output = Result<OwnedRangeGuard, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let token = ready!(self.0.poll_token(cx));
        Poll::Ready(token.map(|token| owned(&self.0, token)))
    }
}

impl fmt::Debug for OwnedTryLockFuture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("OwnedTryLockFuture").field(&self.0).finish()
    }
}

/// The async form of the many-range protocol (`Lock::lock_many`, steps 1 to 3): wait
/// (asynchronously, holding nothing) for the anchor, take the rest without waiting, and on
/// a conflict release everything, yield once, and wait for the range that failed.
struct AcquireMany<'a> {
    lock: &'a RangeLock,
    /// The validated request, sorted by start; or why it was refused.
    request: Result<Vec<(Range<u64>, Mode)>, LockError>,
    deadline: Option<Instant>,
    anchor: usize,
    /// The wait for the anchor, while there is one.
    waiting: Option<Acquire<&'a RangeLock>>,
}

impl<'a> AcquireMany<'a> {
    fn poll_guards(&mut self, cx: &mut Context<'_>) -> Poll<Result<ManyGuard<'a>, LockError>> {
        let request = match &self.request {
            Ok(request) => request,
            Err(e) => return Poll::Ready(Err(*e)),
        };
        if request.is_empty() {
            return Poll::Ready(Ok(ManyGuard::from_inner(Guards::new(Vec::new()))));
        }
        let lock = self.lock;
        let (range, mode) = request[self.anchor].clone();
        let deadline = self.deadline;
        let waiting =
            self.waiting.get_or_insert_with(|| Acquire::new(lock, Ok(range), mode, deadline));
        let token = ready!(waiting.poll_token(cx));
        self.waiting = None;
        let first = Guard::new(lock.inner(), request[self.anchor].0.clone(), mode, token?);
        match lock.inner().try_rest(request, self.anchor, first) {
            Ok(guards) => Poll::Ready(Ok(ManyGuard::from_inner(Guards::new(guards)))),
            Err(failed) => {
                // `try_rest` released everything before returning.
                if self.deadline.is_some_and(|d| Instant::now() >= d) {
                    return Poll::Ready(Err(LockError::TimedOut));
                }
                self.anchor = failed;
                // Polite: let the holder that made us fail run before we queue for it.
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }
    }
}

impl fmt::Debug for AcquireMany<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcquireMany")
            .field("request", &self.request)
            .field("deadline", &self.deadline)
            .field("anchor", &self.anchor)
            .field("waiting", &self.waiting)
            .finish_non_exhaustive()
    }
}

/// The future of [`RangeLock::lock_many_async`]: resolves to the [`ManyGuard`]. Dropping it
/// before it resolves leaves nothing behind (it holds ranges only inside a poll).
#[must_use = "futures do nothing unless polled"]
pub struct ManyLockFuture<'a>(AcquireMany<'a>);

impl<'a> ManyLockFuture<'a> {
    pub(crate) fn new(lock: &'a RangeLock, request: Vec<(Range<u64>, Mode)>) -> Self {
        ManyLockFuture(AcquireMany {
            lock,
            request: Ok(request),
            deadline: None,
            anchor: 0,
            waiting: None,
        })
    }
}

impl<'a> Future for ManyLockFuture<'a> {
    type Output = ManyGuard<'a>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ManyGuard<'a>> {
        self.0.poll_guards(cx).map(|r| r.unwrap_or_else(|e| cannot_fail(e)))
    }
}

impl fmt::Debug for ManyLockFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManyLockFuture").field(&self.0).finish()
    }
}

/// The future of [`RangeLock::try_lock_many_async_for`] and
/// [`try_lock_many_async_until`](RangeLock::try_lock_many_async_until): resolves to the
/// [`ManyGuard`], or to the error the blocking form would return (and nothing held).
#[must_use = "futures do nothing unless polled"]
pub struct TryManyLockFuture<'a>(AcquireMany<'a>);

impl<'a> TryManyLockFuture<'a> {
    pub(crate) fn new(
        lock: &'a RangeLock,
        request: Result<Vec<(Range<u64>, Mode)>, LockError>,
        deadline: Instant,
    ) -> Self {
        TryManyLockFuture(AcquireMany {
            lock,
            request,
            deadline: Some(deadline),
            anchor: 0,
            waiting: None,
        })
    }
}

impl<'a> Future for TryManyLockFuture<'a> {
    type Output = Result<ManyGuard<'a>, LockError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.poll_guards(cx)
    }
}

impl fmt::Debug for TryManyLockFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("TryManyLockFuture").field(&self.0).finish()
    }
}
