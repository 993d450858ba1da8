//! The NAME of `rangelock lock [NAME] RANGE [--] CMD…`: a named resource (docs/design/
//! names.md), given as the argument before RANGE or with `--name NAME`, and the rule that
//! tells the two leading arguments apart ([`RULE`]).
//!
//! A name is bytes: on unix an argument's bytes as the OS gave them, so a path that is no
//! UTF-8 names its resource too. 1 to [`MAX_RESOURCE_NAME_LEN`] bytes; anything else is a
//! usage error before anything connects.
//!
//! # How the rule is applied
//!
//! Before clap parses the arguments, [`split_name`] finds the first two arguments of
//! `lock` that are no options (skipping an option's value, as clap reads it: `-w 5`,
//! `-w5`, `--timeout=5`, `-nw 5`; stopping at `--`) and applies [`RULE`]. A NAME is taken
//! out of the arguments, and clap then reads what is left exactly as it reads a `lock`
//! without a name: RANGE is the first argument that is no option, and the command starts
//! at the next one. So options may still come before or after NAME and RANGE, and the
//! command's own arguments are never looked at.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::ffi::OsStrExt;

use rangelock_client::MAX_RESOURCE_NAME_LEN;

use crate::range_arg::parse_range;

/// The parsing rule of `rangelock lock`'s leading arguments, as `lock --help` prints it;
/// docs/OPERATIONS.md states the same words (a test compares them).
pub(crate) const RULE: &str = "Of the first two arguments that are not options (before \
    any `--`): if the second reads as a RANGE and the first does not, the first is NAME \
    and the second RANGE (`rangelock lock /var/lib/app.db 0..10 -- cmd`). If both read as \
    ranges, the command line is ambiguous and refused (exit 2) with the hint to give the \
    name as `--name NAME`, which always works (`rangelock lock --name 5 0..10 -- cmd`). \
    Otherwise the first is RANGE and the second starts the command, as without a name \
    (`rangelock lock 0..10 sleep 5`). A name that starts with `-` needs `--name`; \
    `--name` and a NAME argument together are refused.";

/// A resource name: 1 to [`MAX_RESOURCE_NAME_LEN`] bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NameArg {
    /// The name's bytes.
    pub(crate) bytes: Vec<u8>,
}

impl NameArg {
    /// The name `arg` gives (its bytes), or why it is none.
    pub(crate) fn parse(arg: &OsStr) -> Result<NameArg, String> {
        let bytes = arg.as_bytes();
        if bytes.is_empty() || bytes.len() > MAX_RESOURCE_NAME_LEN {
            let shown = NameArg { bytes: bytes.iter().copied().take(40).collect() };
            let more = if bytes.len() > 40 { "…" } else { "" };
            return Err(format!(
                "invalid name {shown}{more} ({} bytes): a name is 1 to {MAX_RESOURCE_NAME_LEN} \
                 bytes (for a longer path, lock a hash of it)",
                bytes.len()
            ));
        }
        Ok(NameArg { bytes: bytes.to_vec() })
    }
}

impl NameArg {
    /// `name` as the CLI shows every name (its messages, `rangelock stat`): see the
    /// `Display` of [`NameArg`].
    pub(crate) fn shown(name: &[u8]) -> Shown<'_> {
        Shown(name)
    }
}

/// A name being shown (see [`NameArg::shown`]).
#[derive(Debug)]
pub(crate) struct Shown<'a>(&'a [u8]);

impl fmt::Display for NameArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Shown(&self.bytes).fmt(f)
    }
}

impl fmt::Display for Shown<'_> {
    /// Quoted, escaped as Rust escapes a string; a byte that is no UTF-8 as `\xNN`. Two
    /// different names never show the same.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for chunk in self.0.utf8_chunks() {
            for c in chunk.valid().chars() {
                write!(f, "{}", c.escape_debug())?;
            }
            for b in chunk.invalid() {
                write!(f, "\\x{b:02X}")?;
            }
        }
        f.write_str("\"")
    }
}

/// Why [`split_name`] refused the command line: a usage error.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Both leading arguments read as ranges, and there is no `--name`.
    Ambiguous {
        /// The first argument.
        first: String,
        /// The second argument.
        second: String,
    },
    /// A NAME argument, and `--name` too.
    Twice,
    /// The NAME argument is no name (empty, too long).
    BadName(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Ambiguous { first, second } => write!(
                f,
                "{first:?} and {second:?} both read as a RANGE, so which one is NAME is \
                 ambiguous\n\n  tip: give the name with --name NAME: `rangelock lock --name \
                 {first} {second} [--] CMD...` locks {second} of the resource named {first:?}\n  \
                 tip: to run {second:?} as the command on range {first} (no name), put `--` \
                 before it: `rangelock lock {first} -- {second} ...`"
            ),
            Refusal::Twice => f.write_str(
                "a NAME argument and --name were both given: give the name once, either as \
                 the argument before RANGE or with --name NAME",
            ),
            Refusal::BadName(why) => f.write_str(why),
        }
    }
}

