//! `<out>/<suite>.json`: a pretty-printed array of [`Record`]s.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use crate::harness::error::BenchError;
use crate::harness::record::Record;

/// Writes `records` to `path` as a JSON array.
pub fn write(path: &Path, suite: &str, records: &[Record]) -> Result<(), BenchError> {
    let io = |source| BenchError::Io { path: path.to_owned(), source };
    let mut out = BufWriter::new(File::create(path).map_err(io)?);
    serde_json::to_writer_pretty(&mut out, records)
        .map_err(|source| BenchError::Json { suite: suite.to_owned(), source })?;
    out.write_all(b"\n").map_err(io)?;
    out.flush().map_err(io)
}
