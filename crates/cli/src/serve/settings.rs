//! The settings of `rangelock serve`, each described once: [`ServeSettings`] is both the
//! command line (each field a `--flag`, its doc comment the `--help` text) and the config
//! file of `--config FILE` (each field a TOML key: the flag's name with underscores, so
//! `--lease-ms 500` is `lease_ms = 500`).
//!
//! Every field is an `Option`: `None` is "not said here". The layers are merged field by
//! field ([`ServeSettings::or`]): a flag on the command line, else the key in the file,
//! else the built-in default ([`ServeSettings::defaults`], which `--help` shows too), else
//! the setting stays unset and its own rule applies (`node_id`: the host name and port).
//! `--print-config` prints the result ([`ServeSettings::to_toml`]); unset keys appear
//! commented out, so that every key is listed and the output is itself a config file
//! that gives the same result.
//!
//! A file with a key that is not a setting, or a value of the wrong type, is refused with
//! the file, the line and the key ([`ServeSettings::from_file`]).
//!
//! Adding a setting: a field here (flag, key and help at once), its line in
//! [`ServeSettings::or`] (the compiler asks for it), its default in
//! [`ServeSettings::defaults`] if it has a fixed one, and its entry in
//! `docs/rangelock.example.toml` (a test asks for it); then use it where the server is
//! built. A path is `#[arg(long, value_name = "PATH")] pub tls_cert: Option<PathBuf>`; an
//! address that is resolved like `addr` takes `value_parser = parse_addr` and
//! `#[serde(with = "text")]`. Secrets never go here: `--print-config` prints every
//! setting, so a secret lives in a file a setting names (`auth_file`).

use std::fmt::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context as _};
use rangelock_server::protocol::GrantMode;
use rangelock_server::{CacheConfig, CachePolicy, EngineKind, ServerConfig, TlsSettings};

use crate::logging::LogFormat;

