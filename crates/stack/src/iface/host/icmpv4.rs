//! ICMPv4 (RFC 792, RFC 1122 §3.2.2): echo, errors with the RFC 1122
//! rules and a rate limit, and Fragmentation Needed feeding path-MTU
//! discovery (RFC 1191).

use std::net::{IpAddr, Ipv4Addr};

use probe::Flow;
use wire::icmpv4::{Icmpv4Packet, Icmpv4Repr};
use wire::ip::{ChecksumMode, IpProtocol};

use super::ipv4::{Ipv4Meta, Ipv4Send};
use super::ipv6_input::{leading_bytes, read_at};
use super::tcp::ErrorTarget;
use super::transport::IpMeta;
use super::Host;
use crate::buffer::Packet;
use crate::iface::icmp_error::{
    icmpv4_error_body, may_send_icmpv4_error, quoted_ipv4, Icmpv4ErrorKind, InvokingV4,
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
        let _span = probe::span_with(ICMPV4_INPUT_ENTER, ICMPV4_INPUT_EXIT, packet.flow(), || {
            (packet.len() as u32, 0)
        });
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
        // An error about a packet one of our tunnels sent is the tunnel's.
        if self.tunnel_icmpv4_error(now, &repr) {
            return;
        }
        match repr {
            Icmpv4Repr::EchoRequest {
                ident,
                seq_no,
                data,
            } => {
                // RFC 1122 §3.2.2.6: a request to a broadcast address may be
                // silently discarded; we do (the subnet's directed broadcast
                // too, in whatever frame: no smurf amplifier).
                if self.is_ipv4_broadcast(meta.dst) || meta.link_multicast {
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
            Icmpv4Repr::DstUnreachable {
                reason: wire::icmpv4::Icmpv4DstUnreachable::FragRequired,
                next_hop_mtu,
                invoking,
            } => self.icmpv4_frag_needed(now, next_hop_mtu, invoking),
            _ => {}
        }
    }

    /// Fragmentation Needed and DF set (RFC 792, RFC 1191 §4) about
    /// `invoking`, a datagram we sent: RFC 1191 §3, lower the PMTU of its
    /// destination (68 bytes at least, RFC 791) — unless it quotes a TCP
    /// segment of no connection, or one not in flight (RFC 5927 §7.2):
    /// then nothing is lowered, the destination's path MTU included. A
    /// TCP connection it is about resends what the path dropped.
    fn icmpv4_frag_needed(&mut self, now: Instant, next_hop_mtu: u16, invoking: &[u8]) {
        let Some(quoted) = quoted_ipv4(invoking) else {
            self.count_drop("icmp_pmtu_malformed");
            return;
        };
        let IpAddr::V4(dst) = quoted.dst else {
            return;
        };
        let target = self.icmp_error_target(&quoted);
        if target == ErrorTarget::Unmatched {
            self.count_drop("icmp_pmtu_unmatched");
            return;
        }
        let mtu = if next_hop_mtu >= MIN_IPV4_MTU {
            next_hop_mtu
        } else {
            // RFC 1191 §5: a router older than RFC 1191 leaves the
            // Next-Hop MTU zero, and hosts MUST cope with that: §7, guess
            // the largest plateau below the datagram's length as the
            // router saw it.
            plateau_below(wire::ipv4::Ipv4Packet::new_unchecked(invoking).total_len())
        };
        let _ = self.dest4.on_packet_too_big(now, dst, u32::from(mtu));
        self.path_mtu_changes += 1;
        if let ErrorTarget::Connection { index, seq } = target {
            self.tcp_packet_too_big(now, index, seq);
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
        // RFC 1122 §3.2.2: no error about a datagram "destined to an IP
        // broadcast or IP multicast address" — a subnet's directed
        // broadcast included, which only we know to be one, and whatever
        // frame it came in (a unicast frame does not make it unicast).
        let to_broadcast = self.is_ipv4_broadcast(meta.dst);
        let invoking = InvokingV4 {
            src: meta.src,
            dst: meta.dst,
            dst_was_broadcast_or_multicast: meta.link_multicast || to_broadcast,
            is_icmp_error: is_error,
            frag_offset: meta.frag_offset,
            src_is_subnet_broadcast: self.is_ipv4_broadcast(meta.src),
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

/// The smallest MTU of IPv4 (RFC 791: every module forwards 68 bytes).
const MIN_IPV4_MTU: u16 = 68;

/// RFC 1191 §7's table of MTU plateaus, largest first.
const MTU_PLATEAUS: [u16; 11] = [
    65535, 32000, 17914, 8166, 4352, 2002, 1492, 1006, 508, 296, 68,
];

/// RFC 1191 §7: the PMTU to try after a datagram of `total_len` bytes was
/// too big for a router that did not say how big a one fits: the largest
/// plateau below `total_len`, and never below IPv4's minimum MTU.
fn plateau_below(total_len: u16) -> u16 {
    MTU_PLATEAUS
        .into_iter()
        .find(|&plateau| plateau < total_len)
        .unwrap_or(MIN_IPV4_MTU)
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

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::net::SocketAddr;
    use std::sync::{Arc, Mutex};

    use crate::iface::host::{Host, HostConfig, InterfaceConfig, StaticRoute};
    use crate::phy::{Link, LinkError, LinkStats, Medium};
    use crate::socket::UdpConfig;
    use crate::time::Instant;

    /// Both directions of a bare-IP link the test drives.
    #[derive(Default)]
    struct Wire {
        to_host: VecDeque<Vec<u8>>,
        from_host: Vec<Vec<u8>>,
    }

    struct ScriptedLink(Arc<Mutex<Wire>>);

    impl Link for ScriptedLink {
        fn medium(&self) -> Medium {
            Medium::Ip
        }
        fn mtu(&self) -> usize {
            1500
        }
        fn transmit(&mut self, _now: Instant, parts: &[&[u8]]) -> Result<(), LinkError> {
            self.0.lock().unwrap().from_host.push(parts.concat());
            Ok(())
        }
        fn receive(&mut self, _now: Instant, buf: &mut [u8]) -> Option<usize> {
            let packet = self.0.lock().unwrap().to_host.pop_front()?;
            buf[..packet.len()].copy_from_slice(&packet);
            Some(packet.len())
        }
        fn transmit_ring(&self) -> Option<usize> {
            None
        }

        fn transmit_complete_at(&self) -> Option<Instant> {
            None
        }

        fn received_at(&self) -> Option<Instant> {
            None
        }

        fn next_arrival(&self) -> Option<Instant> {
            None
        }
        fn stats(&self) -> LinkStats {
            LinkStats::default()
        }
    }

    /// 192.0.2.2/24 on the scripted link, everything else via 192.0.2.1.
    fn host_on(wire: &Arc<Mutex<Wire>>) -> Host {
        let interface = InterfaceConfig {
            name: "ip0".into(),
            link: Box::new(ScriptedLink(wire.clone())),
            mac: wire::ethernet::EthernetAddress([0x02, 0, 0, 0, 0, 2]),
            ipv4: Some("192.0.2.2/24".parse().unwrap()),
            ipv6: Vec::new(),
            advertise: Vec::new(),
            dad_transmits: Some(0),
        };
        let route = StaticRoute {
            to: "0.0.0.0/0".parse().unwrap(),
            via: "192.0.2.1".parse().unwrap(),
        };
        Host::new(HostConfig::new("h", false), vec![interface], &[route]).unwrap()
    }

    /// An IPv4 packet from `src` to 192.0.2.2 carrying `icmp`, whose
    /// checksum is filled in.
    fn icmp_packet(src: [u8; 4], mut icmp: Vec<u8>) -> Vec<u8> {
        let sum = wire::checksum::checksum(&icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
        let total = (20 + icmp.len()) as u16;
        let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&src);
        ip.extend_from_slice(&[192, 0, 2, 2]);
        let sum = wire::checksum::checksum(&ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        ip.extend_from_slice(&icmp);
        ip
    }

    /// Destination Unreachable, Fragmentation Needed (type 3, code 4) with
    /// `next_hop_mtu` (RFC 1191 §4), quoting `invoking`'s first 28 bytes.
    fn frag_needed(next_hop_mtu: u16, invoking: &[u8]) -> Vec<u8> {
        let mut icmp = vec![3, 4, 0, 0, 0, 0];
        icmp.extend_from_slice(&next_hop_mtu.to_be_bytes());
        icmp.extend_from_slice(&invoking[..28]);
        icmp_packet([192, 0, 2, 1], icmp)
    }

    /// The host's path MTU to `dst` after sending it a 1500-byte packet
    /// that a router answers with `next_hop_mtu`; and how many fragments
    /// the same datagram makes when sent again.
    fn pmtu_after_frag_needed(next_hop_mtu: u16) -> (u32, u64) {
        let wire = Arc::new(Mutex::new(Wire::default()));
        let mut host = host_on(&wire);
        let t = Instant::ZERO;
        host.poll(t);
        let socket = host.udp_open(UdpConfig::default());
        let far: SocketAddr = "203.0.113.9:9".parse().unwrap();
        let datagram = vec![7u8; 1500 - 20 - 8];
        host.udp_send_to(socket, &datagram, far).unwrap();
        host.poll(t);
        let sent = wire.lock().unwrap().from_host.pop().expect("the datagram");
        assert_eq!(sent.len(), 1500);
        let message = frag_needed(next_hop_mtu, &sent);
        wire.lock().unwrap().to_host.push_back(message);
        host.poll(t);
        let pmtu = host
            .state(t)
            .ipv4_destinations
            .iter()
            .find(|d| d.destination == far.ip().to_string())
            .map(|d| d.path_mtu)
            .expect("a destination cache entry");
        let before = host.counters().ipv4_fragments_sent;
        host.udp_send_to(socket, &datagram, far).unwrap();
        host.poll(t);
        (pmtu, host.counters().ipv4_fragments_sent - before)
    }

    #[test]
    fn plateaus_step_down_rfc_1191_table() {
        assert_eq!(super::plateau_below(1500), 1492);
        assert_eq!(super::plateau_below(1492), 1006);
        assert_eq!(super::plateau_below(1493), 1492);
        assert_eq!(super::plateau_below(65535), 32000);
        assert_eq!(super::plateau_below(576), 508);
        assert_eq!(super::plateau_below(69), 68);
        assert_eq!(super::plateau_below(68), 68);
        assert_eq!(super::plateau_below(0), 68);
    }

    #[test]
    fn fragmentation_needed_with_a_next_hop_mtu_sets_the_path_mtu() {
        assert_eq!(pmtu_after_frag_needed(1400), (1400, 2));
    }

    #[test]
    fn fragmentation_needed_from_an_old_router_lowers_the_path_mtu_to_a_plateau() {
        // RFC 1191 §5: a router predating it leaves the Next-Hop MTU zero,
        // and hosts MUST cope; §7: the largest plateau below the returned
        // datagram's 1500 bytes is 1492.
        assert_eq!(pmtu_after_frag_needed(0), (1492, 2));
    }
}
