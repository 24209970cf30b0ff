//! ICMPv6 (RFC 4443): echo, errors sent with the §2.4 rules and rate
//! limit, Packet Too Big feeding path-MTU discovery (RFC 8201), and the
//! hand-off of Neighbor Discovery and MLD messages.

use std::net::IpAddr;

use wire::icmpv6::{Icmpv6Packet, Icmpv6Repr};
use wire::ip::{ChecksumMode, IpProtocol};

use super::ipv6_input::{leading_bytes, read_at, Ipv6Meta};
use super::tcp::ErrorTarget;
use super::transport::IpMeta;
use super::Host;
use crate::buffer::Packet;
use crate::iface::icmp_error::{
    icmpv6_error_body, may_send_icmpv6_error, quoted_ipv6, Icmpv6ErrorKind, InvokingV6,
};
use crate::probes::{CHECKSUM_ENTER, CHECKSUM_EXIT, ICMPV6_INPUT_ENTER, ICMPV6_INPUT_EXIT};
use crate::socket::RawFamily;
use crate::time::Instant;

impl Host {
    /// An ICMPv6 message at `pos` of a packet for us.
    pub(super) fn icmpv6_input(
        &mut self,
        now: Instant,
        meta: Ipv6Meta,
        packet: Packet,
        pos: usize,
    ) {
        let _span = probe::span_with(ICMPV6_INPUT_ENTER, ICMPV6_INPUT_EXIT, packet.flow(), || {
            (packet.len() as u32, 0)
        });
        let Some(len) = packet.len().checked_sub(pos) else {
            self.count_drop("icmpv6_truncated");
            return;
        };
        let mut scratch = std::mem::take(&mut self.scratch);
        if scratch.len() < len {
            scratch.resize(len, 0);
        }
        self.icmpv6_message(now, &meta, &packet, pos, len, &mut scratch);
        self.scratch = scratch;
    }

    fn icmpv6_message(
        &mut self,
        now: Instant,
        meta: &Ipv6Meta,
        packet: &Packet,
        pos: usize,
        len: usize,
        scratch: &mut [u8],
    ) {
        let Some(bytes) = read_at(packet, pos, len, scratch) else {
            self.count_drop("icmpv6_truncated");
            return;
        };
        let parsed = {
            let _span = probe::span(CHECKSUM_ENTER, CHECKSUM_EXIT, len as u32, packet.flow(), 0);
            Icmpv6Repr::parse(
                &Icmpv6Packet::new_unchecked(bytes),
                &meta.src,
                &meta.dst,
                ChecksumMode::Full,
            )
        };
        // Every verified ICMPv6 message goes to the raw ICMPv6 sockets too,
        // unknown types included (RFC 4443 §2.4 (b); RFC 3542 §3.1: the
        // checksum is verified first), so ping and traceroute see replies
        // and errors.
        if matches!(parsed, Ok(_) | Err(wire::Error::Unsupported(_))) {
            self.raw_deliver(
                RawFamily::Ipv6,
                IpProtocol::Icmpv6,
                &IpMeta::V6(*meta),
                packet,
                pos,
            );
        }
        let repr = match parsed {
            Ok(repr) => repr,
            Err(wire::Error::Checksum) => {
                self.count_drop("icmpv6_bad_checksum");
                return;
            }
            Err(wire::Error::Unsupported(_)) => {
                // RFC 4443 §2.4 (a), (b): unknown types go to the upper
                // layer (the raw sockets, done) or are discarded.
                self.count_drop("icmpv6_unknown_type");
                return;
            }
            Err(_) => {
                self.count_drop("icmpv6_malformed");
                return;
            }
        };
        match repr {
            Icmpv6Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => {
                // RFC 4443 §4.2: the reply goes back from the address the
                // request was sent to (a unicast one of ours), or from one
                // of ours for a multicast request.
                let src = (!meta.dst.is_multicast()).then_some(meta.dst);
                let reply = Icmpv6Repr::EchoReply {
                    ident,
                    seq_no,
                    data,
                };
                if self.send_icmpv6(
                    now,
                    src,
                    meta.src,
                    Some(meta.interface),
                    None,
                    packet.flow(),
                    &reply,
                ) {
                    self.counters.echo_replies_sent += 1;
                }
            }
            Icmpv6Repr::PacketTooBig { mtu, invoking } => {
                self.icmpv6_packet_too_big(now, mtu, invoking);
            }
            Icmpv6Repr::Ndisc(message) => self.ndisc_input(now, meta, message),
            Icmpv6Repr::Mld(message) => {
                // RFC 3810 §5: MLD messages come from link-local sources
                // with hop limit 1; anything else is not from this link.
                if meta.hop_limit != 1 {
                    self.count_drop("mld_bad_hop_limit");
                    return;
                }
                // RFC 3810 §5.1.14, §5.2.13: a link-local source (reports
                // may come from :: before one is assigned).
                if !(meta.src.is_unicast_link_local() || meta.src.is_unspecified()) {
                    self.count_drop("mld_bad_source");
                    return;
                }
                self.interfaces[meta.interface.0]
                    .v6
                    .mld
                    .on_message(now, &message);
            }
            Icmpv6Repr::EchoReply { .. }
            | Icmpv6Repr::DstUnreachable { .. }
            | Icmpv6Repr::TimeExceeded { .. }
            | Icmpv6Repr::ParamProblem { .. } => {}
        }
    }

