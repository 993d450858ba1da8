//! The JSON shapes of etcd's v3 gateway (grpc-gateway over `etcdserverpb`).
//!
//! The gateway writes protobuf JSON: `int64` as strings, `bytes` as base64, and
//! fields equal to their zero value (`0`, `""`, `false`, empty lists, enum 0)
//! omitted. So every response field is `#[serde(default)]`, and [`I64`] reads
//! both `"5"` and `5`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use std::fmt;

use super::error::EtcdError;

/// Bytes, base64 on the wire.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct B64(pub Vec<u8>);

impl Serialize for B64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(&self.0))
    }
}

impl<'de> Deserialize<'de> for B64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        STANDARD
            .decode(s.as_bytes())
            .map(B64)
            .map_err(|e| de::Error::custom(format!("bad base64 {s:?}: {e}")))
    }
}

/// An `int64`, a decimal string on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct I64(pub i64);

impl Serialize for I64 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for I64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = I64;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an int64 as a string or a number")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<I64, E> {
                v.parse().map(I64).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<I64, E> {
                Ok(I64(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<I64, E> {
                i64::try_from(v).map(I64).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

// ---- requests ----

#[derive(Debug, Serialize)]
pub(crate) struct RangeRequest {
    pub key: B64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range_end: Option<B64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort_order: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sort_target: Option<&'static str>,
}

#[derive(Debug, Serialize)]
pub(crate) struct PutRequest {
    pub key: B64,
    pub value: B64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<I64>,
}

#[derive(Debug, Serialize)]
pub(crate) struct DeleteRangeRequest {
    pub key: B64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range_end: Option<B64>,
}

#[derive(Debug, Serialize)]
pub(crate) struct Compare {
    pub result: &'static str,
    pub target: &'static str,
    pub key: B64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<I64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub create_revision: Option<I64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mod_revision: Option<I64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<B64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<I64>,
}

/// `RequestOp`: a oneof, i.e. `{"request_put": {...}}`.
#[derive(Debug, Serialize)]
pub(crate) enum RequestOp {
    #[serde(rename = "request_range")]
    Range(RangeRequest),
    #[serde(rename = "request_put")]
    Put(PutRequest),
    #[serde(rename = "request_delete_range")]
    DeleteRange(DeleteRangeRequest),
}

#[derive(Debug, Serialize)]
pub(crate) struct TxnRequest {
    pub compare: Vec<Compare>,
    pub success: Vec<RequestOp>,
    pub failure: Vec<RequestOp>,
}

#[derive(Debug, Serialize)]
pub(crate) struct LeaseGrantRequest {
    #[serde(rename = "TTL")]
    pub ttl: I64,
    #[serde(rename = "ID")]
    pub id: I64,
}

/// `LeaseKeepAliveRequest` and `LeaseRevokeRequest`.
#[derive(Debug, Serialize)]
pub(crate) struct LeaseIdRequest {
    #[serde(rename = "ID")]
    pub id: I64,
}

/// An empty request (`StatusRequest`, `MemberListRequest`).
#[derive(Debug, Serialize)]
pub(crate) struct Empty {}

// ---- responses ----

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Header {
    pub revision: I64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct KeyValue {
    pub key: B64,
    pub create_revision: I64,
    pub mod_revision: I64,
    pub version: I64,
    pub value: B64,
    pub lease: I64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RangeResponse {
    pub header: Header,
    pub kvs: Vec<KeyValue>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PutResponse {
    pub header: Header,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct DeleteRangeResponse {
    pub header: Header,
    pub deleted: I64,
}

/// `ResponseOp`: a oneof, i.e. `{"response_put": {...}}`.
#[derive(Debug, Deserialize)]
pub(crate) enum ResponseOp {
    #[serde(rename = "response_range")]
    Range(RangeResponse),
    #[serde(rename = "response_put")]
    Put(de::IgnoredAny),
    #[serde(rename = "response_delete_range")]
    DeleteRange(DeleteRangeResponse),
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TxnResponse {
    pub header: Header,
    pub succeeded: bool,
    pub responses: Vec<ResponseOp>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct LeaseGrantResponse {
    pub header: Header,
    #[serde(rename = "ID")]
    pub id: I64,
    #[serde(rename = "TTL")]
    pub ttl: I64,
    pub error: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct LeaseKeepAliveResponse {
    pub header: Header,
    #[serde(rename = "ID")]
    pub id: I64,
    /// Absent (0) when the lease does not exist.
    #[serde(rename = "TTL")]
    pub ttl: I64,
}

/// `LeaseTimeToLiveResponse`: `TTL` is -1 when the lease does not exist.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct LeaseTimeToLiveResponse {
    pub header: Header,
    #[serde(rename = "ID")]
    pub id: I64,
    #[serde(rename = "TTL")]
    pub ttl: I64,
    #[serde(rename = "grantedTTL")]
    pub granted_ttl: I64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct StatusResponse {
    pub header: Header,
    pub version: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct MemberListResponse {
    pub members: Vec<Member>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Member {
    pub name: String,
}

/// A unary error: `{"error":"etcdserver: ...","code":5,"message":"etcdserver: ..."}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ErrorBody {
    error: String,
    code: Option<i32>,
    message: String,
}

/// An error inside a stream: `{"error":{"grpc_code":5,"http_code":404,"message":..}}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct StreamError {
    grpc_code: i32,
    message: String,
}

/// One message of a streamed response (`LeaseKeepAlive` is a bidirectional stream:
/// one request in the body, newline-delimited `{"result":..}` / `{"error":..}` out).
#[derive(Debug, Deserialize)]
pub(crate) struct StreamMessage<T> {
    pub result: Option<T>,
    pub error: Option<StreamError>,
}

impl From<StreamError> for EtcdError {
    fn from(e: StreamError) -> EtcdError {
        EtcdError::Status { code: e.grpc_code, message: e.message }
    }
}

/// Decodes an HTTP answer of the gateway: a 2xx body as `T`, anything else as an error.
pub(crate) fn decode<T: for<'de> Deserialize<'de>>(
    status: u16,
    body: &[u8],
) -> Result<T, EtcdError> {
    if (200..300).contains(&status) {
        return serde_json::from_slice(body).map_err(|e| decode_error(&e, body));
    }
    match serde_json::from_slice::<ErrorBody>(body) {
        Ok(ErrorBody { code: Some(code), message, error }) => Err(EtcdError::Status {
            code,
            message: if message.is_empty() { error } else { message },
        }),
        _ => Err(EtcdError::Http { status, body: snippet(body) }),
    }
}

/// Decodes the first message of a streamed answer.
pub(crate) fn decode_first<T: for<'de> Deserialize<'de>>(
    status: u16,
    body: &[u8],
) -> Result<T, EtcdError> {
    if !(200..300).contains(&status) {
        return decode::<T>(status, body);
    }
    let first = serde_json::Deserializer::from_slice(body)
        .into_iter::<StreamMessage<T>>()
        .next()
        .ok_or_else(|| EtcdError::Decode("empty stream".to_owned()))?
        .map_err(|e| decode_error(&e, body))?;
    match first {
        StreamMessage { error: Some(e), .. } => Err(e.into()),
        StreamMessage { result: Some(r), .. } => Ok(r),
        _ => Err(EtcdError::Decode(format!("stream message without result: {}", snippet(body)))),
    }
}

fn decode_error(e: &serde_json::Error, body: &[u8]) -> EtcdError {
    EtcdError::Decode(format!("{e} in {}", snippet(body)))
}

/// The start of a body, for error messages.
fn snippet(body: &[u8]) -> String {
    const MAX: usize = 200;
    let s = String::from_utf8_lossy(&body[..body.len().min(MAX)]);
    let s = s.trim_end();
    if body.len() > MAX {
        format!("{s}…")
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_use_strings_for_int64_and_base64_for_bytes() {
        let put = PutRequest {
            key: B64(b"foo".to_vec()),
            value: B64(vec![0, 0xff]),
            lease: Some(I64(7587)),
        };
        assert_eq!(
            serde_json::to_string(&put).unwrap(),
            r#"{"key":"Zm9v","value":"AP8=","lease":"7587"}"#
        );
        let op =
            RequestOp::DeleteRange(DeleteRangeRequest { key: B64(b"a".to_vec()), range_end: None });
        assert_eq!(
            serde_json::to_string(&op).unwrap(),
            r#"{"request_delete_range":{"key":"YQ=="}}"#
        );
    }

    #[test]
    fn responses_tolerate_omitted_zero_fields() {
        let body = br#"{"header":{"revision":"2"},"kvs":[{"key":"Zm9v","create_revision":"2","mod_revision":"2","version":"1"}],"count":"1"}"#;
        let r: RangeResponse = decode(200, body).unwrap();
        assert_eq!(r.header.revision, I64(2));
        assert_eq!(r.kvs[0].key.0, b"foo");
        assert_eq!(r.kvs[0].value.0, b"");
        assert_eq!(r.kvs[0].lease, I64(0));

        let r: TxnResponse = decode(200, br#"{"header":{"revision":"3"}}"#).unwrap();
        assert!(!r.succeeded);
        assert!(r.responses.is_empty());
    }

    #[test]
    fn errors_become_status_or_http() {
        let body = br#"{"error":"etcdserver: requested lease not found","message":"etcdserver: requested lease not found","code":5}"#;
        let e = decode::<PutResponse>(404, body).unwrap_err();
        assert_eq!(e.code(), Some(5), "{e}");
        let e = decode::<PutResponse>(404, b"Not Found\n").unwrap_err();
        assert!(matches!(e, EtcdError::Http { status: 404, .. }), "{e}");
    }

    #[test]
    fn streams_yield_their_first_message() {
        let body = b"{\"result\":{\"header\":{\"revision\":\"1\"},\"ID\":\"43\"}}\n";
        let r: LeaseKeepAliveResponse = decode_first(200, body).unwrap();
        assert_eq!((r.id, r.ttl), (I64(43), I64(0)));
        let body = br#"{"error":{"grpc_code":14,"http_code":503,"message":"no leader","http_status":"Service Unavailable"}}"#;
        let e = decode_first::<LeaseKeepAliveResponse>(200, body).unwrap_err();
        assert_eq!(e.code(), Some(14), "{e}");
    }
}
