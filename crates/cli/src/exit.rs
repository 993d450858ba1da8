//! The exit codes of every subcommand, in one place ([`TABLE`], printed by `rangelock
//! --help` and kept in step with docs/OPERATIONS.md by a test), and the error type that
//! carries one up to `main`.
//!
//! The codes follow flock(1) and the shells where they have one (`1` for a lock not had,
//! `126`/`127` for a command that cannot run) and `sysexits.h` for the rest.

use std::path::PathBuf;

use rangelock_client::cluster::ClusterError;
use rangelock_client::{ClientError, Status};
use rangelock_cluster::NodeError;
use rangelock_server::{AuthFileError, TlsError};

/// The lock could not be had: `--nonblock` found it taken or `--timeout` passed
/// (`-E/--conflict-exit-code` changes it).
pub const LOCK_UNAVAILABLE: i32 = 1;
/// Any error of `bench`, and of `serve` not classified below (a config file refused, an
/// address in use, …).
pub const FAILURE: i32 = 1;
/// The command line is wrong (clap's own code).
pub const USAGE: i32 = 2;
/// `EX_NOINPUT`: a file named by `--token-file`, `--tls-ca`, `--tls-cert` or `--tls-key`
/// cannot be read, or holds no token (no certificate, no key).
pub const NOINPUT: i32 = 66;
/// `EX_UNAVAILABLE`: the server cannot be reached, or the connection or handshake failed
/// before the command ran (a TLS handshake too: an unknown CA, a name the certificate
/// does not carry, TLS on one side only).
pub const UNAVAILABLE: i32 = 69;
/// `EX_SOFTWARE`: any other error (the server answered with an unexpected error,
/// releasing the lock failed, …).
pub const SOFTWARE: i32 = 70;
/// `EX_NOPERM`: the server refused the authentication token (none given, or one it does
/// not know), or the range is outside what the token may lock.
pub const NOPERM: i32 = 77;
/// `EX_TEMPFAIL`: the lock was lost while the command ran (the server ended the session,
/// e.g. because its lease lapsed): another client may have held the range before the
/// command ended. The command was signalled (`--on-lost`) if it still ran. A loss found
/// after the command ended, before anyone else could have been granted the range, is only
/// a warning: the command's status stands.
pub const LOCK_LOST: i32 = 75;
/// The command was found but could not be executed.
pub const CANNOT_EXECUTE: i32 = 126;
/// The command was not found.
pub const NOT_FOUND: i32 = 127;

/// Every exit code, what it means, and the subcommands that use it: `rangelock --help`
/// prints it, and docs/OPERATIONS.md ("Exit codes") holds the same rows.
pub const TABLE: &[(i32, &str, &str)] = &[
    (0, "all", "success"),
    (LOCK_UNAVAILABLE, "lock, bench, serve", "the lock could not be had (lock --nonblock, --timeout; -E changes it), or any other error (bench, serve)"),
    (USAGE, "all", "usage error (a bad flag, range or address)"),
    (NOINPUT, "all", "an input file (--token-file, --tls-ca, --tls-cert, --tls-key, --auth-file, --config) cannot be read; for lock and stat also one that holds no token, certificate or key"),
    (UNAVAILABLE, "lock, stat, cluster, serve --cluster", "the server, the cluster's nodes or etcd cannot be reached, or the connection or TLS handshake failed"),
    (SOFTWARE, "lock, stat, cluster", "any other error (an unexpected answer, releasing failed, …)"),
    (LOCK_LOST, "lock", "the lock was lost while the command ran"),
    (NOPERM, "lock, stat", "the server refused the token, or the range is outside what the token may lock"),
    (CANNOT_EXECUTE, "lock", "the command was found but could not be executed"),
    (NOT_FOUND, "lock", "the command was not found"),
];

/// [`TABLE`], as `rangelock --help` prints it.
pub fn table_help() -> String {
    let mut s = String::from("Exit status (every subcommand; `lock --help` says more):\n");
    for (code, who, what) in TABLE {
        s.push_str(&format!("  {code:>3}  {who}: {what}\n"));
    }
    s.push_str(
        "  N    lock: the command's own exit code, 128+S if signal S ended it; see lock --help",
    );
    s
}

/// The rows of [`TABLE`] that apply to subcommand `sub`, as its `--help` prints them.
pub fn table_help_for(sub: &str) -> String {
    let mut s = String::from("Exit status:\n");
    for (code, who, what) in TABLE {
        if who.split(", ").any(|w| w == "all" || w == sub) {
            s.push_str(&format!("  {code:>3}  {what}\n"));
        }
    }
    s
}

/// A file named on the command line (or in the config file) that cannot be read: exits
/// [`NOINPUT`].
#[derive(Debug)]
pub struct NoInput {
    /// What the file is for, e.g. `config file`.
    pub what: &'static str,
    /// The file.
    pub path: PathBuf,
    /// What the operating system said.
    pub error: std::io::Error,
}

impl std::fmt::Display for NoInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read {} {}: {}", self.what, self.path.display(), self.error)
    }
}

impl std::error::Error for NoInput {}

