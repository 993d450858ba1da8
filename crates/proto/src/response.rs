//! Responses: `len u32 | op|0x80 u8 | id u64 | status u8 | value u64 | body`.
//!
//! `value` is the fencing token for a granted `LOCK`/`POLL` and 0 otherwise. Only a `STATS`
//! response with status `OK` has a body ([`StatsBody`]).

use super::codec::{begin_frame, finish_frame, Cursor, Put};
use super::error::DecodeError;
use super::request::op;
use super::stats::StatsBody;
use super::status::Status;

/// One response frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponseFrame {
    /// The request's op byte (without the response bit); [`op::UNKNOWN`] for a request
    /// whose op byte names no operation (answered with [`Status::UnknownOp`]).
    pub op: u8,
    /// The request's id (0 for errors not tied to a decodable request).
    pub id: u64,
    /// Outcome.
    pub status: Status,
    /// Fencing token of a grant, else 0.
    pub value: u64,
    /// Present only for a successful `STATS`.
    pub stats: Option<StatsBody>,
}

impl ResponseFrame {
    /// A response without body.
    pub fn new(op: u8, id: u64, status: Status, value: u64) -> Self {
        ResponseFrame { op, id, status, value, stats: None }
    }

    /// Appends the whole frame, length prefix included, to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let at = begin_frame(out);
        out.put_u8(self.op | op::RESPONSE);
        out.put_u64(self.id);
        out.put_u8(self.status.code());
        out.put_u64(self.value);
        if let Some(body) = &self.stats {
            body.encode(out);
        }
        finish_frame(out, at);
    }

    /// Decodes a frame body (the bytes after the length prefix). Total: never panics.
    pub fn decode(body: &[u8]) -> Result<Self, DecodeError> {
        let mut c = Cursor::new(body);
        let kind = c.u8()?;
        if kind & op::RESPONSE == 0 {
            return Err(DecodeError::BadResponseKind(kind));
        }
        let op_byte = kind & !op::RESPONSE;
        let id = c.u64()?;
        let status = Status::from_code(c.u8()?)?;
        let value = c.u64()?;
        let stats = if op_byte == op::STATS && status == Status::Ok {
            Some(StatsBody::decode(&mut c)?)
        } else {
            None
        };
        c.finish()?;
        Ok(ResponseFrame { op: op_byte, id, status, value, stats })
    }
}
