//! XTP in the host (IP protocol 36, over IPv6 and IPv4): packets in
//! (checksum, parsing, the context found by key, a FIRST handed to its
//! listener), packets out (built from what an association asks for,
//! checksummed, IP output), timers, and the stream-queue probes.

use std::net::{IpAddr, SocketAddr};

use probe::Flow;
use wire::checksum;
use wire::ip::{ChecksumMode, IpProtocol};
use wire::xtp::{
    Address, DiagCode, DiagValue, Segment, XtpOptions, XtpPacket, XtpRepr, HEADER_LEN,
};

use super::ipv4::Ipv4Send;
use super::ipv6_output::Ipv6Send;
use super::transport::IpMeta;
use super::Host;
use crate::buffer::Packet;
use crate::iface::route::InterfaceId;
use crate::probes::{
    CHECKSUM_ENTER, CHECKSUM_EXIT, RECV_QUEUE_ENQUEUE, SEND_QUEUE_DEQUEUE, XTP_INPUT_ENTER,
    XTP_INPUT_EXIT, XTP_OUTPUT_ENTER, XTP_OUTPUT_EXIT, XTP_TIMER_ENTER, XTP_TIMER_EXIT,
};
use crate::socket::probe_len;
use crate::socket::xtp::association::{Association, Ends, State};
use crate::socket::xtp::packet::{Body, Outgoing};
use crate::socket::xtp::sockets::{Demux, Peer, XtpSocket, BACKLOG};
use crate::time::Instant;
use wire::ethernet::{EtherType, EthernetAddress};

/// Packets one association sends per poll at most (the rest go at the
/// next poll), so one fast sender cannot starve the host's other work.
const OUTPUT_BUDGET: usize = 64;

/// The IP protocol number as the IP layer's enum.
pub(super) fn xtp_protocol() -> IpProtocol {
    IpProtocol::from(wire::xtp::IP_PROTOCOL)
}

impl Host {
    /// An XTP packet at `pos` of a packet for us.
    pub(super) fn xtp_input(&mut self, now: Instant, meta: IpMeta, packet: Packet, pos: usize) {
        let flow = packet.flow();
        let _span = probe::span_with(XTP_INPUT_ENTER, XTP_INPUT_EXIT, flow, || {
            (packet.len() as u32, 0)
        });
        let Some(total) = packet.len().checked_sub(pos) else {
            self.count_drop("xtp_truncated");
            return;
        };
        if meta.link_multicast() && !meta.dst().is_multicast() {
            // A unicast datagram in a multicast frame: no context's.
            self.count_drop("xtp_not_unicast");
            return;
        }
        let from = Peer::Ip(meta.src());
        // In place when the packet is one piece (no reassembly): no copy.
        if let Some(bytes) = contiguous(&packet, pos, total) {
            self.xtp_parse_and_deliver(now, from, Some(meta.dst()), bytes, flow);
            return;
        }
        let mut buf = std::mem::take(&mut self.scratch);
        if buf.len() < total {
            buf.resize(total, 0);
        }
        let n = packet.copy_out(pos, &mut buf[..total]);
        self.xtp_parse_and_deliver(now, from, Some(meta.dst()), &buf[..n], flow);
        self.scratch = buf;
    }

    /// An XTP packet directly in an Ethernet frame (EtherType 0x817D, its
    /// header stripped) from `src` to `dst`: only frames to this
    /// interface's own MAC (XTP multicast is not built).
    pub(super) fn xtp_link_input(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        (src, dst): (EthernetAddress, EthernetAddress),
        packet: Packet,
    ) {
        let flow = packet.flow();
        let _span = probe::span_with(XTP_INPUT_ENTER, XTP_INPUT_EXIT, flow, || {
            (packet.len() as u32, 1)
        });
        if dst != self.interfaces[interface.0].mac {
            self.count_drop("xtp_not_unicast");
            return;
        }
        let total = packet.len();
        let from = Peer::Link(interface, src);
        if let Some(bytes) = contiguous(&packet, 0, total) {
            self.xtp_parse_and_deliver(now, from, None, bytes, flow);
            return;
        }
        let mut buf = std::mem::take(&mut self.scratch);
        if buf.len() < total {
            buf.resize(total, 0);
        }
        let n = packet.copy_out(0, &mut buf[..total]);
        self.xtp_parse_and_deliver(now, from, None, &buf[..n], flow);
        self.scratch = buf;
    }

