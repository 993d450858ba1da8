//! The poll schedule shared by the blocking and async clients (grant mode `poll`).

use std::time::Duration;

use rangelock_proto::{ResponseFrame, Status};

use crate::ClientError;

/// How long to wait before the next poll of a pending lock: the seed's client polls back
/// to back a few times, then backs off (10 µs doubling to 2 ms) so a long wait does not
/// flood the server.
#[derive(Debug)]
pub(crate) struct PollSchedule {
    polls: u32,
    backoff: Duration,
}

/// Polls sent back to back (with only a yield between them) before backing off.
const BACK_TO_BACK: u32 = 8;

impl PollSchedule {
    pub(crate) fn new() -> Self {
        PollSchedule { polls: 0, backoff: Duration::from_micros(10) }
    }

    /// What a poll's response means: `Some(Ok(value))` granted, `Some(Err(_))` the wait is
    /// over on the server (timed out, cancelled, shutting down: nothing to withdraw), `None`
    /// still pending.
    pub(crate) fn outcome(r: &ResponseFrame) -> Option<Result<u64, ClientError>> {
        match r.status {
            Status::Ok => Some(Ok(r.value)),
            Status::Pending => None,
            s => Some(Err(ClientError::from_status(s))),
        }
    }

    /// After a pending poll: `None` to yield and poll again at once, or how long to sleep.
    pub(crate) fn next_wait(&mut self) -> Option<Duration> {
        self.polls += 1;
        if self.polls <= BACK_TO_BACK {
            return None;
        }
        let wait = self.backoff;
        self.backoff = (self.backoff * 2).min(Duration::from_millis(2));
        Some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_back_to_back_then_backs_off_to_a_cap() {
        let mut s = PollSchedule::new();
        for _ in 0..BACK_TO_BACK {
            assert_eq!(s.next_wait(), None);
        }
        assert_eq!(s.next_wait(), Some(Duration::from_micros(10)));
        assert_eq!(s.next_wait(), Some(Duration::from_micros(20)));
        let last = (0..20).filter_map(|_| s.next_wait()).last();
        assert_eq!(last, Some(Duration::from_millis(2)));
    }
}
