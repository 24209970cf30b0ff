//! IPv4 (RFC 791, RFC 1122, RFC 1812): input with reassembly, output with
//! fragmentation that references the payload, forwarding, and ARP
//! (RFC 826) on the bounded cache.

use std::net::{IpAddr, Ipv4Addr};

use probe::Flow;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4TimeExceeded};
use wire::ip::{ChecksumMode, IpProtocol};
use wire::ipv4::{Ipv4Options, Ipv4Packet, Ipv4Repr};

use super::ipv6_input::reassembly_drop_name;
use super::transport::IpMeta;
use super::{FirstFragment, Host, Received};
use crate::buffer::Packet;
use crate::iface::arp::{ArpAction, ArpLookup, ArpMessage};
use crate::iface::icmp_error::Icmpv4ErrorKind;
use crate::iface::reassembly::{Expired, Fragment, Outcome};
use crate::iface::route::{InterfaceId, NextHop};
use crate::phy::Medium;
use crate::probes::{
    CHECKSUM_ENTER, CHECKSUM_EXIT, FRAGMENT_ENTER, FRAGMENT_EXIT, IPV4_INPUT_ENTER,
    IPV4_INPUT_EXIT, IPV4_OUTPUT_ENTER, IPV4_OUTPUT_EXIT, IP_FORWARD_ENTER, IP_FORWARD_EXIT,
    NEIGHBOR_LOOKUP_ENTER, NEIGHBOR_LOOKUP_EXIT, REASSEMBLE_ENTER, REASSEMBLE_EXIT,
    ROUTE_LOOKUP_ENTER, ROUTE_LOOKUP_EXIT, TRACE_OPTION_SEEN,
};
use crate::socket::RawFamily;
use crate::time::Instant;

/// What the input path knows of a received IPv4 packet.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ipv4Meta {
    pub interface: InterfaceId,
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub ttl: u8,
    pub link_multicast: bool,
    pub frag_offset: u16,
}

/// Where a packet to a destination goes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ipv4Route {
    pub interface: InterfaceId,
    pub neighbor: Ipv4Addr,
    /// The interface's address: the source of packets we originate.
    pub source: Ipv4Addr,
    pub mtu: usize,
    /// The neighbour's link-layer address when a cached path knows it
    /// (`path`): the packet goes to the link without an ARP lookup.
    pub lladdr: Option<EthernetAddress>,
}

/// A packet to send, beyond its payload.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ipv4Send {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: IpProtocol,
    pub ttl: u8,
    pub dont_frag: bool,
}