/// Settings of `rangelock serve`: flags, config-file keys, or built-in defaults.
#[derive(Clone, Debug, Default, PartialEq, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct ServeSettings {
    /// TCP address to listen on, `HOST:PORT` (a name such as `localhost:0` is resolved;
    /// port 0 picks a free port). Not set when only --unix is given: then no TCP.
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_addr)]
    #[serde(with = "text")]
    pub addr: Option<SocketAddr>,
    /// Also (or only) listen on this Unix socket path. A live server's socket is never taken
    /// over: the server refuses to start if something answers on the path, and replaces
    /// only a stale socket file. `PATH.lock` beside it keeps two servers off one path.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Listen backlog: connections the kernel queues before they are accepted.
    #[arg(long)]
    pub backlog: Option<u32>,
    /// Who owns the lock table: combiner, tree-mutex, tree-single, or rangelock (handlers
    /// drive the lock-free in-process skip-list range lock).
    #[arg(long, value_parser = <EngineKind as Text>::parse)]
    #[serde(with = "text")]
    pub engine: Option<EngineKind>,
    /// How clients learn of grants of queued locks: push, or poll (the seed's RPC-poll).
    #[arg(long, value_parser = <GrantMode as Text>::parse)]
    #[serde(with = "text")]
    pub grant: Option<GrantMode>,
    /// Session lease in milliseconds: a client silent this long loses its locks. At least
    /// 100 (clients keep alive every third of the lease).
    #[arg(long)]
    pub lease_ms: Option<u64>,
    /// Live locks (held + queued) allowed per session.
    #[arg(long)]
    pub max_locks: Option<usize>,
    /// Live resource names allowed on the server (a name lives while something is held or
    /// queued on it): a lock on one more new name is refused TOO_MANY_NAMES. Names are at
    /// most 1024 bytes, so this bounds their memory (about 1.1 KiB per name at most).
    #[arg(long)]
    pub max_names: Option<usize>,
    /// How cached locks (clients that send CACHE_ON, docs/CACHING.md) are granted: history
    /// (grow a grant only where no other session asked lately; exact and not kept for a
    /// session called back lately), expand-all (always to all the free space), exact
    /// (never grow, always keep), or off (no caching). The rangelock engine never caches.
    #[arg(long, value_parser = <CachePolicy as Text>::parse)]
    #[serde(with = "text")]
    pub cache_policy: Option<CachePolicy>,
    /// How long the history policy remembers a request, and how long a callback whose
    /// extent served its client too little keeps that client's grants exact, in
    /// milliseconds.
    #[arg(long)]
    pub cache_window_ms: Option<u64>,
    /// Cached extents one session may keep: one more and the server calls back its least
    /// recently granted one.
    #[arg(long)]
    pub max_kept: Option<usize>,
    /// Largest number of holder/waiter entries in one STATS answer: at most 399454 (what
    /// one 16 MiB response frame carries). An answer also stops at what fits in
    /// --max-output-bytes (24963 entries in 1 MiB) and says how many entries it left out.
    #[arg(long)]
    pub max_stats_entries: Option<u32>,
    /// Bytes of answers a session may leave unread: answers its socket has not taken
    /// (bytes the kernel already accepted, up to a few MB per TCP connection, do not
    /// count). A session that would pass it is closed and its locks released, as on
    /// disconnect. At least the largest answer the server must send whole: 162 (a
    /// STATS_CACHED answer without entries), 4126 with --shm-slots, on a cluster node the largest MAP
    /// answer (525028 with 64 partitions).
    #[arg(long)]
    pub max_output_bytes: Option<usize>,
    /// Handler threads (ignored by tree-single); 0 picks one per core, leaving one core to
    /// the combiner thread.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Shared-memory answer slots (docs/PROTOCOL.md §9): up to this many sessions on this
    /// host may ask (SHM_ATTACH) to read their LOCK answers from a mapped file, one
    /// 64-byte cache line each; 0 disables it. Push grants only.
    #[arg(long)]
    pub shm_slots: Option<u32>,
    /// Directory of the shared-memory slot file (needs --shm-slots) [default: the temp
    /// directory].
    #[arg(long, value_name = "DIR")]
    pub shm_dir: Option<PathBuf>,
    /// Serve Prometheus metrics over HTTP on this address, `HOST:PORT` (`GET /metrics`;
    /// port 0 picks a free port; printed as `metrics on URL`). See docs/OPERATIONS.md
    /// [default: no metrics].
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_addr)]
    #[serde(with = "text")]
    pub metrics: Option<SocketAddr>,
    /// Speak TLS on the TCP listener with the certificate chain in this PEM file (the
    /// server's certificate first); needs --tls-key. The Unix socket stays plain. Read at
    /// start and again on SIGHUP, with --tls-key and --tls-client-ca. See
    /// docs/OPERATIONS.md [default: no TLS].
    #[arg(long, value_name = "PEM")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
    #[arg(long, value_name = "PEM")]
    pub tls_key: Option<PathBuf>,
    /// Require TLS clients to present a certificate signed by a CA in this PEM file
    /// (needs --tls-cert).
    #[arg(long, value_name = "PEM")]
    pub tls_client_ca: Option<PathBuf>,
    #[allow(rustdoc::broken_intra_doc_links)] // `[[token]]` is TOML, and --help prints it as is
    /// Require every client to authenticate with a token of this file (TOML: one
    /// [[token]] per token, with its name, its secret or the secret's SHA-256, and
    /// optionally the ranges it may lock; see docs/OPERATIONS.md). Read at start (a file
    /// that cannot be used stops the server from starting) and again on SIGHUP (one that
    /// cannot be used leaves the old tokens in force) [default: no authentication].
    #[arg(long, value_name = "FILE")]
    pub auth_file: Option<PathBuf>,
    /// Run as a node of a cluster whose state lives in etcd at these endpoints
    /// (comma-separated, e.g. `http://127.0.0.1:2379`; a list in the file). See
    /// docs/CLUSTER.md. The settings below up to --fence-margin-ms need it.
    #[arg(long, value_name = "ENDPOINTS", value_delimiter = ',')]
    pub cluster: Option<Vec<String>>,
    /// Cluster name (the etcd key prefix `/rangelock/NAME/`).
    #[arg(long, value_name = "NAME")]
    pub cluster_name: Option<String>,
    /// This node's id, unique in the cluster [default: the host name and port].
    #[arg(long, value_name = "ID")]
    pub node_id: Option<String>,
    /// The address clients reach this node at [default: the TCP address it listens on].
    #[arg(long, value_name = "HOST:PORT")]
    pub advertise: Option<String>,
    /// Partitions of a new cluster (a power of two, at most 4096). A node without it
    /// takes an existing cluster's count; with another count it refuses to start
    /// [default: 64 for a new cluster].
    #[arg(long)]
    pub partitions: Option<u32>,
    /// The node's etcd lease in seconds: a node that cannot refresh it stops granting
    /// before it expires, and other nodes take its partitions over after it expires.
    #[arg(long, value_name = "SECONDS")]
    pub etcd_ttl: Option<u64>,
    /// Grace period in milliseconds of a partition taken over from another node: only
    /// reclaims of held locks are served in it [default: the session lease].
    #[arg(long)]
    pub grace_ms: Option<u64>,
    /// After a planned move, how long in milliseconds the waiters the old owner handed
    /// over keep their places in the queue here [default: 2000, at most the grace period].
    #[arg(long)]
    pub requeue_ms: Option<u64>,
    /// Self-fencing margin in milliseconds: the node stops granting this long before its
    /// etcd lease could expire [default: TTL/10 + 200].
    #[arg(long)]
    pub fence_margin_ms: Option<u64>,
    /// Log format on stderr: text (one line per event; colour only at a terminal) or json
    /// (one object per line). What is logged is chosen by RUST_LOG (see below).
    #[arg(long, value_name = "FORMAT", hide_possible_values = true)]
    pub log_format: Option<LogFormat>,
}

