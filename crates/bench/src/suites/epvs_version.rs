//! The EPVS protectors of the `epvs-*` suites: `epvs` (enter/leave per operation),
//! `epvs-pinned` (a held guard refreshed per operation) and `epvs-K-instances` (enter/leave
//! of one of K instances per operation), on [`epvs::version::Epvs`].

use epvs::version::{AdvanceError, Epvs, EpvsGuard};

use super::epvs_protect::Protector;
use crate::arrays::Rng;

/// `epvs`: enter/leave per operation; a change is a version advance whose (empty)
/// critical section runs in mutual exclusion with every protected region.
#[derive(Debug, Default)]
pub(crate) struct EpvsEnter(pub(crate) Epvs);

impl Protector for EpvsEnter {
    type Local<'a> = ();
    fn local(&self) {}
    #[inline]
    fn protected<R>(&self, _: &mut (), f: impl FnOnce() -> R) -> R {
        let g = self.0.enter();
        let r = f();
        drop(g);
        r
    }
    fn change(&self, _: &mut ()) {
        advance(&self.0);
    }
}

/// `epvs-K-instances`: enter/leave per operation of one of K instances, picked at random
/// (a sharded store entering the shard of a random key); a change advances the picked one.
#[derive(Debug)]
pub(crate) struct EpvsInstances(pub(crate) Vec<Epvs>);

impl EpvsInstances {
    /// `k` default instances.
    pub(crate) fn new(k: usize) -> Self {
        EpvsInstances((0..k).map(|_| Epvs::new()).collect())
    }
}

impl Protector for EpvsInstances {
    /// The generator picking the instance.
    type Local<'a> = Rng;
    fn local(&self) -> Rng {
        Rng::for_thread(0)
    }
    #[inline]
    fn protected<R>(&self, rng: &mut Rng, f: impl FnOnce() -> R) -> R {
        let g = self.0[rng.below(self.0.len())].enter();
        let r = f();
        drop(g);
        r
    }
    fn change(&self, rng: &mut Rng) {
        advance(&self.0[rng.below(self.0.len())]);
    }
}

/// `epvs-pinned`: one guard per thread, refreshed per operation; a change installs the
/// advance from inside the region and refreshes until it is done (the region never ends,
/// as with the seed's long-running threads: every thread refreshes, so the transition
/// runs once all have).
#[derive(Debug, Default)]
pub(crate) struct EpvsPinned(pub(crate) Epvs);

impl Protector for EpvsPinned {
    type Local<'a> = EpvsGuard<'a>;
    fn local(&self) -> EpvsGuard<'_> {
        self.0.enter()
    }
    #[inline]
    fn protected<'a, R>(&'a self, g: &mut EpvsGuard<'a>, f: impl FnOnce() -> R) -> R {
        g.refresh();
        f()
    }
    fn change<'a>(&'a self, g: &mut EpvsGuard<'a>) {
        loop {
            match self.0.advance_version(|| {}, None) {
                Ok(installed) => {
                    // `refresh` blocks while the transition is in flight (helping drain).
                    while g.refresh().version() <= installed.version() {
                        std::hint::spin_loop();
                    }
                    return;
                }
                // Another transition is active: let it run, then install ours.
                Err(AdvanceError::Busy) => {
                    g.refresh();
                    std::hint::spin_loop();
                }
                Err(e) => panic!("EPVS version advance failed: {e}"),
            }
        }
    }
}

/// One version change: installs an advance to the next version, retrying while another
/// transition is active (`Busy` is EPVS's spurious failure), so that every requested change
/// happens, as with a write lock. The caller holds no protection on `epvs`.
fn advance(epvs: &Epvs) {
    loop {
        match epvs.advance_version(|| {}, None) {
            Ok(_) => return,
            Err(AdvanceError::Busy) => {
                epvs.wait_until(|_| true);
                std::thread::yield_now();
            }
            Err(e) => panic!("EPVS version advance failed: {e}"),
        }
    }
}