impl Host {
    /// `dequeued`: the IP input queue's dequeue, whose counter read
    /// the input span's start shares.
    pub(super) fn ipv4_input(
        &mut self,
        now: Instant,
        received: Received,
        dequeued: &mut probe::Stamp,
    ) {
        let Received {
            interface,
            packet,
            link_multicast,
        } = received;
        let _span = dequeued.span_with(IPV4_INPUT_ENTER, IPV4_INPUT_EXIT, packet.flow(), || {
            (packet.len() as u32, interface.0 as u64)
        });
        // Bound after the span, so freed before its end on every return.
        let mut packet = packet;
        self.counters.ipv4_received += 1;
        let parsed = {
            let Some(head) = packet.parts().next() else {
                self.count_drop("ipv4_truncated");
                return;
            };
            let _span = probe::span(CHECKSUM_ENTER, CHECKSUM_EXIT, 20, packet.flow(), 0);
            if packet.offload().gso_size > 0 {
                merged_ipv4_header(head, packet.len())
            } else {
                Ipv4Packet::new_checked(head).and_then(|ip| {
                    Ipv4Repr::parse(&ip, ChecksumMode::Full).map(|r| (r, ip.header_len()))
                })
            }
        };
        let (repr, header_len) = match parsed {
            Ok(parsed) => parsed,
            Err(wire::Error::Checksum) => {
                self.count_drop("ipv4_bad_checksum");
                return;
            }
            Err(_) => {
                self.count_drop("ipv4_malformed");
                return;
            }
        };
        packet.truncate(header_len + repr.payload_len);
        // RFC 791: a fragment's data ends within the 65 535-byte datagram.
        if usize::from(repr.frag_offset) + header_len + repr.payload_len > 65_535 {
            self.count_drop("ipv4_fragment_too_long");
            return;
        }
        // RFC 1122 §3.2.1.3: "An IP host MUST silently discard an incoming
        // datagram" whose source is invalid: a broadcast address — the
        // limited one or { <Network-number>, -1 }, the directed broadcast
        // of any subnet we are on (answering it would answer everyone on
        // that subnet) — or a multicast address.
        if self.is_ipv4_broadcast(repr.src) {
            self.count_drop("ipv4_broadcast_source");
            return;
        }
        if repr.src.is_multicast() {
            self.count_drop("ipv4_bad_source");
            return;
        }
        if let Some(trace) = repr.options.trace() {
            packet.set_flow(Flow::traced(trace.flow));
            probe::record_with(TRACE_OPTION_SEEN, packet.flow(), || {
                (packet.len() as u32, u64::from(trace.flow))
            });
        }
        let meta = Ipv4Meta {
            interface,
            src: repr.src,
            dst: repr.dst,
            ttl: repr.ttl,
            link_multicast,
            frag_offset: repr.frag_offset,
        };
        if !self.is_local_ipv4(interface, repr.dst) {
            if self.router && !repr.dst.is_multicast() && !repr.dst.is_broadcast() {
                self.ipv4_forward(now, meta, packet);
            } else if self.router && repr.dst.is_multicast() {
                // A multicast router hears every group's IGMP (RFC 2236
                // §7: Reports go to the group, Leaves to 224.0.0.2) and
                // forwards the rest onto interfaces with members.
                if repr.protocol == IpProtocol::Igmp && repr.frag_offset == 0 && !repr.more_frags {
                    self.igmp_input(now, meta, packet, header_len);
                } else {
                    self.ipv4_multicast_forward(now, meta, packet);
                }
            } else {
                // Another's address, or a group this interface has not
                // joined (RFC 1112 §6.4 maps 32 groups to each MAC).
                self.count_drop("ipv4_not_for_us");
            }
            return;
        }
        if repr.more_frags || repr.frag_offset != 0 {
            self.ipv4_fragment(now, meta, repr, packet, header_len);
            return;
        }
        self.ipv4_deliver(now, meta, repr.protocol, packet, header_len);
    }

    fn ipv4_deliver(
        &mut self,
        now: Instant,
        meta: Ipv4Meta,
        protocol: IpProtocol,
        packet: Packet,
        pos: usize,
    ) {
        self.counters.ipv4_delivered += 1;
        match protocol {
            IpProtocol::Icmp => self.icmpv4_input(now, meta, packet, pos),
            IpProtocol::Igmp => self.igmp_input(now, meta, packet, pos),
            IpProtocol::Udp => self.udp_input(now, IpMeta::V4(meta), packet, pos),
            IpProtocol::Tcp => self.tcp_input(now, &IpMeta::V4(meta), &packet, pos),
            IpProtocol::Unknown(wire::xtp::IP_PROTOCOL) => {
                self.xtp_input(now, IpMeta::V4(meta), packet, pos)
            }
            IpProtocol::Ipv6 if !self.tunnels.is_empty() => {
                self.tunnel_receive(now, meta, packet, pos)
            }
            other => {
                if self.raw_deliver(RawFamily::Ipv4, other, &IpMeta::V4(meta), &packet, pos) {
                    return;
                }
                self.count_drop("ipv4_unknown_protocol");
                self.send_icmpv4_error(
                    now,
                    &meta,
                    &packet,
                    Icmpv4ErrorKind::DstUnreachable(Icmpv4DstUnreachable::ProtoUnreachable),
                );
            }
        }
    }

    /// The limited broadcast or the directed broadcast of the subnet of
    /// any of our interfaces (RFC 1122 §3.2.1.3 (c), (d)).
    pub(super) fn is_ipv4_broadcast(&self, addr: Ipv4Addr) -> bool {
        addr.is_broadcast()
            || self
                .interfaces
                .iter()
                .any(|i| i.v4.as_ref().and_then(|v4| v4.broadcast()) == Some(addr))
    }

