//! A sharded in-process key-value store whose shards validate bucket ownership (seed 2
//! §5.1, Fig. 8; measured in Fig. 15 by the `epvs-ownership` suite).
//!
//! Keys hash to one of [`BUCKETS`] 16-bit buckets (Redis-cluster style). Each shard owns a
//! set of buckets, kept in a plain single-threaded bitset ([`BucketSet`]), and runs an
//! operation only after checking that it owns the key's bucket; how that check is made
//! thread-safe against ownership changes is the [`Validation`]:
//!
//! - [`NoValidation`] (`no-validation`): no check at all (the seed's baseline; unsafe
//!   under transfers, which is what the non-owner counter shows);
//! - [`CheckOnly`] (`check-only`): the check with no synchronisation (a floor, not a
//!   validation);
//! - [`RwLockValidation`] (`rwlock-validation`): the set under a `parking_lot::RwLock`,
//!   read-locked for the check and the operation, write-locked to change ownership;
//! - [`EpvsValidation`] (`epvs-validation`): the set read inside an EPVS protected region
//!   that spans the check and the operation; acquiring or relinquishing a bucket is a
//!   version transition (Fig. 8 verbatim; the same code as `crates/epvs/examples/
//!   ownership_map.rs`).
//!
//! Clients ([`Client`]) route with a private, possibly stale copy of the routing table and
//! refresh an entry when a shard refuses the operation (a "moved" redirect), so a shard
//! that stopped owning a bucket keeps receiving requests for it until its clients learn.
//!
//! # The non-owner check
//!
//! Besides the shards' sets, the cluster keeps `truth`: the owner the transfer protocol has
//! established, `NO_OWNER` during a migration. [`Cluster::transfer`] moves bucket `b` from
//! `A` to `B` as Fig. 8 does: `A.relinquish(b)` (returns once no operation on `b` runs or
//! will run on `A`), `truth[b] = NO_OWNER` (migration), `truth[b] = B`, `B.acquire(b)`,
//! then publishes the new route. Every executed operation compares `truth[b]` with the
//! shard it runs on and counts a mismatch ([`Cluster::non_owner_ops`]).
//!
//! Why a correct validation counts 0 (and relaxed loads suffice): an operation on `A`
//! that passed validation runs inside a region (or read lock) that the relinquish waited
//! for, so its load of `truth[b]` happens before the store of `NO_OWNER` and cannot read
//! it (read-write coherence); an operation on `B` that passed validation saw `b` in the
//! set, so it runs after the acquire's critical section, which the store `truth[b] = B`
//! happens before, and it reads `B` (or a later value, which only a later relinquish of
//! `B` can write, and that waits for the operation). Without validation nothing orders
//! the load, and stale routes make shards execute on buckets they gave away: the
//! counter catches that (see the `no-validation` rows of the transfer run and the tests).

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use epvs::version::Epvs;

/// Hash buckets of the key space (16-bit bucket ids, as in Fig. 8).
pub const BUCKETS: usize = 1 << 16;
/// `truth` of a bucket during its migration: no shard owns it.
pub const NO_OWNER: u8 = u8::MAX;

/// The bucket of `key` (a SplitMix64 finaliser's top 16 bits).
#[inline]
pub fn bucket_of(key: u64) -> u16 {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 48) as u16
}

/// A shard's owned buckets: a plain, single-threaded bitset over the 2^16 bucket ids
/// (8 KiB). The seed's shards keep a `HashSet<BucketId>`; a hash set here would cost two
/// cache misses per check (its tables for 2^14 ids per shard do not stay in cache next
/// to the records), making the lookup, not its synchronisation, the measurement.
#[derive(Clone, PartialEq, Eq)]
pub struct BucketSet {
    words: Box<[u64]>,
}

impl std::fmt::Debug for BucketSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketSet").field("len", &self.len()).finish()
    }
}

impl Default for BucketSet {
    fn default() -> Self {
        BucketSet { words: vec![0; BUCKETS / 64].into_boxed_slice() }
    }
}

impl FromIterator<u16> for BucketSet {
    fn from_iter<I: IntoIterator<Item = u16>>(iter: I) -> Self {
        let mut set = BucketSet::default();
        for b in iter {
            set.insert(b);
        }
        set
    }
}

