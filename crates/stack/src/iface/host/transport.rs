//! UDP (RFC 768) over both families and raw IP sockets: the glue between
//! IP input/output and the socket queues.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use probe::Flow;
use wire::checksum;
use wire::ip::IpProtocol;

use super::ipv4::{Ipv4Meta, Ipv4Send};
use super::ipv6_input::{read_at, Ipv6Meta};
use super::ipv6_output::Ipv6Send;
use super::Host;
use crate::buffer::Packet;
use crate::iface::icmp_error::{Icmpv4ErrorKind, Icmpv6ErrorKind};
use crate::probes::{
    CHECKSUM_ENTER, CHECKSUM_EXIT, UDP_INPUT_ENTER, UDP_INPUT_EXIT, UDP_OUTPUT_ENTER,
    UDP_OUTPUT_EXIT,
};
use crate::socket::{OutgoingDatagram, RawFamily, RawPacket, ReceivedDatagram};
use crate::time::Instant;

/// A received packet's network-layer facts, either family.
#[derive(Debug, Clone, Copy)]
pub(crate) enum IpMeta {
    V6(Ipv6Meta),
    V4(Ipv4Meta),
}

impl IpMeta {
    pub(super) fn src(&self) -> IpAddr {
        match self {
            IpMeta::V6(m) => IpAddr::V6(m.src),
            IpMeta::V4(m) => IpAddr::V4(m.src),
        }
    }

    pub(super) fn dst(&self) -> IpAddr {
        match self {
            IpMeta::V6(m) => IpAddr::V6(m.dst),
            IpMeta::V4(m) => IpAddr::V4(m.dst),
        }
    }

    /// Arrived as link-layer multicast or broadcast.
    pub(super) fn link_multicast(&self) -> bool {
        match self {
            IpMeta::V6(m) => m.link_multicast,
            IpMeta::V4(m) => m.link_multicast,
        }
    }

    fn hop_limit(&self) -> u8 {
        match self {
            IpMeta::V6(m) => m.hop_limit,
            IpMeta::V4(m) => m.ttl,
        }
    }
}

/// Ones'-complement sum of `len` bytes of `packet` from `start`, across
/// its segments: a part that starts at an odd offset of the range has its
/// sum byte-swapped (RFC 1071 §2(B), byte-order independence).
pub(crate) fn sum_range(packet: &Packet, start: usize, len: usize) -> u16 {
    let mut skip = start;
    let mut left = len;
    let mut total = 0u16;
    let mut odd = false;
    for part in packet.parts() {
        if left == 0 {
            break;
        }
        if skip >= part.len() {
            skip -= part.len();
            continue;
        }
        let take = (part.len() - skip).min(left);
        let piece = &part[skip..skip + take];
        skip = 0;
        left -= take;
        let sum = checksum::sum(piece);
        total = checksum::add(total, if odd { sum.swap_bytes() } else { sum });
        if take % 2 == 1 {
            odd = !odd;
        }
    }
    total
}

/// The upper-layer pseudo-header's sum for either family (RFC 8200 §8.1,
/// RFC 793 §3.1).
pub(super) fn pseudo_header(src: IpAddr, dst: IpAddr, protocol: IpProtocol, len: usize) -> u16 {
    match (src, dst) {
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            checksum::pseudo_header_v6(s, d, protocol.into(), len as u32)
        }
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            checksum::pseudo_header_v4(s, d, protocol.into(), len as u16)
        }
        _ => 0,
    }
}