    /// Ours: an interface address, the limited broadcast, the arrival
    /// interface's directed broadcast (RFC 1122 §3.3.6), or a group the
    /// arrival interface is a member of (RFC 1112 §7.2).
    fn is_local_ipv4(&self, interface: InterfaceId, dst: Ipv4Addr) -> bool {
        if dst.is_broadcast() {
            return true;
        }
        if dst.is_multicast() {
            return self.is_member_v4(interface, dst);
        }
        if self.interfaces[interface.0]
            .v4
            .as_ref()
            .is_some_and(|v4| v4.broadcast() == Some(dst))
        {
            return true;
        }
        self.interfaces
            .iter()
            .any(|i| i.v4.as_ref().is_some_and(|v4| v4.address == dst))
    }

    fn ipv4_fragment(
        &mut self,
        now: Instant,
        meta: Ipv4Meta,
        repr: Ipv4Repr,
        packet: Packet,
        header_len: usize,
    ) {
        // The span covers reassembly alone: it ends before the datagram
        // goes up the stack.
        let span = probe::span_with(REASSEMBLE_ENTER, REASSEMBLE_EXIT, packet.flow(), || {
            (packet.len() as u32, 0)
        });
        let Ok(payload) = packet.segments(header_len..packet.len()) else {
            self.count_drop("ipv4_truncated");
            return;
        };
        let first = repr.frag_offset == 0;
        let mut header = Vec::new();
        let mut invoking = Vec::new();
        if first {
            header = vec![0; header_len];
            packet.copy_out(0, &mut header);
            invoking = super::ipv6_input::leading_bytes(&packet, header_len + 8);
        }
        let key = (repr.src, repr.dst, u8::from(repr.protocol), repr.ident);
        let evicted = self.reassembly4.stats().evicted;
        let outcome = self.reassembly4.insert(
            now,
            key,
            Fragment {
                offset: usize::from(repr.frag_offset),
                more: repr.more_frags,
                payload,
                header: FirstFragment {
                    interface: meta.interface,
                    header,
                    next: repr.protocol,
                    flow: packet.flow(),
                    invoking,
                    next_field: 0,
                },
            },
        );
        drop(packet);
        drop(span);
        self.count_evictions(
            "ipv4_reassembly_evicted",
            evicted,
            self.reassembly4.stats().evicted,
        );
        match outcome {
            Outcome::Incomplete => {}
            Outcome::Dropped(reason) => self.count_drop(reassembly_drop_name(reason)),
            Outcome::Complete {
                mut header,
                payload,
                len,
            } => {
                // The reassembled datagram's header (RFC 791 reassembly):
                // its Total Length, no MF, offset 0, a fresh checksum.
                let Ok(total) = u16::try_from(header.header.len() + len) else {
                    self.count_drop("ipv4_reassembled_too_long");
                    return;
                };
                let h = &mut header.header;
                h[2..4].copy_from_slice(&total.to_be_bytes());
                // Keep only DF (0x4000) of the flags and offset word.
                let flags = u16::from_be_bytes([h[6], h[7]]) & 0x4000;
                h[6..8].copy_from_slice(&flags.to_be_bytes());
                h[10..12].fill(0);
                let sum = wire::checksum::checksum(h);
                h[10..12].copy_from_slice(&sum.to_be_bytes());
                let Ok(mut whole) = Packet::new(&self.pool, header.flow) else {
                    self.count_drop("ipv4_reassembly_no_buffer");
                    return;
                };
                if whole.append_copy(&header.header).is_err() {
                    self.count_drop("ipv4_reassembly_no_buffer");
                    return;
                }
                for segment in payload {
                    whole.append_segment(segment);
                }
                let meta = Ipv4Meta {
                    frag_offset: 0,
                    ..meta
                };
                self.ipv4_deliver(now, meta, header.next, whole, header.header.len());
            }
        }
    }

