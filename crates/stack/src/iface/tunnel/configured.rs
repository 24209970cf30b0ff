//! The rules of RFC 4213 §3 ("Configured Tunneling Mechanism") that do not
//! need the host: MTU and Don't Fragment (§3.2), TTL (§3.3), how ICMPv4
//! errors about encapsulated packets become ICMPv6 for the IPv6 source
//! (§3.4), the source checks on decapsulated packets (§3.6) and the
//! link-local address (§3.7).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4Repr};

/// §3.2: an IPv4 path over Ethernet carries 1500 bytes, less the 20-byte
/// encapsulating header.
pub const DEFAULT_MTU: usize = 1480;
/// §3.2: never below the IPv6 minimum (RFC 8200 §5).
pub const MIN_MTU: usize = wire::ipv6::MIN_MTU;
/// The largest IPv6 packet an IPv4 datagram of 65 535 bytes can carry.
pub const MAX_MTU: usize = 65_535 - ENCAPSULATION_LEN;
/// §3.3: the IPv4 TTL of encapsulated packets, the default TTL (RFC 1700,
/// now IANA's registry after RFC 3232).
pub const DEFAULT_TTL: u8 = 64;
/// §3.5: the encapsulating IPv4 header has no options.
pub const ENCAPSULATION_LEN: usize = wire::ipv4::HEADER_LEN;

/// How the tunnel MTU is kept (§3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MtuMode {
    /// §3.2.1: the MTU is the configured one and the IPv4 header never has
    /// Don't Fragment set: the IPv4 path fragments what it cannot carry.
    Static,
    /// §3.2.2: the tunnel MTU follows the IPv4 path MTU less 20 (never
    /// below 1280); packets larger than 1280 bytes are sent with Don't
    /// Fragment so that IPv4 path-MTU discovery finds the path's MTU.
    Dynamic,
}

impl MtuMode {
    pub const fn name(self) -> &'static str {
        match self {
            MtuMode::Static => "static",
            MtuMode::Dynamic => "dynamic",
        }
    }
}

/// §3.2.1 / §3.2.2: whether an encapsulated IPv6 packet of `ipv6_len`
/// bytes goes with Don't Fragment.
pub fn dont_fragment(mode: MtuMode, ipv6_len: usize) -> bool {
    mode == MtuMode::Dynamic && ipv6_len > MIN_MTU
}

/// §3.2.2: the tunnel MTU over an IPv4 path of `ipv4_path_mtu` bytes, for
/// a tunnel configured with `configured`.
pub fn dynamic_mtu(ipv4_path_mtu: usize, configured: usize) -> usize {
    ipv4_path_mtu
        .saturating_sub(ENCAPSULATION_LEN)
        .clamp(MIN_MTU, configured.max(MIN_MTU))
}

/// §3.7: the interface identifier of a tunnel end is its IPv4 address,
/// with zeros in the high-order 32 bits.
pub fn interface_id(address: Ipv4Addr) -> [u8; 8] {
    let mut id = [0u8; 8];
    id[4..].copy_from_slice(&address.octets());
    id
}

/// §3.7: the link-local address of a tunnel end, fe80::/64 plus
/// [`interface_id`].
pub fn link_local(address: Ipv4Addr) -> Ipv6Addr {
    wire::ipv6::link_local_from_interface_id(interface_id(address))
}

/// What an ICMPv4 error about an encapsulated packet becomes for the IPv6
/// packet inside (§3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relayed {
    /// Fragmentation Needed: the tunnel MTU the IPv4 path allows (§3.2.2),
    /// told as Packet Too Big.
    PacketTooBig { mtu: u32 },
    /// Any other unreachable or time exceeded: the tunnel could not
    /// deliver, told as Destination Unreachable, Address Unreachable.
    Unreachable,
}

/// §3.4: how an ICMPv4 error is relayed; `None` for messages that say
/// nothing about reaching the IPv6 destination (Parameter Problem, which
/// is about our own IPv4 header, and non-errors).
pub fn relay_kind(repr: &Icmpv4Repr<'_>) -> Option<Relayed> {
    match repr {
        Icmpv4Repr::DstUnreachable {
            reason: Icmpv4DstUnreachable::FragRequired,
            next_hop_mtu,
            ..
        } => {
            // RFC 1191 §5: a router too old to say leaves it zero; the
            // IPv6 minimum is then all the tunnel can promise.
            let ipv4_mtu = usize::from(*next_hop_mtu);
            let mtu = if ipv4_mtu == 0 {
                MIN_MTU
            } else {
                dynamic_mtu(ipv4_mtu, MAX_MTU)
            };
            Some(Relayed::PacketTooBig { mtu: mtu as u32 })
        }
        Icmpv4Repr::DstUnreachable { .. } | Icmpv4Repr::TimeExceeded { .. } => {
            Some(Relayed::Unreachable)
        }
        _ => None,
    }
}

