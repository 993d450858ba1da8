//! `rangelock lock [NAME] RANGE [-s] [-w SECS] [--] CMD ARGS…` (or `-c 'command'`): run a
//! command while holding a range lock of a `rangelock serve` server, in the manner of
//! flock(1); the range grammar is in the `range_arg` module. With a NAME (or `--name`), the
//! range is of that named resource; how NAME is told from RANGE is the `name_arg` module's
//! rule. Without a command, hold the lock as
//! `etcdctl lock NAME` does: print the fencing token on stdout and hold until SIGTERM,
//! SIGINT, SIGHUP or SIGQUIT, then release and exit 0 (75 if the lock is lost first).
//!
//! # Where the command starts
//!
//! As `flock FILE CMD ARGS…` reads its arguments: options come first (before or after
//! RANGE), RANGE is the first argument that is not an option, and the next one that is
//! not an option starts the command; from there on every argument is the command's, `-c`
//! or `--server` included (clap's `trailing_var_arg`). `--` before the command is always
//! allowed, and needed for a command that starts with `-`: such an argument is otherwise
//! read as an option, and one `lock` does not know is refused with the hint to add `--`
//! ([`with_dashdash_hint`]). The rule looks only at what follows RANGE: the optional NAME
//! before it is taken out of the arguments before clap reads them (`name_arg`), and this
//! rule is the same with a name as without.
//!
//! The child sees the lock's fencing token in `RANGELOCK_TOKEN`. With `--cluster` the
//! lock is taken through a cluster (see the `lock_cluster` module).
//!
//! # A command never runs without its lock
//!
//! If this process dies while the command runs (SIGKILL, which it cannot catch, the OOM
//! killer, a crash), the server releases the lock when the connection closes, and the
//! command is killed in the same exit: the child asks the kernel for SIGKILL at its parent's death
//! (`PR_SET_PDEATHSIG`, [`die_with_parent`]). Unlike flock(1), whose lock is an open file
//! the child shares and keeps, the lock here is this process's session, so a command left
//! running would run unlocked. SIGKILL, not SIGTERM: the range is already released when
//! the signal comes, and a command that caught SIGTERM to clean up would clean up
//! unlocked (or, ignoring it, run on). The kernel closes the connection a moment before
//! it signals the command, both in this process's exit, and the command ends once it is
//! next scheduled: it can outlive the lock by that much, not by a command's own choice.
//! Only the command is killed, not processes it started (as with the other signals).
//! `--on-lost none` asks to leave the command running when the lock is lost, and leaves it
//! running here too.
//!
//! # A lapsed lease ends the lock
//!
//! Unlike flock(1), the lock is a lease kept alive by the client's keepalive thread. If
//! this process is stopped (SIGSTOP, a debugger) or starved for longer than the server's
//! lease, the server ends the session and hands the range to others while the command
//! still runs. A watcher thread waits for that ([`Client::wait_lost`]): on a loss it sends
//! the command `--on-lost` (default SIGTERM; `none` sends nothing), says so on stderr,
//! waits for the command and exits [`exit::LOCK_LOST`] (75). Nothing else runs on the
//! client while the command runs — the main thread only waits for the child — so the
//! keepalive thread is never held up by this process's own work.
//!
//! # Signals do not end the lock before the command
//!
//! Once the lock is held, SIGTERM, SIGINT, SIGHUP and SIGQUIT no longer end this process:
//! a process's signal is passed on to the command (the same one again, 1 s or more later,
//! sends SIGKILL), a terminal's is left to the terminal, which gave it to the command too,
//! and the range is released only after the command has exited (see the `signals` module
//! for the rule).
//!
//! # Exit status
//!
//! See [`exit`]: the command's code (128 + signal if a signal killed it) when the lock was
//! kept until it ended, or 128 + N if a process sent this one signal N meanwhile; 1
//! (`--conflict-exit-code`) when the lock cannot be had; 66 when a `--token-file` or
//! `--tls-*` file cannot be read; 69 when the server cannot be reached (TLS handshakes
//! included); 70 for other errors, a server that serves no names included (`-q` prints
//! nothing for the 1); 75 when the lock was lost; 77 when the server refused the
//! authentication token or the range (or name) is outside what the token may lock; 126/127 when
//! the command cannot be executed / is not found.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::anyhow;
use std::io::Write;

