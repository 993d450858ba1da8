//! The systems the suites measure ours against, as the harness sees them: the lock systems
//! of `rangelock_baselines::peers` (DSLR, Citron, fcntl OFD locks), BRAVO (Dice & Kogan's
//! biased reader-writer lock, the EPVS paper's peer), and `echo`, the server that decides
//! nothing (the server suites' ceiling).

pub use bravo;
pub use rangelock_baselines::peers::{
    citron_redis, citron_shm, dslr_redis, dslr_shm, redis, FcntlOfd, OfdFd,
};
pub mod echo;