impl ServeSettings {
    /// Field by field: `self`'s value where it has one, else `below`'s.
    pub(crate) fn or(self, below: ServeSettings) -> ServeSettings {
        // A struct literal without `..`: a new field cannot be forgotten here.
        ServeSettings {
            addr: self.addr.or(below.addr),
            unix: self.unix.or(below.unix),
            backlog: self.backlog.or(below.backlog),
            engine: self.engine.or(below.engine),
            grant: self.grant.or(below.grant),
            lease_ms: self.lease_ms.or(below.lease_ms),
            max_locks: self.max_locks.or(below.max_locks),
            max_names: self.max_names.or(below.max_names),
            cache_policy: self.cache_policy.or(below.cache_policy),
            cache_window_ms: self.cache_window_ms.or(below.cache_window_ms),
            max_kept: self.max_kept.or(below.max_kept),
            max_stats_entries: self.max_stats_entries.or(below.max_stats_entries),
            max_output_bytes: self.max_output_bytes.or(below.max_output_bytes),
            threads: self.threads.or(below.threads),
            shm_slots: self.shm_slots.or(below.shm_slots),
            shm_dir: self.shm_dir.or(below.shm_dir),
            metrics: self.metrics.or(below.metrics),
            tls_cert: self.tls_cert.or(below.tls_cert),
            tls_key: self.tls_key.or(below.tls_key),
            tls_client_ca: self.tls_client_ca.or(below.tls_client_ca),
            auth_file: self.auth_file.or(below.auth_file),
            cluster: self.cluster.or(below.cluster),
            cluster_name: self.cluster_name.or(below.cluster_name),
            node_id: self.node_id.or(below.node_id),
            advertise: self.advertise.or(below.advertise),
            partitions: self.partitions.or(below.partitions),
            etcd_ttl: self.etcd_ttl.or(below.etcd_ttl),
            grace_ms: self.grace_ms.or(below.grace_ms),
            requeue_ms: self.requeue_ms.or(below.requeue_ms),
            fence_margin_ms: self.fence_margin_ms.or(below.fence_margin_ms),
            log_format: self.log_format.or(below.log_format),
        }
    }

