//! Why a server ended a session: the `value` of a version 4 `SESSION_ENDED` notice
//! (`docs/PROTOCOL.md` §2.1).

/// Why the server ended a session, as its `SESSION_ENDED` notice says.
///
/// Later versions may add reasons: a code this crate does not know decodes as
/// [`EndReason::Other`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EndReason {
    /// The server read no frame of the client for a lease.
    LeaseExpired,
    /// The server is shutting down.
    Shutdown,
    /// The answers the client left unread passed the server's output limit.
    OutputOverLimit,
    /// The client sent requests without reading their answers for a lease.
    NotReading,
    /// The client sent a frame the server cannot delimit (its length prefix is too large
    /// or too small); the id-0 error answer before the notice says which.
    BadFraming,
    /// The token the session authenticated with was removed from the server's auth file
    /// (or its entry changed), and the server reloaded the file.
    TokenRevoked,
    /// A code this crate does not know.
    Other(u64),
}

impl EndReason {
    /// The notice's `value`.
    pub fn code(self) -> u64 {
        match self {
            EndReason::LeaseExpired => 1,
            EndReason::Shutdown => 2,
            EndReason::OutputOverLimit => 3,
            EndReason::NotReading => 4,
            EndReason::BadFraming => 5,
            EndReason::TokenRevoked => 6,
            EndReason::Other(code) => code,
        }
    }

    /// The reason of a notice's `value` (total: an unknown code is [`EndReason::Other`]).
    pub fn from_code(code: u64) -> EndReason {
        match code {
            1 => EndReason::LeaseExpired,
            2 => EndReason::Shutdown,
            3 => EndReason::OutputOverLimit,
            4 => EndReason::NotReading,
            5 => EndReason::BadFraming,
            6 => EndReason::TokenRevoked,
            code => EndReason::Other(code),
        }
    }
}

impl core::fmt::Display for EndReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EndReason::LeaseExpired => {
                f.write_str("lease lapsed (the server read nothing from the client for a lease)")
            }
            EndReason::Shutdown => f.write_str("the server is shutting down"),
            EndReason::OutputOverLimit => {
                f.write_str("the client left more answers unread than the server's output limit")
            }
            EndReason::NotReading => {
                f.write_str("the client sent requests without reading their answers for a lease")
            }
            EndReason::BadFraming => {
                f.write_str("the client sent a frame the server cannot delimit")
            }
            EndReason::TokenRevoked => f.write_str(
                "the session's token was revoked (the server reloaded its auth file without it)",
            ),
            EndReason::Other(code) => {
                write!(f, "reason code {code}, which this client does not know")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_ones_are_kept() {
        for code in 0..8 {
            assert_eq!(EndReason::from_code(code).code(), code);
        }
        assert_eq!(EndReason::from_code(1), EndReason::LeaseExpired);
        assert_eq!(EndReason::from_code(2), EndReason::Shutdown);
        assert_eq!(EndReason::from_code(6), EndReason::TokenRevoked);
        assert_eq!(EndReason::from_code(99), EndReason::Other(99));
    }
}