impl Host {
    /// A UDP datagram at `pos` of a packet for us.
    pub(super) fn udp_input(&mut self, now: Instant, meta: IpMeta, mut packet: Packet, pos: usize) {
        let _span = probe::span_with(UDP_INPUT_ENTER, UDP_INPUT_EXIT, packet.flow(), || {
            (packet.len() as u32, 0)
        });
        let Some(total) = packet.len().checked_sub(pos) else {
            self.count_drop("udp_truncated");
            return;
        };
        let mut scratch = [0u8; 8];
        let Some(header) = read_at(&packet, pos, wire::udp::HEADER_LEN, &mut scratch) else {
            self.count_drop("udp_truncated");
            return;
        };
        let src_port = u16::from_be_bytes([header[0], header[1]]);
        let dst_port = u16::from_be_bytes([header[2], header[3]]);
        let length = usize::from(u16::from_be_bytes([header[4], header[5]]));
        let sum_field = u16::from_be_bytes([header[6], header[7]]);
        if length < wire::udp::HEADER_LEN || length > total {
            self.count_drop("udp_bad_length");
            return;
        }
        // RFC 8200 §8.1: IPv6 receivers drop UDP with a zero checksum;
        // RFC 768: in IPv4 zero means "not computed".
        let verify = match meta {
            IpMeta::V6(_) if sum_field == 0 => {
                self.count_drop("udp_zero_checksum_ipv6");
                return;
            }
            IpMeta::V6(_) => true,
            IpMeta::V4(_) => sum_field != 0,
        };
        if verify {
            let _span = probe::span(
                CHECKSUM_ENTER,
                CHECKSUM_EXIT,
                length as u32,
                packet.flow(),
                0,
            );
            let pseudo = pseudo_header(meta.src(), meta.dst(), IpProtocol::Udp, length);
            if checksum::add(pseudo, sum_range(&packet, pos, length)) != 0xffff {
                self.count_drop("udp_bad_checksum");
                return;
            }
        }
        let local = SocketAddr::new(meta.dst(), dst_port);
        let remote = SocketAddr::new(meta.src(), src_port);
        if meta.dst().is_multicast() {
            self.udp_multicast_input(packet, pos, length, local, remote);
            return;
        }
        // A socket bound to the exact address wins over a wildcard one.
        let socket = self
            .udp
            .iter()
            .position(|s| s.accepts(local) && s.local().is_some_and(|l| !l.ip().is_unspecified()))
            .or_else(|| self.udp.iter().position(|s| s.accepts(local)));
        let Some(index) = socket else {
            self.count_drop("udp_no_socket");
            match meta {
                IpMeta::V6(m) => self.send_icmpv6_error(
                    now,
                    &m,
                    &packet,
                    Icmpv6ErrorKind::DstUnreachable(
                        wire::icmpv6::DstUnreachableReason::PortUnreachable,
                    ),
                ),
                IpMeta::V4(m) => self.send_icmpv4_error(
                    now,
                    &m,
                    &packet,
                    Icmpv4ErrorKind::DstUnreachable(
                        wire::icmpv4::Icmpv4DstUnreachable::PortUnreachable,
                    ),
                ),
            }
            return;
        };
        if packet.strip(pos + wire::udp::HEADER_LEN).is_err() {
            return;
        }
        packet.truncate(length - wire::udp::HEADER_LEN);
        self.counters.udp_received += 1;
        if !self.udp[index].deliver(ReceivedDatagram {
            remote,
            local,
            payload: packet,
        }) {
            self.count_drop("udp_receive_queue_full");
        }
    }

    /// A datagram to a joined group: a copy for every socket bound to the
    /// group or the unspecified address on its port (RFC 1122 §4.1.3.5's
    /// multicast delivery, as sockets do it); none is no error to report
    /// (RFC 1122 §3.2.2: no ICMP error for a multicast datagram).
    fn udp_multicast_input(
        &mut self,
        packet: Packet,
        pos: usize,
        length: usize,
        local: SocketAddr,
        remote: SocketAddr,
    ) {
        let start = pos + wire::udp::HEADER_LEN;
        let end = pos + length;
        let mut delivered = false;
        for index in 0..self.udp.len() {
            if !self.udp[index].accepts(local) {
                continue;
            }
            let Ok(segments) = packet.segments(start..end) else {
                break;
            };
            let Ok(mut copy) = Packet::new(&self.pool, packet.flow()) else {
                self.count_drop("udp_no_buffer");
                continue;
            };
            for segment in segments {
                copy.append_segment(segment);
            }
            if !delivered {
                self.counters.udp_received += 1;
                delivered = true;
            }
            let accepted = self.udp[index].deliver(ReceivedDatagram {
                remote,
                local,
                payload: copy,
            });
            if !accepted {
                self.count_drop("udp_receive_queue_full");
            }
        }
        if !delivered {
            self.count_drop("udp_multicast_no_socket");
        }
    }

