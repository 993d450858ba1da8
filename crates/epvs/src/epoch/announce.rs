//! How protected threads announce themselves: the choice of an instance.

/// How a [`LightEpoch`](super::LightEpoch)'s protected threads announce their epoch, and so
/// who pays for the store-load ordering between an announce and the region's reads.
///
/// | mode         | `protect` + drop                        | `bump_with` / ready drain   |
/// |--------------|-----------------------------------------|-----------------------------|
/// | `Fenced`     | one locked CAS (a full barrier) + store | one fence + a slot scan     |
/// | `Asymmetric` | two plain stores (a sticky slot)        | one process-wide barrier    |
/// |              |                                         | (`membarrier`) + a scan     |
///
/// `Asymmetric` is for read-mostly use where bumps are rare (EPVS version changes);
/// `Fenced` for frequent reclamation (the range lock frees nodes in small batches).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Announce {
    /// Every `protect` claims a free slot with a SeqCst CAS that announces and fences at
    /// once; the slot is given back when the guard drops.
    #[default]
    Fenced,
    /// Each thread keeps a *sticky* slot per instance (for up to four instances at once) and
    /// announces in it with a plain store and a compiler barrier; scans that may run actions
    /// first issue a process-wide memory barrier (Linux `membarrier`, through the
    /// `membarrier2` crate, which falls back to `mprotect` or to real fences where the
    /// system call is missing). Nested protection and threads beyond half the table use
    /// fenced transient slots.
    Asymmetric,
}