    /// RFC 792 / RFC 1122 §3.3.2: Time Exceeded code 1 when the first
    /// fragment had arrived.
    pub(super) fn reassembly4_expired(
        &mut self,
        now: Instant,
        expired: Expired<super::FragKey4, FirstFragment>,
    ) {
        self.count_drop("ipv4_reassembly_timeout");
        let Some(first) = expired.first else { return };
        let (src, dst, _, _) = expired.key;
        let meta = Ipv4Meta {
            interface: first.interface,
            src,
            dst,
            ttl: 0,
            link_multicast: false,
            frag_offset: 0,
        };
        let Ok(packet) = Packet::from_payload(&self.pool, first.flow, &first.invoking) else {
            return;
        };
        self.send_icmpv4_error(
            now,
            &meta,
            &packet,
            Icmpv4ErrorKind::TimeExceeded(Icmpv4TimeExceeded::FragReassembly),
        );
    }

    /// Next hop for `dst` through the destination cache and routing table.
    pub(crate) fn ipv4_route(
        &mut self,
        now: Instant,
        dst: Ipv4Addr,
        flow: Flow,
    ) -> Option<Ipv4Route> {
        let _span = probe::span(ROUTE_LOOKUP_ENTER, ROUTE_LOOKUP_EXIT, 0, flow, 4);
        if dst.is_broadcast() {
            let interface = self.interfaces.iter().find(|i| i.v4.is_some())?;
            return Some(Ipv4Route {
                interface: interface.id,
                neighbor: dst,
                source: interface.v4.as_ref()?.address,
                mtu: interface.link_mtu(),
                lladdr: None,
            });
        }
        if dst.is_multicast() {
            let interface = self.multicast_interface(IpAddr::V4(dst), None);
            return self.multicast_route_v4(interface, dst);
        }
        let generation = self.routes4.generation();
        let (interface, neighbor, mtu) = match self.dest4.lookup(now, dst, generation) {
            Some(view) => (
                view.next_hop.interface,
                view.next_hop.neighbor,
                view.pmtu as usize,
            ),
            None => {
                let route = *self.routes4.lookup(dst)?;
                let link_mtu = self.interfaces.get(route.interface.0)?.link_mtu();
                let neighbor = route.next_hop_for(dst);
                let source = self.interfaces[route.interface.0]
                    .v4
                    .as_ref()
                    .map(|v4| v4.address);
                let _ = self.dest4.insert(
                    now,
                    dst,
                    NextHop {
                        neighbor,
                        interface: route.interface,
                        source,
                        link_mtu: link_mtu as u32,
                    },
                    generation,
                );
                (route.interface, neighbor, link_mtu)
            }
        };
        let source = self.interfaces[interface.0].v4.as_ref()?.address;
        Some(Ipv4Route {
            interface,
            neighbor,
            source,
            mtu,
            lladdr: None,
        })
    }

