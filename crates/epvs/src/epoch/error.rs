//! Errors of the epoch framework.

/// Why protection could not be acquired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EpochError {
    /// Every slot of the table stayed taken until the timeout.
    #[error(
        "epoch table full: all {slots} slots stayed protected until the timeout; \
         size the table (LightEpoch::with_slots) for the number of threads protected at once"
    )]
    TableFull {
        /// The size of the table.
        slots: usize,
    },
}
