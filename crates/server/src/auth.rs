//! Authentication: the tokens of an auth file (`rangelock serve --auth-file FILE`) and the
//! part of the unit space each may lock.
//!
//! An auth file is TOML with one `[[token]]` table per token:
//!
//! ```toml
//! [[token]]
//! name = "ingest"                       # shown in logs; the secret never is
//! secret_sha256 = "9f86d081884c7d65..." # the SHA-256 of the token, 64 hex digits
//! ranges = ["0..4096", "0x100000..0x200000"]
//! names = ["db/", "logs/"]              # named resources it may lock, by prefix
//!
//! [[token]]
//! name = "admin"
//! secret = "a-long-random-string"       # or the token itself (at least 16 bytes)
//! names = [""]                          # every name
//! ```
//!
//! `ranges` is optional: without it the token may lock the whole unit space. Each range is
//! half-open `START..END` in decimal or `0x` hex (`_` separators allowed; `START..` runs to
//! the end of the space). A `LOCK` or `RECLAIM` is allowed when its range lies inside the
//! union of the token's ranges: ranges that overlap or touch count as one
//! ([`Ranges::contains`]).
//!
//! `names` is optional too: the named resources (`LOCK_NAMED`) the token may lock, as
//! prefixes of their names' bytes. A name is allowed when one of the prefixes is a prefix
//! of it; `""` allows every name. Without `names` the token may lock the unnamed resource
//! only, so a file written before names keeps its meaning. The unnamed resource stays
//! allowed with `names` (within `ranges`), and `ranges` applies to every name alike.
//!
//! [`AuthTable::load`] refuses a file it cannot use with an [`AuthFileError`] that names
//! the file and the entry: unknown keys, a missing name, duplicate names or secrets, an
//! entry with neither or both of `secret` and `secret_sha256`, a secret outside 16 to
//! [`MAX_TOKEN_LEN`] bytes, a malformed digest, an empty, inverted or malformed range, an
//! empty `ranges` or `names` list, or no tokens at all. It warns (through `tracing`) when
//! the file is readable by group or others.
//!
//! # Looking a token up
//!
//! [`AuthTable::authenticate`] hashes the presented token with SHA-256 and compares the
//! digest with every entry's, each in constant time and without stopping at a match, so
//! the time it takes reveals neither a prefix of a secret nor which entry matched. The
//! secrets themselves are not kept: only their digests. Neither [`AuthTable`]'s nor
//! [`Principal`]'s `Debug` shows a digest.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::protocol::MAX_TOKEN_LEN;

/// The shortest `secret` an auth file may hold, in bytes.
pub const MIN_SECRET_LEN: usize = 16;

/// The tokens a server accepts; see the [module docs](self).
pub struct AuthTable {
    /// The file they came from (for messages).
    path: PathBuf,
    tokens: Box<[Entry]>,
}

/// One token: the SHA-256 of its secret, and who it makes a session.
struct Entry {
    digest: [u8; 32],
    principal: Arc<Principal>,
}

impl core::fmt::Debug for AuthTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Names and ranges only: never a digest.
        f.debug_struct("AuthTable")
            .field("path", &self.path)
            .field("tokens", &self.tokens.iter().map(|e| &*e.principal).collect::<Vec<_>>())
            .finish()
    }
}

/// Who a session authenticated as: its token's name and what it may lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    name: String,
    ranges: Option<Ranges>,
    names: Option<Box<[String]>>,
}

impl Principal {
    /// The token's name (what logs show).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The ranges the token may lock; `None`: the whole unit space.
    pub fn ranges(&self) -> Option<&Ranges> {
        self.ranges.as_ref()
    }

    /// Whether the token may lock `start..end`.
    pub fn may_lock(&self, start: u64, end: u64) -> bool {
        self.ranges.as_ref().is_none_or(|r| r.contains(start, end))
    }

    /// The prefixes of the names the token may lock; `None`: no name (the unnamed
    /// resource only).
    pub fn name_prefixes(&self) -> Option<&[String]> {
        self.names.as_deref()
    }

    /// Whether the token may lock the resource named `name`: one of its prefixes is a
    /// prefix of the name's bytes.
    pub fn may_lock_name(&self, name: &[u8]) -> bool {
        self.names.as_deref().is_some_and(|ps| ps.iter().any(|p| name.starts_with(p.as_bytes())))
    }
}