/// The exit code of a `serve` error: [`NOINPUT`] when a file it was given cannot be read,
/// [`UNAVAILABLE`] when a cluster node cannot reach etcd at start, else [`FAILURE`].
pub fn serve_code(e: &anyhow::Error) -> i32 {
    let code = |c: &(dyn std::error::Error + 'static)| {
        if c.is::<NoInput>()
            || matches!(c.downcast_ref(), Some(AuthFileError::Read { .. }))
            || matches!(c.downcast_ref(), Some(TlsError::Read { .. }))
        {
            Some(NOINPUT)
        } else if matches!(c.downcast_ref(), Some(NodeError::Etcd(_))) {
            Some(UNAVAILABLE)
        } else {
            None
        }
    };
    e.chain()
        .find_map(|c| {
            // An `io::Error` does not give the error it wraps as its `source`: look inside.
            let inner = c.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
            code(c).or_else(|| inner.and_then(|i| code(i)))
        })
        .unwrap_or(FAILURE)
}

/// The exit-code table of `rangelock lock --help`.
pub fn lock_help() -> String {
    let rows = [
        (
            "N".to_owned(),
            "the command's own exit code (128+S if signal S killed it), when the \
                          lock was held until it ended; 128+S when a process sent rangelock \
                          signal S (TERM, INT, HUP, QUIT) while the command ran",
        ),
        (
            LOCK_UNAVAILABLE.to_string(),
            "lock not available: --nonblock conflict or --timeout \
                                        expired (change it with -E/--conflict-exit-code; \
                                        -q says nothing else)",
        ),
        (USAGE.to_string(), "usage error"),
        (
            NOINPUT.to_string(),
            "cannot read --token-file, --tls-ca, --tls-cert or --tls-key, or \
                               it holds no token, certificate or key",
        ),
        (
            UNAVAILABLE.to_string(),
            "cannot reach the server (connection, handshake or TLS handshake \
                                   failed) before the command ran",
        ),
        (
            SOFTWARE.to_string(),
            "any other error (unexpected server error, a server that does not serve NAME, \
             releasing failed)",
        ),
        (
            LOCK_LOST.to_string(),
            "the lock was lost while the command ran: another client may have \
                                 held the range before the command ended (the command was \
                                 signalled, --on-lost, if it still ran)",
        ),
        (
            NOPERM.to_string(),
            "the server refused the authentication token (--token-file, \
                              $RANGELOCK_AUTH_TOKEN), or the range (or NAME) is outside what \
                              the token may lock",
        ),
        (CANNOT_EXECUTE.to_string(), "the command was found but is not executable"),
        (NOT_FOUND.to_string(), "the command was not found"),
    ];
    let mut s = String::from("Exit status:\n");
    for (code, what) in rows {
        s.push_str(&format!(
            "  {code:>3}  {}\n",
            what.split_whitespace().collect::<Vec<_>>().join(" ")
        ));
    }
    s.push_str(
        "\nWithout a command, rangelock prints the fencing token and holds the lock: it exits \
         0 once TERM, INT, HUP or QUIT ended the hold and the range is released, 75 if the \
         lock was lost first.\n\n\
         Unlike flock(1), the lock is a lease: if this process is stopped or starved for \
         longer than the server's lease (`serve --lease-ms`), the server ends the session and \
         gives the range to others. rangelock then signals the command (--on-lost, default \
         TERM), waits for it and exits 75. A loss found only after the command ended, when \
         no one else can have been granted the range yet, is a warning on stderr: the \
         command's status stands.\n\n\
         While the command runs, the range stays held until it exits, whatever the signals. \
         TERM, INT, HUP or QUIT sent to rangelock by a process (kill, a supervisor) is passed \
         on to the command; the same signal again, 1 s or more later, sends it KILL. The \
         command stays in rangelock's process group, as with flock(1), so a terminal's Ctrl-C, Ctrl-\\ or \
         hang-up reaches it directly, once, and is not passed on. Only the command is \
         signalled, not processes it started. KILL of rangelock itself cannot be caught: it \
         releases the range, and the command is killed with it (KILL, so that it cannot run \
         on unlocked; --on-lost none leaves it running). STOP cannot be caught either: a \
         stop longer than the lease loses the lock.",
    );
    s
}

/// An error on its way to `main`, with the exit code it maps to. `main` prints
/// `rangelock: {error:#}` (one line: the error and its causes) and exits with `code`.
#[derive(Debug)]
pub struct Failure {
    /// The process's exit code.
    pub code: i32,
    /// What went wrong.
    pub error: anyhow::Error,
    /// Print nothing: the exit code says it (`lock --quiet` when the lock cannot be had).
    pub quiet: bool,
}

impl Failure {
    /// A failure with an explicit code.
    pub fn new(code: i32, error: impl Into<anyhow::Error>) -> Failure {
        Failure { code, error: error.into(), quiet: false }
    }

    /// The same failure, told by its exit code alone.
    pub fn quietly(self) -> Failure {
        Failure { quiet: true, ..self }
    }

    /// A client error: [`UNAVAILABLE`] if the server could not be reached or the
    /// connection failed, else [`SOFTWARE`].
    pub fn client(error: ClientError) -> Failure {
        Failure::new(client_code(&error), error)
    }

