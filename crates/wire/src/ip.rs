//! What IPv4 and IPv6 share: protocol / next-header numbers, the checksum
//! policy, and the upper-layer pseudo-header over either family.

use core::net::IpAddr;

use crate::checksum;

/// IPv4 protocol and IPv6 next-header numbers (IANA "Assigned Internet
/// Protocol Numbers"); unknown values are kept, not rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IpProtocol {
    /// IPv6 hop-by-hop options (0).
    HopByHop,
    Icmp,
    Igmp,
    Tcp,
    Udp,
    /// IPv6 routing header (43).
    Ipv6Route,
    /// IPv6 fragment header (44).
    Ipv6Frag,
    Icmpv6,
    /// IPv6 no next header (59).
    Ipv6NoNxt,
    /// IPv6 destination options (60).
    Ipv6Opts,
    /// IPv6 encapsulated in IPv4 or IPv6 (41).
    Ipv6,
    /// IPv4 encapsulated (4).
    Ipv4,
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    fn from(value: u8) -> Self {
        match value {
            0 => Self::HopByHop,
            1 => Self::Icmp,
            2 => Self::Igmp,
            4 => Self::Ipv4,
            6 => Self::Tcp,
            17 => Self::Udp,
            41 => Self::Ipv6,
            43 => Self::Ipv6Route,
            44 => Self::Ipv6Frag,
            58 => Self::Icmpv6,
            59 => Self::Ipv6NoNxt,
            60 => Self::Ipv6Opts,
            other => Self::Unknown(other),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(value: IpProtocol) -> Self {
        match value {
            IpProtocol::HopByHop => 0,
            IpProtocol::Icmp => 1,
            IpProtocol::Igmp => 2,
            IpProtocol::Ipv4 => 4,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Ipv6 => 41,
            IpProtocol::Ipv6Route => 43,
            IpProtocol::Ipv6Frag => 44,
            IpProtocol::Icmpv6 => 58,
            IpProtocol::Ipv6NoNxt => 59,
            IpProtocol::Ipv6Opts => 60,
            IpProtocol::Unknown(other) => other,
        }
    }
}

/// Whether checksums are computed on emit and verified on parse. `Skip`
/// models checksum offload and the "checksum off" runs of the XTP study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChecksumMode {
    #[default]
    Full,
    Skip,
}

/// Sum of the upper-layer pseudo-header for either family. Mixed families
/// cannot occur in one packet; they are summed as IPv6 with mapped addresses
/// so the function stays total.
pub fn pseudo_header(src: &IpAddr, dst: &IpAddr, protocol: IpProtocol, length: u32) -> u16 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            // IPv4 lengths are 16 bits; a longer one cannot be on the wire.
            checksum::pseudo_header_v4(*s, *d, protocol.into(), length as u16)
        }
        _ => checksum::pseudo_header_v6(to_v6(src), to_v6(dst), protocol.into(), length),
    }
}

fn to_v6(addr: &IpAddr) -> core::net::Ipv6Addr {
    match addr {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => *a,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_numbers_round_trip() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(IpProtocol::from(v)), v);
        }
    }
}
