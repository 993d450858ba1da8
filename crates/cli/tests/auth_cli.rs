//! Authentication through the binary: `serve --auth-file` refuses a file it cannot use
//! (naming it) and does not start; `lock` and `stat` authenticate with `--token-file` or
//! `$RANGELOCK_AUTH_TOKEN`, and a missing or wrong token, or a range outside the token's
//! ranges, exits 77 with a clear message that does not show the token. The server's log,
//! at DEBUG, never shows a token either; a session holding a lock meanwhile is unaffected.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{rangelock, signal, tempdir, wait_bounded};
use rangelock_client::{Client, ConnectOptions, Endpoint, Mode, Wait};

/// May lock anything; stored in the auth file as itself.
const FULL: &str = "cli-full-token-8d7c6b5a4f3e";
/// May lock `0..4096`; stored in the auth file as its SHA-256 only.
const INGEST: &str = "cli-ingest-token-1a2b3c4d5e6f";
/// Known to no server.
const WRONG: &str = "cli-wrong-token-9e8d7c6b5a4f";

const LIMIT: Duration = Duration::from_secs(20);

/// Writes `text` to `dir/name` with mode `mode`.
fn write(dir: &Path, name: &str, text: &str, mode: u32) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    p
}

/// Runs `rangelock ARGS…` (bounded by [`LIMIT`]) with `$RANGELOCK_AUTH_TOKEN` set to
/// `env_token` (or unset): exit code, stdout, stderr.
fn cli(args: &[&str], env_token: Option<&str>) -> (Option<i32>, String, String) {
    let mut cmd = rangelock();
    cmd.args(args).env("RUST_LOG", "error").env_remove("RANGELOCK_AUTH_TOKEN");
    if let Some(t) = env_token {
        cmd.env("RANGELOCK_AUTH_TOKEN", t);
    }
    let mut child =
        cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (out, err) = (drain(child.stdout.take().unwrap()), drain(child.stderr.take().unwrap()));
    let st = wait_bounded(&mut child, LIMIT);
    if st.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        panic!("rangelock {args:?} did not exit within {LIMIT:?}");
    }
    (st.unwrap().code(), out.join().unwrap(), err.join().unwrap())
}

fn drain(mut r: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = r.read_to_string(&mut s);
        s
    })
}

/// A `rangelock serve` process logging at DEBUG; its stderr is collected.
struct Served {
    child: Child,
    addr: String,
    log: Option<JoinHandle<String>>,
}

