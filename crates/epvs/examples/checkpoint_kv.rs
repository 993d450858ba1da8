//! A checkpointed, deduplicating key-value store on EPVS (seed paper §2.1 and Fig. 10).
//!
//! Requests carry an id; a request is applied once (a deduplication set records the id)
//! and adds its delta to a key. A checkpoint must be a *consistent cut*: every id in the
//! snapshot's dedup set has its effect in the snapshot's map, and every effect in the map
//! has its id in the dedup set — although the dedup update and the map update are two
//! separate latched steps.
//!
//! The checkpoint is a two-state machine, `REST(v) -> WAIT_FLUSH(v) -> REST(v + 1)`:
//! * at `REST`, requests update the base store in place;
//! * the `REST -> WAIT_FLUSH` critical section is the cut: no request is half applied;
//! * in `WAIT_FLUSH` the base is frozen; requests read-copy-update into an overlay while
//!   the checkpointer copies ("flushes") the base without holding any protection;
//! * once flushed, `WAIT_FLUSH -> REST` merges the overlay into the base.
//!
//! Run with `cargo run -p epvs --example checkpoint_kv`.

use epvs::version::{AdvanceError, Epvs, State, StateMachine};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

/// The phase in which the base store is frozen and being flushed.
const WAIT_FLUSH: u8 = 1;
const SHARDS: usize = 8;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Key-value map plus dedup set, sharded under plain mutexes.
#[derive(Default)]
struct Store {
    map: Vec<Mutex<HashMap<u64, u64>>>,
    dedup: Vec<Mutex<HashSet<u64>>>,
}

impl Store {
    fn new() -> Store {
        Store {
            map: (0..SHARDS).map(|_| Mutex::default()).collect(),
            dedup: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }
    fn map_shard(&self, key: u64) -> MutexGuard<'_, HashMap<u64, u64>> {
        lock(&self.map[key as usize % SHARDS])
    }
    fn dedup_shard(&self, id: u64) -> MutexGuard<'_, HashSet<u64>> {
        lock(&self.dedup[id as usize % SHARDS])
    }
}

struct Data {
    base: Store,
    overlay: Store,
}

/// A snapshot: the cut's map and dedup set.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    version: u64,
    map: BTreeMap<u64, u64>,
    dedup: BTreeSet<u64>,
}

/// The checkpoint machine of Fig. 10.
struct Checkpoint {
    data: Arc<Data>,
    flushed: Arc<AtomicBool>,
}

impl StateMachine for Checkpoint {
    fn next_step(&self, cur: State) -> Option<State> {
        match cur.phase() {
            State::REST => Some(State::new(cur.version(), WAIT_FLUSH)),
            // SeqCst: pairs with the checkpointer's store after its flush.
            _ => self.flushed.load(SeqCst).then(|| State::rest(cur.version() + 1)),
        }
    }

    fn on_entering_state(&self, _from: State, to: State) {
        if to.phase() == WAIT_FLUSH {
            // The cut: nothing to do but be here — no request is in flight.
            debug_assert!(self.data.overlay.map.iter().all(|s| lock(s).is_empty()));
            return;
        }
        // WAIT_FLUSH -> REST: fold the overlay into the base.
        for (b, o) in self.data.base.map.iter().zip(&self.data.overlay.map) {
            lock(b).extend(lock(o).drain());
        }
        for (b, o) in self.data.base.dedup.iter().zip(&self.data.overlay.dedup) {
            lock(b).extend(lock(o).drain());
        }
    }
}

/// The store.
struct Kv {
    epvs: Epvs,
    data: Arc<Data>,
}

impl Kv {
    fn new() -> Kv {
        Kv { epvs: Epvs::new(), data: Arc::new(Data { base: Store::new(), overlay: Store::new() }) }
    }