use rangelock_client::{Client, ClientError, ConnectOptions, Endpoint, Mode, Wait};

use crate::connect::Target;
use crate::duration::parse_timeout;
use crate::exit::{self, Failure};
use crate::name_arg::{NameArg, Refusal, RULE};
use crate::range_arg::{parse_range, RangeArg};

/// The usage line of `rangelock lock`: NAME is no argument clap knows (see `name_arg`).
const USAGE: &str = "rangelock lock [OPTIONS] [NAME] <RANGE> [--] [CMD]...";

/// What `lock --help` says after the options: the NAME rule, then the exit codes.
fn after_help() -> String {
    format!("NAME and RANGE: {RULE}\n\n{}", exit::lock_help())
}

/// Arguments of `rangelock lock`.
#[derive(Debug, clap::Args)]
#[command(override_usage = USAGE, after_help = after_help())]
pub struct LockArgs {
    /// The units to lock: `N` (one unit), `A..B` (B left out), `A..=B`, `..B`, `A..` (to
    /// the end), `A..+LEN`; each number decimal or 0x hex, optionally with a binary size
    /// suffix `KiB`, `MiB`, `GiB`, `TiB`, `PiB` or `EiB` (`4KiB` is 4096 units; `K`, `kB`,
    /// `M` are refused as ambiguous). Of the resource NAME when one is given (the argument
    /// before RANGE, or --name), else of the unnamed resource.
    #[arg(value_parser = parse_range, value_name = "RANGE")]
    range: RangeArg,
    /// Lock RANGE of the resource with this name: any string or a file path, taken as
    /// bytes (1 to 1024); locks of different names never conflict. The same as the NAME
    /// argument before RANGE, but never mistaken for a range (see "NAME and RANGE" below).
    #[arg(id = "name", long = "name", value_name = "NAME")]
    name_flag: Option<OsString>,
    /// The name, from --name or the NAME argument ([`LockArgs::settle_name`]).
    #[arg(skip)]
    name: Option<NameArg>,
    /// Take an exclusive lock: the default (flock(1)'s -x, -e).
    #[arg(short = 'x', long, short_alias = 'e', conflicts_with = "shared")]
    exclusive: bool,
    /// Take a shared lock instead of an exclusive one.
    #[arg(short, long)]
    shared: bool,
    /// Fail instead of waiting if the range is taken.
    #[arg(short, long, conflicts_with = "timeout")]
    nonblock: bool,
    /// Wait at most this long: seconds, fractions allowed, as flock(1)'s -w (`1.5`), or
    /// with a unit (`500ms`, `2s`, `1m`, `1h30m`); at most 49d 17h 2m 47s 295ms. `0` is
    /// --nonblock.
    #[arg(short, long, visible_short_alias = 'w', visible_alias = "wait", value_name = "SECS")]
    #[arg(value_parser = parse_timeout)]
    timeout: Option<Duration>,
    #[command(flatten)]
    pub(crate) target: crate::connect::TargetArgs,
    #[command(flatten)]
    connect: crate::connect::ConnectArgs,
    /// Exit code when the lock cannot be had.
    #[arg(short = 'E', long, default_value_t = exit::LOCK_UNAVAILABLE)]
    conflict_exit_code: i32,
    /// Print nothing when the lock cannot be had (--nonblock, --timeout); the exit code
    /// still says so. Other errors are still printed.
    #[arg(short, long)]
    quiet: bool,
    /// Signal sent to the command if the lock is lost while it runs (the server ended the
    /// session, e.g. its lease lapsed): a name (`TERM`, `SIGKILL`, `INT`, `HUP`, `USR1`…),
    /// a number, or `none`. `none` also leaves the command running if rangelock itself is
    /// killed (SIGKILL), which otherwise kills the command at once: the server then
    /// releases the range. (Other signals sent to rangelock are another matter: the lock
    /// is held until the command exits; see below.)
    #[arg(long, value_name = "SIGNAL", default_value = "TERM", value_parser = parse_signal)]
    on_lost: OnLost,
    /// Run this command with `/bin/sh -c` (flock(1)'s -c) instead of `[--] CMD ARGS…`.
    #[arg(short = 'c', long = "command", value_name = "COMMAND", conflicts_with = "command")]
    shell_command: Option<String>,
    /// The command and its arguments, as flock(1) takes them: rangelock's options go before
    /// it, and the first argument after RANGE that is not an option starts the command;
    /// every argument from there on is the command's (`rangelock lock 0..10 sh -c 'x'`).
    /// A command that starts with `-` needs `--` before it (`rangelock lock 0..10 -- -x`);
    /// `--` is allowed before any command. The command sees the fencing token in
    /// `RANGELOCK_TOKEN`; with --cluster, a range across partitions is locked piece by
    /// piece, every piece's token is in `RANGELOCK_TOKENS` (`START..END=TOKEN`,
    /// space-separated) and `RANGELOCK_TOKEN` is set for a one-piece range; the lock
    /// survives a node's failover (reclaimed at the new owner) or is lost (see --on-lost).
    /// Without a command (nor -c): print the token (`RANGELOCK_TOKENS`' form for several
    /// pieces) on stdout and hold the lock until SIGTERM, SIGINT, SIGHUP or SIGQUIT, then
    /// release it and exit 0.
    #[arg(trailing_var_arg = true, value_name = "CMD")]
    command: Vec<String>,
}

