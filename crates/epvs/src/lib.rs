//! Epoch protection and the Epoch-Protected Version Scheme (EPVS).

pub mod array;
pub mod epoch;
pub mod version;