    /// Applies request `id` (adds `delta` to `key`) unless it was applied before; returns
    /// whether it was applied. Both steps run in one protected region.
    fn apply(&self, id: u64, key: u64, delta: u64) -> bool {
        let region = self.epvs.enter();
        let (base, overlay) = (&self.data.base, &self.data.overlay);
        if region.state().phase() == WAIT_FLUSH {
            // Base frozen: dedup against both, record and update in the overlay.
            if base.dedup_shard(id).contains(&id) || !overlay.dedup_shard(id).insert(id) {
                return false;
            }
            let mut o = overlay.map_shard(key);
            let v = o.entry(key).or_insert_with(|| *base.map_shard(key).get(&key).unwrap_or(&0));
            *v = v.wrapping_add(delta);
        } else {
            if !base.dedup_shard(id).insert(id) {
                return false;
            }
            let mut b = base.map_shard(key);
            let v = b.entry(key).or_insert(0);
            *v = v.wrapping_add(delta);
        }
        true
    }

    /// The current value of `key`.
    fn get(&self, key: u64) -> u64 {
        let region = self.epvs.enter();
        if region.state().phase() == WAIT_FLUSH {
            if let Some(v) = self.data.overlay.map_shard(key).get(&key) {
                return *v;
            }
        }
        *self.data.base.map_shard(key).get(&key).unwrap_or(&0)
    }

    /// Takes a consistent snapshot. Must be called outside a region of this store.
    fn checkpoint(&self) -> Snapshot {
        let flushed = Arc::new(AtomicBool::new(false));
        let from = loop {
            let machine =
                Checkpoint { data: Arc::clone(&self.data), flushed: Arc::clone(&flushed) };
            match self.epvs.execute_state_machine(machine, None) {
                Ok(from) => break from,
                // Another checkpoint is running: wait for it to finish, then retry.
                Err(AdvanceError::Busy) => {
                    self.epvs.wait_until(State::is_rest);
                }
                Err(e) => panic!("checkpoint failed: {e}"),
            }
        };
        let v = from.version();
        // Our machine cannot leave WAIT_FLUSH(v) until we set `flushed`.
        self.epvs.wait_until(|s| s == State::new(v, WAIT_FLUSH));
        // Flush without protection: in WAIT_FLUSH nothing writes the base.
        let base = &self.data.base;
        let snapshot = Snapshot {
            version: v,
            map: base.map.iter().flat_map(|s| lock(s).clone()).collect(),
            dedup: base.dedup.iter().flat_map(|s| lock(s).clone()).collect(),
        };
        // SeqCst: pairs with `next_step`.
        flushed.store(true, SeqCst);
        self.epvs.try_step();
        self.epvs.wait_for_version(v + 1);
        snapshot
    }
}

/// Request `id`'s key and delta (a fixed function of the id, so a snapshot can be checked).
fn request(id: u64) -> (u64, u64) {
    let h = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 58, (h ^ (h >> 29)) | 1) // 64 keys, odd 64-bit deltas
}

/// Checks the cut: for every key, the snapshot's value is exactly the (wrapping) sum of
/// the deltas of the snapshot's dedup ids for that key.
fn check_cut(s: &Snapshot) {
    let mut want: BTreeMap<u64, u64> = BTreeMap::new();
    for &id in &s.dedup {
        let (k, d) = request(id);
        let v = want.entry(k).or_insert(0);
        *v = v.wrapping_add(d);
    }
    assert_eq!(s.map, want, "snapshot {} is not a consistent cut", s.version);
}

