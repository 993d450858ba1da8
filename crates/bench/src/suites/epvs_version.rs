//! The EPVS protectors of the `epvs-*` suites: `epvs` (enter/leave per operation) and
//! `epvs-pinned` (a held guard refreshed per operation), on [`epvs::version::Epvs`].

use epvs::version::{AdvanceError, Epvs, EpvsGuard};

use super::epvs_protect::Protector;

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

/// `epvs-pinned`: one guard per thread, refreshed per operation; a change leaves, advances
/// and re-enters (a thread must not wait for a transition while it holds the guard).
#[derive(Debug, Default)]
pub(crate) struct EpvsPinned(pub(crate) Epvs);

impl Protector for EpvsPinned {
    type Local<'a> = Option<EpvsGuard<'a>>;
    fn local(&self) -> Option<EpvsGuard<'_>> {
        Some(self.0.enter())
    }
    #[inline]
    fn protected<'a, R>(&'a self, g: &mut Option<EpvsGuard<'a>>, f: impl FnOnce() -> R) -> R {
        match g {
            Some(g) => {
                g.refresh();
            }
            None => *g = Some(self.0.enter()),
        }
        f()
    }
    fn change<'a>(&'a self, g: &mut Option<EpvsGuard<'a>>) {
        drop(g.take());
        advance(&self.0);
        *g = Some(self.0.enter());
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