    /// Checks, parses and hands a packet from `from` to its context; `to`
    /// is the IP destination (none for a frame on the link).
    fn xtp_parse_and_deliver(
        &mut self,
        now: Instant,
        from: Peer,
        to: Option<IpAddr>,
        bytes: &[u8],
        flow: Flow,
    ) {
        let Ok(view) = XtpPacket::new_checked(bytes) else {
            self.count_drop("xtp_truncated");
            return;
        };
        {
            let covered = if view.options().contains(XtpOptions::NOCHECK) {
                HEADER_LEN
            } else {
                bytes.len()
            };
            let _span = probe::span(CHECKSUM_ENTER, CHECKSUM_EXIT, covered as u32, flow, 0);
            if !view.verify_checksum() {
                self.count_drop("xtp_bad_checksum");
                return;
            }
        }
        let repr = match XtpRepr::parse(&view, ChecksumMode::Skip) {
            Ok(repr) => repr,
            Err(_) => {
                self.count_drop("xtp_malformed");
                return;
            }
        };
        self.xtp.received += 1;
        if let (Peer::Ip(src), Some(group)) = (from, to.filter(IpAddr::is_multicast)) {
            self.xtp_group_input(now, src, group, &repr);
            return;
        }
        match self.xtp.demux(from, repr.key) {
            Demux::Association(index) => {
                if let Some(assoc) = self.xtp.association_mut(index) {
                    assoc.input(now, &repr);
                }
                self.xtp.output_pending = true;
                self.xtp_observe(index);
            }
            _ if matches!(repr.segment, Segment::First { .. }) => {
                self.xtp_first(now, from, to, &repr);
            }
            _ => {
                // A key without the return bit may be data racing its
                // FIRST (FIRST comes again); one with it names a context
                // of ours that is gone, whose peer we cannot address (its
                // key is not in the packet). Dropped either way.
                self.count_drop("xtp_no_context");
            }
        }
    }

    /// A FIRST for no existing context: a new association if a listener
    /// holds the port its address segment names, else refused by DIAG.
    fn xtp_first(&mut self, now: Instant, from: Peer, to: Option<IpAddr>, repr: &XtpRepr<'_>) {
        let Segment::First { address, .. } = repr.segment else {
            return;
        };
        // The address segment names both ends; over IP the packet's own
        // addresses are the ones answers go to.
        let (dst_host, src_host, dst_port, src_port): (IpAddr, IpAddr, u16, u16) =
            match address.address {
                Address::Ipv4 {
                    dst_host,
                    src_host,
                    dst_port,
                    src_port,
                } => (dst_host.into(), src_host.into(), dst_port, src_port),
                Address::Ipv6 {
                    dst_host,
                    src_host,
                    dst_port,
                    src_port,
                } => (dst_host.into(), src_host.into(), dst_port, src_port),
                Address::Null { .. } => {
                    self.count_drop("xtp_null_address");
                    let refuse = diag(
                        repr.key,
                        DiagCode::ContextRefused,
                        DiagValue::AddressFormatNotSupported,
                    );
                    self.xtp_reply(now, from, to, &refuse);
                    return;
                }
            };
        let (dst, src) = match from {
            Peer::Ip(src) => (to.unwrap_or(dst_host), src),
            Peer::Link(..) => (dst_host, src_host),
        };
        let local = SocketAddr::new(dst, dst_port);
        let remote = SocketAddr::new(src, src_port);
        let listener = match self.xtp.listener_for(local) {
            Demux::Listener(index) => index,
            _ => {
                self.count_drop("xtp_no_listener");
                let refuse = diag(repr.key, DiagCode::ContextRefused, DiagValue::NoListener);
                self.xtp_emit(now, Flow::NONE, (local, remote), from, &refuse);
                return;
            }
        };
        let Some(XtpSocket::Listener(l)) = self.xtp.get_mut(listener).map(|s| &mut s.socket) else {
            return;
        };
        if l.pending.len() >= BACKLOG {
            l.refused += 1;
            self.count_drop("xtp_backlog_full");
            let refuse = diag(repr.key, DiagCode::ContextRefused, DiagValue::NoResource);
            self.xtp_emit(now, Flow::NONE, (local, remote), from, &refuse);
            return;
        }
        let config = l.config;
        let flow = self.new_flow();
        let ends = Ends {
            local,
            remote,
            own_key: self.xtp.fresh_key(),
            path_maxdata: self.xtp_path_maxdata(now, from, flow),
            flow,
        };
        let mut assoc = Association::respond(config, ends, repr.key, now);
        assoc.input(now, repr);
        let Some(handle) = self
            .xtp
            .insert(XtpSocket::Association(Box::new(assoc)), from)
        else {
            self.count_drop("xtp_too_many_sockets");
            return;
        };
        if let Some(XtpSocket::Listener(l)) = self.xtp.get_mut(listener).map(|s| &mut s.socket) {
            l.pending.push_back(handle);
        }
        self.xtp.output_pending = true;
        if let Some(index) = self.xtp.index(handle) {
            self.xtp_observe(index);
        }
    }

