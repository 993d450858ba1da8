//! The per-suite progress bar.

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};

/// A bar over `total` measurements of suite `name`, drawn on stderr; hidden when stdout is
/// not a terminal (reports piped to a file) or when `CI` is set to anything but `false`/`0`.
pub(crate) fn suite_bar(name: &str, total: u64) -> ProgressBar {
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
    if ci || !std::io::stdout().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix:>10} [{elapsed_precise}] [{bar:30}] {pos}/{len} {wide_msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(name.to_owned());
    bar
}
