//! Errors of the harness.

use std::path::PathBuf;

/// Why a suite's report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Creating or writing a report file failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Serialising the records failed.
    #[error("cannot serialise the records of suite {suite}: {source}")]
    Json {
        /// The suite.
        suite: String,
        /// The cause.
        source: serde_json::Error,
    },
    /// Drawing the plot failed.
    #[error("cannot draw {path}: {message}")]
    Plot {
        /// The SVG file.
        path: PathBuf,
        /// The cause, as plotters reports it.
        message: String,
    },
    /// The suite produced no cases (for instance, no variant of it is registered).
    #[error("suite {0} has no cases to run (no registered variant applies to it)")]
    NoCases(String),
}
