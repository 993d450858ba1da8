//! A small etcd v3 client over etcd's JSON gateway.