/// The part of the unit space a token may lock: sorted, disjoint ranges that do not touch
/// (overlapping or adjacent ranges of the file are merged).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ranges(Box<[Range<u64>]>);

impl Ranges {
    /// Merges `ranges` (each non-empty) into sorted, disjoint, non-touching ranges.
    pub fn new(mut ranges: Vec<Range<u64>>) -> Ranges {
        ranges.sort_by_key(|r| r.start);
        let mut merged: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
        for r in ranges {
            match merged.last_mut() {
                Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => merged.push(r),
            }
        }
        Ranges(merged.into_boxed_slice())
    }

    /// Whether `start..end` lies inside one of the (merged) ranges.
    pub fn contains(&self, start: u64, end: u64) -> bool {
        // The last range starting at or before `start` is the only candidate.
        let i = self.0.partition_point(|r| r.start <= start);
        i > 0 && end <= self.0[i - 1].end
    }

    /// The ranges, sorted.
    pub fn as_slice(&self) -> &[Range<u64>] {
        &self.0
    }
}

/// Why an auth file cannot be used. Every message names the file; entry problems name the
/// entry (by its name, or its position when it has none).
#[derive(Debug, thiserror::Error)]
pub enum AuthFileError {
    /// The file cannot be read.
    #[error("cannot read the auth file {}: {error}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        error: std::io::Error,
    },
    /// Not TOML of the expected shape: a syntax error, an unknown key, a missing `name`,
    /// a value of the wrong type. The message gives the line and column.
    #[error("auth file {}: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
    /// The file defines no token (a server with it would refuse every session).
    #[error("auth file {} defines no token: add a [[token]] entry", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// One entry is wrong.
    #[error("auth file {}, {entry}: {problem}", path.display())]
    Token {
        /// The file.
        path: PathBuf,
        /// `token "NAME"`, or `[[token]] #N` (1-based) for an entry without a usable name.
        entry: String,
        /// What is wrong with it.
        problem: TokenProblem,
    },
}

/// What is wrong with one `[[token]]` entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenProblem {
    /// `name = ""`.
    #[error("the name is empty")]
    EmptyName,
    /// Another entry has the same name.
    #[error("another token has the same name")]
    DuplicateName,
    /// Another entry has the same secret (or digest).
    #[error("token {0:?} has the same secret")]
    DuplicateSecret(String),
    /// Neither `secret` nor `secret_sha256`.
    #[error("no secret: give secret or secret_sha256")]
    NoSecret,
    /// Both `secret` and `secret_sha256`.
    #[error("both secret and secret_sha256 given: give one")]
    BothSecrets,
    /// A `secret` shorter than [`MIN_SECRET_LEN`] bytes.
    #[error("the secret is {0} bytes; at least {MIN_SECRET_LEN} are required")]
    SecretTooShort(usize),
    /// A `secret` longer than a hello can carry ([`MAX_TOKEN_LEN`]).
    #[error("the secret is {0} bytes; a client can send at most {MAX_TOKEN_LEN}")]
    SecretTooLong(usize),
    /// A `secret` with white space at either end or a line break: `--token-file` sends the
    /// first line of its file without surrounding white space, so no client could send it.
    #[error("the secret has white space at an end or a line break, which no token file can carry")]
    SecretWhitespace,
    /// `secret_sha256` is not 64 hex digits.
    #[error("secret_sha256 must be 64 hex digits (the SHA-256 of the token)")]
    BadDigest,
    /// `ranges = []`.
    #[error(
        "ranges is empty: list at least one range, or leave ranges out for the whole unit space"
    )]
    NoRanges,
    /// `names = []`.
    #[error(
        "names is empty: list at least one prefix (\"\" for every name), or leave names out \
         for the unnamed resource only"
    )]
    NoNames,
    /// A range that does not parse, or is empty or inverted.
    #[error("range {range:?}: {why}")]
    BadRange {
        /// The range as written.
        range: String,
        /// What is wrong with it.
        why: String,
    },
}

/// The file's shape (unknown keys are errors).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDef {
    #[serde(default)]
    token: Vec<TokenDef>,
}

