//! Compiles the C and C++ tests (`tests/c`, `tests/cpp`) with the system compilers against
//! the library `cargo test` just built, and runs them: the C test linked statically and
//! dynamically, the C++ test (the RAII wrapper) statically.
//!
//! Where the library is: the crate's `staticlib` and `cdylib` come out of the same rustc
//! run as the `rlib` this test links, and `cargo test` leaves all three next to the test
//! executable (`target/<profile>/deps/`, without a hash in the name); only `cargo build`
//! copies them up to `target/<profile>/`. So the test looks in its own directory first and
//! then one level up, and takes the newer copy.
//!
//! Compilers: `$CC` or `cc`, `$CXX` or `c++`. If one is missing the test fails when `CI` is
//! set and otherwise passes with a loud message on stderr.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

const LIB: &str = "rangelock_ffi";

/// What to link besides the static library: `rustc --print native-static-libs`.
#[cfg(target_os = "linux")]
const NATIVE_STATIC_LIBS: &[&str] = &["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];
#[cfg(not(target_os = "linux"))]
const NATIVE_STATIC_LIBS: &[&str] = &["-lpthread", "-lm"];

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding `lib<LIB>.a` and its shared twin from this build.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    let deps = exe.parent().expect("the test executable's directory").to_path_buf();
    let candidates = [deps.clone(), deps.parent().map(Path::to_path_buf).unwrap_or_default()];
    let modified = |dir: &Path| -> Option<SystemTime> {
        std::fs::metadata(shared_library(dir)).ok()?;
        std::fs::metadata(static_library(dir)).ok()?.modified().ok()
    };
    candidates
        .iter()
        .filter_map(|dir| Some((modified(dir)?, dir)))
        .max()
        .map(|(_, dir)| dir.clone())
        .unwrap_or_else(|| {
            panic!(
                "neither {} nor {} holds lib{LIB}.a and its shared library; they are built \
                 with the crate (crate-type staticlib + cdylib) by `cargo test -p \
                 rangelock-ffi` or `cargo build -p rangelock-ffi`",
                candidates[0].display(),
                candidates[1].display()
            )
        })
}

fn static_library(dir: &Path) -> PathBuf {
    dir.join(format!("lib{LIB}.a"))
}

fn shared_library(dir: &Path) -> PathBuf {
    use std::env::consts::{DLL_PREFIX, DLL_SUFFIX};
    dir.join(format!("{DLL_PREFIX}{LIB}{DLL_SUFFIX}"))
}

/// The compiler named by `$var` or `default`, or `None` (after saying so) if it does not run
/// and this is not CI.
fn compiler(var: &str, default: &str) -> Option<String> {
    let cc = std::env::var(var).ok().filter(|cc| !cc.is_empty()).unwrap_or(default.to_owned());
    let runs = Command::new(&cc).arg("--version").output().is_ok_and(|out| out.status.success());
    if runs {
        return Some(cc);
    }
    let message = format!(
        "the {default} compiler `{cc}` (${var}) does not run, so the C/C++ API tests cannot \
         be compiled; install one (Debian/Ubuntu: `apt-get install build-essential`) or set \
         ${var}"
    );
    if std::env::var_os("CI").is_some() {
        panic!("{message}");
    }
    // Straight to the process's stderr: the harness captures `eprintln!` of passing tests.
    let banner = "!".repeat(78);
    let _ = writeln!(std::io::stderr(), "\n{banner}\nSKIPPED: {message}\n{banner}\n");
    None
}

fn check(what: &str, output: Output) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}

/// Compiles `source` with `cc` and `flags`, links `link`, runs the program and checks that
/// it passed (exit status 0 and its closing line).
fn build_and_run(cc: &str, flags: &[&str], source: &str, name: &str, link: &[String]) {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c_api");
    std::fs::create_dir_all(&out_dir).expect("create the output directory");
    let exe = out_dir.join(name);
    eprintln!("{name}: {cc} {source} {}", link.join(" "));
    let compile = Command::new(cc)
        .args(flags)
        .args(["-Wall", "-Wextra", "-Werror", "-pthread", "-o"])
        .arg(&exe)
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(crate_dir().join(source))
        .args(link)
        .output()
        .unwrap_or_else(|err| panic!("run {cc}: {err}"));
    check(&format!("compiling {source} as {name}"), compile);
    let run = Command::new(&exe).output().unwrap_or_else(|err| panic!("run {name}: {err}"));
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    check(&format!("running {name}"), run);
    assert!(stdout.contains("all checks passed"), "{name} did not finish:\n{stdout}");
}

fn static_link() -> Vec<String> {
    let mut link = vec![static_library(&library_dir()).display().to_string()];
    link.extend(NATIVE_STATIC_LIBS.iter().map(|flag| flag.to_string()));
    link
}

#[test]
fn c_test_passes_linked_statically() {
    let Some(cc) = compiler("CC", "cc") else { return };
    let source = "tests/c/test_rangelock.c";
    build_and_run(&cc, &["-std=c11"], source, "test_rangelock_c_static", &static_link());
}

#[test]
fn c_test_passes_linked_dynamically() {
    let Some(cc) = compiler("CC", "cc") else { return };
    let dir = library_dir();
    // The library by path (so the linker cannot pick the static one) and an rpath, so the
    // program finds it without LD_LIBRARY_PATH.
    let link =
        vec![shared_library(&dir).display().to_string(), format!("-Wl,-rpath,{}", dir.display())];
    let source = "tests/c/test_rangelock.c";
    build_and_run(&cc, &["-std=c11"], source, "test_rangelock_c_shared", &link);
}

#[test]
fn cpp_test_passes_linked_statically() {
    let Some(cxx) = compiler("CXX", "c++") else { return };
    let source = "tests/cpp/test_rangelock.cpp";
    build_and_run(&cxx, &["-std=c++17"], source, "test_rangelock_cpp_static", &static_link());
}

#[test]
fn cpp_header_below_cpp17_stops_at_its_error() {
    let Some(cxx) = compiler("CXX", "c++") else { return };
    for std in ["-std=c++11", "-std=c++14"] {
        let output = Command::new(&cxx)
            .args([std, "-fsyntax-only", "-I"])
            .arg(crate_dir().join("include"))
            .arg(crate_dir().join("tests/cpp/test_rangelock.cpp"))
            .output()
            .unwrap_or_else(|err| panic!("run {cxx}: {err}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{cxx} {std} compiled rangelock.hpp");
        assert!(
            stderr.contains("rangelock.hpp needs C++17 or later"),
            "{cxx} {std} failed without the header's #error:\n{stderr}"
        );
    }
}
