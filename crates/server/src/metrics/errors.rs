//! Requests answered with an error status, counted per status.
//!
//! The lock table counts its errors in a plain [`ErrorTally`] (it runs on one thread at a
//! time); the rangelock engine and the request handlers (errors found before a request
//! reaches an engine: bad frames, refused admissions, `SHM_ATTACH` refusals) count theirs
//! in an [`ErrorCounts`] of relaxed atomics. Both only on the error path. `STATS` reports
//! the sum over all statuses; `/metrics` one series per status that occurred.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::protocol::Status;

/// The first error code: codes from here up are errors ([`Status::is_error`]).
const FIRST: u8 = 0x10;

/// Error statuses: the error codes are contiguous from [`FIRST`] (checked below).
const N: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < Status::ALL.len() {
        if Status::ALL[i] as u8 >= FIRST {
            n += 1;
        }
        i += 1;
    }
    n
};

const _: () = assert!(
    Status::ALL[Status::ALL.len() - 1] as u8 as usize - FIRST as usize + 1 == N,
    "error codes must be contiguous for the per-status counters"
);

/// The counter slot of an error status (`None` for a status that is not an error).
#[inline]
fn slot(s: Status) -> Option<usize> {
    s.code().checked_sub(FIRST).map(usize::from).filter(|&i| i < N)
}

/// Error responses per status, as plain counters; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorTally([u64; N]);

impl Default for ErrorTally {
    fn default() -> Self {
        ErrorTally([0; N])
    }
}

impl ErrorTally {
    /// Counts one response with `status` (a status that is not an error is ignored).
    #[inline]
    pub fn count(&mut self, status: Status) {
        if let Some(i) = slot(status) {
            self.0[i] += 1;
        }
    }

    /// Responses counted with `status`.
    pub fn get(&self, status: Status) -> u64 {
        slot(status).map_or(0, |i| self.0[i])
    }

    /// Error responses of every status.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &ErrorTally) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }

    /// `(status, count)` of each status counted at least once, in code order.
    pub fn nonzero(&self) -> impl Iterator<Item = (Status, u64)> + '_ {
        self.all().filter(|(_, n)| *n > 0)
    }

    /// `(status, count)` of every error status, zeros included, in code order.
    pub fn all(&self) -> impl Iterator<Item = (Status, u64)> + '_ {
        Status::ALL.into_iter().filter_map(|s| Some((s, self.0[slot(s)?])))
    }
}

/// Error responses per status, as relaxed atomic counters shared by threads; see the
/// module docs.
#[derive(Debug)]
pub struct ErrorCounts([AtomicU64; N]);

impl Default for ErrorCounts {
    fn default() -> Self {
        ErrorCounts(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl ErrorCounts {
    /// Counts one response with `status` (a status that is not an error is ignored).
    #[inline]
    pub fn count(&self, status: Status) {
        if let Some(i) = slot(status) {
            self.0[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The counts now.
    pub fn tally(&self) -> ErrorTally {
        ErrorTally(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }
}

/// A status's name as `docs/PROTOCOL.md` writes it (`NOT_HELD`), for the `status` label.
pub(crate) fn status_name(s: Status) -> String {
    let mut out = String::new();
    for (i, c) in format!("{s:?}").chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_status_has_a_slot_and_no_other() {
        let mut t = ErrorTally::default();
        let c = ErrorCounts::default();
        for s in Status::ALL {
            assert_eq!(slot(s).is_some(), s.is_error(), "{s:?}");
            t.count(s);
            c.count(s);
        }
        assert_eq!(t, c.tally());
        assert_eq!(t.total(), Status::ALL.iter().filter(|s| s.is_error()).count() as u64);
        assert_eq!(t.get(Status::Ok), 0);
        assert_eq!(t.get(Status::NotHeld), 1);
        let mut u = t;
        u.add(&t);
        assert_eq!(u.get(Status::Forbidden), 2);
        assert_eq!(u.nonzero().count(), N);
        assert_eq!(ErrorTally::default().nonzero().count(), 0);
    }

    #[test]
    fn names_are_the_protocol_documents() {
        assert_eq!(status_name(Status::NotHeld), "NOT_HELD");
        assert_eq!(status_name(Status::InvalidRange), "INVALID_RANGE");
        assert_eq!(status_name(Status::ShmAlreadyAttached), "SHM_ALREADY_ATTACHED");
        assert_eq!(status_name(Status::Malformed), "MALFORMED");
        let doc = include_str!("../../../../docs/PROTOCOL.md");
        for s in Status::ALL.into_iter().filter(|s| s.is_error()) {
            let name = status_name(s);
            assert!(doc.contains(&format!(" {name} ")), "{name} is not in PROTOCOL.md's table");
        }
    }
}