/// One `[[token]]` as written. No `Debug`: it may hold a secret.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TokenDef {
    name: String,
    secret: Option<String>,
    secret_sha256: Option<String>,
    ranges: Option<Vec<String>>,
    names: Option<Vec<String>>,
}

impl AuthTable {
    /// Reads and checks the auth file at `path`; warns if group or others may read it.
    pub fn load(path: &Path) -> Result<AuthTable, AuthFileError> {
        use std::io::Read;
        use std::os::unix::fs::PermissionsExt;
        let read_err = |error| AuthFileError::Read { path: path.to_owned(), error };
        let mut file = std::fs::File::open(path).map_err(read_err)?;
        let mode = file.metadata().map_err(read_err)?.permissions().mode();
        if mode & 0o044 != 0 {
            tracing::warn!(
                path = %path.display(),
                mode = format_args!("{:03o}", mode & 0o777),
                "the auth file is readable by group or others: let only the server's user \
                 read it (chmod 600)"
            );
        }
        let mut text = String::new();
        file.read_to_string(&mut text).map_err(read_err)?;
        Self::from_toml(path, &text)
    }

    /// Checks the auth file text `text`; `path` only names the file in errors.
    pub fn from_toml(path: &Path, text: &str) -> Result<AuthTable, AuthFileError> {
        let def: FileDef = toml::from_str(text).map_err(|e| AuthFileError::Syntax {
            path: path.to_owned(),
            message: syntax_message(text, &e),
        })?;
        if def.token.is_empty() {
            return Err(AuthFileError::Empty { path: path.to_owned() });
        }
        let mut tokens: Vec<Entry> = Vec::with_capacity(def.token.len());
        for (i, t) in def.token.into_iter().enumerate() {
            let entry = match t.name.as_str() {
                "" => format!("[[token]] #{}", i + 1),
                name => format!("token {name:?}"),
            };
            let fail = |problem| AuthFileError::Token { path: path.to_owned(), entry, problem };
            let e = match check_token(t, &tokens) {
                Ok(e) => e,
                Err(problem) => return Err(fail(problem)),
            };
            tokens.push(e);
        }
        Ok(AuthTable { path: path.to_owned(), tokens: tokens.into_boxed_slice() })
    }

    /// The principal whose token is `token`, or `None` if no entry has it. Compares the
    /// token's SHA-256 with every entry's in constant time (see the [module docs](self)).
    pub fn authenticate(&self, token: &[u8]) -> Option<&Arc<Principal>> {
        self.by_digest(&token_digest(token))
    }

    /// The principal of the entry whose digest is `digest`, compared in constant time.
    pub(crate) fn by_digest(&self, digest: &[u8; 32]) -> Option<&Arc<Principal>> {
        let mut found = None;
        for e in self.tokens.iter() {
            // No early exit: every entry is compared, whatever matched before.
            if bool::from(e.digest.ct_eq(digest)) {
                found = Some(&e.principal);
            }
        }
        found
    }

    /// Whether a session that authenticated with the token of digest `digest` as `who`
    /// may go on under this table: the token is here, with the same name, ranges and
    /// names.
    pub(crate) fn still_admits(&self, digest: &[u8; 32], who: &Principal) -> bool {
        self.by_digest(digest).is_some_and(|p| **p == *who)
    }

    /// The names of the tokens of this table that `newer` no longer admits as they are
    /// (removed, or their name, ranges or names changed): their sessions end on a reload.
    pub fn revoked_by(&self, newer: &AuthTable) -> Vec<String> {
        self.tokens
            .iter()
            .filter(|e| !newer.still_admits(&e.digest, &e.principal))
            .map(|e| e.principal.name.clone())
            .collect()
    }

    /// The file the tokens came from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many tokens there are (at least one).
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Always `false`: a table has at least one token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Every token's principal, in file order.
    pub fn principals(&self) -> impl Iterator<Item = &Principal> {
        self.tokens.iter().map(|e| &*e.principal)
    }
}

/// The SHA-256 of a token, as an auth table keeps it.
pub(crate) fn token_digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

