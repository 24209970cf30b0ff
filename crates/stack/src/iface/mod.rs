//! The network layer's state, after the ND conceptual model of RFC 4861
//! and the MSR IPv6 stack: neighbour cache, reassembly, and (as they land)
//! interfaces with their NTEs and ADEs, route and destination caches,
//! prefix and router lists.

pub mod address;
pub mod arp;
pub mod device;
pub mod host;
pub mod icmp_error;
pub mod igmp;
pub mod interface;
pub mod mld;
pub mod neighbor;
pub mod offload;
pub mod reassembly;
pub mod route;
pub mod tunnel;