/// The packet quoted by an ICMPv4 error, if it is protocol 41 (a first or
/// only fragment): the quoted IPv4 source and destination and the IPv6
/// packet's leading bytes. The quote may end before its total length.
pub fn quoted_encapsulation(invoking: &[u8]) -> Option<(Ipv4Addr, Ipv4Addr, &[u8])> {
    let quoted = crate::iface::icmp_error::quoted_ipv4(invoking)?;
    if quoted.protocol != wire::ip::IpProtocol::Ipv6 || !quoted.initial {
        return None;
    }
    match (quoted.src, quoted.dst) {
        (IpAddr::V4(src), IpAddr::V4(dst)) => Some((src, dst, quoted.upper)),
        _ => None,
    }
}

/// §3.6: sources no decapsulator accepts, whatever the tunnel: the
/// unspecified, loopback, multicast and IPv4-mapped addresses (RFC 4291
/// §2.5.2, §2.5.3, §2.7, §2.5.5.2) — a tunnel would otherwise let any IPv4
/// host inject packets that look local.
pub fn martian_source(src: Ipv6Addr) -> Result<(), &'static str> {
    if src.is_unspecified() || src.is_loopback() || src.is_multicast() {
        return Err("tunnel_ingress_martian");
    }
    if src.to_ipv4_mapped().is_some() {
        return Err("tunnel_ingress_mapped");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn df_only_in_dynamic_mode_above_the_ipv6_minimum() {
        assert!(!dont_fragment(MtuMode::Static, 1480));
        assert!(!dont_fragment(MtuMode::Dynamic, 1280));
        assert!(dont_fragment(MtuMode::Dynamic, 1281));
    }

    #[test]
    fn the_dynamic_mtu_is_the_path_less_20_within_1280_and_the_configured() {
        assert_eq!(dynamic_mtu(1500, 1480), 1480);
        assert_eq!(dynamic_mtu(1400, 1480), 1380);
        assert_eq!(dynamic_mtu(1000, 1480), 1280);
        assert_eq!(dynamic_mtu(9000, 1480), 1480);
    }

    #[test]
    fn the_link_local_address_holds_the_ipv4_address() {
        let address = link_local(Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(address, "fe80::c000:201".parse::<Ipv6Addr>().unwrap());
    }

    #[test]
    fn fragmentation_needed_becomes_packet_too_big_of_the_path_less_20() {
        let repr = Icmpv4Repr::DstUnreachable {
            reason: Icmpv4DstUnreachable::FragRequired,
            next_hop_mtu: 1400,
            invoking: &[],
        };
        assert_eq!(relay_kind(&repr), Some(Relayed::PacketTooBig { mtu: 1380 }));
        let old_router = Icmpv4Repr::DstUnreachable {
            reason: Icmpv4DstUnreachable::FragRequired,
            next_hop_mtu: 0,
            invoking: &[],
        };
        assert_eq!(
            relay_kind(&old_router),
            Some(Relayed::PacketTooBig { mtu: 1280 })
        );
        let host = Icmpv4Repr::DstUnreachable {
            reason: Icmpv4DstUnreachable::HostUnreachable,
            next_hop_mtu: 0,
            invoking: &[],
        };
        assert_eq!(relay_kind(&host), Some(Relayed::Unreachable));
        let problem = Icmpv4Repr::ParamProblem {
            pointer: 0,
            invoking: &[],
        };
        assert_eq!(relay_kind(&problem), None);
    }

    #[test]
    fn martian_sources_are_refused() {
        for bad in ["::", "::1", "ff02::1", "::ffff:192.0.2.1"] {
            assert!(martian_source(bad.parse().unwrap()).is_err(), "{bad}");
        }
        assert!(martian_source("2001:db8::1".parse().unwrap()).is_ok());
        assert!(martian_source("fe80::1".parse().unwrap()).is_ok());
    }
}
