//! The range-lock server.
