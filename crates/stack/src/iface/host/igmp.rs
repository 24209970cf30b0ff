//! IGMPv2 (RFC 2236) in the reference stack's IPv4, and a router's
//! forwarding of IPv4 multicast onto the interfaces with members.
//!
//! * A host reports every group an interface receives — what
//!   applications joined (`join_multicast`) and the 239.192.x.y groups a
//!   6-over-4 tunnel on the interface's address listens to (RFC 2529 §6)
//!   — with [`IgmpMember`](crate::iface::igmp::IgmpMember): unsolicited
//!   Reports on join, a Leave when it reported the group last, answers
//!   to Queries after a random delay, suppressed by another host's
//!   Report. IGMP runs on Ethernet interfaces only (a link that carries
//!   bare IP has no multicast to ask for).
//! * A router listens to every IPv4 multicast frame, keeps an
//!   [`IgmpQuerier`](crate::iface::igmp::IgmpQuerier) per interface, and
//!   forwards a multicast datagram outside 224.0.0.0/24 (RFC 5771: the
//!   local network control block is never forwarded) with TTL above 1
//!   onto every other interface that has members of its group (RFC 1112
//!   §7, RFC 1812 §5.2.1 and §5.3.4's "multicast forwarding"), TTL less
//!   one. No multicast routing protocol: the router's own interfaces are
//!   the whole tree, as on a network with one multicast router; nor a
//!   reverse-path check, which a single router does not need.
//!
//! Every IGMP message goes with TTL 1 and the Router Alert option
//! (RFC 2236 §2, RFC 2113), from the interface's address.

use std::net::Ipv4Addr;

use wire::igmp::{IgmpPacket, IgmpRepr};
use wire::ip::IpProtocol;
use wire::ipv4::{Ipv4Option, Ipv4Options, Ipv4Packet, Ipv4Repr};
use wire::ChecksumMode;

use super::ipv4::Ipv4Meta;
use super::{Host, InterfaceId};
use crate::buffer::Packet;
use crate::iface::igmp::IgmpQuerier;
use crate::iface::tunnel::{six_over_four, TunnelKind};
use crate::phy::Medium;
use crate::time::Instant;
use probe::Flow;

/// The Router Alert option (RFC 2113 §2.1): type 148, length 4, value 0
/// ("every router examines the packet").
const ROUTER_ALERT: Ipv4Option<'static> = Ipv4Option::Unknown {
    kind: 148,
    data: &[0, 0],
};

impl Host {
    /// A router's interfaces start querying (RFC 2236 §7: Startup Query
    /// Count General Queries).
    pub(super) fn igmp_start(&mut self, now: Instant, id: InterfaceId) {
        let router = self.router;
        let interface = &mut self.interfaces[id.0];
        if interface.medium != Medium::Ethernet {
            return;
        }
        if let Some(v4) = interface.v4.as_mut() {
            if router {
                v4.querier = Some(IgmpQuerier::new(now, v4.address));
            }
        }
    }

    /// The IPv4 groups interface `id` receives and reports: the joined
    /// ones and its 6-over-4 tunnels' (RFC 2529 §6).
    fn igmp_wanted(&self, id: InterfaceId) -> Vec<Ipv4Addr> {
        let interface = &self.interfaces[id.0];
        let mut wanted = interface.multicast.v4.clone();
        let Some(address) = interface.v4.as_ref().map(|v4| v4.address) else {
            return wanted;
        };
        for tunnel in &self.tunnels {
            if tunnel.config.kind != TunnelKind::SixOverFour || tunnel.config.local != address {
                continue;
            }
            for g in self.interfaces[tunnel.interface.0].v6.mld.groups() {
                let group = six_over_four::ipv4_group(g.group);
                if !wanted.contains(&group) {
                    wanted.push(group);
                }
            }
        }
        wanted
    }