impl LockArgs {
    /// Sets the name: the NAME argument before RANGE (`name_arg::split_name` took it out
    /// of the arguments) or `--name`'s; both given, or a `--name` that is no name (empty,
    /// too long), is refused. Checked here rather than by clap, whose message would quote
    /// a name of any length whole.
    pub(crate) fn settle_name(&mut self, argument: Option<NameArg>) -> Result<(), Refusal> {
        self.name = match (argument, &self.name_flag) {
            (Some(_), Some(_)) => return Err(Refusal::Twice),
            (Some(name), None) => Some(name),
            (None, Some(flag)) => Some(NameArg::parse(flag).map_err(Refusal::BadName)?),
            (None, None) => None,
        };
        Ok(())
    }
}

/// `rangelock lock`'s usage error for `refusal`, formatted as clap's own (exit 2); `cmd`
/// is the whole command line's definition.
pub(crate) fn usage_error(cmd: &mut clap::Command, refusal: &Refusal) -> clap::Error {
    use clap::error::ErrorKind;
    let kind = match refusal {
        Refusal::BadName(_) => ErrorKind::ValueValidation,
        Refusal::Ambiguous { .. } | Refusal::Twice => ErrorKind::ArgumentConflict,
    };
    let lock = cmd.find_subcommand_mut("lock").expect("the lock subcommand");
    lock.error(kind, refusal)
}

/// The hint for a `lock` argument that looks like an option and is none: it may be a
/// command that starts with `-`, or a misspelled option before the command.
const DASHDASH_HINT: &str = "add `--` before the command if it starts with `-`: \
                             rangelock lock [OPTIONS] [NAME] RANGE -- CMD [ARGS]...";

