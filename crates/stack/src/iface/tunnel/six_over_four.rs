//! 6-over-4 (RFC 2529): an IPv4 network with multicast as a true virtual
//! link for IPv6, Neighbor Discovery and all. The MSR stack made one such
//! interface per IPv4 address.
//!
//! * §4: the interface identifier is the IPv4 address with 32 zero bits
//!   in front (the same as a configured tunnel's, RFC 4213 §3.7);
//! * §5: the link-layer address in ND's Source/Target Link-layer Address
//!   options is two zero octets and the IPv4 address — an option of the
//!   same shape as Ethernet's (length 1, six octets), so the host's ND
//!   carries it as a six-octet "MAC" `00:00:a:b:c:d`;
//! * §6: an IPv6 multicast address maps to the IPv4 group
//!   239.192.X.Y, X and Y its last two octets (organisation-local scope,
//!   RFC 2365).
//!
//! The stack sends no IGMP (`iface::host::multicast`): the IPv4 groups are
//! joined locally, so 6-over-4 works across one multicast-flooding segment
//! (a wire or a hub), not through an IPv4 multicast router.

use std::net::{Ipv4Addr, Ipv6Addr};

use wire::ethernet::EthernetAddress;

/// §6: the IPv4 group of an IPv6 multicast address.
pub fn ipv4_group(group: Ipv6Addr) -> Ipv4Addr {
    let o = group.octets();
    Ipv4Addr::new(239, 192, o[14], o[15])
}

/// Whether `group` is one of the IPv4 groups §6 maps onto (239.192/16).
pub fn is_mapped_group(group: Ipv4Addr) -> bool {
    let o = group.octets();
    o[0] == 239 && o[1] == 192
}

/// §5: the six octets ND carries for the IPv4 address `address`.
pub fn link_address(address: Ipv4Addr) -> EthernetAddress {
    let o = address.octets();
    EthernetAddress([0, 0, o[0], o[1], o[2], o[3]])
}

/// §5: the IPv4 address in a link-layer address option, if it has the
/// two leading zero octets and a unicast address.
pub fn ipv4_of_link_address(lladdr: EthernetAddress) -> Option<Ipv4Addr> {
    let b = lladdr.0;
    if b[..2] != [0, 0] {
        return None;
    }
    let address = Ipv4Addr::new(b[2], b[3], b[4], b[5]);
    super::automatic::is_unicast_endpoint(address).then_some(address)
}

/// The IPv4 destination of an ND "MAC" the host's IPv6 code chose: a
/// multicast one (33:33 and the group's last four octets, RFC 2464 §7)
/// maps to its group's IPv4 group (§6 needs only the last two), a unicast
/// one is the §5 link-layer address.
pub fn ipv4_of_mac(mac: EthernetAddress) -> Option<Ipv4Addr> {
    let b = mac.0;
    if b[..2] == [0x33, 0x33] {
        return Some(Ipv4Addr::new(239, 192, b[4], b[5]));
    }
    ipv4_of_link_address(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multicast_maps_to_239_192_and_the_last_two_octets() {
        let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
        assert_eq!(ipv4_group(all_nodes), Ipv4Addr::new(239, 192, 0, 1));
        let solicited: Ipv6Addr = "ff02::1:ff00:20a".parse().unwrap();
        assert_eq!(ipv4_group(solicited), Ipv4Addr::new(239, 192, 2, 10));
        assert!(is_mapped_group(ipv4_group(solicited)));
        assert!(!is_mapped_group(Ipv4Addr::new(224, 0, 0, 1)));
        let mac = EthernetAddress([0x33, 0x33, 0xff, 0x00, 0x02, 0x0a]);
        assert_eq!(ipv4_of_mac(mac), Some(Ipv4Addr::new(239, 192, 2, 10)));
    }

    #[test]
    fn the_link_layer_address_is_two_zeros_and_the_ipv4_address() {
        let address = Ipv4Addr::new(192, 0, 2, 10);
        let lladdr = link_address(address);
        assert_eq!(lladdr.0, [0, 0, 192, 0, 2, 10]);
        assert_eq!(ipv4_of_link_address(lladdr), Some(address));
        assert_eq!(ipv4_of_mac(lladdr), Some(address));
        // An Ethernet MAC is no 6-over-4 address.
        assert_eq!(
            ipv4_of_link_address(EthernetAddress([2, 0, 192, 0, 2, 10])),
            None
        );
        assert_eq!(
            ipv4_of_link_address(link_address(Ipv4Addr::BROADCAST)),
            None
        );
    }
}
