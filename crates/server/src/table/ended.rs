//! What a session remembers of its locks that ended: the bookkeeping behind idempotent
//! `UNLOCK` and the poll grant mode's one-time outcomes, shared by every engine.
//!
//! A lock id that ended (released, withdrawn by `CANCEL` or `UNLOCK`, timed out, refused by
//! a shutdown) is remembered, newest [`RELEASED_MEMORY`] per session:
//!
//! * `UNLOCK` or `CANCEL` of a remembered id answers `ALREADY_RELEASED`, in both grant
//!   modes (an id never used answers `NOT_HELD`);
//! * poll mode: the outcome of a wait that ended without a grant (`TIMED_OUT`,
//!   `SHUTTING_DOWN`) is answered by the first `POLL` of the id; later `POLL`s answer
//!   `ALREADY_RELEASED`;
//! * a remembered id is *not* live: it does not count toward the session's lock limit, and
//!   a new `LOCK` may reuse it at once (which forgets the old outcome).

use std::collections::{HashMap, VecDeque};

use crate::protocol::Status;

/// How many ended lock ids a session remembers.
pub const RELEASED_MEMORY: usize = 4096;

/// How a remembered lock ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Released or withdrawn; nothing left to report.
    Released,
    /// Poll mode: a wait ended with this status, not yet reported by a `POLL`.
    Unpolled(Status),
}

/// See the module docs.
#[derive(Debug, Default)]
pub(crate) struct Ended {
    /// Ids in the order they ended, with the generation they ended in. An id that was
    /// reused and ended again appears twice; only the entry whose generation matches
    /// `map` counts.
    order: VecDeque<(u64, u64)>,
    map: HashMap<u64, (u64, Outcome)>,
    generation: u64,
}

impl Ended {
    fn insert(&mut self, id: u64, outcome: Outcome) {
        self.generation += 1;
        self.map.insert(id, (self.generation, outcome));
        self.order.push_back((id, self.generation));
        while self.order.len() > RELEASED_MEMORY {
            if let Some((old, g)) = self.order.pop_front() {
                if self.map.get(&old).is_some_and(|(mg, _)| *mg == g) {
                    self.map.remove(&old);
                }
            }
        }
    }

    /// Lock `id` was released or withdrawn (or its timeout was answered in push mode).
    pub(crate) fn released(&mut self, id: u64) {
        self.insert(id, Outcome::Released);
    }

    /// Poll mode: lock `id`'s wait ended with `status`, to be answered by the next `POLL`.
    pub(crate) fn unpolled(&mut self, id: u64, status: Status) {
        self.insert(id, Outcome::Unpolled(status));
    }

    /// A new `LOCK` reuses `id`: forget how its previous lock ended.
    pub(crate) fn reuse(&mut self, id: u64) {
        // Its `order` entry stays until it is evicted; the generation check skips it.
        self.map.remove(&id);
    }

    /// The answer to `UNLOCK`/`CANCEL` of `id` when no live lock has that id.
    pub(crate) fn unlock(&mut self, id: u64) -> Status {
        match self.map.get_mut(&id) {
            Some((_, outcome)) => {
                *outcome = Outcome::Released;
                Status::AlreadyReleased
            }
            None => Status::NotHeld,
        }
    }

    /// The answer to `POLL` of `id` when no live lock has that id.
    pub(crate) fn poll(&mut self, id: u64) -> Status {
        match self.map.get_mut(&id) {
            Some((_, outcome)) => match std::mem::replace(outcome, Outcome::Released) {
                Outcome::Unpolled(status) => status,
                Outcome::Released => Status::AlreadyReleased,
            },
            None => Status::NotHeld,
        }
    }

    /// Ids remembered (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_are_answered_once_and_ids_reusable() {
        let mut e = Ended::default();
        assert_eq!(e.unlock(1), Status::NotHeld);
        e.unpolled(1, Status::TimedOut);
        assert_eq!(e.poll(1), Status::TimedOut);
        assert_eq!(e.poll(1), Status::AlreadyReleased);
        assert_eq!(e.unlock(1), Status::AlreadyReleased);
        e.reuse(1);
        assert_eq!(e.poll(1), Status::NotHeld);
        e.released(2);
        assert_eq!(e.unlock(2), Status::AlreadyReleased);
        e.unpolled(3, Status::TimedOut);
        assert_eq!(e.unlock(3), Status::AlreadyReleased, "UNLOCK consumes the outcome");
        assert_eq!(e.poll(3), Status::AlreadyReleased);
    }

    #[test]
    fn memory_is_bounded_and_keeps_the_newest() {
        let mut e = Ended::default();
        for round in 0..3u64 {
            for id in 0..RELEASED_MEMORY as u64 + 10 {
                e.reuse(id);
                e.released(id + round);
            }
        }
        assert!(e.len() <= RELEASED_MEMORY);
        assert!(e.order.len() <= RELEASED_MEMORY);
        let newest = RELEASED_MEMORY as u64 + 9 + 2;
        assert_eq!(e.unlock(newest), Status::AlreadyReleased);
        assert_eq!(e.unlock(0), Status::NotHeld, "the oldest were forgotten");
    }
}
