//! Logging of the long-running subcommands (`serve`, `cluster fencing-store`, `cluster
//! worker`) to stderr.
//!
//! * **Filter**: `RUST_LOG`, in `tracing-subscriber`'s `EnvFilter` syntax (`warn`,
//!   `rangelock_server=debug`, `info,rangelock_cluster::etcd=debug`); `info` when it is
//!   unset. A `RUST_LOG` that does not parse is not silently dropped: the log starts with a
//!   warning saying so, and `info` applies.
//! * **Format** (`rangelock serve --log-format`): `text`, one human line per event, in
//!   colour only for a person at a terminal (never when stderr is a file, a pipe or a
//!   journal, nor when `NO_COLOR` is set); or `json`, one JSON object per line (`timestamp`,
//!   `level`, `target`, `fields` with the `message` and the event's own fields, and
//!   `span`/`spans` when the event is inside one), for log collectors.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The shape of each log line.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum LogFormat {
    /// One human-readable line per event.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Installs the subscriber; call once, first thing.
pub(crate) fn init(format: LogFormat) {
    let (filter, bad) = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => match EnvFilter::try_new(&spec) {
            Ok(f) => (f, None),
            Err(e) => (EnvFilter::new("info"), Some((spec, e))),
        },
        _ => (EnvFilter::new("info"), None),
    };
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(colour()).init(),
        LogFormat::Json => builder.json().init(),
    }
    if let Some((spec, e)) = bad {
        tracing::warn!(rust_log = %spec, error = %e, "RUST_LOG ignored: not a filter; using info");
    }
}

/// Colour for a person at a terminal only (<https://no-color.org>: a non-empty `NO_COLOR`
/// turns it off there too).
fn colour() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}