/// Clap's error for `rangelock lock` with an argument it does not know, with the hint to
/// add `--` in place of clap's generic "to pass '-x' as a value" (a "similar argument
/// exists" suggestion stays). Other errors are returned as they are.
pub(crate) fn with_dashdash_hint(mut e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return e;
    }
    let mut tips = match e.remove(ContextKind::Suggested) {
        Some(ContextValue::StyledStrs(tips)) => tips,
        _ => Vec::new(),
    };
    tips.retain(|t| !t.to_string().contains("as a value"));
    tips.push(DASHDASH_HINT.into());
    e.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    e
}

/// How to fail when the lock cannot be had: `-E` and `-q`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Conflict {
    /// The exit code (`-E`).
    pub(crate) code: i32,
    /// Print nothing (`-q`).
    pub(crate) quiet: bool,
}

impl Conflict {
    /// `lock WHAT not available: WHY`, quiet with `-q`.
    pub(crate) fn failure(self, what: &str, why: impl std::fmt::Display) -> Failure {
        let f = Failure::new(self.code, anyhow!("lock {what} not available: {why}"));
        if self.quiet {
            f.quietly()
        } else {
            f
        }
    }
}

/// What to do to the command when the lock is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnLost {
    /// Send this signal.
    Signal(libc::c_int),
    /// Send nothing; just wait for the command.
    Nothing,
}

/// Signals by name (without `SIG`).
const SIGNALS: &[(&str, libc::c_int)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ABRT", libc::SIGABRT),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
];

fn parse_signal(s: &str) -> Result<OnLost, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(OnLost::Nothing);
    }
    if let Ok(n) = t.parse::<libc::c_int>() {
        // SIGRTMAX is not a constant in libc; 64 is Linux's.
        return if (1..=64).contains(&n) {
            Ok(OnLost::Signal(n))
        } else {
            Err(format!("signal number {n} is out of range (1..=64)"))
        };
    }
    let upper = t.to_ascii_uppercase();
    let name = upper.strip_prefix("SIG").unwrap_or(&upper);
    SIGNALS.iter().find(|(n, _)| *n == name).map(|&(_, sig)| OnLost::Signal(sig)).ok_or_else(|| {
        let names: Vec<&str> = SIGNALS.iter().map(|(n, _)| *n).collect();
        format!("unknown signal {t:?} (expected none, a number, or {})", names.join(", "))
    })
}

fn signal_name(sig: libc::c_int) -> String {
    match SIGNALS.iter().find(|&&(_, s)| s == sig) {
        Some((name, _)) => format!("SIG{name}"),
        None => format!("signal {sig}"),
    }
}

/// What the watcher and the main thread share about the child.
#[derive(Debug, Default)]
struct ChildState {
    /// The child has exited (it may not be reaped yet, so its pid is still ours).
    exited: bool,
    /// The watcher found the lock lost while the child ran.
    lost: bool,
}

/// A held lock, whoever holds it: a server session or a cluster guard.
pub(crate) trait Held {
    /// Environment variables that tell the command its tokens.
    fn env(&self) -> Vec<(&'static str, String)>;
    /// The line a hold without a command prints: the token, or for several pieces
    /// `RANGELOCK_TOKENS`' value.
    fn token_line(&self) -> String {
        let env = self.env();
        let get = |k| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        get("RANGELOCK_TOKEN").or_else(|| get("RANGELOCK_TOKENS")).unwrap_or_default()
    }
    /// A function that blocks until the lock is lost and says why (run on the watcher
    /// thread; it may never return).
    fn watcher(&self) -> Box<dyn FnOnce() -> String + Send>;
    /// Releases the lock after the command ended (`what` names the range, `prog` the
    /// command).
    fn release(self: Box<Self>, what: &str, prog: &str) -> Result<(), Failure>;
}

/// A lock of a single server.
struct ServerLock {
    client: Arc<Client>,
    guard: rangelock_client::LockGuard,
}

impl Held for ServerLock {
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![("RANGELOCK_TOKEN", self.guard.token().to_string())]
    }

    fn watcher(&self) -> Box<dyn FnOnce() -> String + Send> {
        let client = self.client.clone();
        Box::new(move || client.wait_lost().to_string())
    }