impl BucketSet {
    /// Whether `bucket` is in the set.
    #[inline]
    pub fn contains(&self, bucket: u16) -> bool {
        self.words[usize::from(bucket >> 6)] >> (bucket & 63) & 1 == 1
    }
    /// Adds `bucket`.
    pub fn insert(&mut self, bucket: u16) {
        self.words[usize::from(bucket >> 6)] |= 1 << (bucket & 63);
    }
    /// Removes `bucket`.
    pub fn remove(&mut self, bucket: u16) {
        self.words[usize::from(bucket >> 6)] &= !(1 << (bucket & 63));
    }
    /// Number of buckets in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How a shard makes its ownership check safe against ownership changes.
pub trait Validation: Send + Sync + 'static {
    /// Report name of the variant.
    const NAME: &'static str;
    /// Whether the shard checks ownership at all (a validating variant must never execute
    /// on a non-owner; the suite asserts it).
    const VALIDATES: bool;
    /// A shard owning `owned`.
    fn new(owned: BucketSet) -> Self;
    /// Runs `op` if the shard owns `bucket` (ownership cannot change until `op` returns);
    /// `None` if it does not.
    fn run<R>(&self, bucket: u16, op: impl FnOnce() -> R) -> Option<R>;
    /// Adds `bucket` to the set; when this returns, operations on it are accepted.
    fn acquire(&self, bucket: u16);
    /// Removes `bucket`; when this returns, no operation on it runs or will run here.
    fn relinquish(&self, bucket: u16);
}

/// `no-validation`: every operation runs, whatever the shard owns.
#[derive(Debug)]
pub struct NoValidation;

impl Validation for NoValidation {
    const NAME: &'static str = "no-validation";
    const VALIDATES: bool = false;
    fn new(_: BucketSet) -> Self {
        NoValidation
    }
    #[inline]
    fn run<R>(&self, _: u16, op: impl FnOnce() -> R) -> Option<R> {
        Some(op())
    }
    fn acquire(&self, _: u16) {}
    fn relinquish(&self, _: u16) {}
}

/// `check-only`: the ownership check with no synchronisation against changes at all (an
/// atomic bitset read Relaxed): the floor every validating variant pays for the check
/// itself. Not a validation (a check can pass just before the bucket leaves), so the
/// suite counts its non-owner operations instead of failing on them.
#[derive(Debug)]
pub struct CheckOnly(Box<[AtomicU64]>);

impl Validation for CheckOnly {
    const NAME: &'static str = "check-only";
    const VALIDATES: bool = false;
    fn new(owned: BucketSet) -> Self {
        CheckOnly(owned.words.iter().map(|&w| AtomicU64::new(w)).collect())
    }
    #[inline]
    fn run<R>(&self, bucket: u16, op: impl FnOnce() -> R) -> Option<R> {
        // Relaxed: this variant orders nothing on purpose (see the type docs).
        let word = self.0[usize::from(bucket >> 6)].load(Relaxed);
        (word >> (bucket & 63) & 1 == 1).then(op)
    }
    fn acquire(&self, bucket: u16) {
        // Relaxed: as in `run`.
        self.0[usize::from(bucket >> 6)].fetch_or(1 << (bucket & 63), Relaxed);
    }
    fn relinquish(&self, bucket: u16) {
        // Relaxed: as in `run`.
        self.0[usize::from(bucket >> 6)].fetch_and(!(1 << (bucket & 63)), Relaxed);
    }
}

/// `rwlock-validation`: the set under a reader-writer lock.
#[derive(Debug)]
pub struct RwLockValidation(parking_lot::RwLock<BucketSet>);

impl Validation for RwLockValidation {
    const NAME: &'static str = "rwlock-validation";
    const VALIDATES: bool = true;
    fn new(owned: BucketSet) -> Self {
        RwLockValidation(parking_lot::RwLock::new(owned))
    }
    #[inline]
    fn run<R>(&self, bucket: u16, op: impl FnOnce() -> R) -> Option<R> {
        let owned = self.0.read();
        owned.contains(bucket).then(op)
    }
    fn acquire(&self, bucket: u16) {
        self.0.write().insert(bucket);
    }
    fn relinquish(&self, bucket: u16) {
        self.0.write().remove(bucket);
    }
}

/// The set of an [`EpvsValidation`] shard, shared with its critical sections.
struct OwnedCell(UnsafeCell<BucketSet>);

// SAFETY: the set is mutated only in critical sections of the owning shard's `Epvs` and
// read only inside its protected regions; EPVS runs those in mutual exclusion, and orders
// a section's writes before the regions that enter after it.
unsafe impl Sync for OwnedCell {}

/// `epvs-validation`: the check and the operation in one EPVS protected region; ownership
/// changes are version transitions (seed 2 Fig. 8).
pub struct EpvsValidation {
    epvs: Epvs,
    owned: Arc<OwnedCell>,
}

