//! [`KeyValue`] and etcd's key-range conventions.

use super::wire;
use super::{LeaseId, Revision};

/// A key and its value as stored in etcd.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// The revision that created the key (since its last deletion).
    pub create_revision: Revision,
    /// The revision of the last write to the key.
    pub mod_revision: Revision,
    /// Writes since creation: 1 after the creating write.
    pub version: i64,
    /// The lease the key is attached to, 0 for none.
    pub lease: LeaseId,
}

impl From<wire::KeyValue> for KeyValue {
    fn from(kv: wire::KeyValue) -> KeyValue {
        KeyValue {
            key: kv.key.0,
            value: kv.value.0,
            create_revision: kv.create_revision.0,
            mod_revision: kv.mod_revision.0,
            version: kv.version.0,
            lease: kv.lease.0,
        }
    }
}

/// The `(key, range_end)` of a range covering every key that starts with `prefix`.
///
/// etcd's convention: the end is the prefix with its last byte incremented, after
/// dropping trailing `0xff` bytes (which have no successor); a prefix of only
/// `0xff` bytes, or an empty one, has end `"\0"`, meaning "to the last key". The
/// empty prefix starts at `"\0"` since etcd rejects an empty key (and no key is empty).
pub(crate) fn prefix_range(prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let key = if prefix.is_empty() { vec![0] } else { prefix.to_vec() };
    let mut end = prefix.to_vec();
    while let Some(&last) = end.last() {
        if last == 0xff {
            end.pop();
        } else {
            *end.last_mut().expect("non-empty") += 1;
            return (key, end);
        }
    }
    (key, vec![0])
}

#[cfg(test)]
mod tests {
    use super::prefix_range;

    #[test]
    fn prefix_end_increments_the_last_byte_with_carry() {
        assert_eq!(prefix_range(b"abc"), (b"abc".to_vec(), b"abd".to_vec()));
        assert_eq!(prefix_range(&[1, 0xff]), (vec![1, 0xff], vec![2]));
        assert_eq!(prefix_range(&[1, 0xfe, 0xff, 0xff]).1, vec![1, 0xff]);
        assert_eq!(prefix_range(&[0xff, 0xff]), (vec![0xff, 0xff], vec![0]));
        assert_eq!(prefix_range(b""), (vec![0], vec![0]));
    }
}