    fn release(self: Box<Self>, what: &str, prog: &str) -> Result<(), Failure> {
        let ended = std::time::Instant::now();
        match self.guard.unlock() {
            Ok(()) => Ok(()),
            Err(ClientError::ConnectionLost) => {
                let loss = self.client.wait_lost_timeout(Duration::ZERO);
                // The session held the lock when the server answered the keepalive sent
                // at `alive_at`; one that lapsed was ended a lease after that at the
                // earliest. A command that ended before ran under the lock.
                let safe_until = |l: &rangelock_client::ConnectionLoss| match l.lease_lapsed() {
                    true => l.alive_at + l.lease,
                    false => l.alive_at,
                };
                if let Some(l) = loss.as_ref().filter(|l| ended <= safe_until(l)) {
                    eprintln!(
                        "rangelock: warning: lock {what} lost after {prog} ended ({l}); no one \
                         else can have held it while {prog} ran"
                    );
                    return Ok(());
                }
                let why = loss.map_or_else(|| "connection lost".to_owned(), |l| l.to_string());
                Err(Failure::new(
                    exit::LOCK_LOST,
                    anyhow!("lock {what} lost as {prog} ended: {why}"),
                ))
            }
            Err(e) => {
                Err(Failure::new(exit::SOFTWARE, e).context(format!("releasing the lock {what}")))
            }
        }
    }
}

/// Locks `range` of resource `name` (`None`: the unnamed resource) on the single server
/// `server`; `what` names both in messages.
fn lock_server(
    (name, range, what): (Option<&NameArg>, &RangeArg, &str),
    server: &Endpoint,
    options: &ConnectOptions,
    how: (Mode, Wait),
    conflict: Conflict,
) -> Result<Box<dyn Held>, Failure> {
    let client = Client::connect_with(server, options).map_err(|e| connect_failure(e, server))?;
    let locked = match name {
        None => client.lock(range.range.clone(), how.0, how.1),
        Some(n) => {
            client.resource(&n.bytes).and_then(|r| r.lock(range.range.clone(), how.0, how.1))
        }
    };
    let guard = match locked {
        Ok(g) => g,
        Err(e @ (ClientError::WouldBlock | ClientError::TimedOut)) => {
            return Err(conflict.failure(what, e));
        }
        Err(e) if name.is_some() => {
            return Err(named_failure(e).context(format!("locking {what} on {server}")))
        }
        Err(e) => return Err(Failure::client(e).context(format!("locking {what} on {server}"))),
    };
    Ok(Box::new(ServerLock { client: Arc::new(client), guard }))
}

/// A named lock the server would not take: one that serves no names (an older version, or
/// `UNKNOWN_OP`: a cluster node or an engine without names) is [`exit::SOFTWARE`], a
/// token that may not lock names [`exit::NOPERM`], as other refusals of a token.
fn named_failure(e: ClientError) -> Failure {
    use rangelock_client::Status;
    let no_names = "the server does not serve named resources";
    match e {
        ClientError::NamesUnsupported { version } => Failure::new(
            exit::SOFTWARE,
            anyhow!("{no_names}: it speaks protocol version {version}, names need version 5"),
        ),
        ClientError::Server(Status::UnknownOp) => Failure::new(
            exit::SOFTWARE,
            anyhow!("{no_names}: it answered UNKNOWN_OP (it serves only the unnamed resource)"),
        ),
        ClientError::Server(Status::Forbidden) => Failure::new(
            exit::NOPERM,
            anyhow!("server refused a named lock (FORBIDDEN): the token may not lock names"),
        ),
        e => Failure::client(e),
    }
}

