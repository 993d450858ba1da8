//! [`Etcd`]: the client, one HTTP POST per call with a deadline and endpoint failover.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::error::{cause, GRPC_NOT_FOUND};
use super::kv::prefix_range;
use super::kv::KeyValue;
use super::txn::{get_request, prefix_request, put_request, Txn, TxnResponse};
use super::watch::{Watch, WatchCreate, WatchRequest};
use super::wire::{self, B64, I64};
use super::{EtcdError, LeaseId, LeaseTtl, Revision};

/// A client of an etcd cluster through its v3 JSON gateway. Cheap to clone (one
/// connection pool shared by the clones).
#[derive(Clone, Debug)]
pub struct Etcd {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    endpoints: Vec<String>,
    /// The endpoint requests start at: the last that answered.
    current: AtomicUsize,
    request_timeout: Duration,
    /// Told of every request: how long it took and whether it failed ([`Etcd::observe`]).
    observer: std::sync::OnceLock<Observer>,
}

/// What [`Etcd::observe`] calls after each request.
struct Observer(Box<dyn Fn(Duration, bool) + Send + Sync>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

impl Etcd {
    /// A client of the cluster at `endpoints` (`http://host:port`, or `host:port`),
    /// after checking that one of them answers (`/v3/maintenance/status`).
    ///
    /// Every request of the client, this check included, fails with
    /// [`EtcdError::Timeout`] if it has no answer within `request_timeout`.
    pub async fn connect(
        endpoints: &[String],
        request_timeout: Duration,
    ) -> Result<Etcd, EtcdError> {
        let endpoints =
            endpoints.iter().map(|e| normalize_endpoint(e)).collect::<Result<Vec<_>, _>>()?;
        if endpoints.is_empty() {
            return Err(EtcdError::Unreachable {
                endpoints: String::new(),
                reason: "no endpoints given".to_owned(),
            });
        }
        // A black-holed endpoint must not use up the whole deadline of a request.
        let connect_timeout = request_timeout / endpoints.len() as u32;
        let http = reqwest::Client::builder()
            .no_proxy() // etcd is cluster-internal; an HTTP_PROXY of the environment must not apply
            .connect_timeout(connect_timeout)
            .build()
            .map_err(|e| EtcdError::Unreachable {
                endpoints: endpoints.join(", "),
                reason: cause(&e),
            })?;
        let etcd = Etcd {
            inner: Arc::new(Inner {
                http,
                endpoints,
                current: AtomicUsize::new(0),
                request_timeout,
                observer: std::sync::OnceLock::new(),
            }),
        };
        let status: wire::StatusResponse =
            etcd.call("/v3/maintenance/status", &wire::Empty {}).await?;
        tracing::debug!(
            endpoint = %etcd.inner.endpoints[etcd.inner.current.load(Relaxed)],
            version = %status.version,
            "connected to etcd"
        );
        Ok(etcd)
    }

    /// The endpoints, normalised to `http://host:port`.
    pub fn endpoints(&self) -> &[String] {
        &self.inner.endpoints
    }

    /// Calls `observer` after every request of this client and its clones, with how long
    /// it took and whether it failed (no answer, or an HTTP error status); the cluster
    /// node's metrics count them. Only the first observer set is kept.
    pub fn observe(&self, observer: impl Fn(Duration, bool) + Send + Sync + 'static) {
        let _ = self.inner.observer.set(Observer(Box::new(observer)));
    }

    /// The deadline of every request.
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// Grants a lease of `ttl`, rounded up to whole seconds (at least 1), with the
    /// given ID or (`None`) one etcd picks. Returns the ID and the TTL granted (etcd
    /// raises TTLs below its minimum, 1.5 election timeouts).
    ///
    /// Asking for an ID that exists fails with [`EtcdError::Status`] code 9.
    pub async fn grant_lease(
        &self,
        ttl: Duration,
        id: Option<LeaseId>,
    ) -> Result<(LeaseId, Duration), EtcdError> {
        let secs = (ttl.as_secs() + u64::from(ttl.subsec_nanos() > 0)).max(1);
        let req = wire::LeaseGrantRequest {
            ttl: I64(i64::try_from(secs).unwrap_or(i64::MAX)),
            id: I64(id.unwrap_or(0)),
        };
        let resp: wire::LeaseGrantResponse = self.call("/v3/lease/grant", &req).await?;
        if !resp.error.is_empty() {
            return Err(EtcdError::Status { code: 2, message: resp.error });
        }
        if resp.id.0 == 0 || resp.ttl.0 <= 0 {
            return Err(EtcdError::Decode(format!("lease grant without ID or TTL: {resp:?}")));
        }
        Ok((resp.id.0, secs_to_duration(resp.ttl.0)))
    }

    /// Refreshes `lease` to its full TTL. `Ok(Some(ttl))`: the lease now lives at
    /// least `ttl` from the moment this call was *made* (etcd restarts the TTL on
    /// receipt, after the send); `Ok(None)`: the lease no longer exists (expired or
    /// revoked), so neither do its keys.
    pub async fn keep_alive(&self, lease: LeaseId) -> Result<Option<Duration>, EtcdError> {
        let (status, body) =
            self.post("/v3/lease/keepalive", &wire::LeaseIdRequest { id: I64(lease) }).await?;
        let resp: wire::LeaseKeepAliveResponse = wire::decode_first(status, &body)?;
        // etcd answers an unknown lease with TTL 0, which the gateway omits.
        Ok((resp.ttl.0 > 0).then(|| secs_to_duration(resp.ttl.0)))
    }

    /// Revokes `lease`, deleting the keys attached to it. Revoking a lease that does
    /// not exist (any more) succeeds.
    pub async fn revoke(&self, lease: LeaseId) -> Result<(), EtcdError> {
        let req = wire::LeaseIdRequest { id: I64(lease) };
        match self.call::<_, serde::de::IgnoredAny>("/v3/lease/revoke", &req).await {
            Err(e) if e.code() == Some(GRPC_NOT_FOUND) => Ok(()),
            r => r.map(drop),
        }
    }

    /// Reads `key`: the store's revision and the key, if present.
    pub async fn get(&self, key: &[u8]) -> Result<(Revision, Option<KeyValue>), EtcdError> {
        let resp: wire::RangeResponse = self.call("/v3/kv/range", &get_request(key)).await?;
        Ok((resp.header.revision.0, resp.kvs.into_iter().next().map(KeyValue::from)))
    }

    /// Reads every key starting with `prefix` (all keys for `b""`), sorted by key.
    pub async fn get_prefix(&self, prefix: &[u8]) -> Result<(Revision, Vec<KeyValue>), EtcdError> {
        let resp: wire::RangeResponse = self.call("/v3/kv/range", &prefix_request(prefix)).await?;
        Ok((resp.header.revision.0, resp.kvs.into_iter().map(KeyValue::from).collect()))
    }

    /// Writes `key`, attached to `lease` if given (an unknown lease fails with
    /// [`EtcdError::Status`] code 5). Returns the revision of the write.
    pub async fn put(
        &self,
        key: &[u8],
        value: &[u8],
        lease: Option<LeaseId>,
    ) -> Result<Revision, EtcdError> {
        let resp: wire::PutResponse =
            self.call("/v3/kv/put", &put_request(key, value, lease)).await?;
        Ok(resp.header.revision.0)
    }

    /// Deletes `key`. Returns the store's revision and how many keys went (0 or 1).
    pub async fn delete(&self, key: &[u8]) -> Result<(Revision, i64), EtcdError> {
        let req = wire::DeleteRangeRequest { key: B64(key.to_vec()), range_end: None };
        let resp: wire::DeleteRangeResponse = self.call("/v3/kv/deleterange", &req).await?;
        Ok((resp.header.revision.0, resp.deleted.0))
    }

    /// Deletes every key starting with `prefix` (which must not be empty: that would be
    /// every key). Returns the store's revision and how many keys went.
    pub async fn delete_prefix(&self, prefix: &[u8]) -> Result<(Revision, i64), EtcdError> {
        assert!(!prefix.is_empty(), "delete_prefix of the empty prefix deletes every key");
        let (key, end) = prefix_range(prefix);
        let req = wire::DeleteRangeRequest { key: B64(key), range_end: Some(B64(end)) };
        let resp: wire::DeleteRangeResponse = self.call("/v3/kv/deleterange", &req).await?;
        Ok((resp.header.revision.0, resp.deleted.0))
    }

    /// What is left of `lease` (`/v3/lease/timetolive`): `None` if it does not exist
    /// (expired or revoked). etcd reports whole seconds, the remaining time rounded
    /// down: a live lease with less than a second left reads 0.
    pub async fn lease_time_to_live(&self, lease: LeaseId) -> Result<Option<LeaseTtl>, EtcdError> {
        let req = wire::LeaseIdRequest { id: I64(lease) };
        let resp: wire::LeaseTimeToLiveResponse = self.call("/v3/lease/timetolive", &req).await?;
        Ok((resp.ttl.0 >= 0).then(|| LeaseTtl {
            remaining: secs_to_duration(resp.ttl.0),
            granted: secs_to_duration(resp.granted_ttl.0),
        }))
    }

    /// Runs a transaction.
    pub async fn txn(&self, txn: Txn) -> Result<TxnResponse, EtcdError> {
        let resp: wire::TxnResponse = self.call("/v3/kv/txn", &txn.to_wire()).await?;
        Ok(resp.into())
    }

    /// Watches every key starting with `prefix`, from now on ([`Watch`]). Getting the
    /// stream started is bounded by the request timeout; the stream itself has no
    /// deadline (nothing arrives while nothing happens). It goes to the current endpoint.
    pub async fn watch_prefix(&self, prefix: &[u8]) -> Result<Watch, EtcdError> {
        let inner = &*self.inner;
        let (key, end) = prefix_range(prefix);
        let req =
            WatchRequest { create_request: WatchCreate { key: B64(key), range_end: B64(end) } };
        let body = serde_json::to_vec(&req).map_err(|e| EtcdError::Decode(e.to_string()))?;
        let endpoint = inner.endpoints[inner.current.load(Relaxed)].clone();
        let path = "/v3/watch";
        let send = inner
            .http
            .post(format!("{endpoint}{path}"))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send();
        let response = match tokio::time::timeout(inner.request_timeout, send).await {
            Err(_) => {
                return Err(EtcdError::Timeout { endpoint, path, after: inner.request_timeout })
            }
            Ok(Err(e)) if e.is_connect() => {
                return Err(EtcdError::Unreachable { endpoints: endpoint, reason: cause(&e) })
            }
            Ok(Err(e)) => return Err(EtcdError::Transport { endpoint, path, reason: cause(&e) }),
            Ok(Ok(r)) => r,
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let body = response.bytes().await.unwrap_or_default();
            return Err(wire::decode::<serde::de::IgnoredAny>(status, &body)
                .err()
                .unwrap_or(EtcdError::Http { status, body: String::new() }));
        }
        Ok(Watch { response, endpoint, pending: Vec::new() })
    }

    /// The names of the cluster's members.
    pub(crate) async fn member_names(&self) -> Result<Vec<String>, EtcdError> {
        let resp: wire::MemberListResponse =
            self.call("/v3/cluster/member/list", &wire::Empty {}).await?;
        Ok(resp.members.into_iter().map(|m| m.name).collect())
    }

    async fn call<Req, Resp>(&self, path: &'static str, req: &Req) -> Result<Resp, EtcdError>
    where
        Req: Serialize,
        Resp: for<'de> Deserialize<'de>,
    {
        let (status, body) = self.post(path, req).await?;
        wire::decode(status, &body)
    }

    /// POSTs `req` to `path` within the request timeout: from the current endpoint
    /// on, trying the next while they refuse connections (nothing was sent) and, for
    /// requests safe to repeat, retrying once after a connection broke.
    async fn post<Req: Serialize>(
        &self,
        path: &'static str,
        req: &Req,
    ) -> Result<(u16, Vec<u8>), EtcdError> {
        let started = std::time::Instant::now();
        let r = self.post_timed(path, req).await;
        if let Some(Observer(observe)) = self.inner.observer.get() {
            let failed = r.as_ref().map_or(true, |(status, _)| *status >= 400);
            observe(started.elapsed(), failed);
        }
        r
    }

    async fn post_timed<Req: Serialize>(
        &self,
        path: &'static str,
        req: &Req,
    ) -> Result<(u16, Vec<u8>), EtcdError> {
        let inner = &*self.inner;
        let body = serde_json::to_vec(req).map_err(|e| EtcdError::Decode(e.to_string()))?;
        let trying = AtomicUsize::new(inner.current.load(Relaxed));
        match tokio::time::timeout(inner.request_timeout, self.post_failover(path, body, &trying))
            .await
        {
            Ok(r) => r,
            Err(_elapsed) => {
                let i = trying.load(Relaxed);
                // The endpoint may be paused or cut off: start the next request at the next one.
                let next = (i + 1) % inner.endpoints.len();
                let _ = inner.current.compare_exchange(i, next, Relaxed, Relaxed);
                Err(EtcdError::Timeout {
                    endpoint: inner.endpoints[i].clone(),
                    path,
                    after: inner.request_timeout,
                })
            }
        }
    }

    async fn post_failover(
        &self,
        path: &'static str,
        body: Vec<u8>,
        trying: &AtomicUsize,
    ) -> Result<(u16, Vec<u8>), EtcdError> {
        let inner = &*self.inner;
        let n = inner.endpoints.len();
        let first = trying.load(Relaxed);
        let mut i = first;
        let mut retried = false;
        let mut refusals = Vec::new();
        loop {
            trying.store(i, Relaxed);
            let endpoint = &inner.endpoints[i];
            let transport = |e: reqwest::Error| EtcdError::Transport {
                endpoint: endpoint.clone(),
                path,
                reason: cause(&e),
            };
            let sent = inner
                .http
                .post(format!("{endpoint}{path}"))
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(body.clone())
                .send()
                .await;
            let failed = match sent {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    match resp.bytes().await {
                        Ok(body) => {
                            if i != first {
                                tracing::debug!(%endpoint, "etcd requests fail over");
                                inner.current.store(i, Relaxed);
                            }
                            return Ok((status, body.to_vec()));
                        }
                        Err(e) => transport(e),
                    }
                }
                Err(e) if e.is_connect() => {
                    // Nothing was sent: any request may go to the next endpoint.
                    tracing::debug!(%endpoint, path, error = %cause(&e), "etcd endpoint unreachable");
                    refusals.push(if n == 1 {
                        cause(&e)
                    } else {
                        format!("{endpoint}: {}", cause(&e))
                    });
                    if refusals.len() == n {
                        return Err(EtcdError::Unreachable {
                            endpoints: inner.endpoints.join(", "),
                            reason: refusals.join("; "),
                        });
                    }
                    i = (i + 1) % n;
                    retried = false;
                    continue;
                }
                Err(e) => transport(e),
            };
            // The request may have been applied. Typically a pooled connection whose
            // server just died: retry what is safe to repeat, once, on a new connection.
            if retried || !idempotent(path) {
                return Err(failed);
            }
            tracing::debug!(%endpoint, path, error = %failed, "etcd request failed, retrying");
            retried = true;
        }
    }
}

/// Whether a request may be sent again when its outcome is unknown.
fn idempotent(path: &str) -> bool {
    matches!(
        path,
        "/v3/maintenance/status"
            | "/v3/cluster/member/list"
            | "/v3/kv/range"
            | "/v3/lease/keepalive"
            | "/v3/lease/timetolive"
            | "/v3/lease/revoke"
    )
}

fn secs_to_duration(secs: i64) -> Duration {
    Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

/// `host:port` → `http://host:port`; no trailing `/`; only plain HTTP (no TLS built in).
fn normalize_endpoint(endpoint: &str) -> Result<String, EtcdError> {
    let e = endpoint.trim().trim_end_matches('/');
    let url = if e.contains("://") { e.to_owned() } else { format!("http://{e}") };
    let invalid =
        |reason: String| EtcdError::Unreachable { endpoints: endpoint.to_owned(), reason };
    let parsed =
        reqwest::Url::parse(&url).map_err(|e| invalid(format!("invalid endpoint: {e}")))?;
    if parsed.scheme() != "http" {
        return Err(invalid(format!(
            "unsupported scheme {:?}: only http:// (the client is built without TLS)",
            parsed.scheme()
        )));
    }
    if parsed.host_str().is_none_or(str::is_empty) || parsed.path() != "/" {
        return Err(invalid("invalid endpoint: expected http://host:port".to_owned()));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::normalize_endpoint;

    #[test]
    fn endpoints_get_a_scheme_and_lose_trailing_slashes() {
        let n = |e: &str| normalize_endpoint(e).map_err(|e| e.to_string());
        assert_eq!(n("127.0.0.1:2379").unwrap(), "http://127.0.0.1:2379");
        assert_eq!(n(" http://localhost:2379/ ").unwrap(), "http://localhost:2379");
        assert!(n("https://127.0.0.1:2379").unwrap_err().contains("only http://"));
        assert!(n("http://127.0.0.1:2379/v3").unwrap_err().contains("host:port"));
        assert!(n("").is_err());
    }
}