    /// Sends `payload` in IPv4, with the trace option for a traced flow
    /// (copied into every fragment: its type has the copy bit), fragmenting
    /// to the MTU unless DF is set (RFC 791).
    pub(crate) fn ipv4_output(
        &mut self,
        now: Instant,
        route: Ipv4Route,
        send: Ipv4Send,
        payload: Packet,
    ) {
        let flow = payload.flow();
        let _span = probe::span_with(IPV4_OUTPUT_ENTER, IPV4_OUTPUT_EXIT, flow, || {
            (payload.len() as u32, 0)
        });
        self.counters.ipv4_sent += 1;
        let options = if flow.traced {
            Ipv4Options::with_trace(wire::trace_option::TraceOption { flow: flow.id })
        } else {
            Ipv4Options::EMPTY
        };
        let header_len = wire::ipv4::HEADER_LEN + options.len();
        let ident = self.ipv4_ident;
        // A TSO super-segment's wire segments take consecutive
        // identifications from its own (as the segmenter writes them).
        let gso_size = usize::from(payload.offload().gso_size);
        let wire_segments = match gso_size {
            0 => 1,
            size => payload.len().div_ceil(size).max(1),
        };
        self.ipv4_ident = self.ipv4_ident.wrapping_add(wire_segments as u16);
        let repr = |payload_len: usize, frag_offset: usize, more_frags: bool| Ipv4Repr {
            src: send.src,
            dst: send.dst,
            protocol: send.protocol,
            dscp_ecn: 0,
            ident,
            dont_frag: send.dont_frag,
            more_frags,
            frag_offset: frag_offset as u16,
            ttl: send.ttl,
            payload_len,
            options,
        };
        // A TSO super-segment is never fragmented: the device stage cuts
        // it into MSS-sized segments (`iface::offload`).
        if header_len + payload.len() <= route.mtu || gso_size > 0 {
            let mut packet = payload;
            let len = packet.len();
            if self
                .ipv4_prepend_header(&mut packet, &repr(len, 0, false))
                .is_ok()
            {
                self.ipv4_route_output(now, &route, packet);
            }
            return;
        }
        if send.dont_frag {
            self.count_drop("ipv4_needs_fragmentation_df");
            return;
        }
        let _span = probe::span_with(FRAGMENT_ENTER, FRAGMENT_EXIT, flow, || {
            (payload.len() as u32, 4)
        });
        let per_fragment = route.mtu.saturating_sub(header_len) & !7;
        let len = payload.len();
        if per_fragment == 0 || len > usize::from(wire::ipv4::MAX_FRAG_OFFSET) + per_fragment {
            self.count_drop("ipv4_cannot_fragment");
            return;
        }
        let mut offset = 0;
        while offset < len {
            let end = (offset + per_fragment).min(len);
            let mut fragment = match self.fragment_body(&payload, offset..end, flow) {
                Ok(fragment) => fragment,
                Err("no_buffer") => return self.count_drop("ipv4_no_buffer"),
                Err(_) => return self.count_drop("ipv4_fragment_failed"),
            };
            if self
                .ipv4_prepend_header(&mut fragment, &repr(end - offset, offset, end < len))
                .is_err()
            {
                return;
            }
            self.counters.ipv4_fragments_sent += 1;
            self.ipv4_route_output(now, &route, fragment);
            offset = end;
        }
    }

    pub(super) fn ipv4_prepend_header(
        &mut self,
        packet: &mut Packet,
        repr: &Ipv4Repr,
    ) -> Result<(), ()> {
        let Ok(header) = packet.prepend(repr.header_len()) else {
            self.count_drop("ipv4_no_headroom");
            return Err(());
        };
        let _span = probe::span_with(CHECKSUM_ENTER, CHECKSUM_EXIT, Flow::NONE, || {
            (repr.header_len() as u32, 0)
        });
        repr.emit(&mut Ipv4Packet::new_unchecked(header), ChecksumMode::Full)
            .map_err(|_| {
                *self.drops.entry("ipv4_emit_failed").or_insert(0) += 1;
            })
    }

    /// Hands a finished IPv4 packet to `route`'s link: to the neighbour's
    /// link-layer address when the route carries it (a cached path), else
    /// through [`ipv4_link_output`](Self::ipv4_link_output).
    fn ipv4_route_output(&mut self, now: Instant, route: &Ipv4Route, packet: Packet) {
        match route.lladdr {
            Some(lladdr) => self.ethernet_output(route.interface, lladdr, EtherType::Ipv4, packet),
            None => self.ipv4_link_output(now, route.interface, route.neighbor, packet),
        }
    }