/// Locks, runs the command (or holds), releases; returns the exit code (see [`exit`]).
pub fn run(args: LockArgs) -> Result<i32, Failure> {
    let what = match &args.name {
        Some(name) => format!("{} of {name}", args.range),
        None => args.range.to_string(),
    };
    let mode = if args.shared { Mode::Shared } else { Mode::Exclusive };
    let wait = match (args.nonblock, args.timeout) {
        // flock(1) takes `-w 0` for -n too.
        (true, _) | (false, Some(Duration::ZERO)) => Wait::Try,
        (false, Some(d)) => Wait::Timeout(d),
        (false, None) => Wait::Forever,
    };
    let conflict = Conflict { code: args.conflict_exit_code, quiet: args.quiet };
    let target = args.target.target()?;
    let options = args.connect.options()?;
    let held = match target {
        Target::Cluster { given, name } => crate::lock_cluster::lock(
            (args.name.as_ref(), &args.range, &what),
            &given,
            &name,
            (mode, wait),
            conflict,
            options,
        )?,
        Target::Server(server) => lock_server(
            (args.name.as_ref(), &args.range, &what),
            &server,
            &options,
            (mode, wait),
            conflict,
        )?,
    };
    let command = match (&args.shell_command, args.command.as_slice()) {
        (Some(c), _) => vec!["/bin/sh".to_owned(), "-c".to_owned(), c.clone()],
        (None, []) => return hold(held, &what),
        (None, given) => given.to_vec(),
    };
    let (prog, rest) = command.split_first().expect("a command");
    // From here on a signal no longer ends this process while the range is held.
    let mut catcher = crate::signals::Catcher::install()
        .map_err(|e| Failure::new(exit::SOFTWARE, e).context("catching signals"))?;
    if let Some(sig) = catcher.before_start() {
        eprintln!("rangelock: got {} before {prog} started; not starting it", signal_name(sig));
        held.release(&what, prog)?;
        return Ok(128 + sig);
    }
    let mut command = std::process::Command::new(prog);
    command.args(rest).envs(held.env());
    if args.on_lost != OnLost::Nothing {
        die_with_parent(&mut command);
    }
    // Spawned from the main thread, which lives as long as the process: the death signal
    // set in the child fires when the thread that forked it ends, not the process.
    let spawned = command.spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let _ = held.release(&what, prog);
            return Err(spawn_failure(prog, &e));
        }
    };

    let state = Arc::new(Mutex::new(ChildState::default()));
    let pid = child.id();
    let forwarded = {
        let state = state.clone();
        catcher
            .forward(move |sig| signal_unreaped(&state, pid, sig), prog.clone(), pid)
            .map_err(|e| Failure::new(exit::SOFTWARE, e).context("starting the signal thread"))?
    };
    {
        let (watch, state, on_lost, prog) =
            (held.watcher(), state.clone(), args.on_lost, prog.clone());
        let what = what.clone();
        // Detached: it blocks until a loss, which may never come; exiting ends it.
        std::thread::Builder::new()
            .name("rangelock-watch".into())
            .spawn(move || {
                let loss = watch();
                let mut st = state.lock().unwrap_or_else(PoisonError::into_inner);
                if st.exited {
                    return; // the main thread reports it
                }
                st.lost = true;
                let action = match on_lost {
                    OnLost::Signal(sig) => {
                        // SAFETY: kill(2) has no memory effects. `pid` is our child and is
                        // not reaped: the main thread reaps it only after setting
                        // `exited` under this lock, which we hold and saw clear.
                        let r = unsafe { libc::kill(pid as libc::pid_t, sig) };
                        if r == 0 {
                            format!("sent {} to {prog} (pid {pid})", signal_name(sig))
                        } else {
                            let e = std::io::Error::last_os_error();
                            format!("could not send {} to {prog}: {e}", signal_name(sig))
                        }
                    }
                    OnLost::Nothing => format!("{prog} (pid {pid}) left running (--on-lost none)"),
                };
                eprintln!("rangelock: lock {what} lost: {loss}; {action}");
            })
            .map_err(|e| Failure::new(exit::SOFTWARE, e).context("starting the watcher"))?;
    }

    let waited = wait_exited_keep_zombie(pid);
    let lost = {
        let mut st = state.lock().unwrap_or_else(PoisonError::into_inner);
        st.exited = true;
        st.lost
    };
    // Reap it (the pid is no longer needed: the watcher will not signal it now).
    let status = waited
        .and_then(|()| child.wait())
        .map_err(|e| Failure::new(exit::SOFTWARE, e).context(format!("waiting for {prog}")))?;
    if lost {
        return Ok(exit::LOCK_LOST);
    }
    held.release(&what, prog)?;
    // A signal a process sent us, passed on to the command, is our exit's reason.
    let code = status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0));
    Ok(forwarded.first().map_or(code, |sig| 128 + sig))
}