/// Checks one entry against itself and the entries before it.
fn check_token(t: TokenDef, earlier: &[Entry]) -> Result<Entry, TokenProblem> {
    if t.name.is_empty() {
        return Err(TokenProblem::EmptyName);
    }
    if earlier.iter().any(|e| e.principal.name == t.name) {
        return Err(TokenProblem::DuplicateName);
    }
    let digest = match (&t.secret, &t.secret_sha256) {
        (None, None) => return Err(TokenProblem::NoSecret),
        (Some(_), Some(_)) => return Err(TokenProblem::BothSecrets),
        (Some(s), None) => {
            if s.len() < MIN_SECRET_LEN {
                return Err(TokenProblem::SecretTooShort(s.len()));
            }
            if s.len() > MAX_TOKEN_LEN {
                return Err(TokenProblem::SecretTooLong(s.len()));
            }
            if s.trim() != s || s.contains(['\n', '\r']) {
                return Err(TokenProblem::SecretWhitespace);
            }
            Sha256::digest(s.as_bytes()).into()
        }
        (None, Some(hex)) => parse_digest(hex).ok_or(TokenProblem::BadDigest)?,
    };
    if let Some(other) = earlier.iter().find(|e| e.digest == digest) {
        return Err(TokenProblem::DuplicateSecret(other.principal.name.clone()));
    }
    let ranges = match t.ranges {
        None => None,
        Some(list) if list.is_empty() => return Err(TokenProblem::NoRanges),
        Some(list) => {
            let parsed = list
                .iter()
                .map(|s| {
                    parse_range(s).map_err(|why| TokenProblem::BadRange { range: s.clone(), why })
                })
                .collect::<Result<Vec<_>, _>>()?;
            Some(Ranges::new(parsed))
        }
    };
    let names = match t.names {
        Some(list) if list.is_empty() => return Err(TokenProblem::NoNames),
        list => list.map(Vec::into_boxed_slice),
    };
    Ok(Entry { digest, principal: Arc::new(Principal { name: t.name, ranges, names }) })
}

/// 64 hex digits (either case) to 32 bytes.
fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let digit = |c: u8| (c as char).to_digit(16);
        *o = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(out)
}

/// `START..END` (or `START..`, to the end of the unit space), decimal or `0x` hex.
fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s.split_once("..").ok_or("not START..END")?;
    let start = parse_unit(a)?;
    let end = if b.trim().is_empty() { u64::MAX } else { parse_unit(b)? };
    if start >= end {
        return Err("empty or inverted (START must be below END; ranges are half-open)".into());
    }
    Ok(start..end)
}

fn parse_unit(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse(),
    };
    r.map_err(|e| format!("{:?} is not a unit number (decimal or 0x hex): {e}", s.trim()))
}