#[cfg_attr(test, allow(dead_code))]
fn main() {
    let kv = Kv::new();
    let snapshots = thread::scope(|s| {
        for t in 0..3u64 {
            let kv = &kv;
            s.spawn(move || {
                for i in 0..50_000 {
                    let id = t * 1_000_000 + i;
                    let (k, d) = request(id);
                    kv.apply(id, k, d);
                }
            });
        }
        (0..20).map(|_| kv.checkpoint()).collect::<Vec<_>>()
    });
    for s in &snapshots {
        check_cut(s);
    }
    let last = kv.checkpoint();
    check_cut(&last);
    println!(
        "{} consistent checkpoints; final one holds {} requests over {} keys (key 0 = {})",
        snapshots.len() + 1,
        last.dedup.len(),
        last.map.len(),
        kv.get(0)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    #[test]
    fn dedup_and_get() {
        let kv = Kv::new();
        assert!(kv.apply(1, 5, 10));
        assert!(!kv.apply(1, 5, 10));
        assert_eq!(kv.get(5), 10);
        let s = kv.checkpoint();
        assert_eq!(s.map, BTreeMap::from([(5, 10)]));
        assert_eq!(s.dedup, BTreeSet::from([1]));
        assert!(!kv.apply(1, 5, 10), "dedup survives the checkpoint");
        assert_eq!(kv.epvs.state(), State::rest(1));
    }

    /// Concurrent writers (with duplicate submissions) and several concurrent
    /// checkpointers: every snapshot is a consistent cut, snapshots are monotone, and the
    /// final one holds every applied request exactly once. Writers keep going until
    /// `MIN_SNAPSHOTS` checkpoints completed, so those all overlap the writes.
    #[test]
    fn snapshots_are_consistent_cuts() {
        const WRITERS: u64 = 3;
        const REQUESTS: u64 = 4000;
        const MIN_SNAPSHOTS: u64 = 6;
        let kv = Kv::new();
        let next_id = AtomicU64::new(0);
        let applied = AtomicU64::new(0);
        let taken = AtomicU64::new(0);
        let writers_done = AtomicU64::new(0);
        let snapshots = thread::scope(|s| {
            for _ in 0..WRITERS {
                let (kv, next_id, applied, taken, writers_done) =
                    (&kv, &next_id, &applied, &taken, &writers_done);
                s.spawn(move || {
                    // Counts this writer as done even if it panics, so the
                    // checkpointers stop and the panic is reported.
                    struct Done<'a>(&'a AtomicU64);
                    impl Drop for Done<'_> {
                        fn drop(&mut self) {
                            self.0.fetch_add(1, Relaxed);
                        }
                    }
                    let _done = Done(writers_done);
                    let mut mine = Vec::new();
                    while (mine.len() as u64) < REQUESTS || taken.load(Relaxed) < MIN_SNAPSHOTS {
                        let id = next_id.fetch_add(1, Relaxed);
                        let (k, d) = request(id);
                        assert!(kv.apply(id, k, d));
                        applied.fetch_add(1, Relaxed);
                        mine.push(id);
                        // Resubmit one of our earlier ids: must be deduplicated.
                        let old = mine[mine.len() / 2];
                        let (k, d) = request(old);
                        assert!(!kv.apply(old, k, d));
                    }
                });
            }
            let checkpointers: Vec<_> = (0..2)
                .map(|_| {
                    let (kv, taken, writers_done) = (&kv, &taken, &writers_done);
                    s.spawn(move || {
                        let mut snaps = Vec::new();
                        while writers_done.load(Relaxed) < WRITERS {
                            snaps.push(kv.checkpoint());
                            taken.fetch_add(1, Relaxed);
                        }
                        snaps
                    })
                })
                .collect();
            checkpointers.into_iter().flat_map(|h| h.join().unwrap()).collect::<Vec<_>>()
        });
        let mut snapshots = snapshots;
        assert!(snapshots.len() as u64 >= MIN_SNAPSHOTS);
        for s in &snapshots {
            check_cut(s);
        }
        snapshots.sort_by_key(|s| s.version);
        for pair in snapshots.windows(2) {
            assert!(pair[0].version < pair[1].version, "one snapshot per version");
            assert!(pair[0].dedup.is_subset(&pair[1].dedup), "snapshots are monotone");
        }
        let last = kv.checkpoint();
        check_cut(&last);
        assert_eq!(last.dedup.len() as u64, applied.load(Relaxed));
    }
}
