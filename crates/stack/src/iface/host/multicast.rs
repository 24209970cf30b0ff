//! IP multicast group membership of a host's interfaces: the API an
//! application joins and leaves groups with, the group-to-MAC mappings,
//! and which multicast frames and datagrams an interface accepts.
//!
//! * IPv6 groups are held by the interface's MLD listener, which the stack
//!   already uses for the all-nodes and solicited-node groups ND needs
//!   (RFC 4861 §7.2.1): an application's join is one more reference, so it
//!   reports the group as MLD says; leaving drops only the application's
//!   reference. The application's joins are kept apart, so a leave of a
//!   group it never joined (ff02::1, say) is refused rather than taking the
//!   stack's own reference.
//! * IPv4 groups are a list on the interface; every interface with an
//!   IPv4 address is a member of the all-hosts group 224.0.0.1 (RFC 1112
//!   §4). IGMPv2 reports them, and the 6-over-4 groups, to multicast
//!   routers (`igmp.rs`); a router hears every group and forwards
//!   multicast onto the interfaces with members.
//! * Multicast is not looped back to the sending host.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use wire::ethernet::EthernetAddress;

use super::ipv4::Ipv4Route;
use super::{Host, InterfaceId};

/// Groups an application may join on one interface, per family.
pub const MAX_GROUPS_PER_INTERFACE: usize = 64;

/// IPv4's all-hosts group, joined on every IPv4 interface (RFC 1112 §4).
pub const ALL_HOSTS_V4: Ipv4Addr = Ipv4Addr::new(224, 0, 0, 1);

/// Why a join or leave was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MulticastError {
    #[error("no interface {0}")]
    NoInterface(usize),
    #[error("{0} is not a multicast address (ff00::/8, 224.0.0.0/4)")]
    NotMulticast(IpAddr),
    #[error("the interface has no IPv4 address to receive {0} on")]
    NoIpv4(Ipv4Addr),
    #[error("{0} is already joined on this interface")]
    AlreadyJoined(IpAddr),
    #[error("{0} was not joined on this interface")]
    NotJoined(IpAddr),
    #[error("too many groups on the interface (at most {MAX_GROUPS_PER_INTERFACE} per family)")]
    TooManyGroups,
}

/// The groups an application joined on one interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memberships {
    /// IPv6 groups joined through [`Host::join_multicast`] (the MLD
    /// listener holds them, with the stack's own).
    pub v6: Vec<Ipv6Addr>,
    /// IPv4 groups joined, besides the implicit 224.0.0.1.
    pub v4: Vec<Ipv4Addr>,
}

/// The MAC an IPv4 group maps to: 01:00:5e and the group's low 23 bits
/// (RFC 1112 §6.4).
pub fn ipv4_multicast_mac(group: Ipv4Addr) -> EthernetAddress {
    let o = group.octets();
    EthernetAddress([0x01, 0x00, 0x5e, o[1] & 0x7f, o[2], o[3]])
}

/// The MAC an IPv6 group maps to: 33:33 and the group's low 32 bits
/// (RFC 2464 §7).
pub fn ipv6_multicast_mac(group: Ipv6Addr) -> EthernetAddress {
    super::ipv6_output::multicast_mac(group)
}

impl Host {
    /// Joins `group` (IPv6 ff00::/8 or IPv4 224.0.0.0/4) on `interface`:
    /// from now on the interface accepts frames to the group's MAC and IP
    /// delivers datagrams to the group, to UDP sockets bound to the group
    /// or to the unspecified address.
    pub fn join_multicast(
        &mut self,
        interface: InterfaceId,
        group: IpAddr,
    ) -> Result<(), MulticastError> {
        let now = self.clock;
        let iface = self
            .interfaces
            .get_mut(interface.0)
            .ok_or(MulticastError::NoInterface(interface.0))?;
        if !group.is_multicast() {
            return Err(MulticastError::NotMulticast(group));
        }
        match group {
            IpAddr::V6(group) => {
                room_for(&iface.multicast.v6, group, false)?;
                iface
                    .v6
                    .mld
                    .join(now, group)
                    .map_err(|_| MulticastError::TooManyGroups)?;
                iface.multicast.v6.push(group);
            }
            IpAddr::V4(group) => {
                if iface.v4.is_none() {
                    return Err(MulticastError::NoIpv4(group));
                }
                // 224.0.0.1 is joined implicitly on every IPv4 interface.
                room_for(&iface.multicast.v4, group, group == ALL_HOSTS_V4)?;
                iface.multicast.v4.push(group);
                // Its IGMP Report is due now (RFC 2236 §3).
                self.igmp_sync(now, interface);
            }
        }
        Ok(())
    }

    /// Leaves a group joined with [`join_multicast`](Self::join_multicast).
    pub fn leave_multicast(
        &mut self,
        interface: InterfaceId,
        group: IpAddr,
    ) -> Result<(), MulticastError> {
        let now = self.clock;
        let iface = self
            .interfaces
            .get_mut(interface.0)
            .ok_or(MulticastError::NoInterface(interface.0))?;
        match group {
            IpAddr::V6(v6) => {
                let index = iface.multicast.v6.iter().position(|&g| g == v6);
                let index = index.ok_or(MulticastError::NotJoined(group))?;
                iface.multicast.v6.swap_remove(index);
                // Our reference is there: the join took it.
                let _ = iface.v6.mld.leave(now, v6);
            }
            IpAddr::V4(v4) => {
                let index = iface.multicast.v4.iter().position(|&g| g == v4);
                let index = index.ok_or(MulticastError::NotJoined(group))?;
                iface.multicast.v4.swap_remove(index);
                // Its Leave, if we reported it last, is due now (§3).
                self.igmp_sync(now, interface);
            }
        }
        Ok(())
    }