impl std::fmt::Debug for EpvsValidation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpvsValidation").field("epvs", &self.epvs).finish_non_exhaustive()
    }
}

impl EpvsValidation {
    /// Runs `edit` on the set as a version transition and waits until it has run.
    fn change(&self, edit: impl FnOnce(&mut BucketSet) + Send + 'static) {
        let owned = Arc::clone(&self.owned);
        self.epvs.transition(move || {
            // SAFETY: a critical section: no protected region and no other section of this
            // shard's `Epvs` runs, so nothing else reads or writes the set.
            edit(unsafe { &mut *owned.0.get() })
        });
    }
}

impl Validation for EpvsValidation {
    const NAME: &'static str = "epvs-validation";
    const VALIDATES: bool = true;
    fn new(owned: BucketSet) -> Self {
        EpvsValidation { epvs: Epvs::new(), owned: Arc::new(OwnedCell(UnsafeCell::new(owned))) }
    }
    #[inline]
    fn run<R>(&self, bucket: u16, op: impl FnOnce() -> R) -> Option<R> {
        self.epvs.with_region(|_| {
            // SAFETY: inside a protected region: no critical section mutates the set until
            // the region ends, and the last one to do so happened before the region began.
            let owned = unsafe { &*self.owned.0.get() };
            owned.contains(bucket).then(op)
        })
    }
    fn acquire(&self, bucket: u16) {
        self.change(move |set| {
            set.insert(bucket);
        });
    }
    fn relinquish(&self, bucket: u16) {
        self.change(move |set| {
            set.remove(bucket);
        });
    }
}

/// The shards, the routing table, the records and the non-owner check.
pub struct Cluster<V> {
    shards: Vec<V>,
    /// The published route of each bucket (what redirected clients learn); a hint.
    routing: Vec<AtomicU8>,
    /// The owner established by the transfer protocol (`NO_OWNER` while migrating).
    truth: Vec<AtomicU8>,
    records: Vec<AtomicU64>,
    non_owner: AtomicU64,
    redirects: AtomicU64,
    transfers: AtomicU64,
    /// Serialises transfers (one migration per bucket at a time).
    transferring: Mutex<()>,
}

impl<V> std::fmt::Debug for Cluster<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("shards", &self.shards.len())
            .field("records", &self.records.len())
            .field("non_owner_ops", &self.non_owner)
            .field("transfers", &self.transfers)
            .finish_non_exhaustive()
    }
}

/// What a client's operation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Executed; the value read or written.
    Executed(u64),
    /// The routed shard refused it (not the owner); the client refreshed its route.
    Redirected,
}

impl<V: Validation> Cluster<V> {
    /// `shards` shards (at most 255) over `keys` records (a power of two); bucket `b`
    /// starts on shard `b % shards`.
    ///
    /// # Panics
    ///
    /// If `shards` is 0 or above 254, or `keys` is not a power of two.
    pub fn new(shards: usize, keys: usize) -> Self {
        assert!((1..usize::from(NO_OWNER)).contains(&shards), "1..=254 shards");
        assert!(keys.is_power_of_two(), "keys must be a power of two");
        let owner = |b: usize| (b % shards) as u8;
        let shard_sets = (0..shards)
            .map(|s| V::new((0..BUCKETS).filter(|&b| b % shards == s).map(|b| b as u16).collect()))
            .collect();
        Cluster {
            shards: shard_sets,
            routing: (0..BUCKETS).map(|b| AtomicU8::new(owner(b))).collect(),
            truth: (0..BUCKETS).map(|b| AtomicU8::new(owner(b))).collect(),
            records: (0..keys).map(|_| AtomicU64::new(0)).collect(),
            non_owner: AtomicU64::new(0),
            redirects: AtomicU64::new(0),
            transfers: AtomicU64::new(0),
            transferring: Mutex::new(()),
        }
    }

    /// Number of shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// Number of records (keys `0..keys`).
    pub fn keys(&self) -> usize {
        self.records.len()
    }