    /// A Packet Too Big (RFC 4443 §3.2) about `invoking`, a packet we
    /// sent: RFC 8201 §4, lower the PMTU of its destination, never below
    /// the IPv6 minimum (RFC 8200 §5) — unless it quotes a TCP segment of
    /// no connection, or one not in flight (RFC 5927 §7.2): then nothing
    /// is lowered, the destination's path MTU included, so a forged error
    /// cannot shrink the segments of a connection (or of one yet to
    /// open). A TCP connection it is about resends what the path dropped.
    pub(super) fn icmpv6_packet_too_big(&mut self, now: Instant, mtu: u32, invoking: &[u8]) {
        let Some(quoted) = quoted_ipv6(invoking) else {
            self.count_drop("icmp_pmtu_malformed");
            return;
        };
        let IpAddr::V6(dst) = quoted.dst else {
            return;
        };
        let target = self.icmp_error_target(&quoted);
        if target == ErrorTarget::Unmatched {
            self.count_drop("icmp_pmtu_unmatched");
            return;
        }
        let mtu = mtu.max(wire::ipv6::MIN_MTU as u32);
        let _ = self.dest6.on_packet_too_big(now, dst, mtu);
        self.path_mtu_changes += 1;
        if let ErrorTarget::Connection { index, seq } = target {
            self.tcp_packet_too_big(now, index, seq);
        }
    }

    /// Sends an ICMPv6 error about `packet` if RFC 4443 §2.4 allows it.
    pub(crate) fn send_icmpv6_error(
        &mut self,
        now: Instant,
        meta: &Ipv6Meta,
        packet: &Packet,
        kind: Icmpv6ErrorKind,
    ) {
        // A traced error carries the 8-byte trace option: quote 8 bytes
        // less so the whole stays within the minimum MTU (RFC 4443 §2.4 c).
        let quote = if packet.flow().traced {
            wire::ipv6::MIN_MTU - 40 - 8 - 8
        } else {
            wire::ipv6::MIN_MTU
        };
        let bytes = leading_bytes(packet, quote);
        let invoking = InvokingV6 {
            src: meta.src,
            dst: meta.dst,
            dst_was_multicast_or_link_multicast: meta.link_multicast,
            is_icmpv6_error: is_icmpv6_error_or_redirect(&bytes),
            src_is_anycast: false,
            locally_originated: false,
        };
        if may_send_icmpv6_error(&invoking, &kind, &mut self.icmp6_limiter, now).is_err() {
            self.counters.icmp_errors_suppressed += 1;
            return;
        }
        let repr = icmpv6_error_body(kind, &bytes);
        // From the address the packet was sent to when it is one of ours.
        let src = (!meta.dst.is_multicast() && self.is_local_ipv6(meta.interface, meta.dst))
            .then_some(meta.dst);
        if self.send_icmpv6(
            now,
            src,
            meta.src,
            Some(meta.interface),
            None,
            packet.flow(),
            &repr,
        ) {
            self.counters.icmpv6_errors_sent += 1;
        }
    }
}

/// Whether a packet (from its IPv6 header) carries an ICMPv6 error or a
/// Redirect: RFC 4443 §2.4 (e.1), (e.2) forbid an error about those.
fn is_icmpv6_error_or_redirect(bytes: &[u8]) -> bool {
    // The bytes may be the start of a longer packet: read the header
    // without checking the payload length against them.
    if bytes.len() < wire::ipv6::HEADER_LEN || bytes[0] >> 4 != 6 {
        return false;
    }
    let next_header = wire::ipv6::Ipv6Packet::new_unchecked(bytes).next_header();
    let payload = &bytes[wire::ipv6::HEADER_LEN..];
    match wire::ipv6_ext_header::walk_chain(payload, next_header) {
        Ok(end) if end.protocol == IpProtocol::Icmpv6 => payload
            .get(end.offset)
            .is_some_and(|&t| t < 128 || t == 137),
        _ => false,
    }
}
