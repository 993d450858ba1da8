//! [`Txn`]: etcd's atomic "if all compares hold, then these ops, else those ops".

use super::kv::{prefix_range, KeyValue};
use super::wire::{self, B64, I64};
use super::{LeaseId, Revision};

/// A transaction: if every [`Compare`] holds, etcd applies `success`, else `failure`,
/// atomically at one revision.
///
/// ```
/// use rangelock_cluster::etcd::{CmpOp, Compare, Txn, TxnOp};
/// // Create `k` only if it does not exist; otherwise read it.
/// let txn = Txn::new()
///     .when([Compare::CreateRevision(b"k".to_vec(), CmpOp::Equal, 0)])
///     .and_then([TxnOp::put(b"k", b"v", None)])
///     .or_else([TxnOp::get(b"k")]);
/// assert_eq!(txn.success.len(), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Txn {
    /// The conditions, all of which must hold.
    pub compare: Vec<Compare>,
    /// Applied when they all hold.
    pub success: Vec<TxnOp>,
    /// Applied otherwise.
    pub failure: Vec<TxnOp>,
}

impl Txn {
    /// An empty transaction (it succeeds and does nothing).
    pub fn new() -> Txn {
        Txn::default()
    }

    /// Adds conditions.
    pub fn when(mut self, compare: impl IntoIterator<Item = Compare>) -> Txn {
        self.compare.extend(compare);
        self
    }

    /// Adds ops applied when the conditions hold.
    pub fn and_then(mut self, ops: impl IntoIterator<Item = TxnOp>) -> Txn {
        self.success.extend(ops);
        self
    }

    /// Adds ops applied when a condition fails.
    pub fn or_else(mut self, ops: impl IntoIterator<Item = TxnOp>) -> Txn {
        self.failure.extend(ops);
        self
    }

    pub(crate) fn to_wire(&self) -> wire::TxnRequest {
        wire::TxnRequest {
            compare: self.compare.iter().map(Compare::to_wire).collect(),
            success: self.success.iter().map(TxnOp::to_wire).collect(),
            failure: self.failure.iter().map(TxnOp::to_wire).collect(),
        }
    }
}

/// A condition on one key: `<field of key> <op> <operand>`.
///
/// A missing key has version, create and mod revision 0, lease 0, and fails every
/// `Value` comparison (even `NotEqual`). `CreateRevision(key, Equal, 0)` is
/// "key absent"; `ModRevision(key, Equal, rev)` is compare-and-swap.
#[derive(Clone, Debug)]
pub enum Compare {
    /// The key's version (writes since creation).
    Version(Vec<u8>, CmpOp, i64),
    /// The key's create revision.
    CreateRevision(Vec<u8>, CmpOp, Revision),
    /// The key's mod revision.
    ModRevision(Vec<u8>, CmpOp, Revision),
    /// The key's value (byte-wise order).
    Value(Vec<u8>, CmpOp, Vec<u8>),
    /// The key's lease (0: none).
    Lease(Vec<u8>, CmpOp, LeaseId),
}

impl Compare {
    fn to_wire(&self) -> wire::Compare {
        let (key, op) = match self {
            Compare::Version(k, op, _)
            | Compare::CreateRevision(k, op, _)
            | Compare::ModRevision(k, op, _)
            | Compare::Value(k, op, _)
            | Compare::Lease(k, op, _) => (k, *op),
        };
        let mut c = wire::Compare {
            result: op.wire(),
            target: "",
            key: B64(key.clone()),
            version: None,
            create_revision: None,
            mod_revision: None,
            value: None,
            lease: None,
        };
        match self {
            Compare::Version(_, _, v) => (c.target, c.version) = ("VERSION", Some(I64(*v))),
            Compare::CreateRevision(_, _, r) => {
                (c.target, c.create_revision) = ("CREATE", Some(I64(*r)))
            }
            Compare::ModRevision(_, _, r) => (c.target, c.mod_revision) = ("MOD", Some(I64(*r))),
            Compare::Value(_, _, v) => (c.target, c.value) = ("VALUE", Some(B64(v.clone()))),
            Compare::Lease(_, _, l) => (c.target, c.lease) = ("LEASE", Some(I64(*l))),
        }
        c
    }
}

/// The comparison of a [`Compare`]: `<field of key> <op> <operand>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    /// `==`
    Equal,
    /// `!=`
    NotEqual,
    /// `>`
    Greater,
    /// `<`
    Less,
}

impl CmpOp {
    fn wire(self) -> &'static str {
        match self {
            CmpOp::Equal => "EQUAL",
            CmpOp::NotEqual => "NOT_EQUAL",
            CmpOp::Greater => "GREATER",
            CmpOp::Less => "LESS",
        }
    }
}

/// An operation of a [`Txn`] branch.
#[derive(Clone, Debug)]
pub enum TxnOp {
    /// Writes `key`, attached to `lease` if given.
    Put {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
        /// The lease to attach the key to.
        lease: Option<LeaseId>,
    },
    /// Deletes `key` (a no-op if absent).
    Delete {
        /// The key.
        key: Vec<u8>,
    },
    /// Reads `key`.
    Get {
        /// The key.
        key: Vec<u8>,
    },
    /// Reads every key starting with `prefix`, sorted by key.
    GetPrefix {
        /// The prefix.
        prefix: Vec<u8>,
    },
}