    /// A client with a snapshot of the current routing table.
    pub fn client(&self) -> Client<'_, V> {
        // Relaxed: routes are hints; the shards' validation decides.
        let route = self.routing.iter().map(|r| r.load(Relaxed)).collect();
        Client { cluster: self, route, redirects: 0 }
    }

    /// Operations executed on a shard that did not own their bucket at the time.
    pub fn non_owner_ops(&self) -> u64 {
        // Relaxed: a statistic, read after the workers were joined.
        self.non_owner.load(Relaxed)
    }

    /// Redirects so far (operations refused by the routed shard).
    pub fn redirects(&self) -> u64 {
        // Relaxed: a statistic.
        self.redirects.load(Relaxed)
    }

    /// Completed transfers.
    pub fn transfers(&self) -> u64 {
        // Relaxed: a statistic.
        self.transfers.load(Relaxed)
    }

    /// Moves `bucket` to shard `to` (Fig. 8: relinquish, migrate, acquire); blocks until
    /// done. Returns the shard it came from.
    ///
    /// # Panics
    ///
    /// If `to` is not a shard.
    pub fn transfer(&self, bucket: u16, to: usize) -> usize {
        assert!(to < self.shards.len(), "no shard {to}");
        let _one_at_a_time = self.transferring.lock().unwrap_or_else(|p| p.into_inner());
        let b = usize::from(bucket);
        // Relaxed: `truth` is written only here, under `transferring`.
        let from = usize::from(self.truth[b].load(Relaxed));
        if from == to {
            return from;
        }
        self.shards[from].relinquish(bucket);
        // Relaxed (both stores): ordered against the operations by the validation's own
        // synchronisation, see the module docs.
        self.truth[b].store(NO_OWNER, Relaxed);
        // (The migration of the bucket's records would run here; they live in one array.)
        self.truth[b].store(to as u8, Relaxed);
        self.shards[to].acquire(bucket);
        // Relaxed: a hint for redirected clients.
        self.routing[b].store(to as u8, Relaxed);
        // Relaxed: a statistic.
        self.transfers.fetch_add(1, Relaxed);
        from
    }

    /// The operation proper, run by shard `shard` once validated (or not).
    #[inline]
    fn execute(&self, shard: usize, bucket: u16, key: u64, update: Option<u64>) -> u64 {
        // Relaxed: see the module docs (the validation orders this load against transfers).
        if usize::from(self.truth[usize::from(bucket)].load(Relaxed)) != shard {
            // Relaxed: a statistic.
            self.non_owner.fetch_add(1, Relaxed);
        }
        let record = &self.records[key as usize & (self.records.len() - 1)];
        // Relaxed: records carry no cross-record invariant in this benchmark.
        match update {
            Some(v) => {
                record.store(v, Relaxed);
                v
            }
            None => record.load(Relaxed),
        }
    }
}

/// A client: routes operations with its own (possibly stale) copy of the routing table.
/// Its redirects are added to the cluster's count when it is dropped.
pub struct Client<'a, V> {
    cluster: &'a Cluster<V>,
    route: Vec<u8>,
    redirects: u64,
}

impl<V> Drop for Client<'_, V> {
    fn drop(&mut self) {
        // Relaxed: a statistic.
        self.cluster.redirects.fetch_add(self.redirects, Relaxed);
    }
}

impl<V> std::fmt::Debug for Client<'_, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").finish_non_exhaustive()
    }
}

impl<V: Validation> Client<'_, V> {
    /// Reads `key` (`update == None`) or writes `update` to it, on the shard this client
    /// routes the key's bucket to. A refusal refreshes the route and is reported as
    /// [`Outcome::Redirected`] (the caller moves on; nothing was executed).
    #[inline]
    pub fn op(&mut self, key: u64, update: Option<u64>) -> Outcome {
        let bucket = bucket_of(key);
        let shard = usize::from(self.route[usize::from(bucket)]);
        let cluster = self.cluster;
        match cluster.shards[shard].run(bucket, || cluster.execute(shard, bucket, key, update)) {
            Some(v) => Outcome::Executed(v),
            None => {
                // Relaxed: a hint (see `Cluster::client`).
                self.route[usize::from(bucket)] =
                    cluster.routing[usize::from(bucket)].load(Relaxed);
                self.redirects += 1;
                Outcome::Redirected
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_spread_and_sets_partition() {
        let c = Cluster::<RwLockValidation>::new(4, 1 << 10);
        let mut seen = [0usize; 4];
        for k in 0..4096u64 {
            seen[usize::from(c.truth[usize::from(bucket_of(k))].load(Relaxed))] += 1;
        }
        assert!(seen.iter().all(|&n| n > 800), "{seen:?}");
        let mut client = c.client();
        for k in 0..1000 {
            assert_eq!(client.op(k, Some(k)), Outcome::Executed(k));
            assert_eq!(client.op(k, None), Outcome::Executed(k));
        }
        assert_eq!(c.non_owner_ops(), 0);
    }
}