    /// A cluster client error: [`NOPERM`] for an authentication refusal or a range
    /// outside the token's ranges, else `otherwise`.
    pub fn cluster(error: ClusterError, otherwise: i32) -> Failure {
        let code = match &error {
            ClusterError::Client(e) if client_code(e) == NOPERM => NOPERM,
            ClusterError::Server(Status::Forbidden) => NOPERM,
            _ => otherwise,
        };
        Failure::new(code, error)
    }

    /// Adds what was being done (`doing: cause`).
    pub fn context(self, doing: impl std::fmt::Display + Send + Sync + 'static) -> Failure {
        Failure { error: self.error.context(doing), ..self }
    }
}

/// The exit code of a client error: [`UNAVAILABLE`] for the connection (TLS included; the
/// files were read before, see [`NOINPUT`]), [`NOPERM`] for an
/// authentication refusal or `FORBIDDEN`, else [`SOFTWARE`].
pub fn client_code(e: &ClientError) -> i32 {
    match e {
        ClientError::AuthRequired
        | ClientError::AuthFailed
        | ClientError::Server(Status::Forbidden) => NOPERM,
        ClientError::Connect { .. }
        | ClientError::Io(_)
        | ClientError::Handshake(_)
        | ClientError::UnsupportedVersion { .. }
        | ClientError::Tls(_)
        | ClientError::TlsRequired
        | ClientError::ConnectionLost => UNAVAILABLE,
        _ => SOFTWARE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_table_lists_every_code() {
        let h = lock_help();
        for code in [
            LOCK_UNAVAILABLE,
            USAGE,
            NOINPUT,
            UNAVAILABLE,
            SOFTWARE,
            LOCK_LOST,
            NOPERM,
            CANNOT_EXECUTE,
            NOT_FOUND,
        ] {
            assert!(h.contains(&format!("{code:>3}  ")), "{code} missing from\n{h}");
        }
        assert!(h.contains("flock(1)") && h.contains("lease"));
        assert!(h.contains("Without a command, rangelock prints the fencing token"), "{h}");
        assert!(h.contains("the same signal again, 1 s or more later, sends it KILL"), "{h}");
    }

    /// docs/OPERATIONS.md's table has the rows of [`TABLE`], no more, no fewer.
    #[test]
    fn the_operations_doc_has_the_table() {
        let doc = include_str!("../../../docs/OPERATIONS.md");
        let start = doc.find("## Exit codes").expect("OPERATIONS.md: ## Exit codes");
        let section = &doc[start..];
        let section = &section[..section[3..].find("\n## ").map_or(section.len(), |e| e + 3)];
        let rows: Vec<&str> = section
            .lines()
            .filter(|l| l.starts_with("| ") && l.as_bytes().get(2).is_some_and(u8::is_ascii_digit))
            .collect();
        for (code, who, what) in TABLE {
            let row = format!("| {code} | {who} | {what} |");
            assert!(
                rows.contains(&row.as_str()),
                "OPERATIONS.md lacks the row\n{row}\nin\n{section}"
            );
        }
        assert_eq!(rows.len(), TABLE.len(), "OPERATIONS.md has rows TABLE does not:\n{section}");
    }

    #[test]
    fn serve_errors_map_to_codes() {
        let no_input = anyhow::Error::new(NoInput {
            what: "config file",
            path: "/nope".into(),
            error: std::io::ErrorKind::NotFound.into(),
        });
        assert_eq!(serve_code(&no_input), NOINPUT);
        let tls = TlsError::Read {
            what: "certificate",
            path: "/nope".into(),
            error: std::io::ErrorKind::NotFound.into(),
        };
        // As `Server::start` returns it: inside an io::Error, under a context.
        let wrapped = anyhow::Error::new(std::io::Error::other(tls)).context("starting");
        assert_eq!(serve_code(&wrapped), NOINPUT);
        assert_eq!(serve_code(&anyhow::anyhow!("address in use")), FAILURE);
    }

    #[test]
    fn connection_failures_are_unavailable_and_the_rest_software() {
        assert_eq!(client_code(&ClientError::ConnectionLost), UNAVAILABLE);
        assert_eq!(client_code(&ClientError::Tls("unknown issuer".into())), UNAVAILABLE);
        assert_eq!(client_code(&ClientError::TlsRequired), UNAVAILABLE);
        assert_eq!(
            client_code(&ClientError::Server(rangelock_client::Status::ShuttingDown)),
            SOFTWARE
        );
        for e in [
            ClientError::AuthRequired,
            ClientError::AuthFailed,
            ClientError::Server(Status::Forbidden),
        ] {
            assert_eq!(client_code(&e), NOPERM, "{e}");
        }
        let cluster = |e| Failure::cluster(e, SOFTWARE).code;
        assert_eq!(cluster(ClusterError::Server(Status::Forbidden)), NOPERM);
        assert_eq!(cluster(ClusterError::Client(ClientError::AuthFailed)), NOPERM);
        assert_eq!(cluster(ClusterError::WouldBlock), SOFTWARE);
    }
}
