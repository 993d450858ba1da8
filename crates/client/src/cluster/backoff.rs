//! The pause between retries of a cluster operation.

use std::time::Duration;

/// The first pause.
const FIRST: Duration = Duration::from_millis(10);
/// The longest pause.
const CAP: Duration = Duration::from_millis(200);

/// 10 ms, doubling to 200 ms: a retry soon after a hiccup, and at most five a second
/// while the cluster converges (a lease expires, a manager round claims a partition).
#[derive(Clone, Debug)]
pub(super) struct Backoff {
    next: Duration,
}

impl Backoff {
    pub(super) fn new() -> Backoff {
        Backoff { next: FIRST }
    }

    /// The next pause.
    pub(super) fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(CAP);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap() {
        let mut b = Backoff::new();
        let pauses: Vec<u64> = (0..7).map(|_| b.next_pause().as_millis() as u64).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 200, 200]);
    }
}