    /// The built-in defaults, all in one place (the server's own from
    /// [`ServerConfig::default`]). `--help` shows them. Two apply only in context (see
    /// [`ServeSettings::resolve`]): `addr` not when only `unix` is set, and the cluster
    /// ones only for a cluster node.
    pub(crate) fn defaults() -> ServeSettings {
        let server = ServerConfig::default();
        ServeSettings {
            addr: server.tcp,
            backlog: Some(server.listen_backlog),
            engine: Some(server.engine),
            grant: Some(server.grant),
            lease_ms: Some(server.lease.as_millis() as u64),
            max_locks: Some(server.max_locks_per_session),
            max_names: Some(server.max_names),
            cache_policy: Some(server.cache.policy),
            cache_window_ms: Some(server.cache.window.as_millis() as u64),
            max_kept: Some(server.cache.max_kept_per_session),
            max_stats_entries: Some(server.max_stats_entries),
            max_output_bytes: Some(server.max_output_bytes),
            threads: Some(server.handler_threads),
            shm_slots: Some(server.shm_slots),
            cluster_name: Some("default".into()),
            etcd_ttl: Some(rangelock_cluster::DEFAULT_ETCD_TTL.as_secs()),
            log_format: Some(LogFormat::Text),
            ..ServeSettings::default()
        }
    }

    /// Checks the layers given (flags over file, before defaults) and fills in the
    /// defaults: the effective settings.
    pub(crate) fn resolve(self) -> anyhow::Result<ServeSettings> {
        let cluster_only = [
            ("cluster_name", self.cluster_name.is_some()),
            ("node_id", self.node_id.is_some()),
            ("advertise", self.advertise.is_some()),
            ("partitions", self.partitions.is_some()),
            ("etcd_ttl", self.etcd_ttl.is_some()),
            ("grace_ms", self.grace_ms.is_some()),
            ("requeue_ms", self.requeue_ms.is_some()),
            ("fence_margin_ms", self.fence_margin_ms.is_some()),
        ];
        if self.cluster.is_none() {
            if let Some((key, _)) = cluster_only.iter().find(|(_, set)| *set) {
                bail!(
                    "{} is a setting of cluster nodes: it needs {} too",
                    setting(key),
                    setting("cluster")
                );
            }
        }
        if self.shm_dir.is_some() && self.shm_slots.is_none() {
            bail!("{} needs {} too", setting("shm_dir"), setting("shm_slots"));
        }
        for (key, needs) in
            [("tls_cert", "tls_key"), ("tls_key", "tls_cert"), ("tls_client_ca", "tls_cert")]
        {
            let set = |k| match k {
                "tls_cert" => self.tls_cert.is_some(),
                "tls_key" => self.tls_key.is_some(),
                _ => self.tls_client_ca.is_some(),
            };
            if set(key) && !set(needs) {
                bail!("{} needs {} too", setting(key), setting(needs));
            }
        }
        let mut defaults = ServeSettings::defaults();
        if self.unix.is_some() {
            defaults.addr = None; // only a Unix socket unless an address is given
        }
        if self.cluster.is_none() {
            defaults.cluster_name = None;
            defaults.etcd_ttl = None;
        }
        let resolved = self.or(defaults);
        resolved.server_config().validate()?;
        Ok(resolved)
    }

