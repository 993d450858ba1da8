//! The systemd unit of docs/OPERATIONS.md ("Running under systemd") is one systemd
//! accepts (`systemd-analyze verify`, where the tool exists; skipped loudly elsewhere),
//! and its command line is one `rangelock serve` accepts.

mod common;

use std::process::Command;

use common::{tempdir, BIN};

const UNIT: &str = include_str!("../../../docs/systemd/rangelockd.service");
const INSTALLED: &str = "/usr/local/bin/rangelock";

/// The unit's `ExecStart=` words.
fn exec_start() -> Vec<&'static str> {
    let line = UNIT.lines().find_map(|l| l.strip_prefix("ExecStart=")).expect("ExecStart=");
    line.split_whitespace().collect()
}

#[test]
fn systemd_analyze_verify_accepts_the_unit() {
    let has_tool =
        Command::new("systemd-analyze").arg("--version").output().is_ok_and(|o| o.status.success());
    if !has_tool {
        eprintln!(
            "SKIPPED: systemd-analyze is not installed (Debian: apt-get install systemd); \
             the unit docs/systemd/rangelockd.service was not verified"
        );
        return;
    }
    let dir = tempdir("systemd-unit");
    // `verify` checks that ExecStart's program exists: point it at the built binary.
    let unit = dir.join("rangelockd.service");
    std::fs::write(&unit, UNIT.replace(INSTALLED, BIN)).unwrap();
    let out = Command::new("systemd-analyze").arg("verify").arg(&unit).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    // Lines about other units of the machine are not ours to judge.
    let ours: Vec<&str> = err.lines().filter(|l| l.contains("rangelockd.service")).collect();
    assert!(out.status.success() && ours.is_empty(), "systemd-analyze verify:\n{err}");
    // A negative control: a mistake in the unit is caught.
    std::fs::write(&unit, UNIT.replace(INSTALLED, BIN).replace("Type=exec", "Type=exek")).unwrap();
    let out = Command::new("systemd-analyze").arg("verify").arg(&unit).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rangelockd.service"), "a bad Type= went unnoticed:\n{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_units_command_line_is_one_serve_accepts() {
    let words = exec_start();
    assert_eq!(
        words[0], INSTALLED,
        "the unit runs what `cargo install --root /usr/local` installs"
    );
    let dir = tempdir("systemd-exec");
    let config = dir.join("serve.toml");
    std::fs::write(&config, "addr = \"127.0.0.1:0\"\n").unwrap();
    let args: Vec<String> = words[1..]
        .iter()
        .map(|w| {
            if *w == "/etc/rangelock/serve.toml" {
                config.display().to_string()
            } else {
                (*w).to_owned()
            }
        })
        .collect();
    let out = Command::new(BIN).args(&args).arg("--print-config").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(UNIT.contains("ExecReload=/bin/kill -HUP $MAINPID"), "reload is SIGHUP");
}