    /// Sends a datagram from a socket's send queue.
    pub(super) fn udp_output(&mut self, now: Instant, flow: Flow, datagram: OutgoingDatagram) {
        let OutgoingDatagram {
            local,
            remote,
            mut payload,
            hop_limit,
        } = datagram;
        let _span = probe::span_with(UDP_OUTPUT_ENTER, UDP_OUTPUT_EXIT, flow, || {
            (payload.len() as u32, 0)
        });
        payload.set_flow(flow);
        let length = wire::udp::HEADER_LEN + payload.len();
        let Ok(length16) = u16::try_from(length) else {
            self.count_drop("udp_too_long");
            return;
        };
        let src_port = local.map_or(0, |l| l.port());
        // A socket bound to a group receives its datagrams but sends from
        // a unicast address: a group is never a source (RFC 4291 §2.7,
        // RFC 1122 §3.2.1.3).
        let bound_ip = local
            .map(|l| l.ip())
            .filter(|ip| !ip.is_unspecified() && !ip.is_multicast());
        // Route first: the checksum covers the source address.
        // A group leaves by the socket's interface (RFC 4007 §5), with a
        // hop limit of 1 unless the socket set one: RFC 3493 §5.2's
        // IPV6_MULTICAST_HOPS default, RFC 1112 §6.1's TTL.
        let multicast = remote.ip().is_multicast();
        let out = multicast.then(|| self.multicast_interface(remote.ip(), bound_ip));
        let hop_limit = hop_limit.or(multicast.then_some(1));
        let target = match remote.ip() {
            IpAddr::V6(dst) => {
                let Some(route) = self.ipv6_route(now, dst, out, flow) else {
                    self.count_drop("udp_no_route");
                    return;
                };
                let src = match bound_ip {
                    Some(IpAddr::V6(src)) => Some(src),
                    _ => self.select_source_v6(route.interface, dst),
                };
                let Some(src) = src else {
                    self.count_drop("udp_no_source_address");
                    return;
                };
                let hop = hop_limit.unwrap_or(self.interfaces[route.interface.0].v6.hop_limit);
                Target::V6(route, src, dst, hop)
            }
            IpAddr::V4(dst) => {
                let route = match out {
                    Some(out) => self.multicast_route_v4(out, dst),
                    None => self.ipv4_route(now, dst, flow),
                };
                let Some(route) = route else {
                    self.count_drop("udp_no_route");
                    return;
                };
                let src = match bound_ip {
                    Some(IpAddr::V4(src)) => src,
                    _ => route.source,
                };
                Target::V4(
                    route,
                    src,
                    dst,
                    hop_limit.unwrap_or(super::DEFAULT_HOP_LIMIT),
                )
            }
        };
        let (src, dst) = match target {
            Target::V6(_, s, d, _) => (IpAddr::V6(s), IpAddr::V6(d)),
            Target::V4(_, s, d, _) => (IpAddr::V4(s), IpAddr::V4(d)),
        };
        let mut header = [0u8; wire::udp::HEADER_LEN];
        header[0..2].copy_from_slice(&src_port.to_be_bytes());
        header[2..4].copy_from_slice(&remote.port().to_be_bytes());
        header[4..6].copy_from_slice(&length16.to_be_bytes());
        let sum = {
            let _span = probe::span(CHECKSUM_ENTER, CHECKSUM_EXIT, length as u32, flow, 0);
            let payload_sum = sum_range(&payload, 0, payload.len());
            checksum::combine(&[
                pseudo_header(src, dst, IpProtocol::Udp, length),
                checksum::sum(&header),
                payload_sum,
            ])
        };
        // RFC 768: a computed zero is sent as all ones.
        let mut field = checksum::finish(sum);
        if field == 0 {
            field = 0xffff;
        }
        header[6..8].copy_from_slice(&field.to_be_bytes());
        let Ok(room) = payload.prepend(wire::udp::HEADER_LEN) else {
            self.count_drop("udp_no_headroom");
            return;
        };
        room.copy_from_slice(&header);
        self.counters.udp_sent += 1;
        match target {
            Target::V6(route, src, dst, hop_limit) => self.ipv6_output(
                now,
                route,
                Ipv6Send {
                    src,
                    dst,
                    next_header: IpProtocol::Udp,
                    hop_limit,
                    router_alert: false,
                },
                payload,
            ),
            Target::V4(route, src, dst, ttl) => self.ipv4_output(
                now,
                route,
                Ipv4Send {
                    src,
                    dst,
                    protocol: IpProtocol::Udp,
                    ttl,
                    dont_frag: false,
                },
                payload,
            ),
        }
    }