    /// Resolves the neighbour through ARP and queues the frame.
    pub(crate) fn ipv4_link_output(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        neighbor: Ipv4Addr,
        packet: Packet,
    ) {
        // To one of our own addresses: back into our own IP input, as
        // Linux routes it through loopback (an ARP request for ourselves
        // would go unanswered).
        if self
            .interfaces
            .iter()
            .any(|i| i.v4.as_ref().is_some_and(|v4| v4.address == neighbor))
        {
            self.counters.looped_back += 1;
            self.enqueue_ip_input(interface, packet, false);
            return;
        }
        let Some(iface) = self.interfaces.get_mut(interface.0) else {
            return;
        };
        if iface.medium == Medium::Ip {
            iface.enqueue(packet);
            return;
        }
        let Some(v4) = iface.v4.as_mut() else {
            self.count_drop("ipv4_no_address");
            return;
        };
        if neighbor.is_multicast() {
            // RFC 1112 §6.4: no ARP; the group's own MAC.
            let mac = super::ipv4_multicast_mac(neighbor);
            self.ethernet_output(interface, mac, EtherType::Ipv4, packet);
            return;
        }
        let lookup = {
            let _span = probe::span_with(
                NEIGHBOR_LOOKUP_ENTER,
                NEIGHBOR_LOOKUP_EXIT,
                packet.flow(),
                || (packet.len() as u32, 4),
            );
            v4.arp.lookup(now, neighbor, packet)
        };
        match lookup {
            ArpLookup::Send { lladdr, packet } => {
                self.ethernet_output(interface, lladdr, EtherType::Ipv4, packet)
            }
            ArpLookup::Queued { dropped } => {
                if dropped.is_some() {
                    self.count_drop("arp_queue_overflow");
                }
            }
            ArpLookup::Requested { request, evicted } => {
                if let Some(evicted) = evicted {
                    for _ in evicted.packets {
                        self.count_drop("arp_evicted");
                    }
                }
                self.send_arp(interface, &request);
            }
            ArpLookup::Rejected { .. } => self.count_drop("arp_rejected"),
        }
    }

    /// RFC 1812 §5.2: TTL check and decrement (with the incremental
    /// checksum update of RFC 1624), route, fragment if needed.
    fn ipv4_forward(&mut self, now: Instant, meta: Ipv4Meta, mut packet: Packet) {
        let _span = probe::span_with(IP_FORWARD_ENTER, IP_FORWARD_EXIT, packet.flow(), || {
            (packet.len() as u32, 4)
        });
        // RFC 1812 §5.3.7: no martian sources or destinations (0/8, 127/8,
        // 240/4); §5.3.4: nothing that arrived as link-layer broadcast; and
        // no directed broadcasts of our other subnets (RFC 2644).
        let martian = |a: Ipv4Addr| {
            let first = a.octets()[0];
            first == 0 || first == 127 || first >= 240
        };
        if martian(meta.src) || martian(meta.dst) {
            self.count_drop("ipv4_forward_martian");
            return;
        }
        if meta.link_multicast {
            self.count_drop("ipv4_forward_link_broadcast");
            return;
        }
        if self
            .interfaces
            .iter()
            .any(|i| i.v4.as_ref().and_then(|v4| v4.broadcast()) == Some(meta.dst))
        {
            self.count_drop("ipv4_forward_directed_broadcast");
            return;
        }
        if meta.ttl <= 1 {
            self.count_drop("ipv4_ttl_exceeded");
            self.send_icmpv4_error(
                now,
                &meta,
                &packet,
                Icmpv4ErrorKind::TimeExceeded(Icmpv4TimeExceeded::TtlExpired),
            );
            return;
        }
        let Some(route) = self.ipv4_route(now, meta.dst, packet.flow()) else {
            self.count_drop("ipv4_no_route");
            self.send_icmpv4_error(
                now,
                &meta,
                &packet,
                Icmpv4ErrorKind::DstUnreachable(Icmpv4DstUnreachable::NetUnreachable),
            );
            return;
        };
        let (header_len, dont_frag) = {
            let Some(head) = packet.parts().next() else {
                return;
            };
            let ip = Ipv4Packet::new_unchecked(head);
            (ip.header_len(), ip.dont_frag())
        };
        if packet.len() > route.mtu {
            if dont_frag {
                // RFC 1191 §4: Fragmentation Needed with the next-hop MTU.
                self.count_drop("ipv4_needs_fragmentation_df");
                self.send_icmpv4_error(
                    now,
                    &meta,
                    &packet,
                    Icmpv4ErrorKind::FragNeeded {
                        next_hop_mtu: route.mtu as u16,
                    },
                );
                return;
            }
            self.ipv4_refragment(now, route, meta, packet, header_len);
            return;
        }
        if packet.strip(header_len).is_err() {
            return;
        }
        let Ok(header) = packet.prepend(header_len) else {
            self.count_drop("ipv4_forward_shared");
            return;
        };
        let old = u16::from_be_bytes([header[8], header[9]]);
        header[8] = meta.ttl - 1;
        let new = u16::from_be_bytes([header[8], header[9]]);
        let sum = u16::from_be_bytes([header[10], header[11]]);
        let sum = wire::checksum::update(sum, old, new);
        header[10..12].copy_from_slice(&sum.to_be_bytes());
        self.counters.ipv4_forwarded += 1;
        self.ipv4_link_output(now, route.interface, route.neighbor, packet);
    }