impl Served {
    fn start(args: &[&str]) -> Served {
        let mut child = rangelock()
            .args(["serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Some(drain(child.stderr.take().unwrap()));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let addr = line.trim().strip_prefix("listening on ").expect("listening line").to_owned();
        Served { child, addr, log }
    }

    /// Stops it with SIGTERM; its log.
    fn stop(mut self) -> String {
        assert!(signal(self.child.id(), libc::SIGTERM));
        assert!(wait_bounded(&mut self.child, LIMIT).expect("stopped").success());
        self.log.take().unwrap().join().unwrap()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An auth file (mode 0600) with `full` and `ingest`; `ingest`'s digest is computed from
/// its token file with the command docs/OPERATIONS.md gives.
fn auth_file(dir: &Path) -> PathBuf {
    let token = write(dir, "ingest.token", &format!("{INGEST}\n"), 0o600);
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("printf %s \"$(cat {})\" | sha256sum", token.display()))
        .output()
        .unwrap();
    let digest = String::from_utf8(out.stdout).unwrap();
    let digest = digest.split_whitespace().next().unwrap().to_owned();
    assert_eq!(digest.len(), 64, "{digest}");
    let text = format!(
        "[[token]]\nname = \"full\"\nsecret = \"{FULL}\"\n\n\
         [[token]]\nname = \"ingest\"\nsecret_sha256 = \"{digest}\"\nranges = [\"0..4096\"]\n"
    );
    write(dir, "auth.toml", &text, 0o600)
}

#[test]
fn serve_refuses_an_auth_file_it_cannot_use() {
    let dir = tempdir("auth-bad-file");
    let missing = dir.join("missing.toml");
    let short =
        write(&dir, "short.toml", "[[token]]\nname = \"ci\"\nsecret = \"too-short\"\n", 0o600);
    let unknown = write(
        &dir,
        "unknown.toml",
        "[[token]]\nname = \"ci\"\nsecret = \"0123456789abcdef\"\nrange = [\"0..1\"]\n",
        0o600,
    );
    let empty = write(&dir, "empty.toml", "", 0o600);
    let cases = [
        (&missing, format!("cannot read the auth file {}: ", missing.display())),
        (
            &short,
            format!(
                "auth file {}, token \"ci\": the secret is 9 bytes; at least 16 are required",
                short.display()
            ),
        ),
        (
            &unknown,
            format!("auth file {}: line 4, column 1: unknown field `range`", unknown.display()),
        ),
        (&empty, format!("auth file {} defines no token", empty.display())),
    ];
    for (path, says) in cases {
        let p = path.to_str().unwrap();
        let (code, out, err) = cli(&["serve", "--addr", "127.0.0.1:0", "--auth-file", p], None);
        // An unreadable file is EX_NOINPUT; one that is read but refused, a failure.
        let want = if path == &missing { 66 } else { 1 };
        assert_eq!(code, Some(want), "{p}: {err}");
        assert!(err.starts_with(&format!("rangelock: {says}")), "{p}: {err}");
        assert!(!out.contains("listening"), "{p}: the server started: {out}");
        assert!(!err.contains("too-short"), "the secret is not shown: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lock_and_stat_authenticate_and_say_clearly_when_they_cannot() {
    let dir = tempdir("auth-lock-stat");
    let auth = auth_file(&dir);
    let srv = Served::start(&["--auth-file", auth.to_str().unwrap()]);
    let addr = srv.addr.clone();
    let full = write(&dir, "full.token", &format!("{FULL}\n"), 0o600);
    let (full, ingest) = (full.to_str().unwrap(), dir.join("ingest.token"));
    let ingest = ingest.to_str().unwrap();
    let wrong = write(&dir, "wrong.token", WRONG, 0o600);
    let wrong = wrong.to_str().unwrap();
    let blank = write(&dir, "blank.token", "\n", 0o600);
    let blank = blank.to_str().unwrap();

    // The bystander: a session that holds 100..200 throughout.
    let ep: Endpoint = addr.parse().unwrap();
    let bystander = Client::connect_with(&ep, &ConnectOptions::new().token(FULL)).unwrap();
    let held = bystander.lock(100..200, Mode::Exclusive, Wait::Try).unwrap();

    let echo = ["--", "sh", "-c", "echo ran $RANGELOCK_TOKEN"];
    let lock = |range: &str, token: &[&str], env: Option<&str>| {
        let mut args = vec!["lock", "--server", &addr, "--nonblock", range];
        args.extend_from_slice(token);
        args.extend_from_slice(&echo);
        cli(&args, env)
    };
    // With the token file, and with the environment variable (a digest-only token).
    let (code, out, err) = lock("0..10", &["--token-file", full], None);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.trim().strip_prefix("ran ").unwrap().parse::<u64>().is_ok(), "{out}");
    let (code, _, err) = lock("4000..4096", &[], Some(INGEST));
    assert_eq!(code, Some(0), "{err}");
    // The file wins over the environment.
    let (code, _, err) = lock("0..10", &["--token-file", full], Some(WRONG));
    assert_eq!(code, Some(0), "{err}");

    // No token; a wrong one (file or environment); outside the token's ranges.
    let (code, out, err) = lock("0..10", &[], None);
    assert_eq!((code, out.as_str()), (Some(77), ""), "{err}");
    assert_eq!(
        err,
        format!(
            "rangelock: connecting to {addr}: the server requires an authentication token and \
             none was given (give one with --token-file FILE or $RANGELOCK_AUTH_TOKEN)\n"
        )
    );
    for (token, env) in [(vec!["--token-file", wrong], None), (vec![], Some(WRONG))] {
        let (code, out, err) = lock("0..10", &token, env);
        assert_eq!((code, out.as_str()), (Some(77), ""), "{err}");
        assert_eq!(
            err,
            format!(
                "rangelock: connecting to {addr}: the server refused the authentication token\n"
            )
        );
    }
    let (code, out, err) = lock("4000..5000", &["--token-file", ingest], None);
    assert_eq!((code, out.as_str()), (Some(77), ""), "the command does not run: {err}");
    assert_eq!(
        err,
        format!(
            "rangelock: locking 4000..5000 on {addr}: server error: range outside what this \
             session's token may lock\n"
        )
    );
    // A range written in hex is named as written, with its units.
    let (code, out, err) = lock("0xfa0..+1000", &["--token-file", ingest], None);
    assert_eq!((code, out.as_str()), (Some(77), ""), "{err}");
    assert_eq!(
        err,
        format!(
            "rangelock: locking 0xfa0..+1000 (4000..5000) on {addr}: server error: range \
             outside what this session's token may lock\n"
        )
    );
    // A token file it cannot use: EX_NOINPUT, not 1 (the code of a lock not had).
    let (code, out, err) = lock("0..10", &["--token-file", blank], None);
    assert_eq!((code, out.as_str()), (Some(66), ""), "{err}");
    assert!(err.contains(&format!("the token file {blank} is empty")), "{err}");
    let missing = dir.join("missing.token");
    let missing = missing.to_str().unwrap();
    let (code, out, err) = lock("0..10", &["--token-file", missing], None);
    assert_eq!((code, out.as_str()), (Some(66), ""), "{err}");
    assert!(err.contains(&format!("cannot read the token file {missing}")), "{err}");
    let (code, _, err) = cli(&["stat", "--server", &addr, "--token-file", missing], None);
    assert_eq!(code, Some(66), "{err}");

    // stat likewise.
    let (code, out, err) = cli(&["stat", "--server", &addr, "--token-file", full], None);
    assert_eq!(code, Some(0), "{err}");
    let listed = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .any(|f| f.first() == Some(&"held") && f[f.len() - 3..] == ["100", "200", "-"]);
    assert!(listed, "the bystander's lock is listed:\n{out}");
    let (code, _, err) = cli(&["stat", "--server", &addr], None);
    assert_eq!(code, Some(77), "{err}");
    assert!(err.contains("requires an authentication token"), "{err}");
    let (code, _, err) = cli(&["stat", "--server", &addr], Some(WRONG));
    assert_eq!(code, Some(77), "{err}");
    assert!(err.contains("refused the authentication token"), "{err}");

    // The bystander is unaffected: it still holds its range, and locks and unlocks.
    assert!(bystander.lock(150..151, Mode::Exclusive, Wait::Try).is_err());
    bystander.lock(300..400, Mode::Shared, Wait::Try).unwrap().unlock().unwrap();
    held.unlock().unwrap();
    drop(bystander);

    let log = srv.stop();
    for t in [FULL, INGEST, WRONG] {
        assert!(!log.contains(t), "token {t:?} in the server's log:\n{log}");
    }
    assert!(log.contains("sessions must authenticate"), "{log}");
    assert!(log.contains("token_name=ingest") && log.contains("token_name=full"), "{log}");
    assert!(log.contains("WARN") && log.contains("hello refused"), "{log}");
    assert!(!log.contains("readable by group or others"), "the file is 0600: {log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_auth_file_readable_by_others_is_warned_about() {
    let dir = tempdir("auth-perm");
    let auth = auth_file(&dir);
    std::fs::set_permissions(&auth, std::fs::Permissions::from_mode(0o644)).unwrap();
    let srv = Served::start(&["--auth-file", auth.to_str().unwrap()]);
    let log = srv.stop();
    let line = log.lines().find(|l| l.contains("readable by group or others"));
    let line = line.unwrap_or_else(|| panic!("no warning:\n{log}"));
    assert!(line.contains("WARN") && line.contains(auth.to_str().unwrap()), "{line}");
    assert!(line.contains("mode=644") && line.contains("chmod 600"), "{line}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn lock_and_stat_through_a_cluster_whose_nodes_have_an_auth_file() {
    use common::cluster::{settled, wait_for, Proc};
    let test = "lock_and_stat_through_a_cluster_whose_nodes_have_an_auth_file";
    let Some(etcd) = rangelock_cluster::etcd::local_etcd_or_skip(test) else { return };
    let ep = etcd.endpoint();
    let dir = tempdir("auth-cluster");
    let auth = auth_file(&dir);
    let mut cmd = rangelock();
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--cluster", &ep, "--node-id", "a"])
        .args(["--partitions", "4", "--etcd-ttl", "1", "--lease-ms", "1000"])
        .arg("--auth-file")
        .arg(&auth)
        .env("RUST_LOG", "debug");
    let (mut node, addr) = Proc::spawn_listening("a", cmd, dir.join("node-a.log"), LIMIT);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    wait_for(&rt, &ep, "a owns every partition", LIMIT, |s| settled(s, &["a"]));
    let full = write(&dir, "full.token", FULL, 0o600);
    let full = full.to_str().unwrap();
    let ingest = dir.join("ingest.token");
    let ingest = ingest.to_str().unwrap();
    let lock = |seeds: &str, range: &str, token: &[&str]| {
        let mut args = vec!["lock", "--cluster", seeds, "--nonblock", range];
        args.extend_from_slice(token);
        args.extend_from_slice(&["--", "sh", "-c", "echo ran"]);
        cli(&args, None)
    };
    // Through the node and through etcd.
    for seeds in [addr.as_str(), ep.as_str()] {
        let (code, out, err) = lock(seeds, "0..10", &["--token-file", full]);
        assert_eq!((code, out.as_str()), (Some(0), "ran\n"), "{seeds}: {err}");
    }
    let (code, out, err) = lock(&addr, "0..4096", &["--token-file", ingest]);
    assert_eq!((code, out.as_str()), (Some(0), "ran\n"), "{err}");
    let (code, out, err) = lock(&addr, "0..10", &[]);
    assert_eq!((code, out.as_str()), (Some(77), ""), "{err}");
    assert!(err.contains("requires an authentication token"), "{err}");
    let (code, out, err) = lock(&addr, "4000..5000", &["--token-file", ingest]);
    assert_eq!((code, out.as_str()), (Some(77), ""), "{err}");
    assert!(err.contains("range outside what this session's token may lock"), "{err}");
    let (code, out, err) = cli(&["stat", "--cluster", &addr, "--token-file", full], None);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("4 partitions") && out.contains("node              a"), "{out}");
    let (code, _, err) = cli(&["stat", "--cluster", &addr], Some(WRONG));
    assert_eq!(code, Some(77), "{err}");
    assert!(err.contains("refused the authentication token"), "{err}");
    node.kill();
    let log = std::fs::read_to_string(&node.log).unwrap();
    for t in [FULL, INGEST, WRONG] {
        assert!(!log.contains(t), "token {t:?} in the node's log:\n{log}");
    }
    assert!(log.contains("sessions must authenticate"), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_auth_file_is_a_config_key_too() {
    let dir = tempdir("auth-config-key");
    let auth = auth_file(&dir);
    let config =
        write(&dir, "serve.toml", &format!("auth_file = {:?}\n", auth.to_str().unwrap()), 0o600);
    let config = config.to_str().unwrap();
    // --print-config shows the path; it reads neither the file nor a secret.
    let missing = dir.join("missing.toml");
    let (code, out, err) = cli(
        &["serve", "--config", config, "--auth-file", missing.to_str().unwrap(), "--print-config"],
        None,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains(&format!("auth_file = {:?}", missing.to_str().unwrap())), "{out}");
    let srv = Served::start(&["--config", config]);
    let (code, _, err) = cli(&["stat", "--server", &srv.addr], None);
    assert_eq!(code, Some(77), "{err}");
    let (code, _, err) = cli(&["stat", "--server", &srv.addr], Some(FULL));
    assert_eq!(code, Some(0), "{err}");
    let log = srv.stop();
    assert!(log.contains("sessions must authenticate") && !log.contains(FULL), "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The refusals of docs/OPERATIONS.md's quick start, against a server with TLS and tokens:
/// no token 77, a CA that did not sign the server's certificate 69, plain text 69.
#[test]
fn the_quick_start_refusals_exit_77_69_69() {
    let dir = tempdir("auth-quick-start");
    let auth = auth_file(&dir);
    let pki = rangelock_bench::tls_pki::TempPki::generate().unwrap();
    let other = rangelock_bench::tls_pki::TempPki::generate().unwrap();
    let p = |p: PathBuf| p.display().to_string();
    let (cert, key, ca, other_ca) =
        (p(pki.server_cert()), p(pki.server_key()), p(pki.ca()), p(other.ca()));
    let srv = Served::start(&[
        "--auth-file",
        auth.to_str().unwrap(),
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ]);
    let full = write(&dir, "full.token", &format!("{FULL}\n"), 0o600);
    let full = full.to_str().unwrap();
    let addr = srv.addr.as_str();
    for (args, code, says) in [
        (vec!["--tls-ca", &ca], 77, "requires an authentication token"),
        (vec!["--tls-ca", &other_ca, "--token-file", full], 69, "TLS: handshake"),
        (vec!["--token-file", full], 69, "requires TLS"),
        (vec!["--tls-ca", &ca, "--token-file", full], 0, ""),
    ] {
        let (got, _, err) = cli(&[&["stat", "--server", addr][..], &args].concat(), None);
        assert_eq!(got, Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