/// No command: prints the token and holds the lock until a signal ends the hold (exit 0,
/// after the release) or the lock is lost (exit [`exit::LOCK_LOST`]).
fn hold(held: Box<dyn Held>, what: &str) -> Result<i32, Failure> {
    const HOLD: &str = "the hold";
    /// What ends the hold.
    enum End {
        Signal,
        Lost(String),
    }
    let (tx, rx) = std::sync::mpsc::channel();
    // Caught before the token is printed: whoever reads it may signal at once.
    let caught = crate::signals::Catcher::install().and_then(|c| {
        let tx = tx.clone();
        c.on_first(move |_| {
            let _ = tx.send(End::Signal);
        })
    });
    if let Err(e) = caught {
        let _ = held.release(what, HOLD);
        return Err(Failure::new(exit::SOFTWARE, e).context("catching signals"));
    }
    let watch = held.watcher();
    // Detached: it blocks until a loss, which may never come; exiting ends it.
    let watcher = std::thread::Builder::new().name("rangelock-watch".into()).spawn(move || {
        let _ = tx.send(End::Lost(watch()));
    });
    if let Err(e) = watcher {
        let _ = held.release(what, HOLD);
        return Err(Failure::new(exit::SOFTWARE, e).context("starting the watcher"));
    }
    let printed = {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", held.token_line()).and_then(|()| out.flush())
    };
    if let Err(e) = printed {
        let _ = held.release(what, HOLD);
        return Err(Failure::new(exit::SOFTWARE, e).context("printing the token"));
    }
    match rx.recv() {
        Ok(End::Lost(why)) => {
            eprintln!("rangelock: lock {what} lost: {why}");
            Ok(exit::LOCK_LOST)
        }
        Ok(End::Signal) | Err(_) => {
            held.release(what, HOLD)?;
            Ok(0)
        }
    }
}

/// The signal a command gets when `rangelock lock` dies without releasing (SIGKILL of
/// it): SIGKILL, the one signal the command can neither catch nor ignore. The range is
/// released as the process dies, so a command left to clean up after SIGTERM would do it
/// without the lock.
const PARENT_DEATH_SIGNAL: libc::c_int = libc::SIGKILL;

/// Makes the child `command` starts get [`PARENT_DEATH_SIGNAL`] when this process dies
/// (`PR_SET_PDEATHSIG`): then the server releases the range, so the command must not run
/// on. A parent that died before the child set it is found by `getppid`, and the child
/// exits before running the command.
///
/// The kernel sends the signal when the *thread* that forked the child ends: call
/// `spawn` from a thread that lives until the process exits (the main thread).
fn die_with_parent(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // The child's parent: this process.
    let parent = std::process::id() as libc::pid_t;
    let hook = move || {
        // prctl reads its second argument as an unsigned long.
        let sig = PARENT_DEATH_SIGNAL as libc::c_ulong;
        // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory of
        // ours; like getppid and _exit it is async-signal-safe, as a pre_exec hook needs.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: getppid(2) cannot fail and has no memory effects.
        if unsafe { libc::getppid() } != parent {
            // SAFETY: _exit(2) ends this forked child at once without running anything of
            // the parent's (no atexit handlers, no unwinding through the parent's frames).
            unsafe { libc::_exit(128 + PARENT_DEATH_SIGNAL) };
        }
        Ok(())
    };
    // SAFETY: the hook runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit), allocating nothing and taking
    // no lock (io::Error::last_os_error only reads errno).
    unsafe { command.pre_exec(hook) };
}