/// Where the arguments of `lock` (`argv[2..]`; `argv[1]` is `lock`) have their first two
/// that are no options, and whether `--name` is among the options before the second.
#[derive(Debug, Default, PartialEq, Eq)]
struct Leading {
    /// Indices into argv of the (at most two) leading arguments.
    at: Vec<usize>,
    /// `--name` came before the second one.
    name_flag: bool,
}

/// Finds the leading arguments: options (and their values, by what `lock` says of each
/// option) are skipped, `--` ends the search.
fn leading(lock: &clap::Command, argv: &[OsString]) -> Leading {
    let takes_value =
        |found: Option<&clap::Arg>| found.is_some_and(|a| a.get_action().takes_values());
    let long = |l: &[u8]| {
        lock.get_arguments().find(|a| {
            a.get_long().is_some_and(|x| x.as_bytes() == l)
                || a.get_all_aliases().is_some_and(|v| v.iter().any(|x| x.as_bytes() == l))
        })
    };
    let short = |c: char| {
        lock.get_arguments().find(|a| {
            a.get_short() == Some(c) || a.get_all_short_aliases().is_some_and(|v| v.contains(&c))
        })
    };
    let mut found = Leading::default();
    let mut i = 2;
    while i < argv.len() && found.at.len() < 2 {
        let arg = argv[i].as_bytes();
        if arg == b"--" {
            break;
        }
        if let Some(rest) = arg.strip_prefix(b"--") {
            let (key, inline) = match rest.iter().position(|&b| b == b'=') {
                Some(eq) => (&rest[..eq], true),
                None => (rest, false),
            };
            found.name_flag |= key == b"name";
            if !inline && takes_value(long(key)) {
                i += 1; // its value
            }
        } else if arg.len() > 1 && arg[0] == b'-' {
            // Short options, one or more (`-nq`); one that takes a value takes the rest of
            // the argument (`-w5`, `-w=5`) or, if nothing is left, the next argument.
            let shorts = String::from_utf8_lossy(&arg[1..]);
            for (at, c) in shorts.char_indices() {
                if takes_value(short(c)) {
                    if at + c.len_utf8() == shorts.len() {
                        i += 1;
                    }
                    break;
                }
            }
        } else {
            found.at.push(i);
        }
        i += 1;
    }
    found
}