    /// Gives every raw socket of `family` and `protocol` a copy of the
    /// message at `pos` (sharing the packet's buffers). Returns whether
    /// any socket took it.
    pub(super) fn raw_deliver(
        &mut self,
        family: RawFamily,
        protocol: IpProtocol,
        meta: &IpMeta,
        packet: &Packet,
        pos: usize,
    ) -> bool {
        let mut delivered = false;
        for index in 0..self.raw.len() {
            if !self.raw[index].accepts(family, protocol) {
                continue;
            }
            let Ok(segments) = packet.segments(pos..packet.len()) else {
                return delivered;
            };
            let Ok(mut copy) = Packet::new(&self.pool, packet.flow()) else {
                self.count_drop("raw_no_buffer");
                return delivered;
            };
            for segment in segments {
                copy.append_segment(segment);
            }
            let accepted = self.raw[index].deliver(RawPacket {
                remote: meta.src(),
                local: meta.dst(),
                hop_limit: meta.hop_limit(),
                payload: copy,
            });
            if !accepted {
                self.count_drop("raw_receive_queue_full");
            }
            delivered = true;
        }
        delivered
    }

    /// Sends a message from a raw socket, filling the ICMP checksum.
    pub(super) fn raw_output(
        &mut self,
        now: Instant,
        flow: Flow,
        protocol: IpProtocol,
        packet: RawPacket,
    ) {
        let len = packet.payload.len();
        let mut bytes = vec![0; len];
        packet.payload.copy_out(0, &mut bytes);
        drop(packet.payload);
        match packet.remote {
            IpAddr::V6(dst) => {
                let Some(route) = self.ipv6_route(now, dst, None, flow) else {
                    self.count_drop("raw_no_route");
                    return;
                };
                let Some(src) = self.select_source_v6(route.interface, dst) else {
                    self.count_drop("raw_no_source_address");
                    return;
                };
                // RFC 4443 §2.3: the ICMPv6 checksum covers a pseudo-header,
                // so the stack fills it (as Linux does for raw ICMPv6).
                if protocol == IpProtocol::Icmpv6 && len >= 4 {
                    bytes[2..4].fill(0);
                    let sum = checksum::add(
                        checksum::pseudo_header_v6(src, dst, protocol.into(), len as u32),
                        checksum::sum(&bytes),
                    );
                    bytes[2..4].copy_from_slice(&checksum::finish(sum).to_be_bytes());
                }
                let Ok(payload) = Packet::from_payload(&self.pool, flow, &bytes) else {
                    self.count_drop("raw_no_buffer");
                    return;
                };
                let hop_limit = if packet.hop_limit == 0 {
                    self.interfaces[route.interface.0].v6.hop_limit
                } else {
                    packet.hop_limit
                };
                self.ipv6_output(
                    now,
                    route,
                    Ipv6Send {
                        src,
                        dst,
                        next_header: protocol,
                        hop_limit,
                        router_alert: false,
                    },
                    payload,
                );
            }
            IpAddr::V4(dst) => {
                let Some(route) = self.ipv4_route(now, dst, flow) else {
                    self.count_drop("raw_no_route");
                    return;
                };
                if protocol == IpProtocol::Icmp && len >= 4 {
                    bytes[2..4].fill(0);
                    let field = checksum::checksum(&bytes);
                    bytes[2..4].copy_from_slice(&field.to_be_bytes());
                }
                let Ok(payload) = Packet::from_payload(&self.pool, flow, &bytes) else {
                    self.count_drop("raw_no_buffer");
                    return;
                };
                let ttl = if packet.hop_limit == 0 {
                    super::DEFAULT_HOP_LIMIT
                } else {
                    packet.hop_limit
                };
                let src = route.source;
                self.ipv4_output(
                    now,
                    route,
                    Ipv4Send {
                        src,
                        dst,
                        protocol,
                        ttl,
                        dont_frag: false,
                    },
                    payload,
                );
            }
        }
    }
}

/// Where a UDP datagram goes, resolved before its checksum is computed.
enum Target {
    V6(super::ipv6_output::Ipv6Route, Ipv6Addr, Ipv6Addr, u8),
    V4(super::ipv4::Ipv4Route, Ipv4Addr, Ipv4Addr, u8),
}