/// Sends child `pid` signal `sig` (0: none, only asks) unless it has exited (`None`).
fn signal_unreaped(
    state: &Mutex<ChildState>,
    pid: u32,
    sig: libc::c_int,
) -> Option<std::io::Result<()>> {
    let st = state.lock().unwrap_or_else(PoisonError::into_inner);
    if st.exited {
        return None;
    }
    // SAFETY: kill(2) has no memory effects. `pid` is our child and is not reaped: the
    // main thread reaps it only after setting `exited` under this lock, which we hold and
    // saw clear.
    let r = unsafe { libc::kill(pid as libc::pid_t, sig) };
    Some(if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) })
}

/// A failed connect: the client's message names the endpoint already.
pub(crate) fn connect_failure(e: ClientError, server: &Endpoint) -> Failure {
    match e {
        e @ ClientError::Connect { .. } => Failure::client(e),
        ClientError::AuthRequired => Failure::new(
            exit::NOPERM,
            anyhow!("{} (give one with --token-file FILE or ${})", e, crate::connect::TOKEN_ENV),
        )
        .context(format!("connecting to {server}")),
        e => Failure::client(e).context(format!("connecting to {server}")),
    }
}

/// 127 for a command not found, 126 for one that cannot be executed, as the shells do.
fn spawn_failure(prog: &str, e: &std::io::Error) -> Failure {
    let (code, what) = match (e.kind(), e.raw_os_error()) {
        (std::io::ErrorKind::NotFound, _) => (exit::NOT_FOUND, "command not found"),
        (std::io::ErrorKind::PermissionDenied, _) => (exit::CANNOT_EXECUTE, "permission denied"),
        (_, Some(libc::ENOEXEC)) => (exit::CANNOT_EXECUTE, "not an executable format"),
        (_, Some(libc::EISDIR)) => (exit::CANNOT_EXECUTE, "is a directory"),
        _ => return Failure::new(exit::SOFTWARE, anyhow!("cannot run {prog}: {e}")),
    };
    Failure::new(code, anyhow!("{prog}: {what}"))
}

/// Waits until child `pid` has exited without reaping it (`waitid` with `WNOWAIT`), so
/// its pid stays ours — and safe to signal — until we reap it.
fn wait_exited_keep_zombie(pid: u32) -> std::io::Result<()> {
    loop {
        // SAFETY: siginfo_t is plain old data; all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid(2) on our own child, writing only into `info`, which is valid
        // for the call.
        let r = unsafe {
            libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_parse_by_name_with_or_without_sig_by_number_or_none() {
        assert_eq!(parse_signal("TERM"), Ok(OnLost::Signal(libc::SIGTERM)));
        assert_eq!(parse_signal("SIGKILL"), Ok(OnLost::Signal(libc::SIGKILL)));
        assert_eq!(parse_signal("int"), Ok(OnLost::Signal(libc::SIGINT)));
        assert_eq!(parse_signal("sigusr1"), Ok(OnLost::Signal(libc::SIGUSR1)));
        assert_eq!(parse_signal("HUP"), Ok(OnLost::Signal(libc::SIGHUP)));
        assert_eq!(parse_signal("9"), Ok(OnLost::Signal(9)));
        assert_eq!(parse_signal("none"), Ok(OnLost::Nothing));
        assert!(parse_signal("0").is_err());
        assert!(parse_signal("65").is_err());
        assert!(parse_signal("BOGUS").unwrap_err().contains("TERM"));
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
    }
}
