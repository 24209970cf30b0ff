//! Automatic tunnelling (RFC 1933 §5, the mechanism the MSR stack enabled
//! whenever IPv4 was present): an IPv4-compatible IPv6 address
//! `::a.b.c.d` names its own tunnel endpoint, `a.b.c.d`.
//!
//! RFC 4291 §2.5.5.1 deprecated IPv4-compatible addresses (and RFC 4213
//! dropped automatic tunnelling): stackscope implements it only as the
//! studied system's behaviour, and a host has it only when asked.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The IPv4-compatible address of `address` (RFC 4291 §2.5.5.1).
pub fn compatible(address: Ipv4Addr) -> Ipv6Addr {
    address.to_ipv6_compatible()
}

/// The IPv4 address inside an IPv4-compatible `address`, if it is one
/// that can be a tunnel endpoint: `::` and `::1` are not compatible
/// addresses (RFC 4291 §2.5.5.1 excludes them), nor is any whose IPv4
/// part is not a unicast address of some node.
pub fn ipv4_of_compatible(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let octets = address.octets();
    if octets[..12] != [0; 12] {
        return None;
    }
    let ipv4 = Ipv4Addr::new(octets[12], octets[13], octets[14], octets[15]);
    is_unicast_endpoint(ipv4).then_some(ipv4)
}

/// Whether `address` can be a tunnel endpoint: not unspecified, this
/// network (0/8), loopback, multicast, broadcast or reserved (240/4).
pub fn is_unicast_endpoint(address: Ipv4Addr) -> bool {
    let first = address.octets()[0];
    first != 0 && first != 127 && first < 224
}

/// An automatic tunnel's ingress check: the packet's IPv6 source must be
/// the compatible address of the IPv4 node that sent it. The endpoint is
/// read from the address, so without this any IPv4 host could send in any
/// IPv6 source's name — the spoofing RFC 4213 §3.6 guards configured
/// tunnels against by checking the endpoint.
pub fn check_source(outer: Ipv4Addr, inner: Ipv6Addr) -> Result<(), &'static str> {
    match ipv4_of_compatible(inner) {
        Some(embedded) if embedded == outer => Ok(()),
        _ => Err("tunnel_ingress_automatic_source"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compatible_addresses_carry_their_endpoint() {
        let ipv4 = Ipv4Addr::new(198, 51, 100, 7);
        assert_eq!(ipv4_of_compatible(compatible(ipv4)), Some(ipv4));
        assert_eq!(ipv4_of_compatible("::".parse().unwrap()), None);
        assert_eq!(ipv4_of_compatible("::1".parse().unwrap()), None);
        assert_eq!(ipv4_of_compatible("::224.0.0.1".parse().unwrap()), None);
        assert_eq!(
            ipv4_of_compatible("::ffff:198.51.100.7".parse().unwrap()),
            None
        );
        assert_eq!(
            ipv4_of_compatible("2001:db8::c633:6407".parse().unwrap()),
            None
        );
    }

    #[test]
    fn the_source_must_be_the_senders_own_compatible_address() {
        let outer = Ipv4Addr::new(198, 51, 100, 7);
        assert!(check_source(outer, compatible(outer)).is_ok());
        assert!(check_source(outer, compatible(Ipv4Addr::new(198, 51, 100, 8))).is_err());
        assert!(check_source(outer, "2001:db8::1".parse().unwrap()).is_err());
    }
}
