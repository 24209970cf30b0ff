//! Routing: the longest-prefix-match [`RoutingTable`], the destination
//! cache ([`DestinationCache`], the MSR stack's Route Cache of RCEs) and the
//! ICMP error [`IcmpRateLimiter`].
//!
//! The MSR IPv6 stack (Draves, Mankin, Zill 1998, "Route Cache Entries")
//! caches, per destination, the result of next-hop selection: the next-hop
//! neighbour, the preferred source address, the path MTU and ICMP error
//! rate-limiting state. Unlike MSR (which had no routing table) the next hop
//! here comes from a longest-prefix-match table, so a host can act as a
//! router; each cache entry remembers the table's [generation] it was
//! computed against, and any change of the table invalidates every entry.
//!
//! Like the rest of `iface`, everything here is a pure state machine: no
//! clock is read (every timed call takes `now`), memory is bounded by the
//! configured capacities, and what happens is counted for the state dump.
//!
//! Both families share the code through [`RouteAddress`], implemented for
//! [`Ipv6Addr`] and [`Ipv4Addr`].
//!
//! [generation]: RoutingTable::generation

use core::fmt;
use core::hash::Hash;
use std::net::{Ipv4Addr, Ipv6Addr};

mod destination;
mod rate_limit;
mod table;

pub use destination::{
    DestinationCache, DestinationConfig, DestinationCounters, DestinationView, Evicted, NextHop,
    PmtuUpdate, PMTU_AGING, PMTU_AGING_MIN,
};
pub use rate_limit::{IcmpRateLimiter, RateLimitConfig, RateLimitCounters};
pub use table::{
    Inserted, Origin, Route, RouteError, RouteKey, RoutingCounters, RoutingTable,
    DEFAULT_TABLE_CAPACITY,
};

/// Identifies an interface of a node (an index into its interface list).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InterfaceId(pub usize);

impl fmt::Display for InterfaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "if{}", self.0)
    }
}

/// An IP address the routing code can work on: its bits as an unsigned
/// integer (widened to `u128`, the most significant bit of the address at
/// bit `BITS - 1`) and prefix masking.
pub trait RouteAddress: Copy + Eq + Ord + Hash + fmt::Debug + fmt::Display {
    /// Bits in the address: 32 or 128.
    const BITS: u8;
    /// The smallest path MTU the family allows: RFC 8200 §5 (IPv6, 1280)
    /// and RFC 791 (IPv4, 68: "Every internet module must be able to
    /// forward a datagram of 68 octets without further fragmentation").
    const MIN_PATH_MTU: u32;

    /// The address as an integer, zero-extended to 128 bits.
    fn to_bits(self) -> u128;

    /// The address from the low `BITS` bits of `bits`.
    fn from_bits(bits: u128) -> Self;

    /// The mask of a `prefix_len`-bit prefix, as an integer like
    /// [`RouteAddress::to_bits`]; `prefix_len` is clamped to `BITS`.
    fn prefix_mask(prefix_len: u8) -> u128 {
        let len = u32::from(prefix_len.min(Self::BITS));
        let all = if Self::BITS >= 128 {
            u128::MAX
        } else {
            (1u128 << Self::BITS) - 1
        };
        if len == 0 {
            0
        } else {
            (u128::MAX << (u32::from(Self::BITS) - len)) & all
        }
    }

    /// The address with every bit past the first `prefix_len` cleared.
    fn masked(self, prefix_len: u8) -> Self {
        Self::from_bits(self.to_bits() & Self::prefix_mask(prefix_len))
    }
}

impl RouteAddress for Ipv6Addr {
    const BITS: u8 = 128;
    const MIN_PATH_MTU: u32 = 1280;

    fn to_bits(self) -> u128 {
        u128::from(self)
    }

    fn from_bits(bits: u128) -> Self {
        Ipv6Addr::from(bits)
    }
}

impl RouteAddress for Ipv4Addr {
    const BITS: u8 = 32;
    const MIN_PATH_MTU: u32 = 68;

    fn to_bits(self) -> u128 {
        u128::from(u32::from(self))
    }

    fn from_bits(bits: u128) -> Self {
        // Only the low 32 bits are the address; the truncation is the point.
        Ipv4Addr::from(bits as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks() {
        assert_eq!(Ipv4Addr::prefix_mask(0), 0);
        assert_eq!(Ipv4Addr::prefix_mask(8), 0xff00_0000);
        assert_eq!(Ipv4Addr::prefix_mask(32), 0xffff_ffff);
        assert_eq!(Ipv4Addr::prefix_mask(40), 0xffff_ffff);
        assert_eq!(Ipv6Addr::prefix_mask(128), u128::MAX);
        assert_eq!(Ipv6Addr::prefix_mask(1), 1u128 << 127);
        let a: Ipv6Addr = "2001:db8:a::1".parse().unwrap();
        assert_eq!(a.masked(64), "2001:db8:a::".parse::<Ipv6Addr>().unwrap());
        let b: Ipv4Addr = "192.0.2.77".parse().unwrap();
        assert_eq!(b.masked(24), Ipv4Addr::new(192, 0, 2, 0));
        assert_eq!(Ipv4Addr::from_bits(b.to_bits()), b);
    }
}
