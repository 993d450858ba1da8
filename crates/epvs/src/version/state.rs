//! [`State`]: version, phase and intermediate flag packed into one `u64`.

use std::fmt;

/// The state of an [`Epvs`](super::Epvs) instance: a version number, a phase byte and
/// the intermediate flag, packed into one `u64` so that it is read and written with a
/// single atomic operation.
///
/// | bits    | field          | meaning                                                   |
/// |---------|----------------|-----------------------------------------------------------|
/// | 0..=7   | `phase`        | user-defined phase; [`State::REST`] (0) is the stable state |
/// | 8       | `intermediate` | a transition's critical section is pending or running     |
/// | 9..=15  | reserved       | always zero                                               |
/// | 16..=63 | `version`      | monotonically increasing version, `0..=State::MAX_VERSION` |
///
/// States handed to users ([`EpvsGuard::state`](super::EpvsGuard::state),
/// [`StateMachine`](super::StateMachine) callbacks) never carry the intermediate flag:
/// a protected region never runs while a critical section is pending or running.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct State(u64);

const PHASE_MASK: u64 = 0xff;
const INTERMEDIATE: u64 = 1 << 8;
const RESERVED_MASK: u64 = 0x7f << 9;
const VERSION_SHIFT: u32 = 16;

impl State {
    /// The phase of the stable (rest) state. A state machine starts and ends in it.
    pub const REST: u8 = 0;

    /// The largest representable version (2^48 - 1).
    pub const MAX_VERSION: u64 = (1 << (64 - VERSION_SHIFT)) - 1;

    /// A state with the given version and phase, without the intermediate flag.
    ///
    /// # Panics
    ///
    /// If `version > State::MAX_VERSION`.
    #[inline]
    pub const fn new(version: u64, phase: u8) -> State {
        assert!(version <= State::MAX_VERSION, "EPVS version out of range");
        State((version << VERSION_SHIFT) | phase as u64)
    }

    /// The rest state at `version`.
    ///
    /// # Panics
    ///
    /// If `version > State::MAX_VERSION`.
    #[inline]
    pub const fn rest(version: u64) -> State {
        State::new(version, State::REST)
    }

    /// The version.
    #[inline]
    pub const fn version(self) -> u64 {
        self.0 >> VERSION_SHIFT
    }

    /// The phase byte.
    #[inline]
    pub const fn phase(self) -> u8 {
        (self.0 & PHASE_MASK) as u8
    }

    /// Whether the phase is [`State::REST`].
    #[inline]
    pub const fn is_rest(self) -> bool {
        self.phase() == State::REST
    }

    /// Whether the intermediate flag is set (a transition's critical section is
    /// pending or running).
    #[inline]
    pub const fn is_intermediate(self) -> bool {
        self.0 & INTERMEDIATE != 0
    }

    /// This state with the intermediate flag set.
    #[inline]
    pub const fn with_intermediate(self) -> State {
        State(self.0 | INTERMEDIATE)
    }

    /// This state with the intermediate flag cleared.
    #[inline]
    pub const fn without_intermediate(self) -> State {
        State(self.0 & !INTERMEDIATE)
    }

    /// The raw `u64` encoding (see the table on [`State`]).
    #[inline]
    pub const fn to_bits(self) -> u64 {
        self.0
    }

    /// Decodes a raw `u64` known to come from [`to_bits`](State::to_bits) (the fast path
    /// of loading the instance's own state word, which only ever holds encoded states).
    #[inline(always)]
    pub(crate) const fn from_bits_trusted(bits: u64) -> State {
        debug_assert!(bits & RESERVED_MASK == 0, "EPVS state has reserved bits set");
        State(bits)
    }

    /// Decodes a raw `u64`; `None` if reserved bits are set.
    #[inline]
    pub const fn from_bits(bits: u64) -> Option<State> {
        if bits & RESERVED_MASK != 0 {
            None
        } else {
            Some(State(bits))
        }
    }
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("State");
        d.field("version", &self.version()).field("phase", &self.phase());
        if self.is_intermediate() {
            d.field("intermediate", &true);
        }
        d.finish()
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}/p{}", self.version(), self.phase())?;
        if self.is_intermediate() {
            f.write_str("*")?;
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_matches_table() {
        let s = State::new(5, 3);
        assert_eq!(s.to_bits(), (5 << 16) | 3);
        assert_eq!(s.with_intermediate().to_bits(), (5 << 16) | 3 | 0x100);
        assert_eq!(State::MAX_VERSION, (1u64 << 48) - 1);
        assert!(State::rest(7).is_rest());
        assert!(!State::new(7, 1).is_rest());
        assert_eq!(State::from_bits(1 << 9), None);
        assert_eq!(format!("{}", State::new(2, 1).with_intermediate()), "v2/p1*");
    }

    #[test]
    #[should_panic(expected = "out of range")]
    fn version_overflow_panics() {
        let _ = State::new(State::MAX_VERSION + 1, 0);
    }

    proptest! {
        #[test]
        fn roundtrip(version in 0..=State::MAX_VERSION, phase: u8, inter: bool) {
            let mut s = State::new(version, phase);
            if inter {
                s = s.with_intermediate();
            }
            prop_assert_eq!(s.version(), version);
            prop_assert_eq!(s.phase(), phase);
            prop_assert_eq!(s.is_intermediate(), inter);
            prop_assert_eq!(State::from_bits(s.to_bits()), Some(s));
            prop_assert_eq!(s.without_intermediate(), State::new(version, phase));
        }
    }
}
