//! Epoch protection and the Epoch-Protected Version Scheme (EPVS).
//!
//! - [`epoch`]: [`LightEpoch`](epoch::LightEpoch), FASTER-style epoch protection: cheap
//!   protected regions and actions deferred until every thread has left an epoch.

pub mod epoch;
mod primitive;