    /// The server part of (resolved) settings, without reading any file: the auth file
    /// is read where the server is started (its `auth` is `None` here).
    pub(crate) fn server_config(&self) -> ServerConfig {
        let d = ServerConfig::default();
        ServerConfig {
            tcp: self.addr,
            unix: self.unix.clone(),
            engine: self.engine.unwrap_or(d.engine),
            grant: self.grant.unwrap_or(d.grant),
            listen_backlog: self.backlog.unwrap_or(d.listen_backlog),
            lease: self.lease_ms.map_or(d.lease, std::time::Duration::from_millis),
            max_locks_per_session: self.max_locks.unwrap_or(d.max_locks_per_session),
            max_names: self.max_names.unwrap_or(d.max_names),
            max_stats_entries: self.max_stats_entries.unwrap_or(d.max_stats_entries),
            max_output_bytes: self.max_output_bytes.unwrap_or(d.max_output_bytes),
            handler_threads: self.threads.unwrap_or(d.handler_threads),
            shm_slots: self.shm_slots.unwrap_or(d.shm_slots),
            shm_dir: self.shm_dir.clone(),
            metrics: self.metrics,
            cache: CacheConfig {
                policy: self.cache_policy.unwrap_or(d.cache.policy),
                window: self
                    .cache_window_ms
                    .map_or(d.cache.window, std::time::Duration::from_millis),
                max_kept_per_session: self.max_kept.unwrap_or(d.cache.max_kept_per_session),
                ..d.cache
            },
            tls: self.tls_cert.clone().zip(self.tls_key.clone()).map(|(cert, key)| TlsSettings {
                cert,
                key,
                client_ca: self.tls_client_ca.clone(),
            }),
            ..d
        }
    }

    /// Reads a config file: TOML whose keys are settings. An unknown key, a value of the
    /// wrong type or a syntax error is an error naming the file, the line and the key.
    pub(crate) fn from_file(path: &Path) -> anyhow::Result<ServeSettings> {
        let text = std::fs::read_to_string(path).map_err(|error| crate::exit::NoInput {
            what: "config file",
            path: path.to_owned(),
            error,
        })?;
        toml::from_str(&text)
            .map_err(|e| anyhow!("config file {}: {}", path.display(), locate(&text, &e)))
    }

    /// The keys, in the order of `--help`.
    pub(crate) fn keys() -> Vec<String> {
        let cmd = <ServeSettings as clap::Args>::augment_args(clap::Command::new("serve"));
        cmd.get_arguments().map(|a| a.get_id().to_string()).collect()
    }

    /// TOML for `--print-config`: every key in `--help` order, the unset ones commented out.
    pub(crate) fn to_toml(&self) -> anyhow::Result<String> {
        let mut table = toml::Table::try_from(self).context("cannot represent the settings")?;
        let mut out = String::from(
            "# rangelock serve: effective settings (flags over --config FILE over built-in \
             defaults).\n# Commented-out keys are not set; see `rangelock serve --help`.\n",
        );
        for key in ServeSettings::keys() {
            match table.remove(&key) {
                Some(value) => writeln!(out, "{key} = {value}")?,
                None => writeln!(out, "# {key} = (not set)")?,
            }
        }
        anyhow::ensure!(table.is_empty(), "settings that are not flags: {table:?}");
        Ok(out)
    }

    /// Appends `[default: …]` from [`ServeSettings::defaults`] to the help of each flag that
    /// has one.
    pub(crate) fn document_defaults(cmd: clap::Command) -> clap::Command {
        let defaults = toml::Table::try_from(ServeSettings::defaults()).unwrap_or_default();
        defaults.into_iter().fold(cmd, |cmd, (key, value)| {
            let shown = match value {
                toml::Value::String(s) => s,
                v => v.to_string(),
            };
            cmd.mut_arg(key, |arg| {
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                let arg = match arg.get_long_help().map(ToString::to_string) {
                    Some(long) => arg.long_help(format!("{long} [default: {shown}]")),
                    None => arg,
                };
                arg.help(format!("{help} [default: {shown}]"))
            })
        })
    }
}

/// `key` (`--flag`).
fn setting(key: &str) -> String {
    format!("`{key}` (--{})", key.replace('_', "-"))
}