    /// Forwards a packet too big for the next link as fragments (RFC 791
    /// "Fragmentation", RFC 1812 §5.2.6): same identification, offsets
    /// relative to the original's, MF kept on the last piece if the
    /// original had it, and only options with the copy bit after the first.
    fn ipv4_refragment(
        &mut self,
        now: Instant,
        route: Ipv4Route,
        meta: Ipv4Meta,
        packet: Packet,
        header_len: usize,
    ) {
        let _span = probe::span_with(FRAGMENT_ENTER, FRAGMENT_EXIT, packet.flow(), || {
            (packet.len() as u32, 4)
        });
        let repr = {
            let Some(head) = packet.parts().next() else {
                return;
            };
            match Ipv4Repr::parse(&Ipv4Packet::new_unchecked(head), ChecksumMode::Skip) {
                Ok(repr) => repr,
                Err(_) => return,
            }
        };
        let copied: Vec<wire::ipv4::Ipv4Option<'_>> = repr
            .options
            .iter()
            .filter(|o| option_kind(o) & 0x80 != 0)
            .collect();
        let Ok(later_options) = Ipv4Options::from_options(&copied) else {
            self.count_drop("ipv4_cannot_fragment");
            return;
        };
        let len = packet.len() - header_len;
        let mut offset = 0;
        while offset < len {
            let options = if offset == 0 {
                repr.options
            } else {
                later_options
            };
            let this_header = wire::ipv4::HEADER_LEN + options.len();
            let per_fragment = route.mtu.saturating_sub(this_header) & !7;
            if per_fragment == 0 {
                self.count_drop("ipv4_cannot_fragment");
                return;
            }
            let end = (offset + per_fragment).min(len);
            let Ok(segments) = packet.segments(header_len + offset..header_len + end) else {
                return;
            };
            let Ok(mut fragment) = Packet::new(&self.pool, packet.flow()) else {
                self.count_drop("ipv4_no_buffer");
                return;
            };
            for segment in segments {
                fragment.append_segment(segment);
            }
            let piece = Ipv4Repr {
                ttl: meta.ttl - 1,
                // In range: input refused fragments ending past 65 535.
                frag_offset: repr.frag_offset.saturating_add(offset as u16),
                more_frags: end < len || repr.more_frags,
                payload_len: end - offset,
                options,
                ..repr
            };
            if self.ipv4_prepend_header(&mut fragment, &piece).is_err() {
                return;
            }
            self.counters.ipv4_fragments_sent += 1;
            self.ipv4_link_output(now, route.interface, route.neighbor, fragment);
            offset = end;
        }
        self.counters.ipv4_forwarded += 1;
    }

    // ----- ARP --------------------------------------------------------------

    pub(super) fn arp_input(&mut self, now: Instant, interface: InterfaceId, packet: &Packet) {
        let Some(bytes) = packet.parts().next() else {
            return;
        };
        let parsed =
            wire::arp::ArpPacket::new_checked(bytes).and_then(|p| wire::arp::ArpRepr::parse(&p));
        let Ok(repr) = parsed else {
            self.count_drop("arp_malformed");
            return;
        };
        let Some(v4) = self.interfaces[interface.0].v4.as_mut() else {
            self.count_drop("arp_no_ipv4");
            return;
        };
        let actions = v4.arp.on_arp(now, &repr);
        self.arp_actions(now, interface, actions);
    }