    /// A DIAG answering a packet from `from` (to `to` over IP).
    fn xtp_reply(&mut self, now: Instant, from: Peer, to: Option<IpAddr>, out: &Outgoing) {
        let (local, remote) = match (from, to) {
            (Peer::Ip(src), Some(dst)) => (dst, src),
            (Peer::Ip(src), None) => (src, src),
            (Peer::Link(..), _) => (IpAddr::from([0u8; 4]), IpAddr::from([0u8; 4])),
        };
        let ends = (SocketAddr::new(local, 0), SocketAddr::new(remote, 0));
        self.xtp_emit(now, Flow::NONE, ends, from, out);
    }

    /// Data bytes an XTP packet to `peer` can carry: the route's MTU less
    /// the IP and XTP headers, or the link's MTU less the XTP header.
    pub(super) fn xtp_path_maxdata(&mut self, now: Instant, peer: Peer, flow: Flow) -> usize {
        let (mtu, ip_header) = match peer {
            Peer::Ip(IpAddr::V6(dst)) => (self.ipv6_route(now, dst, None, flow).map(|r| r.mtu), 40),
            Peer::Ip(IpAddr::V4(dst)) => (self.ipv4_route(now, dst, flow).map(|r| r.mtu), 20),
            Peer::Link(interface, _) => (self.interfaces.get(interface.0).map(|i| i.link_mtu()), 0),
        };
        let mtu = mtu.unwrap_or(1280);
        // A traced flow's packets carry the trace option: leave it room,
        // or every full packet would be fragmented in two.
        let trace_option = match (flow.traced, peer) {
            (false, _) | (true, Peer::Link(..)) => 0,
            (true, Peer::Ip(IpAddr::V6(_))) => wire::trace_option::IPV6_HEADER_LEN,
            (true, Peer::Ip(IpAddr::V4(_))) => wire::trace_option::IPV4_OPTIONS_LEN,
        };
        mtu.saturating_sub(ip_header + HEADER_LEN + trace_option)
            .max(1)
    }

    /// The stream-queue probes for what changed since last looked at
    /// (bytes acknowledged left the send queue; bytes in order joined the
    /// receive queue), as for TCP; frees a released, closed association.
    pub(super) fn xtp_observe(&mut self, index: usize) {
        let Some(slot) = self.xtp.get_mut(index) else {
            return;
        };
        let XtpSocket::Association(assoc) = &slot.socket else {
            return;
        };
        let flow = assoc.flow();
        let marks = &mut slot.marks;
        let queued = assoc.send_queued();
        if queued < marks.send_queued {
            let acked = marks.send_queued - queued;
            marks.acked += acked as u64;
            probe::record_with(SEND_QUEUE_DEQUEUE, flow, || (probe_len(acked), marks.acked));
        }
        marks.send_queued = queued;
        // Bytes in order joined the reader's data, in the receive buffer
        // or straight in a posted driver read.
        let arrived = assoc.arrived_total();
        if arrived > marks.delivered {
            let joined = arrived - marks.delivered;
            marks.delivered = arrived;
            probe::record_with(RECV_QUEUE_ENQUEUE, flow, || {
                (probe_len(joined as usize), marks.delivered)
            });
        }
        marks.readable = assoc.readable();
        if assoc.state() == State::Closed && slot.released {
            self.xtp.remove(index);
        }
    }

