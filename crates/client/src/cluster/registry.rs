//! Which guards hold pieces on which node connection, so that a connection's loss or
//! notice finds the pieces to reclaim without scanning every guard.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use super::state::GuardState;

/// Guards by connection serial, then by guard id. An entry may be stale (the guard's
/// pieces moved to another node, or the guard ended): the scan checks each piece.
#[derive(Debug, Default)]
pub(super) struct Registry {
    by_conn: Mutex<HashMap<u64, HashMap<u64, Weak<GuardState>>>>,
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, HashMap<u64, Weak<GuardState>>>> {
        self.by_conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that `guard` holds a piece on connection `serial`.
    pub(super) fn add(&self, serial: u64, guard: &Arc<GuardState>) {
        self.lock().entry(serial).or_default().insert(guard.id, Arc::downgrade(guard));
    }

    /// The live guards noted on connection `serial`.
    pub(super) fn guards_on(&self, serial: u64) -> Vec<Arc<GuardState>> {
        let mut by_conn = self.lock();
        let Some(guards) = by_conn.get_mut(&serial) else { return Vec::new() };
        guards.retain(|_, g| g.strong_count() > 0);
        guards.values().filter_map(Weak::upgrade).collect()
    }

    /// Forgets connection `serial` (it is gone).
    pub(super) fn drop_conn(&self, serial: u64) {
        self.lock().remove(&serial);
    }

    /// Forgets guard `id` on connection `serial` (the guard ended).
    pub(super) fn remove(&self, serial: u64, id: u64) {
        let mut by_conn = self.lock();
        if let Some(guards) = by_conn.get_mut(&serial) {
            guards.remove(&id);
            if guards.is_empty() {
                by_conn.remove(&serial);
            }
        }
    }
}
