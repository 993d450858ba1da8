//! The one registry of what the range-lock suites measure.
//!
//! Adding a variant is one line in [`Registered::locks`] (its report name is the raw lock's
//! [`RawRangeLock::NAME`]); a lock with a tunable skip-list height also gets one line in
//! [`Registered::heights`]; an external peer one line in [`Registered::peers`]. Every suite
//! is generic over a [`VariantSet`], so tests can run the real workloads over test locks.

use rangelock::internals::{Lock, RawRangeLock, SkipList};
use rangelock::RangeLock;
use rangelock_baselines as variants;

use crate::peers::FcntlOfd;
use crate::workload::{RangeTarget, Unlocked};

/// The product's name in reports: its raw core's.
pub const PRODUCT: &str = <SkipList as RawRangeLock>::NAME;

/// The product without its stripe table, every exclusive range on the skip list: the
/// design of Concurrent Range Locking (the thesis's "Our").
pub const LIST: &str = "rangelock-list";

/// Receives the variants of a [`VariantSet`] (a suite turns each into cases).
pub trait VariantVisitor {
    /// One variant, built by `make` (an error skips the variant with a note on stderr).
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: &dyn Fn() -> std::io::Result<T>);

    /// A baseline, named after its raw lock.
    fn lock<R: RawRangeLock + 'static>(&mut self, make: fn() -> Lock<R>)
    where
        Self: Sized,
    {
        self.named_lock(R::NAME, make);
    }

    /// An in-process [`Lock`] variant under a name of its own (a second configuration of a
    /// raw lock). Like [`lock`](Self::lock), it hands a visitor that needs a fresh lock per
    /// measurement (the `memory` suite) a constructor it can keep.
    fn named_lock<T: RangeTarget<Local = ()>>(&mut self, name: &'static str, make: fn() -> T)
    where
        Self: Sized,
    {
        self.visit(name, &|| Ok(make()));
    }
}

/// Receives the variants whose skip-list height can be set.
pub trait HeightVisitor {
    /// A variant built at a given maximum height by `make`.
    fn visit<T: RangeTarget>(&mut self, name: &'static str, make: fn(usize) -> T);
}

/// A set of variants the suites run.
pub trait VariantSet: 'static {
    /// In-process range locks (every range-lock suite).
    fn locks(v: &mut impl VariantVisitor);
    /// External peers (the suites that say so: w1, w2, held).
    fn peers(_v: &mut impl VariantVisitor) {}
    /// Locks with a settable maximum height (the `height` suite).
    fn heights(_v: &mut impl HeightVisitor) {}
    /// The workload without a lock (the suites whose threads' ranges are disjoint: w1, w2,
    /// held), reported as their [`Suite::ceilings`](crate::harness::Suite::ceilings).
    fn ceiling(_v: &mut impl VariantVisitor) {}
}

/// The shipped registry.
#[derive(Clone, Copy, Debug, Default)]
pub struct Registered;

impl VariantSet for Registered {
    fn locks(v: &mut impl VariantVisitor) {
        v.named_lock(PRODUCT, RangeLock::new);
        // The same lock without its stripe table: every exclusive range on the skip list.
        v.named_lock(LIST, || RangeLock::builder().stripes(0, 0).build());
        v.lock(|| Lock::from_raw(variants::KoganList::new()));
        v.lock(|| Lock::from_raw(variants::SongSkipList::new()));
        v.lock(|| Lock::from_raw(variants::KernelTree::new()));
        // 1 KiB segments over 2^32 units (16 MiB of counters): one segment per W1/W2 range,
        // the best case of static segmentation; `held` keeps its ranges 1 KiB apart for it.
        v.lock(|| Lock::from_raw(variants::Segments::new(1 << 32, 1024)));
        v.lock(|| Lock::from_raw(variants::GlobalMutex::new()));
    }

    fn heights(v: &mut impl HeightVisitor) {
        // The list path only: the product's stripe table takes the suites' 1 KiB exclusive
        // ranges, where the height cannot matter (see the `height` suite).
        v.visit(LIST, |height| RangeLock::builder().stripes(0, 0).max_height(height).build());
    }

    fn peers(v: &mut impl VariantVisitor) {
        v.visit(FcntlOfd::NAME, &FcntlOfd::in_temp_dir);
    }

    fn ceiling(v: &mut impl VariantVisitor) {
        v.visit(Unlocked::NAME, &|| Ok(Unlocked));
    }
}
