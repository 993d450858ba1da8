//! [`Watch`]: the events of a key prefix, as etcd's gateway streams them.
//!
//! `POST /v3/watch` with a `create_request` answers with a stream that never ends by
//! itself: newline-delimited `{"result":{"header":..,"events":[..]}}` messages (the first
//! one says `"created":true`), or `{"error":{..}}`. An event's `type` is omitted for a
//! `PUT` (the enum's zero value) and `"DELETE"` for a deletion, including one caused by
//! an expired or revoked lease.

use serde::{Deserialize, Serialize};

use super::error::EtcdError;
use super::wire::{self, B64};

/// The body of `POST /v3/watch`: `{"create_request": {"key": .., "range_end": ..}}`.
#[derive(Debug, Serialize)]
pub(super) struct WatchRequest {
    pub(super) create_request: WatchCreate,
}

#[derive(Debug, Serialize)]
pub(super) struct WatchCreate {
    pub(super) key: B64,
    pub(super) range_end: B64,
}

/// What happened to a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// Written (created or changed).
    Put,
    /// Deleted, by a request or because its lease went.
    Delete,
}

/// One change of a watched key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchEvent {
    /// Put or delete.
    pub kind: EventKind,
    /// The key.
    pub key: Vec<u8>,
}

/// A watch of a key prefix ([`Etcd::watch_prefix`](super::Etcd::watch_prefix)); read it
/// with [`Watch::next`]. Dropping it ends the watch (the connection closes).
#[derive(Debug)]
pub struct Watch {
    pub(super) response: reqwest::Response,
    pub(super) endpoint: String,
    /// Bytes received after the last complete message.
    pub(super) pending: Vec<u8>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WatchResponse {
    events: Vec<Event>,
    canceled: bool,
    cancel_reason: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    kv: EventKv,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct EventKv {
    key: B64,
}

impl Watch {
    /// The next events (waits for them; a message without events, such as the
    /// creation's, is skipped). An error ends the watch: the stream broke or etcd
    /// cancelled it. Events may have been missed then: read the state again and watch
    /// anew.
    pub async fn next(&mut self) -> Result<Vec<WatchEvent>, EtcdError> {
        loop {
            while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                let events = parse_message(&line)?;
                if !events.is_empty() {
                    return Ok(events);
                }
            }
            let chunk = self.response.chunk().await.map_err(|e| EtcdError::Transport {
                endpoint: self.endpoint.clone(),
                path: "/v3/watch",
                reason: super::error::cause(&e),
            })?;
            match chunk {
                Some(bytes) => self.pending.extend_from_slice(&bytes),
                None => {
                    return Err(EtcdError::Transport {
                        endpoint: self.endpoint.clone(),
                        path: "/v3/watch",
                        reason: "the watch stream ended".to_owned(),
                    })
                }
            }
        }
    }
}

/// The events of one stream message (a line, with or without its newline).
fn parse_message(line: &[u8]) -> Result<Vec<WatchEvent>, EtcdError> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return Ok(Vec::new());
    }
    let msg: wire::StreamMessage<WatchResponse> = serde_json::from_slice(line)
        .map_err(|e| EtcdError::Decode(format!("{e} in a watch message")))?;
    let r = match msg {
        wire::StreamMessage { error: Some(e), .. } => return Err(e.into()),
        wire::StreamMessage { result: Some(r), .. } => r,
        _ => return Err(EtcdError::Decode("watch message without result".to_owned())),
    };
    if r.canceled {
        return Err(EtcdError::Status {
            code: 1,
            message: format!("watch cancelled: {}", r.cancel_reason),
        });
    }
    let event = |e: Event| {
        let kind = if e.kind == "DELETE" { EventKind::Delete } else { EventKind::Put };
        WatchEvent { kind, key: e.kv.key.0 }
    };
    Ok(r.events.into_iter().map(event).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_parse_into_events() {
        let created = br#"{"result":{"header":{"revision":"1"},"created":true}}"#;
        assert_eq!(parse_message(created).unwrap(), vec![]);
        let put = br#"{"result":{"header":{"revision":"2"},"events":[{"kv":{"key":"L3cvYQ==",
            "create_revision":"2","mod_revision":"2","version":"1","value":"eA==","lease":"7"}}]}}"#;
        let ev = parse_message(put).unwrap();
        assert_eq!(ev, vec![WatchEvent { kind: EventKind::Put, key: b"/w/a".to_vec() }]);
        let del = br#"{"result":{"header":{"revision":"3"},"events":[{"type":"DELETE",
            "kv":{"key":"L3cvYQ==","mod_revision":"3"}}]}}"#;
        let ev = parse_message(del).unwrap();
        assert_eq!(ev, vec![WatchEvent { kind: EventKind::Delete, key: b"/w/a".to_vec() }]);
        let cancelled = br#"{"result":{"canceled":true,"cancel_reason":"compacted"}}"#;
        assert!(parse_message(cancelled).unwrap_err().to_string().contains("compacted"));
        let error = br#"{"error":{"grpc_code":14,"message":"unavailable"}}"#;
        assert_eq!(parse_message(error).unwrap_err().code(), Some(14));
        assert!(parse_message(b"\n").unwrap().is_empty());
        assert!(parse_message(b"{nonsense").is_err());
    }
}