    /// Sends what every association has to send: those with a priority
    /// (SORT) first, the highest first, then the rest (study §2.6: "the
    /// higher priority contexts are served before those with lower
    /// priority. The contexts with this option disabled are served last").
    pub(super) fn xtp_output(&mut self, now: Instant) {
        self.xtp.output_pending = false;
        let mut order: Vec<(Option<u16>, usize)> = self
            .xtp
            .indices()
            .map(|i| match self.xtp.get(i).map(|s| &s.socket) {
                Some(XtpSocket::Association(a)) => (a.config().sort, i),
                _ => (None, i),
            })
            .collect();
        // Stable: equal priorities keep their slot order.
        order.sort_by_key(|&(sort, _)| std::cmp::Reverse(sort));
        for (_, index) in order {
            self.xtp_clamp_to_path(now, index);
            for sent in 0..=OUTPUT_BUDGET {
                if sent == OUTPUT_BUDGET {
                    self.xtp.output_pending = true;
                    break;
                }
                let Some(assoc) = self.xtp.association_mut(index) else {
                    break;
                };
                let Some(out) = assoc.poll_output(now) else {
                    break;
                };
                let ends = (assoc.local(), assoc.remote());
                let flow = assoc.flow();
                let Some(peer) = self.xtp.get(index).map(|s| s.peer) else {
                    break;
                };
                self.xtp_emit(now, flow, ends, peer, &out);
            }
            self.xtp_observe(index);
        }
        self.xtp_group_output(now);
    }

    /// Path-MTU discovery for XTP over IP: once the host learned a smaller
    /// path MTU (Packet Too Big, Fragmentation Needed), an association to
    /// that destination sends smaller packets (checked when the count of
    /// such changes moved, as TCP does).
    fn xtp_clamp_to_path(&mut self, now: Instant, index: usize) {
        let changes = self.path_mtu_changes;
        let Some(slot) = self.xtp.get_mut(index) else {
            return;
        };
        if slot.path_mtu_seen == Some(changes) || !matches!(slot.peer, Peer::Ip(_)) {
            return;
        }
        slot.path_mtu_seen = Some(changes);
        let peer = slot.peer;
        let XtpSocket::Association(assoc) = &slot.socket else {
            return;
        };
        let flow = assoc.flow();
        let maxdata = self.xtp_path_maxdata(now, peer, flow);
        if let Some(assoc) = self.xtp.association_mut(index) {
            assoc.clamp_maxdata(maxdata);
        }
    }

    /// Runs the timers that are due.
    pub(super) fn xtp_timers(&mut self, now: Instant) {
        for index in 0..self.xtp.slot_count() {
            let Some(assoc) = self.xtp.association_mut(index) else {
                continue;
            };
            if assoc.next_deadline().is_some_and(|t| t <= now) {
                let _span = probe::span(XTP_TIMER_ENTER, XTP_TIMER_EXIT, 0, assoc.flow(), 0);
                assoc.poll_timers(now);
            }
            self.xtp_observe(index);
        }
        self.xtp_group_timers(now);
    }

    /// The earliest XTP timer, RTIMER of a rate-limited sender included.
    pub(super) fn xtp_next_deadline(&self) -> Option<Instant> {
        self.xtp
            .indices()
            .filter_map(|i| match &self.xtp.get(i)?.socket {
                XtpSocket::Association(a) => [a.next_deadline(), a.rate_deadline()]
                    .into_iter()
                    .flatten()
                    .min(),
                XtpSocket::Listener(_) => None,
            })
            .chain(self.xtp_group_next_deadline())
            .min()
    }

