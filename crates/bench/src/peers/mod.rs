//! Range locks from outside this workspace, measured side by side with ours.

mod fcntl_ofd;

pub use fcntl_ofd::{FcntlOfd, OfdFd};
pub mod dslr_redis;
pub mod dslr_shm;
pub mod echo;
