//! Cached locks (protocol version 6): how far a `LOCK_CACHED` is expanded, and the
//! recent history that decides it.
//!
//! # The policy (ours; `docs/CACHING.md` tells the user's side)
//!
//! A client that sent `CACHE_ON` may keep a granted extent after its own unlock and serve
//! its threads' later locks inside it without a round trip. The server decides how wide
//! that extent is, and whether the client may keep it at all:
//!
//! * **Expand only where nobody else has been.** A grantable `LOCK_CACHED` gets the
//!   largest interval inside the client's desired range that contains the required range
//!   and overlaps no conflicting entry of another session (held or waiting) and no
//!   conflicting request another session made within the window ([`History`]). A client
//!   alone on a resource gets its whole desired range (GPFS's whole-file token); a region
//!   others touch is granted as asked (Lustre's lockahead), without either configured.
//! * **Exact grants where keeping did not pay.** A session's `GIVE_BACK` in answer to a
//!   callback says how many local locks the extent served (`used`). If its called-back
//!   extents of one mode served fewer than [`PAID_PER_RECALL`] each on average within
//!   the window ([`Payoff`]), its grants in that mode are exact, and kept only where no
//!   other session asked for the range lately; once [`KEEP_EXACT_BELOW`] of the recalled
//!   extents were exact grants already, not even exact grants are kept. So a strided
//!   writer whose wide grants were recalled settles on its own blocks, kept; two clients
//!   taking turns pay what an uncached client pays, one round trip per lock, never a
//!   callback per lock; and a reader whose shared extents serve many reads between a
//!   writer's callbacks keeps them.
//! * A request that must wait is granted exactly and not kept.
//!
//! [`CachePolicy::ExpandAll`] (Lustre's default: always the whole free space) and
//! [`CachePolicy::Exact`] (never expand, always keep) exist to be measured against.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::protocol::Mode;

/// How a server grants `LOCK_CACHED` (the `--cache-policy` option).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CachePolicy {
    /// No cached locks: `CACHE_ON` is answered `CACHE_UNAVAILABLE`.
    Off,
    /// Ours: expand only where no other session has been within the window, and grant
    /// exactly where kept extents did not pay (the module docs).
    #[default]
    History,
    /// Always expand to all the free space within the desired range, and keep
    /// (Lustre's default; for comparison).
    ExpandAll,
    /// Never expand, always keep (Lustre's lockahead; for comparison).
    Exact,
}

impl CachePolicy {
    /// Every policy.
    pub const ALL: [CachePolicy; 4] =
        [CachePolicy::Off, CachePolicy::History, CachePolicy::ExpandAll, CachePolicy::Exact];

    /// The name `--cache-policy` takes.
    pub fn name(self) -> &'static str {
        match self {
            CachePolicy::Off => "off",
            CachePolicy::History => "history",
            CachePolicy::ExpandAll => "expand-all",
            CachePolicy::Exact => "exact",
        }
    }
}

impl core::str::FromStr for CachePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CachePolicy::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            format!("unknown cache policy {s:?} (expected off, history, expand-all or exact)")
        })
    }
}

/// The cached-lock settings of a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheConfig {
    /// How `LOCK_CACHED` is granted.
    pub policy: CachePolicy,
    /// How long a request is remembered, and how long a callback that did not pay
    /// counts: 1 s by default.
    pub window: Duration,
    /// How many recent requests are remembered per resource (the newest win): 64.
    pub history: usize,
    /// Kept extents per session: one more makes the server call back the session's least
    /// recently granted one (4096 by default, the default `max_locks_per_session`).
    pub max_kept_per_session: usize,
    /// Kept extents on the server: over it, new grants are exact and not kept
    /// (1 048 576 by default).
    pub max_kept: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            policy: CachePolicy::History,
            window: Duration::from_secs(1),
            history: 64,
            max_kept_per_session: 4096,
            max_kept: 1 << 20,
        }
    }
}

/// How many local locks a recalled extent must have served, on average over a window, for
/// keeping to have paid (ours: a callback costs the client a `GIVE_BACK` and, later, the
/// round trip that gets the range again; each local lock saved one).
pub(crate) const PAID_PER_RECALL: u64 = 2;

/// A session whose recalled exact extents of one mode did not pay this often within one
/// window keeps none of its exact grants of that mode until the window passes (ours: random
/// overlapping ranges cost one every few locks; a strided writer's wide grants, recalled
/// while it warms up, do not count: they say only that it should stop growing).
pub(crate) const KEEP_EXACT_BELOW: u32 = 4;

/// What a caching session's recalled extents of one mode served before they were given
/// back (the `used` of their `GIVE_BACK`s; 0 from a client that does not say), over a
/// window that starts at the first recall after the last one passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Payoff {
    /// The window's start.
    since: Option<Instant>,
    /// The last recall.
    last: Option<Instant>,
    /// Recalls since `since`.
    recalls: u32,
    /// Of those, recalls of extents granted as asked (not grown).
    exact: u32,
    /// Local locks they served, in all.
    used: u64,
}

/// What a session's [`Payoff`] says of its next grant in that mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Contention {
    /// Keeping paid, or nothing was recalled within the window: expand.
    None,
    /// Recalls did not pay, a few times: exact, kept unless others asked for it lately.
    Sometimes,
    /// Recalls did not pay, and [`KEEP_EXACT_BELOW`] or more of them were of exact
    /// grants: exact, not kept.
    Often,
}