/// A TOML error as `line L, column C: message`, without the snippet of the file that
/// `toml`'s `Display` shows (the line could hold a secret).
fn syntax_message(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("line {line}, column {column}: {}", e.message())
        }
        None => e.message().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef-ingest";

    fn parse(text: &str) -> Result<AuthTable, AuthFileError> {
        AuthTable::from_toml(Path::new("/etc/rangelock/auth.toml"), text)
    }

    /// The problem of the entry a file is refused for (and its message, checked to name
    /// the file and the entry).
    fn problem(text: &str) -> (String, TokenProblem) {
        let e = parse(text).expect_err("refused");
        let shown = e.to_string();
        assert!(shown.starts_with("auth file /etc/rangelock/auth.toml, "), "{shown}");
        match e {
            AuthFileError::Token { entry, problem, .. } => (entry, problem),
            e => panic!("not an entry problem: {e}"),
        }
    }

    fn syntax(text: &str) -> String {
        match parse(text).expect_err("refused") {
            e @ AuthFileError::Syntax { .. } => {
                let shown = e.to_string();
                assert!(shown.starts_with("auth file /etc/rangelock/auth.toml: "), "{shown}");
                shown
            }
            e => panic!("not a syntax error: {e}"),
        }
    }

    fn sha256_hex(s: &str) -> String {
        Sha256::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn a_reload_revokes_removed_and_changed_tokens_only() {
        let entry = |name: &str, secret: &str, ranges: &str| {
            format!("[[token]]\nname = \"{name}\"\nsecret = \"{secret}\"\n{ranges}\n")
        };
        let old = parse(&format!(
            "{}{}{}{}",
            entry("keep", "keep-secret-0123456789", ""),
            entry("gone", "gone-secret-0123456789", ""),
            entry("narrowed", "narrow-secret-0123456789", "ranges = [\"0..100\"]"),
            entry("rekeyed", "rekeyed-secret-0123456789", ""),
        ))
        .unwrap();
        let new = parse(&format!(
            "{}{}{}{}",
            entry("rekeyed", "rekeyed-secret-9876543210", ""),
            entry("narrowed", "narrow-secret-0123456789", "ranges = [\"0..50\"]"),
            entry("keep", "keep-secret-0123456789", ""),
            entry("added", "added-secret-0123456789", ""),
        ))
        .unwrap();
        assert_eq!(old.revoked_by(&new), ["gone", "narrowed", "rekeyed"]);
        assert_eq!(old.revoked_by(&old), Vec::<String>::new());
        let keep = token_digest(b"keep-secret-0123456789");
        let who = old.authenticate(b"keep-secret-0123456789").unwrap();
        assert!(new.still_admits(&keep, who));
    }

    #[test]
    fn a_good_file_is_read_and_looked_up() {
        let text = format!(
            r#"
            [[token]]
            name = "ingest"
            secret = "{SECRET}"
            ranges = ["0..4096", "0x100000..0x200000", "0x1_000.. 0x2000"]

            [[token]]
            name = "admin"
            secret_sha256 = "{}"
            "#,
            sha256_hex("the admin's own token").to_uppercase()
        );
        let t = parse(&text).unwrap();
        assert_eq!(t.len(), 2);
        let ingest = t.authenticate(SECRET.as_bytes()).unwrap();
        assert_eq!(ingest.name(), "ingest");
        // 0..4096 and 0x1000..0x2000 touch: merged.
        assert_eq!(ingest.ranges().unwrap().as_slice(), &[0..0x2000, 0x100000..0x200000]);
        assert!(ingest.may_lock(0, 0x2000) && ingest.may_lock(0x100000, 0x200000));
        assert!(!ingest.may_lock(0x1fff, 0x2001) && !ingest.may_lock(0x2000, 0x2001));
        assert!(!ingest.may_lock(0xfffff, 0x100001) && !ingest.may_lock(0, u64::MAX));
        let admin = t.authenticate(b"the admin's own token").unwrap();
        assert_eq!(admin.name(), "admin");
        assert!(admin.ranges().is_none() && admin.may_lock(0, u64::MAX));
        assert!(t.authenticate(b"the admin's own token ").is_none());
        assert!(t.authenticate(&SECRET.as_bytes()[1..]).is_none());
        assert!(t.authenticate(b"").is_none());
        let shown = format!("{t:?}");
        assert!(!shown.contains(SECRET) && !shown.contains(&sha256_hex(SECRET)), "{shown}");
        assert!(shown.contains("ingest") && shown.contains("admin"), "{shown}");
    }

    #[test]
    fn names_are_allowed_by_byte_prefix_and_absent_names_allow_none() {
        let text = format!(
            r#"
            [[token]]
            name = "db"
            secret = "{SECRET}"
            ranges = ["0..100"]
            names = ["db/", "logs/"]

            [[token]]
            name = "all"
            secret = "all-the-names-0123456789"
            names = [""]

            [[token]]
            name = "unnamed"
            secret = "the-unnamed-only-0123456789"
            "#
        );
        let t = parse(&text).unwrap();
        let db = t.authenticate(SECRET.as_bytes()).unwrap();
        assert_eq!(db.name_prefixes().unwrap(), ["db/", "logs/"]);
        for (name, ok) in [
            (&b"db/t1"[..], true),
            (b"db/", true),
            (b"logs/2026/12", true),
            (b"db", false),
            (b"etc/passwd", false),
            (b"DB/t1", false),
            (b"xdb/t1", false),
            (b"db\xff", false),
            (b"db/\xff\x00", true),
        ] {
            assert_eq!(db.may_lock_name(name), ok, "{}", name.escape_ascii());
        }
        assert!(db.may_lock(0, 100) && !db.may_lock(0, 101), "ranges are kept as they were");
        let all = t.authenticate(b"all-the-names-0123456789").unwrap();
        assert!(all.may_lock_name(b"etc/passwd") && all.may_lock_name(b"\x00"));
        let unnamed = t.authenticate(b"the-unnamed-only-0123456789").unwrap();
        assert!(unnamed.name_prefixes().is_none() && !unnamed.may_lock_name(b"db/t1"));
        // A change of names revokes the token's sessions on a reload.
        let narrowed =
            parse(&text.replace(r#"names = ["db/", "logs/"]"#, r#"names = ["db/"]"#)).unwrap();
        assert_eq!(t.revoked_by(&narrowed), ["db"]);
        let m =
            syntax(&format!("[[token]]\nname = \"a\"\nsecret = \"{SECRET}\"\nnames = \"db/\"\n"));
        assert!(m.contains("line 4") && m.contains("invalid type"), "{m}");
    }

    #[test]
    fn ranges_contain_only_what_lies_inside_one_merged_range() {
        let r = Ranges::new(vec![100..200, 0..10, 150..300, 300..301, 500..u64::MAX]);
        assert_eq!(r.as_slice(), &[0..10, 100..301, 500..u64::MAX]);
        for (start, end, inside) in [
            (0, 10, true),
            (0, 11, false),
            (9, 10, true),
            (10, 11, false),
            (99, 101, false),
            (100, 301, true),
            (200, 302, false),
            (5, 150, false),
            (500, u64::MAX, true),
            (499, 501, false),
            (u64::MAX - 1, u64::MAX, true),
        ] {
            assert_eq!(r.contains(start, end), inside, "{start}..{end}");
        }
    }

    #[test]
    fn an_empty_file_and_a_file_without_tokens_are_refused() {
        for text in ["", "# nothing here\n", "token = []\n"] {
            let e = parse(text).unwrap_err();
            assert!(matches!(e, AuthFileError::Empty { .. }), "{e}");
            assert_eq!(
                e.to_string(),
                "auth file /etc/rangelock/auth.toml defines no token: add a [[token]] entry"
            );
        }
    }

    #[test]
    fn syntax_errors_unknown_keys_and_missing_names_give_the_line_and_no_snippet() {
        let m = syntax("[[token]]\nname = \"a\"\nsecrte = \"0123456789abcdefXYZ\"\n");
        assert!(m.contains("line 3, column 1") && m.contains("unknown field `secrte`"), "{m}");
        assert!(!m.contains("0123456789abcdefXYZ"), "the value is not shown: {m}");
        let m = syntax("tokens = 1\n");
        assert!(m.contains("line 1") && m.contains("unknown field `tokens`"), "{m}");
        let m = syntax("[[token]]\nsecret = \"0123456789abcdef\"\n");
        assert!(m.contains("missing field `name`"), "{m}");
        // An unterminated secret: the message must not quote the line.
        let m = syntax("[[token]]\nname = \"a\"\nsecret = \"0123456789abcdef-unterminated\n");
        assert!(m.contains("line 3") && !m.contains("unterminated"), "{m}");
        let m =
            syntax("[[token]]\nname = \"a\"\nsecret = \"0123456789abcdef\"\nranges = \"0..10\"\n");
        assert!(m.contains("line 4") && m.contains("invalid type"), "{m}");
    }

    #[test]
    fn every_entry_problem_is_named() {
        let ok = format!("[[token]]\nname = \"first\"\nsecret = \"{SECRET}\"\n");
        let cases: Vec<(String, &str, TokenProblem)> = vec![
            (
                "[[token]]\nname = \"\"\nsecret = \"0123456789abcdef\"\n".into(),
                "[[token]] #1",
                TokenProblem::EmptyName,
            ),
            (
                format!("{ok}[[token]]\nname = \"first\"\nsecret = \"another-secret-16b\"\n"),
                "token \"first\"",
                TokenProblem::DuplicateName,
            ),
            (
                format!("{ok}[[token]]\nname = \"second\"\nsecret = \"{SECRET}\"\n"),
                "token \"second\"",
                TokenProblem::DuplicateSecret("first".into()),
            ),
            (
                format!(
                    "{ok}[[token]]\nname = \"second\"\nsecret_sha256 = \"{}\"\n",
                    sha256_hex(SECRET)
                ),
                "token \"second\"",
                TokenProblem::DuplicateSecret("first".into()),
            ),
            ("[[token]]\nname = \"a\"\n".into(), "token \"a\"", TokenProblem::NoSecret),
            (
                format!(
                    "[[token]]\nname = \"a\"\nsecret = \"{SECRET}\"\nsecret_sha256 = \"{}\"\n",
                    sha256_hex(SECRET)
                ),
                "token \"a\"",
                TokenProblem::BothSecrets,
            ),
            (
                "[[token]]\nname = \"a\"\nsecret = \"0123456789abcde\"\n".into(),
                "token \"a\"",
                TokenProblem::SecretTooShort(15),
            ),
            (
                format!(
                    "[[token]]\nname = \"a\"\nsecret = \"{}\"\n",
                    "x".repeat(MAX_TOKEN_LEN + 1)
                ),
                "token \"a\"",
                TokenProblem::SecretTooLong(MAX_TOKEN_LEN + 1),
            ),
            (
                "[[token]]\nname = \"a\"\nsecret = \" 0123456789abcdef\"\n".into(),
                "token \"a\"",
                TokenProblem::SecretWhitespace,
            ),
            (
                "[[token]]\nname = \"a\"\nsecret = \"01234567\\n89abcdef\"\n".into(),
                "token \"a\"",
                TokenProblem::SecretWhitespace,
            ),
            (
                "[[token]]\nname = \"a\"\nsecret_sha256 = \"abc\"\n".into(),
                "token \"a\"",
                TokenProblem::BadDigest,
            ),
            (
                format!("[[token]]\nname = \"a\"\nsecret_sha256 = \"{}\"\n", "g".repeat(64)),
                "token \"a\"",
                TokenProblem::BadDigest,
            ),
            (
                format!("[[token]]\nname = \"a\"\nsecret = \"{SECRET}\"\nranges = []\n"),
                "token \"a\"",
                TokenProblem::NoRanges,
            ),
            (
                format!("[[token]]\nname = \"a\"\nsecret = \"{SECRET}\"\nnames = []\n"),
                "token \"a\"",
                TokenProblem::NoNames,
            ),
        ];
        for (text, entry, want) in cases {
            assert_eq!(problem(&text), (entry.to_owned(), want), "{text}");
        }
        for (range, why) in [
            ("10..10", "empty or inverted"),
            ("10..5", "empty or inverted"),
            ("0x10..0x8", "empty or inverted"),
            ("10-20", "not START..END"),
            ("a..20", "\"a\" is not a unit number"),
            ("0..18446744073709551616", "is not a unit number"),
        ] {
            let text = format!("[[token]]\nname = \"a\"\nsecret = \"{SECRET}\"\nranges = [\"0..1\", \"{range}\"]\n");
            let (entry, p) = problem(&text);
            assert_eq!(entry, "token \"a\"");
            match p {
                TokenProblem::BadRange { range: r, why: w } => {
                    assert_eq!(r, range);
                    assert!(w.contains(why), "{range}: {w}");
                }
                p => panic!("{range}: {p:?}"),
            }
        }
    }

    #[test]
    fn a_secret_never_appears_in_an_error() {
        // The second entry repeats the first's secret: the message names the other token,
        // not the secret.
        let text = format!(
            "[[token]]\nname = \"a\"\nsecret = \"{SECRET}\"\n[[token]]\nname = \"b\"\nsecret = \"{SECRET}\"\n"
        );
        let shown = parse(&text).unwrap_err().to_string();
        assert_eq!(
            shown,
            "auth file /etc/rangelock/auth.toml, token \"b\": token \"a\" has the same secret"
        );
    }

    #[test]
    fn load_reads_a_file_and_names_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("auth.toml");
        let e = AuthTable::load(&path).unwrap_err();
        assert!(matches!(e, AuthFileError::Read { .. }));
        assert!(e
            .to_string()
            .starts_with(&format!("cannot read the auth file {}: ", path.display())));
        std::fs::write(&path, format!("[[token]]\nname = \"a\"\nsecret = \"{SECRET}\"\n")).unwrap();
        let t = AuthTable::load(&path).unwrap();
        assert_eq!(t.path(), path);
        assert_eq!(t.principals().map(Principal::name).collect::<Vec<_>>(), ["a"]);
    }
}