    /// Brings the interface's IGMP up to date with its groups: what a
    /// join or leave changed is due at once (the host's next deadline is
    /// then `now`).
    pub(super) fn igmp_sync(&mut self, now: Instant, id: InterfaceId) {
        let interface = &self.interfaces[id.0];
        let Some(v4) = interface.v4.as_ref() else {
            return;
        };
        if interface.medium != Medium::Ethernet {
            return;
        }
        // Cheap when there is nothing to report: no group joined, none
        // reported, no 6-over-4 tunnel.
        let address = v4.address;
        let six_over_four = self
            .tunnels
            .iter()
            .any(|t| t.config.kind == TunnelKind::SixOverFour && t.config.local == address);
        if six_over_four || !interface.multicast.v4.is_empty() || !v4.igmp.groups().is_empty() {
            let wanted = self.igmp_wanted(id);
            if let Some(v4) = self.interfaces[id.0].v4.as_mut() {
                v4.igmp.sync(now, &wanted);
            }
        }
    }

    /// Brings the interface's IGMP up to date with its groups and sends
    /// what is due: Reports and Leaves, and a router's Queries.
    pub(super) fn igmp_poll(&mut self, now: Instant, id: InterfaceId) {
        self.igmp_sync(now, id);
        let Some(v4) = self.interfaces[id.0].v4.as_mut() else {
            return;
        };
        let mut due = Vec::new();
        if v4.igmp.next_deadline(now).is_some_and(|t| t <= now) {
            due.extend(v4.igmp.poll(now));
        }
        if let Some(querier) = v4.querier.as_mut() {
            if querier.next_deadline(now).is_some_and(|t| t <= now) {
                due.extend(querier.poll(now));
            }
        }
        for repr in due {
            self.igmp_send(now, id, &repr);
        }
    }

    /// Sends `repr` on interface `id`: TTL 1, Router Alert, from the
    /// interface's address to the message's destination (RFC 2236 §2).
    fn igmp_send(&mut self, now: Instant, id: InterfaceId, repr: &IgmpRepr) {
        let Some(source) = self.interfaces[id.0].v4.as_ref().map(|v4| v4.address) else {
            return;
        };
        let mut bytes = [0u8; wire::igmp::HEADER_LEN];
        if repr
            .emit(
                &mut IgmpPacket::new_unchecked(&mut bytes[..]),
                ChecksumMode::Full,
            )
            .is_err()
        {
            return;
        }
        let Ok(options) = Ipv4Options::from_options(&[ROUTER_ALERT]) else {
            return;
        };
        let Ok(mut packet) = Packet::from_payload(&self.pool, Flow::NONE, &bytes) else {
            self.count_drop("igmp_no_buffer");
            return;
        };
        let dst = repr.destination();
        let ident = self.ipv4_ident;
        self.ipv4_ident = self.ipv4_ident.wrapping_add(1);
        let header = Ipv4Repr {
            src: source,
            dst,
            protocol: IpProtocol::Igmp,
            dscp_ecn: 0,
            ident,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            ttl: 1,
            payload_len: bytes.len(),
            options,
        };
        if self.ipv4_prepend_header(&mut packet, &header).is_err() {
            return;
        }
        self.counters.ipv4_sent += 1;
        self.ipv4_link_output(now, id, dst, packet);
    }

