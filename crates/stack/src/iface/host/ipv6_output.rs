//! IPv6 output and forwarding (RFC 8200): next-hop determination through
//! the destination cache and routing table, source address selection,
//! fragmentation that references the payload, neighbour resolution and the
//! Ethernet header.

use std::net::Ipv6Addr;

use probe::Flow;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::icmpv6::{DstUnreachableReason, TimeExceededReason};
use wire::ip::IpProtocol;

use super::ipv6_input::Ipv6Meta;
use super::Host;
use crate::buffer::Packet;
use crate::iface::icmp_error::Icmpv6ErrorKind;
use crate::iface::neighbor::Resolution;
use crate::iface::route::{InterfaceId, NextHop};
use crate::phy::Medium;
use crate::probes::{
    FRAGMENT_ENTER, FRAGMENT_EXIT, INTERFACE_QUEUE_ENQUEUE, IPV6_OUTPUT_ENTER, IPV6_OUTPUT_EXIT,
    IP_FORWARD_ENTER, IP_FORWARD_EXIT, NEIGHBOR_LOOKUP_ENTER, NEIGHBOR_LOOKUP_EXIT,
    ROUTE_LOOKUP_ENTER, ROUTE_LOOKUP_EXIT,
};
use crate::time::Instant;

/// Where a packet to a destination goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ipv6Route {
    pub interface: InterfaceId,
    /// The neighbour to hand it to: the next hop or the destination.
    pub neighbor: Ipv6Addr,
    /// The path MTU.
    pub mtu: usize,
    /// The neighbour's link-layer address when a cached path knows it
    /// (`path`): the packet goes to the link without a neighbour lookup.
    pub lladdr: Option<EthernetAddress>,
}

/// A packet to send, beyond its payload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ipv6Send {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub next_header: IpProtocol,
    pub hop_limit: u8,
    /// A Hop-by-Hop header with the Router Alert option (MLD, RFC 3810 §5).
    pub router_alert: bool,
}