    /// The groups an application joined on `interface`.
    pub fn multicast_groups(&self, interface: InterfaceId) -> Option<&Memberships> {
        self.interfaces.get(interface.0).map(|i| &i.multicast)
    }

    /// Whether `interface` is a member of the IPv4 `group`: joined, or the
    /// all-hosts group on an IPv4 interface (RFC 1112 §4).
    pub(super) fn is_member_v4(&self, interface: InterfaceId, group: Ipv4Addr) -> bool {
        let Some(iface) = self.interfaces.get(interface.0) else {
            return false;
        };
        iface.v4.is_some()
            && (group == ALL_HOSTS_V4
                || iface.multicast.v4.contains(&group)
                || self.six_over_four_member(interface, group))
    }

    /// Whether a multicast MAC maps a group `interface` is a member of:
    /// 33:33 and an IPv6 group's last 32 bits (RFC 2464 §7), or 01:00:5e
    /// and an IPv4 group's last 23 bits (RFC 1112 §6.4). Several groups
    /// share a MAC; IP input tells them apart.
    pub(super) fn accepts_multicast_mac(
        &self,
        interface: InterfaceId,
        mac: EthernetAddress,
    ) -> bool {
        let Some(iface) = self.interfaces.get(interface.0) else {
            return false;
        };
        let bytes = mac.0;
        if bytes[..2] == [0x33, 0x33] {
            return iface
                .v6
                .mld
                .groups()
                .iter()
                .any(|g| g.group.octets()[12..] == bytes[2..]);
        }
        if bytes[..3] == [0x01, 0x00, 0x5e] && iface.v4.is_some() {
            // A multicast router listens to every group (RFC 2236 §7).
            if self.router {
                return true;
            }
            let groups = iface.multicast.v4.iter().chain([&ALL_HOSTS_V4]);
            return groups.into_iter().any(|&g| ipv4_multicast_mac(g) == mac)
                || self.six_over_four_accepts_mac(interface, mac);
        }
        false
    }

    /// The route of a datagram to `group` out of `interface`: straight to
    /// the group's MAC, never through a gateway (RFC 1112 §6.4).
    pub(crate) fn multicast_route_v4(
        &self,
        interface: InterfaceId,
        group: Ipv4Addr,
    ) -> Option<Ipv4Route> {
        let interface = self.interfaces.get(interface.0)?;
        Some(Ipv4Route {
            interface: interface.id,
            neighbor: group,
            source: interface.v4.as_ref()?.address,
            mtu: interface.link_mtu(),
            lladdr: None,
        })
    }

    /// The interface whose address `source` is, if any: a socket bound to
    /// it names the interface its multicast leaves by.
    pub(super) fn interface_of_address(&self, source: IpAddr) -> Option<InterfaceId> {
        let found = self.interfaces.iter().find(|i| match source {
            IpAddr::V6(a) => i.v6.addresses.is_assigned(a),
            IpAddr::V4(a) => i.v4.as_ref().is_some_and(|v4| v4.address == a),
        });
        found.map(|i| i.id)
    }

    /// The interface a datagram to `group` leaves by (RFC 4007 §5: a group
    /// of link or site scope is ambiguous without one): the socket's, named
    /// by its bound source address; else that of the route to the group
    /// (the default route's, on a host); else the first interface.
    pub(super) fn multicast_interface(&self, group: IpAddr, bound: Option<IpAddr>) -> InterfaceId {
        if let Some(interface) = bound.and_then(|source| self.interface_of_address(source)) {
            return interface;
        }
        let routed = match group {
            IpAddr::V6(g) => self.routes6.lookup(g).map(|r| r.interface),
            IpAddr::V4(g) => self.routes4.lookup(g).map(|r| r.interface),
        };
        routed.unwrap_or_else(|| {
            let first_v4 = self.interfaces.iter().find(|i| i.v4.is_some());
            match group {
                IpAddr::V4(_) => first_v4.map_or(InterfaceId(0), |i| i.id),
                IpAddr::V6(_) => InterfaceId(0),
            }
        })
    }
}

/// Whether `group` may join an interface that holds `joined`: not there
/// already (nor `implicit`ly), and the table not full.
fn room_for<G: PartialEq + Copy + Into<IpAddr>>(
    joined: &[G],
    group: G,
    implicit: bool,
) -> Result<(), MulticastError> {
    if implicit || joined.contains(&group) {
        return Err(MulticastError::AlreadyJoined(group.into()));
    }
    if joined.len() >= MAX_GROUPS_PER_INTERFACE {
        return Err(MulticastError::TooManyGroups);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_map_to_the_rfc_macs() {
        // RFC 1112 §6.4: the high bit of the second octet is not carried.
        assert_eq!(
            ipv4_multicast_mac(Ipv4Addr::new(239, 129, 2, 3)),
            EthernetAddress([0x01, 0x00, 0x5e, 0x01, 0x02, 0x03])
        );
        assert_eq!(
            ipv4_multicast_mac(Ipv4Addr::new(224, 0, 0, 1)),
            EthernetAddress([0x01, 0x00, 0x5e, 0x00, 0x00, 0x01])
        );
        // RFC 2464 §7: the last four octets.
        let group: Ipv6Addr = "ff15::1:2:1234".parse().unwrap();
        assert_eq!(
            ipv6_multicast_mac(group),
            EthernetAddress([0x33, 0x33, 0x00, 0x02, 0x12, 0x34])
        );
    }
}