    /// An IGMP message that reached IPv4 input (`pos`: where it starts).
    /// Hosts act on Queries and on other hosts' Reports; a router's
    /// querier learns from Reports and Leaves and steps back for a
    /// lower-addressed querier.
    pub(super) fn igmp_input(&mut self, now: Instant, meta: Ipv4Meta, packet: Packet, pos: usize) {
        let repr = {
            let Some(head) = packet.parts().next() else {
                return;
            };
            let Some(message) = head.get(pos..) else {
                self.count_drop("igmp_malformed");
                return;
            };
            match IgmpPacket::new_checked(message)
                .and_then(|p| IgmpRepr::parse(&p, ChecksumMode::Full))
            {
                Ok(repr) => repr,
                Err(_) => {
                    self.count_drop("igmp_malformed");
                    return;
                }
            }
        };
        // RFC 2236 §2: every message has TTL 1; one that crossed a router
        // is not about this link.
        if meta.ttl != 1 {
            self.count_drop("igmp_ttl_not_1");
            return;
        }
        let own = self
            .interfaces
            .get(meta.interface.0)
            .and_then(|i| i.v4.as_ref())
            .is_some_and(|v4| v4.address == meta.src);
        let Some(v4) = self
            .interfaces
            .get_mut(meta.interface.0)
            .and_then(|i| i.v4.as_mut())
        else {
            return;
        };
        if own {
            return;
        }
        match repr {
            IgmpRepr::MembershipQuery {
                max_resp_tenths,
                group,
            } => {
                v4.igmp.on_query(now, max_resp_tenths, group);
                if let Some(querier) = v4.querier.as_mut() {
                    querier.on_query(now, meta.src);
                }
            }
            IgmpRepr::MembershipReport { group, .. } => {
                v4.igmp.on_report(group);
                if let Some(querier) = v4.querier.as_mut() {
                    querier.on_report(now, group);
                }
            }
            IgmpRepr::LeaveGroup { group } => {
                if let Some(querier) = v4.querier.as_mut() {
                    querier.on_leave(now, group);
                }
            }
        }
    }

    /// Whether the router's interface `id` has members of `group`.
    fn has_members(&self, now: Instant, id: InterfaceId, group: Ipv4Addr) -> bool {
        self.interfaces[id.0]
            .v4
            .as_ref()
            .and_then(|v4| v4.querier.as_ref())
            .is_some_and(|q| q.has_members(now, group))
    }

    /// A router's multicast datagram that is not for itself: onto every
    /// other interface with members of the group, TTL less one.
    pub(super) fn ipv4_multicast_forward(&mut self, now: Instant, meta: Ipv4Meta, packet: Packet) {
        let group = meta.dst;
        // RFC 5771: 224.0.0.0/24 stays on its link; TTL 1 too (RFC 1112
        // §7.2); no ICMP error about a multicast datagram (RFC 1812
        // §4.3.2.7).
        if group.octets()[..3] == [224, 0, 0] || meta.ttl <= 1 {
            self.count_drop("ipv4_multicast_not_forwarded");
            return;
        }
        let outputs: Vec<InterfaceId> = (0..self.interfaces.len())
            .map(InterfaceId)
            .filter(|&id| id != meta.interface && self.has_members(now, id, group))
            .collect();
        if outputs.is_empty() {
            self.count_drop("ipv4_multicast_no_members");
            return;
        }
        let header_len = {
            let Some(head) = packet.parts().next() else {
                return;
            };
            Ipv4Packet::new_unchecked(head).header_len()
        };
        for id in outputs {
            if packet.len() > self.interfaces[id.0].link_mtu() {
                self.count_drop("ipv4_multicast_too_big");
                continue;
            }
            let parts: Vec<&[u8]> = packet.parts().collect();
            let Ok(mut copy) = Packet::from_parts(&self.pool, packet.flow(), &parts) else {
                self.count_drop("ipv4_no_buffer");
                continue;
            };
            if copy.strip(header_len).is_err() {
                continue;
            }
            let Ok(header) = copy.prepend(header_len) else {
                continue;
            };
            let old = u16::from_be_bytes([header[8], header[9]]);
            header[8] = meta.ttl - 1;
            let new = u16::from_be_bytes([header[8], header[9]]);
            let sum = u16::from_be_bytes([header[10], header[11]]);
            let sum = wire::checksum::update(sum, old, new);
            header[10..12].copy_from_slice(&sum.to_be_bytes());
            self.counters.ipv4_forwarded += 1;
            self.ipv4_link_output(now, id, group, copy);
        }
    }
}