/// The MAC a multicast group maps to (RFC 2464 §7).
pub(crate) fn multicast_mac(group: Ipv6Addr) -> EthernetAddress {
    let o = group.octets();
    EthernetAddress([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

impl Host {
    /// Determines interface, neighbour and path MTU for `dst`. Multicast
    /// and link-local destinations need an interface: `interface`, else
    /// the first (RFC 4007: link-local addresses are ambiguous without one).
    pub(crate) fn ipv6_route(
        &mut self,
        now: Instant,
        dst: Ipv6Addr,
        interface: Option<InterfaceId>,
        flow: Flow,
    ) -> Option<Ipv6Route> {
        if dst.is_multicast() || dst.is_unicast_link_local() {
            let interface = interface.unwrap_or(InterfaceId(0));
            let mtu = self.interfaces.get(interface.0)?.v6.mtu;
            return Some(Ipv6Route {
                interface,
                neighbor: dst,
                mtu,
                lladdr: None,
            });
        }
        let _span = probe::span(ROUTE_LOOKUP_ENTER, ROUTE_LOOKUP_EXIT, 0, flow, 0);
        let generation = self.routes6.generation();
        if let Some(view) = self.dest6.lookup(now, dst, generation) {
            return Some(Ipv6Route {
                interface: view.next_hop.interface,
                neighbor: view.next_hop.neighbor,
                mtu: view.pmtu as usize,
                lladdr: None,
            });
        }
        let route = *self.routes6.lookup(dst)?;
        let interface = route.interface;
        let link_mtu = self.interfaces.get(interface.0)?.v6.mtu;
        let neighbor = route.next_hop_for(dst);
        let source = self.select_source_v6(interface, dst);
        let _ = self.dest6.insert(
            now,
            dst,
            NextHop {
                neighbor,
                interface,
                source,
                link_mtu: link_mtu as u32,
            },
            generation,
        );
        let mtu = self.dest6.pmtu(now, dst).map_or(link_mtu, |m| m as usize);
        Some(Ipv6Route {
            interface,
            neighbor,
            mtu,
            lladdr: None,
        })
    }

    /// Source address selection, after RFC 6724 §5 in brief: an assigned
    /// address of the destination's scope on the outgoing interface,
    /// preferred before deprecated, the longest common prefix first; a
    /// router may fall back to a global address of another interface.
    pub(crate) fn select_source_v6(
        &self,
        interface: InterfaceId,
        dst: Ipv6Addr,
    ) -> Option<Ipv6Addr> {
        let link_scope =
            dst.is_unicast_link_local() || dst.is_multicast() && (dst.segments()[0] & 0x000f) <= 2;
        let candidates = |i: &crate::iface::interface::Interface| {
            i.v6.addresses
                .entries()
                .filter(|n| n.is_assigned())
                .filter(|n| n.address().is_unicast_link_local() == link_scope)
                .map(|n| {
                    let preferred = n.state() == crate::iface::address::AddressState::Preferred;
                    let common = (u128::from(n.address()) ^ u128::from(dst)).leading_zeros();
                    ((preferred, common), n.address())
                })
                .max_by_key(|(key, _)| *key)
                .map(|(_, address)| address)
        };
        let out = self.interfaces.get(interface.0)?;
        candidates(out).or_else(|| {
            if link_scope {
                None
            } else {
                self.interfaces.iter().find_map(candidates)
            }
        })
    }

    /// Sends `payload` (the upper-layer message) to `send.dst` over
    /// `route`, adding the trace option when the flow is traced and
    /// fragmenting to the path MTU (RFC 8200 §4.5).
    pub(crate) fn ipv6_output(
        &mut self,
        now: Instant,
        route: Ipv6Route,
        send: Ipv6Send,
        mut payload: Packet,
    ) {
        let flow = payload.flow();
        // The length is a walk of the packet's parts: read once, and
        // counted on below as the trace option is prepended.
        let mut len = payload.len();
        let span = probe::span(IPV6_OUTPUT_ENTER, IPV6_OUTPUT_EXIT, len as u32, flow, 0);
        self.counters.ipv6_sent += 1;
        let mut next_header = send.next_header;
        // A traced flow carries the trace destination option so the
        // receiver traces it too (DESIGN.md, "Probe events"): a header of
        // exactly 2 + 6 bytes, no padding needed.
        if flow.traced {
            let Ok(header) = payload.prepend(wire::trace_option::IPV6_HEADER_LEN) else {
                self.count_drop("ipv6_no_headroom");
                return;
            };
            header[0] = next_header.into();
            header[1] = 0;
            header[2] = wire::trace_option::IPV6_OPTION_TYPE;
            header[3] = wire::trace_option::DATA_LEN as u8;
            header[4..8].copy_from_slice(&flow.id.to_be_bytes());
            next_header = IpProtocol::Ipv6Opts;
            len += wire::trace_option::IPV6_HEADER_LEN;
        }
        let unfragmentable = if send.router_alert { 8 } else { 0 };
        let total = wire::ipv6::HEADER_LEN + unfragmentable + len;
        // A TSO super-segment is made of MSS-sized segments the device
        // stage cuts (`iface::offload`): it is never fragmented.
        if total <= route.mtu || payload.offload().gso_size > 0 {
            if self
                .ipv6_prepend_headers(&mut payload, len, &send, next_header)
                .is_err()
            {
                return;
            }
            self.ipv6_route_output(now, &route, send.dst, payload);
            // On a resolved path, queueing the packet on its interface
            // was the last work (a loopback, tunnel or unresolved
            // neighbour's path ends on another record: read afresh).
            span.end_after(&[INTERFACE_QUEUE_ENQUEUE]);
            return;
        }
        self.ipv6_output_fragments(now, &route, &send, &payload, len, next_header);
        drop(span);
    }

    /// [`ipv6_output`](Self::ipv6_output) of a packet over the path MTU,
    /// out of the way of the usual one's: `payload` (`len` bytes, its
    /// first header `next_header`) sent as fragments. The caller keeps
    /// the payload, so it is freed where it always was, at the output
    /// span's end.
    #[cold]
    #[inline(never)]
    fn ipv6_output_fragments(
        &mut self,
        now: Instant,
        route: &Ipv6Route,
        send: &Ipv6Send,
        payload: &Packet,
        len: usize,
        next_header: IpProtocol,
    ) {
        let flow = payload.flow();
        let unfragmentable = if send.router_alert { 8 } else { 0 };
        // RFC 8200 §4.5: fragments of the fragmentable part, each but the
        // last a multiple of 8 bytes, each in a packet within the MTU.
        let _span = probe::span(FRAGMENT_ENTER, FRAGMENT_EXIT, len as u32, flow, 0);
        let per_fragment = (route
            .mtu
            .saturating_sub(wire::ipv6::HEADER_LEN + unfragmentable + 8))
            & !7;
        if per_fragment == 0 {
            self.count_drop("ipv6_mtu_too_small");
            return;
        }
        let ident = self.rng.next_u64() as u32;
        let mut offset = 0;
        while offset < len {
            let end = (offset + per_fragment).min(len);
            let mut fragment = match self.fragment_body(payload, offset..end, flow) {
                Ok(fragment) => fragment,
                Err("no_buffer") => return self.count_drop("ipv6_no_buffer"),
                Err(_) => return self.count_drop("ipv6_fragment_failed"),
            };
            let Ok(header) = fragment.prepend(8) else {
                self.count_drop("ipv6_no_headroom");
                return;
            };
            let repr = wire::ipv6_fragment::Ipv6FragmentRepr {
                next_header,
                frag_offset: offset,
                more_frags: end < len,
                ident,
            };
            if repr
                .emit(&mut wire::ipv6_fragment::Ipv6FragmentHeader::new_unchecked(
                    header,
                ))
                .is_err()
            {
                self.count_drop("ipv6_fragment_failed");
                return;
            }
            let fragment_len = fragment.len();
            if self
                .ipv6_prepend_headers(&mut fragment, fragment_len, send, IpProtocol::Ipv6Frag)
                .is_err()
            {
                return;
            }
            self.counters.ipv6_fragments_sent += 1;
            self.ipv6_route_output(now, route, send.dst, fragment);
            offset = end;
        }
    }

    /// Prepends the unfragmentable part: a Hop-by-Hop header with Router
    /// Alert if asked for, then the IPv6 header. `len` is the packet's
    /// length as it comes, which the caller knows (a walk of its parts
    /// saved). Inline: a call per packet sent, with its arguments, cost
    /// about as much as the header's writing (issue 22).
    #[inline(always)]
    fn ipv6_prepend_headers(
        &mut self,
        packet: &mut Packet,
        len: usize,
        send: &Ipv6Send,
        mut next_header: IpProtocol,
    ) -> Result<(), ()> {
        debug_assert_eq!(len, packet.len());
        let mut payload_len = len;
        if send.router_alert {
            let Ok(header) = packet.prepend(8) else {
                self.count_drop("ipv6_no_headroom");
                return Err(());
            };
            // Next header, length 0, Router Alert (type 5, length 2, value
            // 0 = MLD, RFC 2711), PadN of 2 bytes.
            header.copy_from_slice(&[u8::from(next_header), 0, 5, 2, 0, 0, 1, 0]);
            next_header = IpProtocol::HopByHop;
            payload_len += 8;
        }
        let Ok(payload_len) = u16::try_from(payload_len) else {
            self.count_drop("ipv6_too_long");
            return Err(());
        };
        let Ok(header) = packet.prepend(wire::ipv6::HEADER_LEN) else {
            self.count_drop("ipv6_no_headroom");
            return Err(());
        };
        let repr = wire::ipv6::Ipv6Repr {
            src: send.src,
            traffic_class: 0,
            flow_label: 0,
            dst: send.dst,
            next_header,
            payload_len: usize::from(payload_len),
            hop_limit: send.hop_limit,
        };
        if repr
            .emit(&mut wire::ipv6::Ipv6Packet::new_unchecked(header))
            .is_err()
        {
            self.count_drop("ipv6_emit_failed");
            return Err(());
        }
        Ok(())
    }

    /// Hands a finished IPv6 packet to `route`'s link: to the neighbour's
    /// link-layer address when the route carries it (a cached path), else
    /// through [`ipv6_link_output`](Self::ipv6_link_output).
    fn ipv6_route_output(
        &mut self,
        now: Instant,
        route: &Ipv6Route,
        dst: Ipv6Addr,
        packet: Packet,
    ) {
        match route.lladdr {
            // A cached path's packet (every TCP segment's): framed and
            // queued here, not moved through two more calls (issue 22).
            Some(lladdr) => {
                self.ethernet_frame_output(route.interface, lladdr, EtherType::Ipv6, packet)
            }
            None => self.ipv6_link_output(now, route.interface, route.neighbor, dst, packet),
        }
    }

    /// Hands a finished IPv6 packet to the link: multicast straight to its
    /// MAC, unicast through the neighbour cache (RFC 4861 §7.2.2).
    pub(crate) fn ipv6_link_output(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        neighbor: Ipv6Addr,
        dst: Ipv6Addr,
        packet: Packet,
    ) {
        // To one of our own addresses: back into our own IP input, as
        // Linux routes it through loopback (RFC 1122 §3.3.4.2's weak host
        // answers its addresses from any interface; a neighbour
        // solicitation for ourselves would go unanswered).
        if !neighbor.is_multicast() && self.is_local_ipv6(interface, neighbor) {
            self.counters.looped_back += 1;
            self.enqueue_ip_input(interface, packet, false);
            return;
        }
        // A tunnel over our own IPv4 encapsulates instead of queueing.
        if let Some(tunnel) = self.tunnel_index(interface) {
            self.tunnel_transmit(now, tunnel, neighbor, packet);
            return;
        }
        let Some(iface) = self.interfaces.get_mut(interface.0) else {
            return;
        };
        if iface.medium == Medium::Ip {
            iface.enqueue(packet);
            return;
        }
        if dst.is_multicast() {
            self.ethernet_output(interface, multicast_mac(dst), EtherType::Ipv6, packet);
            return;
        }
        let resolution = {
            let _span = probe::span_with(
                NEIGHBOR_LOOKUP_ENTER,
                NEIGHBOR_LOOKUP_EXIT,
                packet.flow(),
                || (packet.len() as u32, 0),
            );
            iface.v6.neighbors.lookup(now, neighbor, packet)
        };
        if let Some((lladdr, packet)) = self.resolved(now, interface, neighbor, resolution) {
            self.ethernet_output(interface, lladdr, EtherType::Ipv6, packet);
        }
    }

    /// A neighbour lookup's outcome: the link address and the packet when
    /// it can go now; else what the wait cost is counted and a new entry's
    /// solicitation sent (RFC 4861 §7.2.2).
    pub(super) fn resolved(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        neighbor: Ipv6Addr,
        resolution: Resolution<Ipv6Addr, EthernetAddress, Packet>,
    ) -> Option<(EthernetAddress, Packet)> {
        match resolution {
            Resolution::Send { lladdr, packet } => return Some((lladdr, packet)),
            Resolution::Queued { dropped } => {
                if dropped.is_some() {
                    self.count_drop("neighbor_queue_overflow");
                }
            }
            Resolution::Solicit { evicted } => {
                if let Some(evicted) = evicted {
                    for _ in evicted.packets {
                        self.count_drop("neighbor_evicted");
                    }
                }
                self.send_neighbor_solicitation(now, interface, neighbor, None);
            }
        }
        None
    }

    /// Prepends the Ethernet header and queues the frame on the interface.
    /// Out of line: its body is inline in the data path's caller only.
    #[inline(never)]
    pub(crate) fn ethernet_output(
        &mut self,
        interface: InterfaceId,
        dst: EthernetAddress,
        ethertype: EtherType,
        packet: Packet,
    ) {
        self.ethernet_frame_output(interface, dst, ethertype, packet);
    }

    /// [`ethernet_output`](Self::ethernet_output), inline for the data
    /// path's one caller that wants it so.
    #[inline(always)]
    fn ethernet_frame_output(
        &mut self,
        interface: InterfaceId,
        dst: EthernetAddress,
        ethertype: EtherType,
        mut packet: Packet,
    ) {
        // A neighbour a tunnel's ND resolved (6-over-4): into IPv4.
        if let Some(tunnel) = self.tunnel_index(interface) {
            self.tunnel_transmit_to(tunnel, dst, packet);
            return;
        }
        let Some(iface) = self.interfaces.get_mut(interface.0) else {
            return;
        };
        if iface.medium == Medium::Ethernet {
            let src = iface.mac;
            let Ok(header) = packet.prepend(wire::ethernet::HEADER_LEN) else {
                *self.drops.entry("ethernet_no_headroom").or_insert(0) += 1;
                return;
            };
            header[0..6].copy_from_slice(&dst.0);
            header[6..12].copy_from_slice(&src.0);
            header[12..14].copy_from_slice(&u16::from(ethertype).to_be_bytes());
        }
        iface.enqueue(packet);
    }

    /// Forwards a packet not for us (RFC 8200 §3, RFC 4443 errors,
    /// RFC 4861 §8.2 redirects).
    pub(super) fn ipv6_forward(&mut self, now: Instant, meta: Ipv6Meta, mut packet: Packet) {
        let _span = probe::span_with(IP_FORWARD_ENTER, IP_FORWARD_EXIT, packet.flow(), || {
            (packet.len() as u32, 6)
        });
        // RFC 4291 §2.5.6: link-local packets never leave their link.
        if meta.src.is_unicast_link_local() || meta.dst.is_unicast_link_local() {
            self.count_drop("ipv6_forward_link_local");
            if meta.src.is_unicast_link_local() && !meta.dst.is_unicast_link_local() {
                self.send_icmpv6_error(
                    now,
                    &meta,
                    &packet,
                    Icmpv6ErrorKind::DstUnreachable(DstUnreachableReason::BeyondScope),
                );
            }
            return;
        }
        // RFC 4291 §2.5.2, §2.5.3: the unspecified and loopback addresses
        // are never forwarded, as source or destination.
        if meta.src.is_unspecified()
            || meta.src.is_loopback()
            || meta.dst.is_unspecified()
            || meta.dst.is_loopback()
        {
            self.count_drop("ipv6_forward_martian");
            return;
        }
        // RFC 4443 §3.3: hop limit exhausted in transit.
        if meta.hop_limit <= 1 {
            self.count_drop("ipv6_hop_limit_exceeded");
            self.send_icmpv6_error(
                now,
                &meta,
                &packet,
                Icmpv6ErrorKind::TimeExceeded(TimeExceededReason::HopLimitExceeded),
            );
            return;
        }
        let Some(route) = self.ipv6_route(now, meta.dst, None, packet.flow()) else {
            self.count_drop("ipv6_no_route");
            self.send_icmpv6_error(
                now,
                &meta,
                &packet,
                Icmpv6ErrorKind::DstUnreachable(DstUnreachableReason::NoRoute),
            );
            return;
        };
        // RFC 8200 §5: routers do not fragment; RFC 4443 §3.2.
        if packet.len() > route.mtu {
            self.count_drop("ipv6_packet_too_big");
            self.send_icmpv6_error(
                now,
                &meta,
                &packet,
                Icmpv6ErrorKind::PacketTooBig {
                    mtu: route.mtu as u32,
                },
            );
            return;
        }
        // RFC 4861 §8.2: a packet that leaves by the interface it arrived
        // on, from a source on that link, earns the source a Redirect.
        if route.interface == meta.interface && self.is_on_link_v6(meta.interface, meta.src) {
            self.send_redirect(now, &meta, &packet, route.neighbor);
        }
        // Decrement the hop limit in place: strip then prepend returns the
        // same bytes (the received buffer is not shared).
        if packet.strip(wire::ipv6::HEADER_LEN).is_err() {
            return;
        }
        let Ok(header) = packet.prepend(wire::ipv6::HEADER_LEN) else {
            self.count_drop("ipv6_forward_shared");
            return;
        };
        header[7] = meta.hop_limit - 1;
        self.counters.ipv6_forwarded += 1;
        self.ipv6_link_output(now, route.interface, route.neighbor, meta.dst, packet);
    }

    /// Whether `addr` is on-link on `interface`: link-local, or inside a
    /// prefix of the interface's addresses or Prefix List.
    pub(crate) fn is_on_link_v6(&self, interface: InterfaceId, addr: Ipv6Addr) -> bool {
        if addr.is_unicast_link_local() {
            return true;
        }
        let Some(iface) = self.interfaces.get(interface.0) else {
            return false;
        };
        iface.v6.addresses.is_on_link(addr)
            || self.routes6.routes().iter().any(|r| {
                r.interface == interface
                    && r.next_hop.is_none()
                    && r.prefix_len > 0
                    && r.contains(addr)
            })
    }

    /// Builds and sends an ICMPv6 message (checksum over the pseudo-header,
    /// RFC 4443 §2.3). `src` defaults to source selection.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn send_icmpv6(
        &mut self,
        now: Instant,
        src: Option<Ipv6Addr>,
        dst: Ipv6Addr,
        interface: Option<InterfaceId>,
        hop_limit: Option<u8>,
        flow: Flow,
        repr: &wire::icmpv6::Icmpv6Repr<'_>,
    ) -> bool {
        let Some(route) = self.ipv6_route(now, dst, interface, flow) else {
            self.count_drop("ipv6_no_route");
            return false;
        };
        let src = src
            .or_else(|| self.select_source_v6(route.interface, dst))
            .unwrap_or(Ipv6Addr::UNSPECIFIED);
        let len = repr.buffer_len();
        let mut scratch = std::mem::take(&mut self.scratch);
        if scratch.len() < len {
            scratch.resize(len, 0);
        }
        let emitted = {
            let _span = probe::span(
                crate::probes::CHECKSUM_ENTER,
                crate::probes::CHECKSUM_EXIT,
                len as u32,
                flow,
                0,
            );
            repr.emit(
                &mut wire::icmpv6::Icmpv6Packet::new_unchecked(&mut scratch[..len]),
                &src,
                &dst,
                wire::ip::ChecksumMode::Full,
            )
        };
        let packet = match emitted {
            Ok(()) => Packet::from_payload(&self.pool, flow, &scratch[..len]).ok(),
            Err(_) => None,
        };
        self.scratch = scratch;
        let Some(packet) = packet else {
            self.count_drop("icmpv6_build_failed");
            return false;
        };
        let hop_limit = hop_limit.unwrap_or(self.interfaces[route.interface.0].v6.hop_limit);
        self.ipv6_output(
            now,
            route,
            Ipv6Send {
                src,
                dst,
                next_header: IpProtocol::Icmpv6,
                hop_limit,
                router_alert: false,
            },
            packet,
        );
        true
    }
}
