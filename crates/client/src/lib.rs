//! Client for rangelockd.
