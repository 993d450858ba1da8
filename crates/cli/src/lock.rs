//! `rangelock lock START..END [--shared] [--timeout D] -- CMD ARGS…`: run a command while
//! holding a range lock of a `rangelock serve` server, in the manner of flock(1).
//!
//! Exit code: the command's (128 + signal if it was killed by a signal); when the lock
//! cannot be had (`--nonblock` conflict or `--timeout` expiry), `--conflict-exit-code`
//! (default 1) without running the command. The child sees the lock's fencing token in
//! `RANGELOCK_TOKEN`. If this process dies, the server releases the lock when the
//! connection closes (the child keeps running, as with flock).

use std::time::Duration;

use anyhow::{bail, Context};
use rangelock_client::{Client, ClientError, Endpoint, Mode, Wait};

/// Arguments of `rangelock lock`.
#[derive(Debug, clap::Args)]
pub struct LockArgs {
    /// Range `START..END` (half-open; decimal or 0x hex; `START..` means up to the end of
    /// the domain).
    #[arg(value_parser = parse_range)]
    range: std::ops::Range<u64>,
    /// Take a shared lock instead of an exclusive one.
    #[arg(short, long)]
    shared: bool,
    /// Fail instead of waiting if the range is taken.
    #[arg(short, long, conflicts_with = "timeout")]
    nonblock: bool,
    /// Wait at most this long (`500ms`, `2s`, `1m`; a bare number is seconds).
    #[arg(short, long, value_parser = parse_duration)]
    timeout: Option<Duration>,
    /// Server address: `host:port` or `unix:/path`.
    #[arg(long, default_value_t = Endpoint::default())]
    server: Endpoint,
    /// Exit code when the lock cannot be had.
    #[arg(short = 'E', long, default_value_t = 1)]
    conflict_exit_code: i32,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

pub(crate) fn parse_u64(s: &str) -> Result<u64, String> {
    let s = s.trim().replace('_', "");
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|e| format!("{s:?}: {e}"))
}

fn parse_range(s: &str) -> Result<std::ops::Range<u64>, String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("{s:?} is not START..END"))?;
    let start = parse_u64(a)?;
    let end = if b.trim().is_empty() { u64::MAX } else { parse_u64(b)? };
    if start >= end {
        return Err(format!(
            "invalid range {start}..{end}: a range must be non-empty (start < end)"
        ));
    }
    Ok(start..end)
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{s:?}: not a duration"));
    }
    Duration::try_from_secs_f64(v * scale).map_err(|e| format!("{s:?}: {e}"))
}

/// Locks, runs the command, releases, and exits with the command's code.
pub fn run(args: LockArgs) -> anyhow::Result<()> {
    let client =
        Client::connect(&args.server).with_context(|| format!("connecting to {}", args.server))?;
    let mode = if args.shared { Mode::Shared } else { Mode::Exclusive };
    let wait = match (args.nonblock, args.timeout) {
        (true, _) => Wait::Try,
        (false, Some(d)) => Wait::Timeout(d),
        (false, None) => Wait::Forever,
    };
    let guard = match client.lock(args.range.clone(), mode, wait) {
        Ok(g) => g,
        Err(e @ (ClientError::WouldBlock | ClientError::TimedOut)) => {
            eprintln!("rangelock: {}..{}: {e}", args.range.start, args.range.end);
            std::process::exit(args.conflict_exit_code);
        }
        Err(e) => return Err(e).context("locking"),
    };
    let (prog, rest) = args.command.split_first().expect("clap requires a command");
    let status = std::process::Command::new(prog)
        .args(rest)
        .env("RANGELOCK_TOKEN", guard.token().to_string())
        .status();
    // Release before exiting (exit skips destructors).
    let released = guard.unlock();
    let status = status.with_context(|| format!("running {prog:?}"))?;
    if let Err(e) = released {
        bail!("releasing the lock: {e}");
    }
    use std::os::unix::process::ExitStatusExt;
    let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    drop(client);
    std::process::exit(code);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_durations_parse() {
        assert_eq!(parse_range("0..10").unwrap(), 0..10);
        assert_eq!(parse_range("0x10..0x20").unwrap(), 16..32);
        assert_eq!(parse_range("5..").unwrap(), 5..u64::MAX);
        assert!(parse_range("10..10").is_err());
        assert!(parse_range("10").is_err());
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("-1").is_err());
    }
}