/// Applies [`RULE`] to `rangelock lock`'s arguments (`argv` is the whole command line,
/// `lock` the subcommand's definition): a NAME argument is removed from `argv` and
/// returned, and clap then parses the rest as a `lock` without a name.
pub(crate) fn split_name(
    lock: &clap::Command,
    argv: &mut Vec<OsString>,
) -> Result<Option<NameArg>, Refusal> {
    let found = leading(lock, argv);
    let [first, second] = found.at[..] else { return Ok(None) };
    let reads = |s: &OsStr| s.to_str().is_some_and(|s| parse_range(s).is_ok());
    match (reads(&argv[first]), reads(&argv[second])) {
        (false, true) => {
            // With `--name` too, the caller refuses it (`--name` may also come later).
            let name = NameArg::parse(&argv[first]).map_err(Refusal::BadName)?;
            argv.remove(first);
            Ok(Some(name))
        }
        (true, true) if !found.name_flag => Err(Refusal::Ambiguous {
            first: argv[first].to_string_lossy().into_owned(),
            second: argv[second].to_string_lossy().into_owned(),
        }),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction, Command};

    /// The options of `lock` that matter here: flags, options with values, aliases.
    fn lock() -> Command {
        Command::new("lock")
            .arg(Arg::new("nonblock").short('n').long("nonblock").action(ArgAction::SetTrue))
            .arg(Arg::new("quiet").short('q').action(ArgAction::SetTrue))
            .arg(
                Arg::new("timeout")
                    .short('t')
                    .visible_short_alias('w')
                    .long("timeout")
                    .visible_alias("wait"),
            )
            .arg(Arg::new("server").long("server"))
            .arg(Arg::new("name").long("name"))
    }

    fn argv(args: &[&str]) -> Vec<OsString> {
        ["rangelock", "lock"].iter().chain(args).map(OsString::from).collect()
    }

    /// The name taken out and the arguments left, or the refusal.
    fn split(args: &[&str]) -> Result<(Option<String>, Vec<String>), Refusal> {
        let mut v = argv(args);
        let name = split_name(&lock(), &mut v)?;
        let left = v[2..].iter().map(|s| s.to_str().unwrap().to_owned()).collect();
        Ok((name.map(|n| String::from_utf8(n.bytes).unwrap()), left))
    }

    #[test]
    fn a_name_before_a_range_is_taken_out() {
        let (name, left) = split(&["a", "0..10", "--", "sleep", "5"]).unwrap();
        assert_eq!(name.as_deref(), Some("a"));
        assert_eq!(left, ["0..10", "--", "sleep", "5"]);
        let (name, left) = split(&["/tmp/file", "0..10", "cat", "x"]).unwrap();
        assert_eq!(name.as_deref(), Some("/tmp/file"));
        assert_eq!(left, ["0..10", "cat", "x"]);
        // No command: the hold.
        assert_eq!(split(&["a", "5"]).unwrap().0.as_deref(), Some("a"));
    }

    #[test]
    fn without_a_name_nothing_changes() {
        for args in [
            &["0..10", "sleep", "5"][..],
            &["0..10"],
            &["0..10", "--", "5..6"],
            &["a", "--", "0..10"],
            &["--", "a", "0..10"],
            &["0..10", "-n", "true"],
            &["x", "y", "z"],
            &[],
        ] {
            assert_eq!(split(args).unwrap(), (None, args.iter().map(|s| s.to_string()).collect()));
        }
    }

    #[test]
    fn option_values_are_skipped_as_clap_reads_them() {
        for args in [
            &["-w", "5", "a", "0..10", "true"][..],
            &["-w5", "a", "0..10"],
            &["-nqw", "5", "a", "0..10"],
            &["-nqw5", "a", "0..10"],
            &["--timeout", "5", "a", "0..10"],
            &["--wait", "5", "a", "0..10"],
            &["--timeout=5", "a", "0..10"],
            &["--server", "x:1", "a", "-n", "0..10", "-q", "--", "cmd"],
            &["a", "--server", "5", "0..10"],
        ] {
            assert_eq!(split(args).unwrap().0.as_deref(), Some("a"), "{args:?}");
        }
        // The value of an option is no NAME and no RANGE.
        assert_eq!(split(&["--server", "a", "0..10", "true"]).unwrap().0, None);
        assert_eq!(split(&["-w", "5", "0..10", "true"]).unwrap().0, None);
    }

    #[test]
    fn two_ranges_are_refused_unless_the_name_is_a_flag() {
        let e = split(&["5", "0..10", "--", "cmd"]).unwrap_err();
        assert_eq!(e, Refusal::Ambiguous { first: "5".into(), second: "0..10".into() });
        assert!(e.to_string().contains("--name NAME"), "{e}");
        assert!(split(&["0..10", "5..6"]).is_err());
        let (name, left) = split(&["--name", "5", "0..10", "--", "cmd"]).unwrap();
        assert_eq!((name, left.len()), (None, 5));
        assert_eq!(split(&["--name=5", "0..10", "0..1"]).unwrap().0, None);
    }

    #[test]
    fn a_name_argument_is_found_with_the_flag_too_for_the_caller_to_refuse() {
        assert_eq!(split(&["--name", "a", "b", "0..10"]).unwrap().0.as_deref(), Some("b"));
        assert_eq!(split(&["b", "--name=a", "0..10"]).unwrap().0.as_deref(), Some("b"));
    }

    #[test]
    fn names_are_1_to_1024_bytes_of_any_kind() {
        let max = "n".repeat(MAX_RESOURCE_NAME_LEN);
        assert_eq!(split(&[&max, "0..10"]).unwrap().0, Some(max.clone()));
        let e = split(&[&format!("{max}n"), "0..10"]).unwrap_err();
        assert!(e.to_string().contains("(1025 bytes): a name is 1 to 1024 bytes"), "{e}");
        let e = split(&["", "0..10"]).unwrap_err();
        assert!(e.to_string().starts_with("invalid name \"\" (0 bytes)"), "{e}");
        let raw = OsStr::from_bytes(b"/tmp/caf\xe9");
        let mut v = argv(&["0..10"]);
        v.insert(2, raw.to_owned());
        let name = split_name(&lock(), &mut v).unwrap().unwrap();
        assert_eq!(name.bytes, b"/tmp/caf\xe9");
        assert_eq!(name.to_string(), r#""/tmp/caf\xE9""#);
        assert_eq!(NameArg::parse(OsStr::new("a\"b\n")).unwrap().to_string(), r#""a\"b\n""#);
    }
}
