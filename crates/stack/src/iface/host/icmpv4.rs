//! ICMPv4 (RFC 792, RFC 1122 §3.2.2): echo, errors with the RFC 1122
//! rules and a rate limit, and Fragmentation Needed feeding path-MTU
//! discovery (RFC 1191).

use std::net::Ipv4Addr;

use probe::Flow;
use wire::icmpv4::{Icmpv4Packet, Icmpv4Repr};
use wire::ip::{ChecksumMode, IpProtocol};

use super::ipv4::{Ipv4Meta, Ipv4Send};
use super::ipv6_input::{leading_bytes, read_at};
use super::transport::IpMeta;
use super::Host;
use crate::buffer::Packet;
use crate::iface::icmp_error::{
    icmpv4_error_body, may_send_icmpv4_error, Icmpv4ErrorKind, InvokingV4,
};
use crate::probes::{CHECKSUM_ENTER, CHECKSUM_EXIT, ICMPV4_INPUT_ENTER, ICMPV4_INPUT_EXIT};
use crate::socket::RawFamily;
use crate::time::Instant;

impl Host {
    pub(super) fn icmpv4_input(
        &mut self,
        now: Instant,
        meta: Ipv4Meta,
        packet: Packet,
        pos: usize,
    ) {
        let _span = probe::span(
            ICMPV4_INPUT_ENTER,
            ICMPV4_INPUT_EXIT,
            packet.len() as u32,
            packet.flow(),
            0,
        );
        let Some(len) = packet.len().checked_sub(pos) else {
            self.count_drop("icmpv4_truncated");
            return;
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        if scratch.len() < len {
            scratch.resize(len, 0);
        }
        self.icmpv4_message(now, &meta, &packet, pos, len, &mut scratch);
        self.scratch = scratch;
    }

    fn icmpv4_message(
        &mut self,
        now: Instant,
        meta: &Ipv4Meta,
        packet: &Packet,
        pos: usize,
        len: usize,
        scratch: &mut [u8],
    ) {
        let Some(bytes) = read_at(packet, pos, len, scratch) else {
            self.count_drop("icmpv4_truncated");
            return;
        };
        let parsed = {
            let _span = probe::span(CHECKSUM_ENTER, CHECKSUM_EXIT, len as u32, packet.flow(), 0);
            Icmpv4Repr::parse(&Icmpv4Packet::new_unchecked(bytes), ChecksumMode::Full)
        };
        // Verified messages, unknown types included, go to the raw ICMP
        // sockets too (ping and traceroute read them there).
        if matches!(parsed, Ok(_) | Err(wire::Error::Unsupported(_))) {
            self.raw_deliver(
                RawFamily::Ipv4,
                IpProtocol::Icmp,
                &IpMeta::V4(*meta),
                packet,
                pos,
            );
        }
        let repr = match parsed {
            Ok(repr) => repr,
            Err(wire::Error::Checksum) => {
                self.count_drop("icmpv4_bad_checksum");
                return;
            }
            Err(_) => {
                self.count_drop("icmpv4_unsupported");
                return;
            }
        };
        match repr {
            Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => {
                // RFC 1122 §3.2.2.6: a request to a broadcast address may be
                // silently discarded; we do.
                if meta.dst.is_broadcast() || meta.link_multicast {
                    self.count_drop("icmpv4_echo_broadcast");
                    return;
                }
                let reply = Icmpv4Repr::EchoReply {
                    ident,
                    seq_no,
                    data,
                };
                if self.send_icmpv4(now, Some(meta.dst), meta.src, packet.flow(), &reply) {
                    self.counters.echo_replies_sent += 1;
                }
            }
            // RFC 1191 §3: lower the PMTU of the invoking packet's
            // destination (68 bytes at least, RFC 791).
            Icmpv4Repr::DstUnreachable {
                reason: wire::icmpv4::Icmpv4DstUnreachable::FragRequired,
                next_hop_mtu,
                invoking,
            } if next_hop_mtu >= 68
                && invoking.len() >= wire::ipv4::HEADER_LEN
                && invoking[0] >> 4 == 4 =>
            {
                let dst = wire::ipv4::Ipv4Packet::new_unchecked(invoking).dst_addr();
                let _ = self
                    .dest4
                    .on_packet_too_big(now, dst, u32::from(next_hop_mtu));
                self.path_mtu_changes += 1;
            }
            _ => {}
        }
    }

    /// Sends an ICMPv4 error about `packet` if RFC 1122 §3.2.2 allows it.
    pub(crate) fn send_icmpv4_error(
        &mut self,
        now: Instant,
        meta: &Ipv4Meta,
        packet: &Packet,
        kind: Icmpv4ErrorKind,
    ) {
        // A traced error carries the 8-byte trace option: quote 8 bytes
        // less so it stays within 576 bytes (RFC 1812 §4.3.2.3).
        let limit = crate::iface::icmp_error::MAX_ICMPV4_INVOKING_LEN;
        let quote = if packet.flow().traced {
            limit - 8
        } else {
            limit
        };
        let bytes = leading_bytes(packet, quote);
        let is_error = is_icmpv4_error(&bytes);
        let subnet_broadcast = self
            .interfaces
            .iter()
            .any(|i| i.v4.as_ref().and_then(|v4| v4.broadcast()) == Some(meta.src));
        let invoking = InvokingV4 {
            src: meta.src,
            dst: meta.dst,
            dst_was_broadcast_or_multicast: meta.link_multicast,
            is_icmp_error: is_error,
            frag_offset: meta.frag_offset,
            src_is_subnet_broadcast: subnet_broadcast,
            locally_originated: false,
        };
        if may_send_icmpv4_error(&invoking, &mut self.icmp4_limiter, now).is_err() {
            self.counters.icmp_errors_suppressed += 1;
            return;
        }
        let repr = icmpv4_error_body(kind, &bytes);
        if self.send_icmpv4(now, None, meta.src, packet.flow(), &repr) {
            self.counters.icmpv4_errors_sent += 1;
        }
    }

    /// Builds and sends an ICMPv4 message from `src` (default: the outgoing
    /// interface's address).
    pub(crate) fn send_icmpv4(
        &mut self,
        now: Instant,
        src: Option<Ipv4Addr>,
        dst: Ipv4Addr,
        flow: Flow,
        repr: &Icmpv4Repr<'_>,
    ) -> bool {
        let Some(route) = self.ipv4_route(now, dst, flow) else {
            self.count_drop("ipv4_no_route");
            return false;
        };
        let len = repr.buffer_len();
        let mut bytes = vec![0; len];
        if repr
            .emit(
                &mut Icmpv4Packet::new_unchecked(&mut bytes[..]),
                ChecksumMode::Full,
            )
            .is_err()
        {
            self.count_drop("icmpv4_build_failed");
            return false;
        }
        let Ok(packet) = Packet::from_payload(&self.pool, flow, &bytes) else {
            self.count_drop("icmpv4_no_buffer");
            return false;
        };
        let src = src.unwrap_or(route.source);
        self.ipv4_output(
            now,
            route,
            Ipv4Send {
                src,
                dst,
                protocol: IpProtocol::Icmp,
                ttl: super::DEFAULT_HOP_LIMIT,
                dont_frag: false,
            },
            packet,
        );
        true
    }
}

/// Whether an invoking IPv4 packet carries an ICMP error (types 3, 4, 5,
/// 11, 12): RFC 1122 §3.2.2 forbids an error about one.
fn is_icmpv4_error(bytes: &[u8]) -> bool {
    // The bytes may be the start of a longer datagram: read the header
    // without checking Total Length against them.
    if bytes.len() < wire::ipv4::HEADER_LEN || bytes[0] >> 4 != 4 {
        return false;
    }
    let ip = wire::ipv4::Ipv4Packet::new_unchecked(bytes);
    if ip.protocol() != IpProtocol::Icmp || ip.frag_offset() != 0 {
        return false;
    }
    bytes
        .get(ip.header_len())
        .is_some_and(|t| matches!(t, 3 | 4 | 5 | 11 | 12))
}
