//! Locks from outside this workspace, measured side by side with ours: fcntl OFD range
//! locks, and BRAVO (Dice & Kogan's biased reader-writer lock, the EPVS paper's peer).

pub use bravo;
mod fcntl_ofd;

pub use fcntl_ofd::{FcntlOfd, OfdFd};
pub mod citron_redis;
pub mod citron_shm;
pub mod dslr_redis;
pub mod dslr_shm;
pub mod echo;
pub mod redis;