    pub(super) fn arp_actions(
        &mut self,
        _now: Instant,
        interface: InterfaceId,
        actions: Vec<ArpAction<Packet>>,
    ) {
        for action in actions {
            match action {
                ArpAction::SendRequest { message, .. } | ArpAction::SendReply { message } => {
                    self.send_arp(interface, &message)
                }
                ArpAction::Transmit {
                    lladdr, packets, ..
                } => {
                    for packet in packets {
                        self.ethernet_output(interface, lladdr, EtherType::Ipv4, packet);
                    }
                }
                ArpAction::Unreachable { packets, .. } => {
                    // RFC 1122 §2.3.2.2 leaves it to the host; we report
                    // Host Unreachable for packets we were forwarding.
                    for packet in packets {
                        self.count_drop("arp_unreachable");
                        let Some(head) = packet.parts().next() else {
                            continue;
                        };
                        let Ok(ip) = Ipv4Packet::new_checked(head) else {
                            continue;
                        };
                        let meta = Ipv4Meta {
                            interface,
                            src: ip.src_addr(),
                            dst: ip.dst_addr(),
                            ttl: ip.ttl(),
                            link_multicast: false,
                            frag_offset: ip.frag_offset(),
                        };
                        if self.ipv4_addresses().contains(&meta.src) {
                            continue;
                        }
                        self.send_icmpv4_error(
                            _now,
                            &meta,
                            &packet,
                            Icmpv4ErrorKind::DstUnreachable(Icmpv4DstUnreachable::HostUnreachable),
                        );
                    }
                }
                ArpAction::Evicted(evicted) => {
                    for _ in evicted.packets {
                        self.count_drop("arp_evicted");
                    }
                }
            }
        }
    }

    pub(super) fn send_arp(&mut self, interface: InterfaceId, message: &ArpMessage) {
        let mut bytes = [0u8; 28];
        let Ok(len) = message.emit(&mut bytes) else {
            return;
        };
        let Ok(packet) = Packet::from_payload(&self.pool, Flow::NONE, &bytes[..len]) else {
            self.count_drop("arp_no_buffer");
            return;
        };
        let dst: EthernetAddress = message.eth_dst;
        self.ethernet_output(interface, dst, EtherType::Arp, packet);
    }
}

/// The kind byte of an IPv4 option.
fn option_kind(option: &wire::ipv4::Ipv4Option<'_>) -> u8 {
    match option {
        wire::ipv4::Ipv4Option::EndOfList => 0,
        wire::ipv4::Ipv4Option::NoOperation => 1,
        wire::ipv4::Ipv4Option::Trace(_) => wire::trace_option::IPV4_OPTION_TYPE,
        wire::ipv4::Ipv4Option::Unknown { kind, .. } => *kind,
    }
}

/// The header of an IPv4 packet GRO merged (`iface::offload`), whose
/// payload goes on past the head buffer `head` to `total` bytes in all:
/// parsed as [`Ipv4Repr::parse`] does a whole packet (header checksum
/// included), with the total length checked against `total`.
fn merged_ipv4_header(head: &[u8], total: usize) -> wire::Result<(Ipv4Repr, usize)> {
    let fixed = head
        .get(..wire::ipv4::HEADER_LEN)
        .ok_or(wire::Error::Truncated)?;
    let header_len = Ipv4Packet::new_unchecked(fixed).header_len();
    let header = head.get(..header_len).ok_or(wire::Error::Truncated)?;
    if header_len < wire::ipv4::HEADER_LEN {
        return Err(wire::Error::Malformed("IPv4 IHL below 5"));
    }
    if wire::checksum::checksum(header) != 0 {
        return Err(wire::Error::Checksum);
    }
    let total_len = usize::from(Ipv4Packet::new_unchecked(header).total_len());
    if total_len < header_len || total_len > total {
        return Err(wire::Error::Truncated);
    }
    // The header alone, its total length its own, for the parser.
    let mut copy = [0u8; 60];
    let copy = &mut copy[..header_len];
    copy.copy_from_slice(header);
    Ipv4Packet::new_unchecked(&mut copy[..]).set_total_len(header_len as u16);
    let ip = Ipv4Packet::new_checked(&copy[..])?;
    let mut repr = Ipv4Repr::parse(&ip, ChecksumMode::Skip)?;
    repr.payload_len = total_len - header_len;
    Ok((repr, header_len))
}
