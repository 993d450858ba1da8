//! `include/rangelock.h` is what cbindgen generates from `src/lib.rs` with `cbindgen.toml`.
//!
//! After changing the C API, regenerate the header with
//! `RANGELOCK_FFI_BLESS=1 cargo test -p rangelock-ffi --test header` and commit it.

use std::path::Path;

#[test]
fn checked_in_header_matches_the_rust_declarations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen could not generate the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    // Spot checks, so that a broken generator cannot agree with a broken file.
    for needle in
        ["rl_lock_t *rl_lock_new(void);", "int rl_unlock(struct rl_guard_t *guard);", "RL_OK = 0,"]
    {
        assert!(generated.contains(needle), "generated header lacks `{needle}`:\n{generated}");
    }
    let path = dir.join("include/rangelock.h");
    if std::env::var_os("RANGELOCK_FFI_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write include/rangelock.h");
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    if checked_in != generated {
        let eof = std::iter::repeat("<end of file>");
        let lines = checked_in.lines().count().max(generated.lines().count()) + 1;
        let (line, (have, want)) = checked_in
            .lines()
            .chain(eof.clone())
            .zip(generated.lines().chain(eof))
            .take(lines)
            .enumerate()
            .find(|(_, (have, want))| have != want)
            .unwrap_or((lines, ("(the line ends differ)", "")));
        panic!(
            "crates/ffi/include/rangelock.h is out of date with src/lib.rs (line {}:\n  \
             checked in: {have}\n  generated:  {want}\n); regenerate it with\n  \
             RANGELOCK_FFI_BLESS=1 cargo test -p rangelock-ffi --test header\n\
             and commit the result",
            line + 1
        );
    }
}
