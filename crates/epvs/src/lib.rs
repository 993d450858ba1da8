//! Epoch protection and the Epoch-Protected Version Scheme (EPVS).
