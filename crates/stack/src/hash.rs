//! The hash maps the data path looks up per packet: TCP demultiplexing,
//! the listener's half-open table, the destination and neighbour caches,
//! the routing table's prefix levels.
//!
//! The standard library's SipHash-1-3 cost 5–7 % of a bulk transfer's
//! time in these maps (issue 22's profile). foldhash's fast hasher takes
//! a few instructions per key instead, and its `RandomState` still seeds
//! every map with a per-process random value, so the buckets an attacker
//! who chooses remote addresses and ports would aim at are not known in
//! advance. Every map here is also bounded in size by its owner
//! (sockets, half-open entries, cache capacities).

/// A `HashMap` with foldhash's seeded fast hasher.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
