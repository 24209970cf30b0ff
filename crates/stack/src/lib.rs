//! The reference stack: a user-space IPv6/IPv4 host and router whose every
//! layer boundary, queue and cost centre carries a probe (DESIGN.md, "The
//! reference stack"). Layered after smoltcp: `phy` (links), `buffer`
//! (pooled packet buffers), and, as they land, `iface` and `socket`.

pub mod buffer;
pub mod hash;
pub mod iface;
pub mod phy;
pub mod probes;
pub mod random;
pub mod runner;
pub mod socket;
pub mod time;
pub mod tools;
pub mod topology;
