//! Peers: implementations of other people's algorithms we measure against.

pub mod bravo;