/// A file's parse or type error as `line N, key `K`: what` (as much as is known).
fn locate(text: &str, e: &toml::de::Error) -> String {
    let message = e.message();
    let Some(span) = e.span() else { return message.to_owned() };
    let line = text.as_bytes()[..span.start.min(text.len())].iter().filter(|&&b| b == b'\n');
    let line = line.count() + 1;
    if let Some(rest) = message.strip_prefix("unknown field ") {
        return format!("line {line}: unknown key {rest}"); // serde's words, with ours
    }
    // The key whose name or value holds the error (a value may span lines: an array).
    let holds = |s: std::ops::Range<usize>| s.start <= span.start && span.start < s.end;
    let key = toml::de::DeTable::parse(text).ok().and_then(|t| {
        let mut entries = t.get_ref().iter();
        entries.find(|(k, v)| holds(k.span()) || holds(v.span())).map(|(k, _)| k.to_string())
    });
    match key {
        Some(key) => format!("line {line}, key `{key}`: {message}"),
        None => format!("line {line}: {message}"),
    }
}

/// `HOST:PORT`, resolved; the first address wins (IPv4 first for `localhost`).
fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = s
        .to_socket_addrs()
        .map_err(|e| format!("{s:?} is not an address to listen on (HOST:PORT): {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{s:?} resolves to no address"))
}

/// A setting written as a string, parsed the same way from a flag and from the file (so
/// `addr = "localhost:7878"` resolves like `--addr localhost:7878`).
trait Text: Sized {
    /// Parses the flag or key value.
    fn parse(s: &str) -> Result<Self, String>;
    /// The value as a flag or key would give it.
    fn text(&self) -> String;
}

impl Text for SocketAddr {
    fn parse(s: &str) -> Result<Self, String> {
        parse_addr(s)
    }
    fn text(&self) -> String {
        self.to_string()
    }
}

impl Text for EngineKind {
    fn parse(s: &str) -> Result<Self, String> {
        s.parse()
    }
    fn text(&self) -> String {
        self.name().to_owned()
    }
}

impl Text for CachePolicy {
    fn parse(s: &str) -> Result<Self, String> {
        s.parse()
    }
    fn text(&self) -> String {
        self.name().to_owned()
    }
}

impl Text for GrantMode {
    fn parse(s: &str) -> Result<Self, String> {
        match s {
            "push" => Ok(GrantMode::Push),
            "poll" => Ok(GrantMode::Poll),
            _ => Err(format!("unknown grant mode {s:?} (expected push or poll)")),
        }
    }
    fn text(&self) -> String {
        self.name().to_owned()
    }
}

/// `#[serde(with = "text")]`: an optional [`Text`] setting as a TOML string.
mod text {
    use serde::{Deserialize as _, Deserializer, Serializer};

    use super::Text;

