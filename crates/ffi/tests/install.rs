//! The installed C library, as a C user gets it: `scripts/install-c-lib.sh --prefix DIR`
//! into a fresh prefix (`$CARGO_TARGET_TMPDIR/c-lib-prefix`, once per run of this file,
//! shared by its tests), then C and
//! C++ programs built with `pkg-config --cflags --libs rangelock`, linked to the shared
//! library and, with `--static`, to the archive, and run. It also checks what the install
//! exports (only the `rl_*` functions of the header, in the `.so` and the `.a`), the soname
//! and its links, that two copies of the archive link into one program (what a second Rust
//! static library looks like to the linker), the quick start of `crates/ffi/README.md`, and
//! the repository README's commands, run as written. Programs run without
//! `LD_LIBRARY_PATH`: the installed `.pc` gives them an rpath to the prefix.
//!
//! The library is built by the script with the `dist` profile in its own target directory
//! (`$CARGO_TARGET_TMPDIR/c-lib-target`, kept between runs), not in the one `cargo test`
//! uses. Tools: `cc` (or `$CC`), `c++` (or `$CXX`), `pkg-config`, GNU binutils (`ld`,
//! `objcopy`, `nm`, `ar`, `readelf`) and `bash`. If one is missing the tests fail when `CI`
//! is set and otherwise pass with a loud message on stderr.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The soname of this version: `librangelock.so.0.<minor>` before 1.0 (the script's rule).
fn soname() -> String {
    let (major, minor) = (env!("CARGO_PKG_VERSION_MAJOR"), env!("CARGO_PKG_VERSION_MINOR"));
    if major == "0" {
        format!("librangelock.so.0.{minor}")
    } else {
        format!("librangelock.so.{major}")
    }
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A finished install under a fresh prefix, and the compilers to use.
struct Installed {
    prefix: PathBuf,
    cc: String,
    cxx: String,
}

impl Installed {
    fn lib(&self) -> PathBuf {
        self.prefix.join("lib")
    }

    /// `pkg-config ARGS rangelock`, split into arguments, finding the installed `.pc`.
    fn pkg_config(&self, args: &[&str]) -> Vec<String> {
        let output = Command::new("pkg-config")
            .args(args)
            .arg("rangelock")
            .env("PKG_CONFIG_PATH", self.lib().join("pkgconfig"))
            .output()
            .expect("run pkg-config");
        let stdout = check(&format!("pkg-config {}", args.join(" ")), output);
        stdout.split_whitespace().map(str::to_owned).collect()
    }
}

/// Installs once per test binary; `None` when a tool is missing outside CI (after saying so).
fn installed() -> Option<&'static Installed> {
    static INSTALLED: OnceLock<Option<Installed>> = OnceLock::new();
    INSTALLED.get_or_init(install).as_ref()
}

fn install() -> Option<Installed> {
    let cc = tool_from_env("CC", "cc");
    let cxx = tool_from_env("CXX", "c++");
    let tools = [cc.as_str(), cxx.as_str(), "pkg-config", "ld", "objcopy", "nm", "ar", "readelf"];
    let missing: Vec<&str> = tools.into_iter().filter(|tool| !runs(tool)).collect();
    if !missing.is_empty() {
        let message = format!(
            "{} not found, so the C library cannot be installed and tested; install them \
             (Debian/Ubuntu: `apt-get install build-essential pkg-config`) or set $CC/$CXX",
            missing.join(", ")
        );
        if std::env::var_os("CI").is_some() {
            panic!("{message}");
        }
        // Straight to the process's stderr: the harness captures `eprintln!` of passing tests.
        let banner = "!".repeat(78);
        let _ = writeln!(std::io::stderr(), "\n{banner}\nSKIPPED: {message}\n{banner}\n");
        return None;
    }
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    // A fixed path, emptied first: a static is never dropped, so a `TempDir` would stay.
    let prefix = tmp.join("c-lib-prefix");
    if prefix.exists() {
        std::fs::remove_dir_all(&prefix).expect("remove the previous prefix");
    }
    let script = crate_dir().join("../../scripts/install-c-lib.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg("--prefix")
        .arg(&prefix)
        .env("CARGO", env!("CARGO"))
        .env("CARGO_TARGET_DIR", tmp.join("c-lib-target"))
        .output()
        .expect("run bash");
    let stdout = check("scripts/install-c-lib.sh", output);
    assert!(stdout.contains(&format!("(soname {})", soname())), "{stdout}");
    Some(Installed { prefix, cc, cxx })
}

/// `$var`, or `default` when it is unset or empty.
fn tool_from_env(var: &str, default: &str) -> String {
    std::env::var(var).ok().filter(|tool| !tool.is_empty()).unwrap_or_else(|| default.to_owned())
}

fn runs(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok_and(|out| out.status.success())
}

/// Asserts that `output` is a success and returns its stdout.
fn check(what: &str, output: Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr),
    );
    stdout
}

