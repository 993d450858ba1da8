//! Lock systems from outside the process, measured against `rangelockd`:
//!
//! | module | what | where its words live |
//! |---|---|---|
//! | [`dslr_shm`] | DSLR (Yoon et al.): ticket locks of ranges on one-sided FAA/CAS | local shared memory (a ceiling: no network) |
//! | [`dslr_redis`] | the same protocol, every word a Redis key | Redis, over loopback TCP |
//! | [`citron_shm`] | a Citron-like tree of range locks with masked FAA | local shared memory (a ceiling) |
//! | [`citron_redis`] | the same tree, every word a Redis key, batched by Lua scripts | Redis, over loopback TCP |
//! | [`redis`] | a private `redis-server` for tests and benchmarks, and a RESP client | — |
//! | [`fcntl_ofd`] | the kernel's open-file-description range locks on a temp file | the kernel |

pub mod citron_redis;
pub mod citron_shm;
pub mod dslr_redis;
pub mod dslr_shm;
pub mod fcntl_ofd;
pub mod redis;

pub use fcntl_ofd::{FcntlOfd, OfdFd};