    pub(super) fn serialize<T: Text, S: Serializer>(
        v: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_some(&v.text()),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, T: Text, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        let s = String::deserialize(d)?;
        T::parse(&s).map(Some).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ServeSettings, String> {
        toml::from_str(text).map_err(|e| locate(text, &e))
    }

    /// The numbers the help of the output limits and `docs/rangelock.example.toml` state
    /// are the server's.
    #[test]
    fn the_limits_in_the_help_are_the_servers() {
        use rangelock_server::protocol::{
            max_map_answer, stats_entries_within, MAX_SHM_ATTACH_ANSWER, MAX_STATS_ENTRIES,
            STATS_CACHED_ANSWER_BASE,
        };
        let cmd = <ServeSettings as clap::Args>::augment_args(clap::Command::new("serve"));
        let help = |id: &str| {
            let arg = cmd.get_arguments().find(|a| a.get_id() == id).unwrap();
            arg.get_help().unwrap().to_string()
        };
        let example = include_str!("../../../../docs/rangelock.example.toml");
        let stats = help("max_stats_entries");
        let output = help("max_output_bytes");
        let in_stats = [
            MAX_STATS_ENTRIES as usize,
            stats_entries_within(rangelock_server::DEFAULT_MAX_OUTPUT_BYTES) as usize,
        ];
        let in_output = [STATS_CACHED_ANSWER_BASE, MAX_SHM_ATTACH_ANSWER, max_map_answer(64)];
        for n in in_stats {
            assert!(stats.contains(&n.to_string()), "{n} in: {stats}");
        }
        for n in in_output {
            assert!(output.contains(&n.to_string()), "{n} in: {output}");
        }
        for n in in_output.into_iter().chain([MAX_STATS_ENTRIES as usize]) {
            assert!(example.contains(&n.to_string()), "{n} in the example file");
        }
    }

    #[test]
    fn keys_are_the_flags_with_underscores() {
        let keys = ServeSettings::keys();
        assert!(keys.contains(&"lease_ms".to_owned()), "{keys:?}");
        let s = parse("lease_ms = 500\naddr = \"127.0.0.1:1\"\nengine = \"tree-mutex\"").unwrap();
        assert_eq!(s.lease_ms, Some(500));
        assert_eq!(s.addr, Some(SocketAddr::from(([127, 0, 0, 1], 1))));
        assert_eq!(s.engine, Some(EngineKind::TreeMutex));
        assert_eq!(s.unix, None);
    }

    #[test]
    fn layers_merge_field_by_field_and_the_result_is_validated() {
        let file = ServeSettings { lease_ms: Some(2), threads: Some(3), ..Default::default() };
        let flags = ServeSettings { lease_ms: Some(150), ..Default::default() };
        let s = flags.or(file.clone()).resolve().unwrap();
        assert_eq!((s.lease_ms, s.threads), (Some(150), Some(3)));
        assert_eq!(s.backlog, ServeSettings::defaults().backlog);
        let e = ServeSettings::default().or(file).resolve().unwrap_err().to_string();
        assert!(e.contains("lease of 2 ms"), "{e}");
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let e = parse("threads = 1\nlease = 5\n").unwrap_err();
        assert!(e.starts_with("line 2: unknown key `lease`, expected one of `addr`"), "{e}");
        let e = parse("threads = 1\n\nlease_ms = \"ten\"\n").unwrap_err();
        assert!(e.starts_with("line 3, key `lease_ms`: invalid type: string"), "{e}");
        let e = parse("engine = \"fast\"\n").unwrap_err();
        assert!(e.starts_with("line 1, key `engine`: unknown engine \"fast\""), "{e}");
        let e = parse("cluster = [\n  \"http://a:1\",\n  2,\n]\n").unwrap_err();
        assert!(e.starts_with("line 3, key `cluster`:"), "{e}");
        let e = parse("threads = \n").unwrap_err();
        assert!(e.starts_with("line 1"), "{e}");
    }

    #[test]
    fn cluster_settings_need_a_cluster_and_the_printed_config_reads_back() {
        let s = ServeSettings { node_id: Some("a".into()), ..ServeSettings::default() };
        let e = s.resolve().unwrap_err().to_string();
        let want = "`node_id` (--node-id) is a setting of cluster nodes: it needs `cluster` \
                    (--cluster) too";
        assert_eq!(e, want);
        let s = ServeSettings {
            cluster: Some(vec!["http://127.0.0.1:2379".into()]),
            unix: Some("/tmp/x.sock".into()),
            ..ServeSettings::default()
        };
        let r = s.resolve().unwrap();
        assert_eq!(r.addr, None, "only the Unix socket");
        assert_eq!(r.cluster_name.as_deref(), Some("default"));
        let printed = r.to_toml().unwrap();
        assert!(printed.contains("\n# addr = (not set)\n"), "{printed}");
        assert_eq!(parse(&printed).unwrap().resolve().unwrap(), r);
    }
}
