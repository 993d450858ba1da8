//! The pause between retries of a cluster operation.

use std::time::Duration;

use tokio::sync::watch;

/// From [`ClusterOptions::backoff_first`](super::ClusterOptions::backoff_first) (10 ms by
/// default), doubling to [`ClusterOptions::backoff_max`](super::ClusterOptions::backoff_max)
/// (200 ms): a retry soon after a hiccup, and at most five a second while the cluster
/// converges (a lease expires, a manager round claims a partition). A map change a node
/// pushes ends a pause early (see [`super::client`]).
#[derive(Clone, Debug)]
pub(super) struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    pub(super) fn new(first: Duration, max: Duration) -> Backoff {
        Backoff { next: first.min(max), max }
    }

    /// The next pause.
    pub(super) fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = (self.next * 2).min(self.max);
        pause
    }
}

/// Sleeps `pause`, or less: until a node pushes a map change that `news` has not seen
/// yet (the receiver of [`Shared::map_news`](super::client::Shared::map_news)).
pub(super) async fn sleep_or_news(news: &mut watch::Receiver<u64>, pause: Duration) {
    let sleep = tokio::time::sleep(pause);
    tokio::pin!(sleep);
    tokio::select! {
        () = &mut sleep => {}
        changed = news.changed() => {
            if changed.is_err() {
                // The client is gone: no news will come.
                sleep.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap() {
        let mut b = Backoff::new(Duration::from_millis(10), Duration::from_millis(200));
        let pauses: Vec<u64> = (0..7).map(|_| b.next_pause().as_millis() as u64).collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 200, 200]);
    }
}