impl TxnOp {
    /// [`TxnOp::Put`].
    pub fn put(
        key: impl Into<Vec<u8>>,
        value: impl Into<Vec<u8>>,
        lease: Option<LeaseId>,
    ) -> TxnOp {
        TxnOp::Put { key: key.into(), value: value.into(), lease }
    }

    /// [`TxnOp::Delete`].
    pub fn delete(key: impl Into<Vec<u8>>) -> TxnOp {
        TxnOp::Delete { key: key.into() }
    }

    /// [`TxnOp::Get`].
    pub fn get(key: impl Into<Vec<u8>>) -> TxnOp {
        TxnOp::Get { key: key.into() }
    }

    /// [`TxnOp::GetPrefix`].
    pub fn get_prefix(prefix: impl Into<Vec<u8>>) -> TxnOp {
        TxnOp::GetPrefix { prefix: prefix.into() }
    }

    fn to_wire(&self) -> wire::RequestOp {
        match self {
            TxnOp::Put { key, value, lease } => {
                wire::RequestOp::Put(put_request(key, value, *lease))
            }
            TxnOp::Delete { key } => wire::RequestOp::DeleteRange(wire::DeleteRangeRequest {
                key: B64(key.clone()),
                range_end: None,
            }),
            TxnOp::Get { key } => wire::RequestOp::Range(get_request(key)),
            TxnOp::GetPrefix { prefix } => wire::RequestOp::Range(prefix_request(prefix)),
        }
    }
}

/// What a [`Txn`] did.
#[derive(Clone, Debug)]
pub struct TxnResponse {
    /// Whether the compares held (`success` ran) or not (`failure` ran).
    pub succeeded: bool,
    /// The store's revision after the transaction.
    pub revision: Revision,
    /// One per op of the branch that ran, in order.
    pub responses: Vec<TxnOpResponse>,
}

/// The result of one [`TxnOp`].
#[derive(Clone, Debug)]
pub enum TxnOpResponse {
    /// A [`TxnOp::Put`] was applied.
    Put,
    /// A [`TxnOp::Delete`] removed `deleted` keys (0 or 1).
    Delete {
        /// How many keys were removed.
        deleted: i64,
    },
    /// What a [`TxnOp::Get`] or [`TxnOp::GetPrefix`] read.
    Range(Vec<KeyValue>),
}

impl From<wire::TxnResponse> for TxnResponse {
    fn from(r: wire::TxnResponse) -> TxnResponse {
        TxnResponse {
            succeeded: r.succeeded,
            revision: r.header.revision.0,
            responses: r
                .responses
                .into_iter()
                .map(|op| match op {
                    wire::ResponseOp::Put(_) => TxnOpResponse::Put,
                    wire::ResponseOp::DeleteRange(d) => {
                        TxnOpResponse::Delete { deleted: d.deleted.0 }
                    }
                    wire::ResponseOp::Range(r) => {
                        TxnOpResponse::Range(r.kvs.into_iter().map(KeyValue::from).collect())
                    }
                })
                .collect(),
        }
    }
}

pub(crate) fn put_request(key: &[u8], value: &[u8], lease: Option<LeaseId>) -> wire::PutRequest {
    wire::PutRequest { key: B64(key.to_vec()), value: B64(value.to_vec()), lease: lease.map(I64) }
}

pub(crate) fn get_request(key: &[u8]) -> wire::RangeRequest {
    wire::RangeRequest {
        key: B64(key.to_vec()),
        range_end: None,
        sort_order: None,
        sort_target: None,
    }
}

pub(crate) fn prefix_request(prefix: &[u8]) -> wire::RangeRequest {
    let (key, end) = prefix_range(prefix);
    wire::RangeRequest {
        key: B64(key),
        range_end: Some(B64(end)),
        sort_order: Some("ASCEND"),
        sort_target: Some("KEY"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_name_their_target_and_operand() {
        let txn = Txn::new()
            .when([
                Compare::CreateRevision(b"k".to_vec(), CmpOp::Equal, 0),
                Compare::Value(b"k".to_vec(), CmpOp::NotEqual, b"v".to_vec()),
            ])
            .and_then([TxnOp::put(b"k", b"v", Some(3))])
            .or_else([TxnOp::get_prefix(b"k")]);
        let json = serde_json::to_value(txn.to_wire()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "compare": [
                    {"result": "EQUAL", "target": "CREATE", "key": "aw==", "create_revision": "0"},
                    {"result": "NOT_EQUAL", "target": "VALUE", "key": "aw==", "value": "dg=="},
                ],
                "success": [{"request_put": {"key": "aw==", "value": "dg==", "lease": "3"}}],
                "failure": [{"request_range": {
                    "key": "aw==", "range_end": "bA==", "sort_order": "ASCEND", "sort_target": "KEY"
                }}],
            })
        );
    }
}