/// Compiles the C or C++ file `source` to `name` with `compiler`,
/// `flags` before the source and `libs` after it; returns the executable.
fn compile(compiler: &str, flags: &[&str], source: &Path, name: &str, libs: &[String]) -> PathBuf {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-lib-programs");
    std::fs::create_dir_all(&out_dir).expect("create the output directory");
    let exe = out_dir.join(name);
    let output = Command::new(compiler)
        .args(flags)
        .args(["-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&exe)
        .arg(source)
        .args(libs)
        .output()
        .unwrap_or_else(|err| panic!("run {compiler}: {err}"));
    check(&format!("{compiler} {} {}", source.display(), libs.join(" ")), output);
    exe
}

/// Runs `exe` (with `LD_LIBRARY_PATH` = `library_path` if given) and returns its stdout.
fn run(exe: &Path, library_path: Option<&Path>) -> String {
    let mut command = Command::new(exe);
    command.env_remove("LD_LIBRARY_PATH");
    if let Some(dir) = library_path {
        command.env("LD_LIBRARY_PATH", dir);
    }
    check(&exe.display().to_string(), command.output().expect("run the program"))
}

/// The shared libraries `file` needs (`readelf -d`), and its soname if it has one.
fn dynamic_section(file: &Path) -> (Vec<String>, Option<String>) {
    let output = Command::new("readelf").arg("-d").arg(file).output().expect("run readelf");
    let text = check("readelf -d", output);
    let bracketed = |line: &str| line.split_once('[')?.1.split_once(']').map(|(s, _)| s.to_owned());
    let needed = text.lines().filter(|l| l.contains("(NEEDED)")).filter_map(bracketed).collect();
    let soname = text.lines().find(|l| l.contains("(SONAME)")).and_then(bracketed);
    (needed, soname)
}

/// The names `nm ARGS file` lists.
fn nm(args: &[&str], file: &Path) -> BTreeSet<String> {
    let output = Command::new("nm").args(args).arg(file).output().expect("run nm");
    let text = check(&format!("nm {}", args.join(" ")), output);
    text.lines().filter_map(|line| line.split_whitespace().nth(2)).map(str::to_owned).collect()
}

/// The functions `include/rangelock.h` declares.
fn header_functions() -> BTreeSet<String> {
    let header = std::fs::read_to_string(crate_dir().join("include/rangelock.h")).unwrap();
    let functions: BTreeSet<String> = header
        .lines()
        .filter(|line| !line.starts_with(' ') && !line.starts_with('#'))
        .filter_map(|line| {
            let name = line.split('(').next()?.rsplit([' ', '*']).next()?;
            (line.contains('(') && name.starts_with("rl_")).then(|| name.to_owned())
        })
        .collect();
    assert!(functions.contains("rl_lock_new") && functions.contains("rl_version"), "{functions:?}");
    functions
}

/// `pkg-config --static --libs`, with the archive named explicitly (`-l:librangelock.a`):
/// with both libraries in one directory, `-lrangelock` would pick the shared one.
fn static_libs(installed: &Installed) -> Vec<String> {
    let libs = installed.pkg_config(&["--static", "--libs"]);
    assert!(libs.iter().any(|arg| arg == "-lrangelock"), "{libs:?}");
    libs.into_iter()
        .map(|arg| if arg == "-lrangelock" { "-l:librangelock.a".to_owned() } else { arg })
        .collect()
}

#[test]
fn the_install_has_the_documented_files_and_soname() {
    let Some(installed) = installed() else { return };
    let prefix = &installed.prefix;
    let version = env!("CARGO_PKG_VERSION");
    for file in ["include/rangelock.h", "include/rangelock.hpp", "lib/librangelock.a"] {
        assert!(prefix.join(file).is_file(), "{file} is not installed");
    }
    let lib = installed.lib();
    let real = format!("librangelock.so.{version}");
    assert_eq!(std::fs::read_link(lib.join(soname())).unwrap(), Path::new(&real));
    assert_eq!(std::fs::read_link(lib.join("librangelock.so")).unwrap(), Path::new(&soname()));
    let (_, so) = dynamic_section(&lib.join(&real));
    assert_eq!(so, Some(soname()));
    assert_eq!(installed.pkg_config(&["--modversion"]), [version]);
    // The README's sizes (0.91 MB and 0.43 MB), with room: debug info or an unlocalized
    // std would take the archive past 8 MB, an unstripped shared library past 6 MB.
    let size = |file: &str| std::fs::metadata(lib.join(file)).unwrap().len();
    assert!(size("librangelock.a") < 2_000_000, "librangelock.a: {} B", size("librangelock.a"));
    assert!(size(&real) < 1_000_000, "{real}: {} B", size(&real));
}

#[test]
fn the_libraries_export_only_the_headers_rl_functions() {
    let Some(installed) = installed() else { return };
    let functions = header_functions();
    let lib = installed.lib();
    let shared = nm(&["-D", "--defined-only"], &lib.join(soname()));
    assert_eq!(shared, functions, "nm -D --defined-only {}", soname());
    let archive = nm(&["-g", "--defined-only"], &lib.join("librangelock.a"));
    assert_eq!(archive, functions, "nm -g --defined-only librangelock.a");
}

#[test]
fn a_c_program_builds_with_pkg_config_and_runs_against_the_shared_library() {
    let Some(installed) = installed() else { return };
    let libs = installed.pkg_config(&["--cflags", "--libs"]);
    let source = crate_dir().join("tests/c/test_rangelock.c");
    let exe = compile(&installed.cc, &["-std=c11"], &source, "installed_c_shared", &libs);
    let (needed, _) = dynamic_section(&exe);
    assert!(needed.contains(&soname()), "{needed:?}");
    // Found through the rpath `rangelock.pc` gives for a prefix the loader does not search.
    assert!(run(&exe, None).contains("all checks passed"));
}

#[test]
fn a_c_program_links_the_archive_with_pkg_config_static() {
    let Some(installed) = installed() else { return };
    let mut args = installed.pkg_config(&["--cflags"]);
    args.extend(static_libs(installed));
    let source = crate_dir().join("tests/c/test_rangelock.c");
    let exe = compile(&installed.cc, &["-std=c11"], &source, "installed_c_static", &args);
    let (needed, _) = dynamic_section(&exe);
    assert!(!needed.iter().any(|lib| lib.starts_with("librangelock")), "{needed:?}");
    assert!(run(&exe, None).contains("all checks passed"));
}

#[test]
fn a_cpp_program_builds_with_pkg_config() {
    let Some(installed) = installed() else { return };
    let libs = installed.pkg_config(&["--cflags", "--libs"]);
    let source = crate_dir().join("tests/cpp/test_rangelock.cpp");
    let exe = compile(&installed.cxx, &["-std=c++17"], &source, "installed_cpp_shared", &libs);
    assert!(run(&exe, Some(&installed.lib())).contains("all checks passed"));
}

/// A second Rust static library brings its own copy of std (`rust_eh_personality`, …); in
/// this archive all of those are local, so two copies link together.
#[test]
fn two_copies_of_the_archive_link_into_one_program() {
    let Some(installed) = installed() else { return };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let renames: String =
        header_functions().iter().map(|f| format!("{f} other_{f}\n")).collect::<String>();
    std::fs::write(dir.path().join("renames.txt"), renames).unwrap();
    let output = Command::new("objcopy")
        .arg(format!("--redefine-syms={}", dir.path().join("renames.txt").display()))
        .arg(installed.lib().join("librangelock.a"))
        .arg(dir.path().join("libother.a"))
        .output()
        .expect("run objcopy");
    check("objcopy --redefine-syms", output);
    let source = dir.path().join("two.c");
    std::fs::write(
        &source,
        r#"#include <stdio.h>
#include "rangelock.h"
rl_lock_t *other_rl_lock_new(void);
int other_rl_lock_free(rl_lock_t *lock);
int main(void) {
    rl_lock_t *a = rl_lock_new(), *b = other_rl_lock_new();
    if (a == NULL || b == NULL) return 1;
    if (rl_lock_free(a) != RL_OK || other_rl_lock_free(b) != RL_OK) return 1;
    printf("two copies: ok\n");
    return 0;
}
"#,
    )
    .unwrap();
    let mut args = installed.pkg_config(&["--cflags"]);
    args.push(dir.path().join("libother.a").display().to_string());
    args.extend(static_libs(installed));
    let exe = compile(&installed.cc, &["-std=c11"], &source, "installed_two_copies", &args);
    assert_eq!(run(&exe, None), "two copies: ok\n");
}

/// The C quick start of the README: its install command is the one this file runs, and its
/// program, built as the README says, prints what the README says.
#[test]
fn the_readme_quick_start_builds_and_prints_the_version() {
    let Some(installed) = installed() else { return };
    let readme = std::fs::read_to_string(crate_dir().join("README.md")).unwrap();
    let start = readme.find("## Quick start (C)").expect("README: ## Quick start (C)");
    let section = &readme[start..];
    assert!(section.contains("scripts/install-c-lib.sh --prefix"), "the install command");
    assert!(section.contains("pkg-config --cflags --libs rangelock"), "the build command");
    let program = section.split("```c\n").nth(1).and_then(|rest| rest.split("```").next());
    let program = program.expect("README: a ```c block in the quick start");
    let expected = format!("rangelock {}\n", env!("CARGO_PKG_VERSION"));
    assert!(section.contains(&format!("prints `{}`", expected.trim_end())), "the output");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let source = dir.path().join("app.c");
    std::fs::write(&source, program).unwrap();
    let libs = installed.pkg_config(&["--cflags", "--libs"]);
    let exe = compile(&installed.cc, &[], &source, "installed_quick_start", &libs);
    assert_eq!(run(&exe, None), expected);
}

/// The C example of the repository's README ("Use it"), as a user runs it: its shell
/// block verbatim, with `$HOME` a fresh directory (so `$HOME/.local` is a prefix the
/// loader does not search) and the README's `app.c` beside `scripts/`; the block's own
/// `./app`, and `./app` run again here, must start (no `LD_LIBRARY_PATH`: the rpath that
/// `rangelock.pc` gives) and print `rangelock VERSION`.
#[test]
fn the_repository_readme_c_example_runs_as_written() {
    // The shared install first: it is the one other run of the script, which must not
    // share the target directory with this one at the same time.
    let Some(_) = installed() else { return };
    let readme = std::fs::read_to_string(crate_dir().join("../../README.md")).unwrap();
    let start = readme.find("**C and C++**").expect("README: **C and C++**");
    let section = &readme[start..];
    let block = |fence: &str| {
        let rest = section.split(fence).nth(1)?;
        rest.split_once('\n')?.1.split("\n```").next()
    };
    let commands = block("```sh").expect("README: a ```sh block under **C and C++**");
    let program = block("```c").expect("README: a ```c block under **C and C++**");
    assert!(commands.contains("scripts/install-c-lib.sh --prefix"), "{commands}");
    assert!(commands.contains("pkg-config --cflags --libs rangelock"), "{commands}");

    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    std::os::unix::fs::symlink(crate_dir().join("../../scripts"), work.join("scripts")).unwrap();
    std::fs::write(work.join("app.c"), program).unwrap();
    // cargo and rustup keep their homes (a fresh $HOME has neither); the build reuses the
    // shared install's target directory.
    let real_home = std::env::var("HOME").unwrap_or_default();
    let var_or = |var: &str, dir: &str| std::env::var(var).unwrap_or(format!("{real_home}/{dir}"));
    let output = Command::new("bash")
        .args(["-e", "-o", "pipefail", "-c", commands])
        .current_dir(&work)
        .env("HOME", &home)
        .env("CARGO_HOME", var_or("CARGO_HOME", ".cargo"))
        .env("RUSTUP_HOME", var_or("RUSTUP_HOME", ".rustup"))
        .env("CARGO", env!("CARGO"))
        .env("CARGO_TARGET_DIR", Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-lib-target"))
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("PKG_CONFIG_PATH")
        .output()
        .expect("run bash");
    let stdout = check(&format!("the README's commands:\n{commands}"), output);
    let expected = format!("rangelock {}\n", env!("CARGO_PKG_VERSION"));
    assert!(stdout.ends_with(&expected), "the README's ./app printed:\n{stdout}");
    assert!(section.contains(&format!("`./app` prints `{}`", expected.trim_end())), "README");
    assert_eq!(run(&work.join("app"), None), expected);
}
