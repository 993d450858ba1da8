//! Captures what the benchmark binary is built with, for the machine block of every record
//! (`harness::run_info`): the compiler's version (`RANGELOCK_BUILD_RUSTC`) and the commit
//! of the tree (`RANGELOCK_BUILD_COMMIT`: short hash, `-dirty` with uncommitted changes,
//! `unknown` outside git).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = output(Command::new(rustc).arg("--version")).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=RANGELOCK_BUILD_RUSTC={version}");

    let git = |args: &[&str]| output(Command::new("git").arg("-C").arg(&manifest).args(args));
    let commit = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(hash) => {
            // Untracked files count too: they are built if a module names them.
            let dirty = git(&["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{hash}-dirty")
            } else {
                hash
            }
        }
        None => "unknown".to_owned(),
    };
    println!("cargo:rustc-env=RANGELOCK_BUILD_COMMIT={commit}");

    // Again when HEAD moves (checkout, commit), the branch it names moves, the index
    // changes (add, commit) or a source file of the workspace changes (dirty or clean).
    println!("cargo:rerun-if-changed=build.rs");
    let abs = |p: String| {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            manifest.join(p)
        }
    };
    if let Some(git_dir) = git(&["rev-parse", "--git-dir"]).map(abs) {
        rerun_if_exists(&git_dir.join("HEAD"));
        rerun_if_exists(&git_dir.join("index"));
        let common = git(&["rev-parse", "--git-common-dir"]).map_or(git_dir, abs);
        if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
            rerun_if_exists(&common.join(reference));
        }
        rerun_if_exists(&common.join("packed-refs"));
        if let Some(top) = git(&["rev-parse", "--show-toplevel"]) {
            rerun_if_exists(&Path::new(&top).join("crates"));
            rerun_if_exists(&Path::new(&top).join("Cargo.lock"));
        }
    }
}

/// The trimmed stdout of a successful command.
fn output(cmd: &mut Command) -> Option<String> {
    let out = cmd.output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn rerun_if_exists(path: &Path) {
    if path.exists() {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