    /// Builds one packet and hands it to IP output, or to the link for a
    /// peer reached directly over Ethernet.
    pub(super) fn xtp_emit(
        &mut self,
        now: Instant,
        flow: Flow,
        (local, remote): (SocketAddr, SocketAddr),
        peer: Peer,
        out: &Outgoing,
    ) {
        let _span = probe::span_with(XTP_OUTPUT_ENTER, XTP_OUTPUT_EXIT, flow, || {
            (probe_len(out.data_len()), 0)
        });
        // The header and the segment's fixed parts are built apart from
        // the data, and both copied once into the packet: the checksum
        // joins their sums (the head is a whole number of 16-bit words).
        let head_repr = out.head();
        let data = out.data();
        let mut head = vec![0u8; head_repr.buffer_len()];
        let mut view = XtpPacket::new_unchecked(&mut head[..]);
        if head_repr.emit(&mut view, ChecksumMode::Skip).is_err()
            || (head.len() % 2 == 1 && !data.is_empty())
        {
            self.count_drop("xtp_emit_failed");
            return;
        }
        let Ok(dlen) = u32::try_from(head.len() - HEADER_LEN + data.len()) else {
            self.count_drop("xtp_emit_failed");
            return;
        };
        let mut view = XtpPacket::new_unchecked(&mut head[..]);
        view.set_dlen(dlen);
        {
            let nocheck = head_repr.options.contains(XtpOptions::NOCHECK);
            let covered = if nocheck {
                HEADER_LEN
            } else {
                head.len() + data.len()
            };
            let _span = probe::span(CHECKSUM_ENTER, CHECKSUM_EXIT, covered as u32, flow, 0);
            let sum = if nocheck {
                checksum::sum(&head[..HEADER_LEN])
            } else {
                checksum::combine(&[checksum::sum(&head), checksum::sum(data)])
            };
            XtpPacket::new_unchecked(&mut head[..]).set_check(checksum::finish(sum));
        }
        let Ok(packet) = Packet::from_parts(&self.pool, flow, &[&head, data]) else {
            self.count_drop("xtp_no_buffer");
            return;
        };
        self.xtp.sent += 1;
        if let Peer::Link(interface, mac) = peer {
            self.ethernet_output(
                interface,
                mac,
                EtherType::from(wire::xtp::ETHERTYPE),
                packet,
            );
            return;
        }
        // A group leaves by the sender's interface with a hop limit of 1,
        // as UDP's (RFC 4007 §5, RFC 3493 §5.2, RFC 1112 §6.1).
        let group_out = remote
            .ip()
            .is_multicast()
            .then(|| self.multicast_interface(remote.ip(), Some(local.ip())));
        match (local.ip(), remote.ip()) {
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                let Some(route) = self.ipv6_route(now, dst, group_out, flow) else {
                    self.count_drop("xtp_no_route");
                    return;
                };
                let hop_limit = match group_out {
                    Some(_) => 1,
                    None => self.interfaces[route.interface.0].v6.hop_limit,
                };
                let send = Ipv6Send {
                    src,
                    dst,
                    next_header: xtp_protocol(),
                    hop_limit,
                    router_alert: false,
                };
                self.ipv6_output(now, route, send, packet);
            }
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                let route = match group_out {
                    Some(out) => self.multicast_route_v4(out, dst),
                    None => self.ipv4_route(now, dst, flow),
                };
                let Some(route) = route else {
                    self.count_drop("xtp_no_route");
                    return;
                };
                let send = Ipv4Send {
                    src,
                    dst,
                    protocol: xtp_protocol(),
                    ttl: if group_out.is_some() {
                        1
                    } else {
                        super::DEFAULT_HOP_LIMIT
                    },
                    // No path-MTU discovery for XTP: routers fragment.
                    dont_frag: false,
                };
                self.ipv4_output(now, route, send, packet);
            }
            _ => self.count_drop("xtp_family_mismatch"),
        }
    }
}

/// `len` bytes at `at` when they lie in one part of the packet.
fn contiguous(packet: &Packet, at: usize, len: usize) -> Option<&[u8]> {
    let mut skip = at;
    for part in packet.parts() {
        if skip < part.len() {
            return part.get(skip..skip + len);
        }
        skip -= part.len();
    }
    (len == 0).then_some(&[][..])
}

/// A DIAG with END answering a packet whose key was `key`: it goes back
/// under that key with the return bit, so the sender finds its context.
fn diag(key: u64, code: DiagCode, value: DiagValue) -> Outgoing {
    let message = match code {
        DiagCode::ContextRefused => "association refused",
        _ => "no such context",
    };
    Outgoing {
        key: key | wire::xtp::KEY_RETURN,
        options: XtpOptions::END,
        sort: 0,
        btag: None,
        sync: 0,
        seq: 0,
        body: Body::Diag(code, value, message),
    }
}