impl Payoff {
    /// A recalled extent (`grown`: granted wider than asked) was given back `now`, having
    /// served `used` local locks.
    pub(crate) fn note(&mut self, used: u32, grown: bool, now: Instant, window: Duration) {
        if self.since.is_none_or(|t| now.saturating_duration_since(t) >= window) {
            *self = Payoff { since: Some(now), ..Payoff::default() };
        }
        self.last = Some(now);
        self.recalls = self.recalls.saturating_add(1);
        self.exact = self.exact.saturating_add(u32::from(!grown));
        self.used = self.used.saturating_add(u64::from(used));
    }

    /// How contended the session is `now` in this mode.
    pub(crate) fn contention(&self, now: Instant, window: Duration) -> Contention {
        let recent = self.last.is_some_and(|t| now.saturating_duration_since(t) < window);
        if !recent || self.used >= PAID_PER_RECALL * u64::from(self.recalls) {
            Contention::None
        } else if self.exact >= KEEP_EXACT_BELOW {
            Contention::Often
        } else {
            Contention::Sometimes
        }
    }
}

/// A request the server saw: who asked for what, when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) session: u64,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) mode: Mode,
    pub(crate) at: Instant,
}

/// The recent requests on one resource, newest last, at most `cap`.
#[derive(Debug, Default)]
pub(crate) struct History {
    seen: VecDeque<Seen>,
}

impl History {
    /// Remembers `s`, forgetting the oldest beyond `cap`.
    pub(crate) fn push(&mut self, s: Seen, cap: usize) {
        while self.seen.len() >= cap.max(1) {
            self.seen.pop_front();
        }
        self.seen.push_back(s);
    }

    /// Requests of sessions other than `session` since `since`.
    pub(crate) fn others(&self, session: u64, since: Instant) -> impl Iterator<Item = &Seen> {
        self.seen
            .iter()
            .rev()
            .take_while(move |s| s.at >= since)
            .filter(move |s| s.session != session)
    }
}

/// Narrows `[lo, hi)` around the required `[start, end)` so that it does not overlap
/// `[x_start, x_end)`, which must not overlap the required range: the interval the
/// expansion may still take.
#[inline]
pub(crate) fn clip(lo: &mut u64, hi: &mut u64, start: u64, end: u64, x_start: u64, x_end: u64) {
    debug_assert!(x_end <= start || x_start >= end, "an obstacle inside the required range");
    if x_end <= start {
        *lo = (*lo).max(x_end);
    } else if x_start >= end {
        *hi = (*hi).min(x_start);
    }
}

/// The index of `mode` in a per-mode pair: exclusive 0, shared 1.
#[inline]
pub(crate) fn slot(mode: Mode) -> usize {
    usize::from(mode == Mode::Shared)
}

/// Whether two requests' modes conflict.
#[inline]
pub(crate) fn conflicting(a: Mode, b: Mode) -> bool {
    !a.compatible(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_round_trip() {
        for p in CachePolicy::ALL {
            assert_eq!(p.name().parse::<CachePolicy>(), Ok(p));
        }
        assert!("always".parse::<CachePolicy>().unwrap_err().contains("expand-all"));
    }

    #[test]
    fn history_keeps_the_newest_and_skips_the_asker() {
        let now = Instant::now();
        let mut h = History::default();
        for i in 0..5 {
            let s = Seen { session: i % 2, start: i, end: i + 1, mode: Mode::Exclusive, at: now };
            h.push(s, 3);
        }
        let starts: Vec<u64> = h.others(0, now).map(|s| s.start).collect();
        assert_eq!(starts, vec![3]);
        assert_eq!(h.others(0, now + Duration::from_secs(1)).count(), 0);
    }

    #[test]
    fn keeping_pays_when_recalled_extents_served_two_local_locks_on_average() {
        let (t, w) = (Instant::now(), Duration::from_secs(1));
        let mut p = Payoff::default();
        assert_eq!(p.contention(t, w), Contention::None);
        p.note(0, false, t, w);
        assert_eq!(p.contention(t, w), Contention::Sometimes);
        p.note(4, false, t, w);
        assert_eq!(p.contention(t, w), Contention::None, "4 locks over 2 recalls paid");
        for _ in 0..2 {
            p.note(0, false, t, w);
        }
        assert_eq!(p.contention(t, w), Contention::Often, "4 over 4 exact recalls did not");
        assert_eq!(p.contention(t + w, w), Contention::None, "a window later");
        // A new window forgets the old one's recalls.
        p.note(1, false, t + w, w);
        assert_eq!((p.recalls, p.used), (1, 1));
        assert_eq!(p.contention(t + w, w), Contention::Sometimes);
    }

    #[test]
    fn recalled_wide_grants_stop_the_growing_but_not_the_keeping() {
        let (t, w) = (Instant::now(), Duration::from_secs(1));
        let mut p = Payoff::default();
        for _ in 0..KEEP_EXACT_BELOW * 4 {
            p.note(0, true, t, w);
        }
        assert_eq!(p.contention(t, w), Contention::Sometimes, "exact grants are still kept");
        for _ in 1..KEEP_EXACT_BELOW {
            p.note(0, false, t, w);
        }
        assert_eq!(p.contention(t, w), Contention::Sometimes);
        p.note(0, false, t, w);
        assert_eq!(p.contention(t, w), Contention::Often, "exact grants recalled too");
    }

    #[test]
    fn clip_narrows_towards_the_required_range() {
        let (mut lo, mut hi) = (0, 100);
        clip(&mut lo, &mut hi, 40, 50, 10, 20);
        clip(&mut lo, &mut hi, 40, 50, 70, 90);
        clip(&mut lo, &mut hi, 40, 50, 0, 5);
        assert_eq!((lo, hi), (20, 70));
    }
}
