//! [`Reports`]: partitions the lock table reports to the cluster manager (a grace period
//! that can end early, a token counter that ran out), and the wake-up that goes with
//! them, so the manager acts on a report at once rather than at its next round.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::Notify;

/// A set of reported partitions, and the manager's wake-up (shared by every `Reports`
/// of one node).
#[derive(Debug)]
pub(crate) struct Reports {
    set: Mutex<BTreeSet<u32>>,
    wake: Arc<Notify>,
}

impl Reports {
    pub(crate) fn new(wake: Arc<Notify>) -> Reports {
        Reports { set: Mutex::new(BTreeSet::new()), wake }
    }

    /// Reports `p` and wakes the manager (a wake-up with no task waiting is kept for
    /// the next wait).
    pub(crate) fn report(&self, p: u32) {
        self.set.lock().unwrap_or_else(PoisonError::into_inner).insert(p);
        self.wake.notify_one();
    }

    /// Takes the reported partitions, in order.
    pub(crate) fn take(&self) -> Vec<u32> {
        let mut set = self.set.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut *set).into_iter().collect()
    }
}
