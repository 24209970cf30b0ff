//! Segmentation and receive offload, as interface options (what `ethtool
//! -K` turns on for a Linux NIC): off by default, so the stack's
//! per-packet behaviour is what the studies measure.
//!
//! * **TSO** (TCP segmentation offload): TCP hands IP one super-segment of
//!   up to 64 KiB, a whole number of MSS (the last may be short), which
//!   passes every layer once; its checksum is left partial (the
//!   pseudo-header sum, as a kernel leaves `CHECKSUM_PARTIAL`). The
//!   device stage then either hands it whole to a link that takes GSO
//!   (AF_PACKET, TAP: a `virtio_net_hdr` says how to cut it, virtio 1.2
//!   §5.1.6.2; a virtual wire between two GRO ends, as a veth pair,
//!   whose receiver takes it as one merged segment) or cuts it into
//!   MSS-sized frames itself with the [`Segmenter`] receive already
//!   uses, each with its IP length, TCP
//!   sequence number, flags and checksum, so the wire carries ordinary
//!   frames. The cutting is the device stage's work: it is timed inside
//!   the super-segment's `link.transmit` span.
//! * **GRO** (receive coalescing, as Linux's `tcp_gro_receive`):
//!   consecutive in-order TCP segments of one flow in one poll's batch are
//!   merged into one packet before IP input, so IP and TCP input run once
//!   for the batch and TCP acknowledges the merged segment. What may merge
//!   is [`GroSegment::parse`]'s and [`GroHeld::try_merge`]'s to say.
//!   Each segment's checksum is verified as it is taken (a `checksum`
//!   span inside `link.receive`), so transport input does not sum the
//!   merged one again.

use core::net::IpAddr;

use wire::ip::IpProtocol;
use wire::ipv4::Ipv4Packet;
use wire::ipv6::Ipv6Packet;
use wire::tcp::{TcpFlags, TcpPacket};

use crate::buffer::{Packet, PacketOffload};
use crate::phy::vnet::{Gso, Segmenter, VnetHeaderRepr};

/// The offloads turned on for an interface.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Offload {
    /// TCP segmentation offload: TCP sends super-segments the device
    /// stage (or the operating system behind the link) cuts.
    pub tso: bool,
    /// Generic receive offload: in-order TCP segments of a flow arriving
    /// together are merged before IP input.
    pub gro: bool,
}

impl Offload {
    /// Nothing offloaded (the default).
    pub const NONE: Offload = Offload {
        tso: false,
        gro: false,
    };
    /// TSO and GRO.
    pub const ALL: Offload = Offload {
        tso: true,
        gro: true,
    };
    /// The names [`parse`](Self::parse) takes.
    pub const NAMES: &'static str = "tso, gro";

    /// The offloads a list of names turns on (`["tso", "gro"]`, as a
    /// topology's `offload` key says); an unknown name is an error that
    /// says which.
    pub fn parse<S: AsRef<str>>(names: &[S]) -> Result<Offload, String> {
        let mut offload = Offload::NONE;
        for name in names {
            match name.as_ref() {
                "tso" => offload.tso = true,
                "gro" => offload.gro = true,
                other => {
                    return Err(format!(
                        "unknown offload `{other}` (known: {})",
                        Self::NAMES
                    ))
                }
            }
        }
        Ok(offload)
    }

    /// The names of what is on, in [`parse`](Self::parse)'s terms.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        if self.tso {
            names.push("tso");
        }
        if self.gro {
            names.push("gro");
        }
        names
    }

    pub fn is_none(&self) -> bool {
        *self == Offload::NONE
    }
}

/// The most bytes of IP packet a super-segment (sent or merged) may be:
/// Linux's `GSO_LEGACY_MAX_SIZE`, which keeps the IPv4 total length and
/// the IPv6 payload length within their 16 bits (RFC 791 §3.1, RFC 8200
/// §3; no jumbograms).
pub const GSO_MAX_SIZE: usize = 65_535;

/// Room kept in a super-segment for the IP and TCP headers with options
/// (and the trace option): 60 + 60 bytes at most, rounded up.
const HEADER_ROOM: usize = 128;

/// The most TCP payload a super-segment of `mss`-byte segments carries: a
/// whole number of MSS within [`GSO_MAX_SIZE`], at least one MSS.
pub fn tso_max_payload(mss: usize) -> usize {
    let mss = mss.max(1);
    ((GSO_MAX_SIZE - HEADER_ROOM) / mss).max(1) * mss
}

/// How a super-frame (Ethernet header on, headers in the first part) goes
/// to a link that takes GSO: its `virtio_net_hdr` (virtio 1.2 §5.1.6.2:
/// `gso_type` TCPV4 or TCPV6, `gso_size` the MSS, `NEEDS_CSUM` with the
/// checksum at `csum_start + csum_offset`, `hdr_len` the headers), and
/// the [`Segmenter`] that cuts it otherwise; `None` if it is no TCP
/// super-frame the segmenter takes (then it is dropped and counted).
pub fn super_frame(parts: &[&[u8]], gso_size: u16) -> Option<(VnetHeaderRepr, Segmenter)> {
    let head = parts.first()?;
    let v6 = match head.get(12..14)? {
        [0x86, 0xdd] => true,
        [0x08, 0x00] => false,
        _ => return None,
    };
    let mut header = VnetHeaderRepr {
        needs_csum: true,
        gso: if v6 { Gso::TcpV6 } else { Gso::TcpV4 },
        gso_size,
        // The checksum field of the TCP header (RFC 9293 §3.1).
        csum_offset: 16,
        ..VnetHeaderRepr::default()
    };
    // The segmenter's walk of the headers finds the TCP header (and checks
    // the frame is one it can cut); everything below reads it there.
    let segmenter = Segmenter::for_parts(parts, &header).ok()?;
    let l4 = segmenter.transport_offset();
    // RFC 3168 §6.1.2: CWR goes on the first segment only; the ECN bit
    // tells the far side the super-frame has it.
    header.gso_ecn = head
        .get(l4..)
        .and_then(|tcp| TcpPacket::new_checked(tcp).ok())
        .is_some_and(|tcp| tcp.flags().contains(TcpFlags::CWR));
    header.csum_start = u16::try_from(l4).ok()?;
    header.hdr_len = u16::try_from(segmenter.header_len()).ok()?;
    Some((header, segmenter))
}

/// Bytes of headers GRO compares and rewrites at most: an IPv4 header
/// without options or an IPv6 header, and a TCP header with options.
const MAX_HEADERS: usize = wire::ipv6::HEADER_LEN + wire::tcp::MAX_HEADER_LEN;

/// A received IP packet GRO may merge: TCP directly after an IPv4 header
/// without options or an IPv6 header without extension headers, not a
/// fragment, carrying data, with no flag but ACK and PSH, and a checksum
/// that verifies.
#[derive(Debug, Clone, Copy)]
pub struct GroSegment {
    v6: bool,
    /// Offset of the TCP header, and the length of all headers.
    l4: usize,
    headers: usize,
    payload: usize,
    seq: u32,
    flags: TcpFlags,
}

impl GroSegment {
    /// Reads `packet` (an IP packet, link header stripped) as a GRO
    /// candidate; `None` if it is none (it then goes on alone). Verifies
    /// its TCP checksum (a `checksum` span): one that fails is no
    /// candidate, and transport input drops it as it would have.
    pub fn parse(packet: &Packet) -> Option<GroSegment> {
        // A received packet is one buffer; anything else goes on alone.
        let mut parts = packet.parts();
        let head = parts.next()?;
        if parts.next().is_some() {
            return None;
        }
        let total = head.len();
        let first = *head.first()?;
        // The IP header is read once: checked, and its addresses kept for
        // the pseudo-header.
        let (v6, l4, src, dst): (bool, usize, IpAddr, IpAddr) = match first >> 4 {
            6 => {
                let ip = Ipv6Packet::new_checked(head).ok()?;
                if ip.next_header() != IpProtocol::Tcp
                    || wire::ipv6::HEADER_LEN + usize::from(ip.payload_len()) != total
                {
                    return None;
                }
                let (src, dst) = (ip.src_addr().into(), ip.dst_addr().into());
                (true, wire::ipv6::HEADER_LEN, src, dst)
            }
            4 => {
                let ip = Ipv4Packet::new_checked(head).ok()?;
                if ip.header_len() != wire::ipv4::HEADER_LEN
                    || ip.protocol() != IpProtocol::Tcp
                    || ip.more_frags()
                    || ip.frag_offset() != 0
                    || usize::from(ip.total_len()) != total
                    || !ip.verify_checksum()
                {
                    return None;
                }
                let (src, dst) = (ip.src_addr().into(), ip.dst_addr().into());
                (false, wire::ipv4::HEADER_LEN, src, dst)
            }
            _ => return None,
        };
        let tcp = TcpPacket::new_checked(head.get(l4..)?).ok()?;
        let header_len = tcp.header_len();
        let headers = l4 + header_len;
        if header_len < wire::tcp::HEADER_LEN || headers > head.len().min(MAX_HEADERS) {
            return None;
        }
        let payload = total.checked_sub(headers).filter(|&p| p > 0)?;
        let flags = tcp.flags();
        let refused = TcpFlags::FIN
            | TcpFlags::SYN
            | TcpFlags::RST
            | TcpFlags::URG
            | TcpFlags::ECE
            | TcpFlags::CWR;
        if !flags.contains(TcpFlags::ACK) || flags.intersects(refused) {
            return None;
        }
        {
            let _span = probe::span_with(
                crate::probes::CHECKSUM_ENTER,
                crate::probes::CHECKSUM_EXIT,
                packet.flow(),
                || ((total - l4) as u32, 0),
            );
            let pseudo = wire::ip::pseudo_header(&src, &dst, IpProtocol::Tcp, (total - l4) as u32);
            if !wire::checksum::verifies(pseudo, &head[l4..]) {
                return None;
            }
        }
        Some(GroSegment {
            v6,
            l4,
            headers,
            payload,
            seq: tcp.seq_number(),
            flags,
        })
    }
}

/// A packet GRO holds while later segments of its flow may join it.
pub struct GroHeld {
    pub packet: Packet,
    first: GroSegment,
    /// The sequence number the next segment must start at.
    next_seq: u32,
    /// Payload of the last segment merged: one shorter than the first
    /// ends the merge (Linux's `tcp_gro_receive`: `len < mss` flushes).
    last_payload: usize,
    /// PSH seen: the sender pushed here, nothing merges after it.
    pushed: bool,
    pub segments: usize,
}

impl GroHeld {
    /// Starts holding `packet`, which `first` describes.
    pub fn new(packet: Packet, first: GroSegment) -> GroHeld {
        GroHeld {
            next_seq: first.seq.wrapping_add(first.payload as u32),
            last_payload: first.payload,
            pushed: first.flags.contains(TcpFlags::PSH),
            segments: 1,
            packet,
            first,
        }
    }

    /// Merges `next` (described by `seg`) into the held packet if it
    /// continues it, as Linux's `inet_gro_receive` / `ipv6_gro_receive`
    /// and `tcp_gro_receive` allow: the same addresses, IP header fields
    /// (version, traffic class and flow label, hop limit; TOS, TTL and DF),
    /// ports, acknowledgment number, window and options byte for byte
    /// (timestamps included); the next sequence number; no segment longer
    /// than the first, none after a shorter one or after PSH; flags alike
    /// but PSH; the whole within [`GSO_MAX_SIZE`]. Gives `next` back if
    /// not.
    pub fn try_merge(&mut self, next: Packet, seg: &GroSegment) -> Result<(), Packet> {
        if !self.continues(&next, seg) {
            return Err(next);
        }
        let Ok(payload) = next.segments(seg.headers..seg.headers + seg.payload) else {
            return Err(next);
        };
        let total = self.packet.len() + seg.payload;
        let psh = seg.flags & TcpFlags::PSH;
        let (v6, l4) = (self.first.v6, self.first.l4);
        let rewritten = rewrite_headers(&mut self.packet, self.first.headers, |head| {
            if v6 {
                let mut ip = Ipv6Packet::new_unchecked(&mut head[..]);
                ip.set_payload_len((total - wire::ipv6::HEADER_LEN) as u16);
            } else {
                let mut ip = Ipv4Packet::new_unchecked(&mut head[..]);
                ip.set_total_len(total as u16);
                ip.fill_checksum();
            }
            let mut tcp = TcpPacket::new_unchecked(&mut head[l4..]);
            tcp.set_flags(tcp.flags() | psh);
        });
        if !rewritten {
            return Err(next);
        }
        self.packet.append_segments(payload);
        let offload = PacketOffload {
            gso_size: u16::try_from(self.first.payload).unwrap_or(u16::MAX),
            csum_verified: true,
        };
        self.packet.set_offload(offload);
        self.next_seq = self.next_seq.wrapping_add(seg.payload as u32);
        self.last_payload = seg.payload;
        self.pushed = !psh.is_empty();
        self.segments += 1;
        Ok(())
    }

    /// Whether `next` continues the held packet (see
    /// [`try_merge`](Self::try_merge)).
    fn continues(&self, next: &Packet, seg: &GroSegment) -> bool {
        let first = &self.first;
        if seg.v6 != first.v6
            || seg.headers != first.headers
            || self.pushed
            || self.last_payload < first.payload
            || seg.payload > first.payload
            || seg.seq != self.next_seq
            || seg.flags - TcpFlags::PSH != first.flags - TcpFlags::PSH
            || self.packet.len() + seg.payload > GSO_MAX_SIZE
        {
            return false;
        }
        let (Some(held), Some(new)) = (self.packet.parts().next(), next.parts().next()) else {
            return false;
        };
        let (Some(held), Some(new)) = (held.get(..first.headers), new.get(..first.headers)) else {
            return false;
        };
        let l4 = first.l4;
        // IP: everything but the lengths, identification and checksum.
        let ip_alike = if first.v6 {
            // Version, traffic class, flow label; next header, hop limit,
            // addresses (RFC 8200 §3).
            held[..4] == new[..4] && held[6..l4] == new[6..l4]
        } else {
            // Version, IHL, TOS; flags and fragment offset (DF alike; no
            // fragments here); TTL, protocol; addresses (RFC 791 §3.1).
            held[..2] == new[..2]
                && held[6..8] == new[6..8]
                && held[8..10] == new[8..10]
                && held[12..l4] == new[12..l4]
        };
        // TCP: ports; acknowledgment number, data offset; window; options
        // (RFC 9293 §3.1). Sequence number, flags and checksum differ.
        let tcp_alike = held[l4..l4 + 4] == new[l4..l4 + 4]
            && held[l4 + 8..l4 + 13] == new[l4 + 8..l4 + 13]
            && held[l4 + 14..l4 + 16] == new[l4 + 14..l4 + 16]
            && held[l4 + 18..] == new[l4 + 18..];
        ip_alike && tcp_alike
    }
}

/// Changes the first `len` bytes of `packet` (its headers, all in the head
/// buffer) with `edit`: taken off and put back in the same place, which
/// the packet's own API allows. False (unchanged) if they are not there.
fn rewrite_headers(packet: &mut Packet, len: usize, edit: impl FnOnce(&mut [u8])) -> bool {
    let mut bytes = [0u8; MAX_HEADERS];
    let Some(head) = packet.parts().next().and_then(|h| h.get(..len)) else {
        return false;
    };
    let Some(copy) = bytes.get_mut(..len) else {
        return false;
    };
    copy.copy_from_slice(head);
    edit(copy);
    if packet.strip(len).is_err() {
        return false;
    }
    match packet.prepend(len) {
        Ok(room) => {
            room.copy_from_slice(copy);
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::buffer::{Pool, PoolConfig};
    use probe::Flow;

    /// What a test segment differs in.
    #[derive(Clone, Copy)]
    struct Seg {
        seq: u32,
        ack: u32,
        flags: TcpFlags,
        len: usize,
        tsval: u32,
        window: u16,
    }

    const DATA: Seg = Seg {
        seq: 1000,
        ack: 7,
        flags: TcpFlags::ACK,
        len: 100,
        tsval: 5,
        window: 512,
    };

    /// An IPv6 TCP segment 2001:db8::1:1234 → 2001:db8::2:80 with the
    /// timestamps option, its checksum right, in a packet of its own.
    fn segment(pool: &Pool, seg: Seg) -> Packet {
        Packet::from_payload(pool, Flow::NONE, &segment_bytes(seg)).unwrap()
    }

    /// [`segment`]'s bytes.
    fn segment_bytes(seg: Seg) -> Vec<u8> {
        let src: core::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
        let dst: core::net::Ipv6Addr = "2001:db8::2".parse().unwrap();
        let tcp_len = 32 + seg.len;
        let mut bytes = vec![0x60, 0, 0, 0];
        bytes.extend_from_slice(&(tcp_len as u16).to_be_bytes());
        bytes.extend_from_slice(&[6, 64]);
        bytes.extend_from_slice(&src.octets());
        bytes.extend_from_slice(&dst.octets());
        bytes.extend_from_slice(&[0x04, 0xd2, 0, 80]);
        bytes.extend_from_slice(&seg.seq.to_be_bytes());
        bytes.extend_from_slice(&seg.ack.to_be_bytes());
        bytes.extend_from_slice(&[8 << 4, seg.flags.bits()]);
        bytes.extend_from_slice(&seg.window.to_be_bytes());
        bytes.extend_from_slice(&[0, 0, 0, 0, 1, 1, 8, 10]);
        bytes.extend_from_slice(&seg.tsval.to_be_bytes());
        bytes.extend_from_slice(&9u32.to_be_bytes());
        bytes.extend((0..seg.len).map(|i| (seg.seq as usize + i) as u8));
        let pseudo =
            wire::ip::pseudo_header(&src.into(), &dst.into(), IpProtocol::Tcp, tcp_len as u32);
        let sum = wire::checksum::finish(wire::checksum::add(
            pseudo,
            wire::checksum::sum(&bytes[40..]),
        ));
        bytes[56..58].copy_from_slice(&sum.to_be_bytes());
        bytes
    }

    /// Holds `first`, offers each of `rest`, and says which merged.
    fn offer(first: Seg, rest: &[Seg]) -> (Vec<bool>, GroHeld) {
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let packet = segment(&pool, first);
        let parsed = GroSegment::parse(&packet).expect("a candidate");
        let mut held = GroHeld::new(packet, parsed);
        let merged = rest
            .iter()
            .map(|&seg| {
                let packet = segment(&pool, seg);
                match GroSegment::parse(&packet) {
                    Some(parsed) => held.try_merge(packet, &parsed).is_ok(),
                    None => false,
                }
            })
            .collect();
        (merged, held)
    }

    #[test]
    fn in_order_segments_of_a_flow_merge_into_one_valid_packet() {
        let next = |n: u32, len| Seg {
            seq: 1000 + 100 * n,
            len,
            ..DATA
        };
        let last = Seg {
            flags: TcpFlags::ACK | TcpFlags::PSH,
            ..next(3, 40)
        };
        let (merged, held) = offer(DATA, &[next(1, 100), next(2, 100), last]);
        assert_eq!(merged, [true, true, true]);
        assert_eq!(held.segments, 4);
        let packet = held.packet;
        assert_eq!(packet.len(), 40 + 32 + 340);
        assert_eq!(
            packet.offload(),
            PacketOffload {
                gso_size: 100,
                csum_verified: true
            }
        );
        let mut bytes = vec![0u8; packet.len()];
        packet.copy_out(0, &mut bytes);
        let ip = Ipv6Packet::new_checked(&bytes[..]).unwrap();
        assert_eq!(usize::from(ip.payload_len()), 32 + 340);
        // The payload is the four segments' in order, PSH from the last.
        let payload: Vec<u8> = (0..340).map(|i| (1000 + i) as u8).collect();
        assert_eq!(&bytes[72..], &payload[..]);
        assert_eq!(bytes[40 + 13], (TcpFlags::ACK | TcpFlags::PSH).bits());
        assert_eq!(u32::from_be_bytes(bytes[44..48].try_into().unwrap()), 1000);
    }

    #[test]
    fn what_linux_would_not_merge_is_not_merged() {
        let second = Seg { seq: 1100, ..DATA };
        let cases = [
            ("a gap", Seg { seq: 1200, ..DATA }),
            ("a retransmission", DATA),
            ("another acknowledgment", Seg { ack: 8, ..second }),
            (
                "another window",
                Seg {
                    window: 256,
                    ..second
                },
            ),
            ("other timestamps", Seg { tsval: 6, ..second }),
            ("longer than the first", Seg { len: 101, ..second }),
            (
                "a FIN",
                Seg {
                    flags: TcpFlags::ACK | TcpFlags::FIN,
                    ..second
                },
            ),
            (
                "CWR",
                Seg {
                    flags: TcpFlags::ACK | TcpFlags::CWR,
                    ..second
                },
            ),
            ("no payload", Seg { len: 0, ..second }),
        ];
        for (what, seg) in cases {
            assert_eq!(offer(DATA, &[seg]).0, [false], "{what}");
        }
        // Nothing after a short segment or after PSH.
        let short = Seg { len: 50, ..second };
        let after_short = Seg { seq: 1150, ..DATA };
        assert_eq!(offer(DATA, &[short, after_short]).0, [true, false]);
        let pushed = Seg {
            flags: TcpFlags::ACK | TcpFlags::PSH,
            ..DATA
        };
        assert_eq!(offer(pushed, &[second]).0, [false]);
        // A bad checksum is no candidate at all.
        let pool = Pool::new(PoolConfig::default()).unwrap();
        let good = segment(&pool, DATA);
        let mut bytes = vec![0u8; good.len()];
        good.copy_out(0, &mut bytes);
        bytes[80] ^= 1;
        let bad = Packet::from_payload(&pool, Flow::NONE, &bytes).unwrap();
        assert!(GroSegment::parse(&bad).is_none());
    }

    #[test]
    fn a_merge_stops_at_64_kib() {
        let first = Seg { len: 1400, ..DATA };
        let rest: Vec<Seg> = (1..60)
            .map(|n| Seg {
                seq: 1000 + 1400 * n,
                ..first
            })
            .collect();
        let (merged, held) = offer(first, &rest);
        let taken = merged.iter().take_while(|m| **m).count();
        assert_eq!(taken + 1, held.segments);
        assert!(held.packet.len() <= GSO_MAX_SIZE);
        assert!(held.packet.len() + 1400 > GSO_MAX_SIZE);
        assert!(merged[taken..].iter().all(|m| !m));
    }

    /// `ip` behind an Ethernet header of `ethertype`.
    fn ethernet(ethertype: [u8; 2], ip: &[u8]) -> Vec<u8> {
        let mut frame = vec![0u8; 12];
        frame.extend_from_slice(&ethertype);
        frame.extend_from_slice(ip);
        frame
    }

    #[test]
    fn a_super_frame_is_described_where_the_segmenter_finds_its_tcp_header() {
        const IPV6: [u8; 2] = [0x86, 0xdd];
        let cwr = Seg {
            flags: TcpFlags::ACK | TcpFlags::CWR,
            len: 3000,
            ..DATA
        };
        let plain = ethernet(IPV6, &segment_bytes(cwr));
        let (header, segmenter) = super_frame(&[&plain], 1000).expect("a TCP super-frame");
        assert_eq!(header.gso, Gso::TcpV6);
        assert!(header.gso_ecn, "CWR set: the ECN bit says so");
        assert_eq!((header.csum_start, header.hdr_len), (54, 54 + 32));
        assert_eq!(segmenter.segments_left(), 3);
        // A traced flow's IPv6 packet carries a destination options header
        // (8 bytes here: PadN) before TCP.
        let mut ip = segment_bytes(cwr);
        ip[6] = 60;
        let payload_len = u16::from_be_bytes([ip[4], ip[5]]) + 8;
        ip[4..6].copy_from_slice(&payload_len.to_be_bytes());
        ip.splice(40..40, [6, 0, 1, 4, 0, 0, 0, 0]);
        let traced = ethernet(IPV6, &ip);
        let (header, _) = super_frame(&[&traced], 1000).expect("a TCP super-frame");
        assert!(header.gso_ecn, "CWR found after the extension header");
        assert_eq!((header.csum_start, header.hdr_len), (62, 62 + 32));
        // No CWR, no ECN bit; split across parts, the same description.
        let quiet = ethernet(IPV6, &segment_bytes(Seg { len: 3000, ..DATA }));
        let (header, _) = super_frame(&[&quiet[..100], &quiet[100..]], 1000).unwrap();
        assert!(!header.gso_ecn);
        assert_eq!((header.csum_start, header.hdr_len), (54, 54 + 32));
        // Not TCP, or not IP: nothing the segmenter cuts.
        let mut udp = segment_bytes(cwr);
        udp[6] = 17;
        assert!(super_frame(&[&ethernet(IPV6, &udp)], 1000).is_none());
        let arp = ethernet([0x08, 0x06], &segment_bytes(cwr));
        assert!(super_frame(&[&arp], 1000).is_none());
    }

    #[test]
    fn names_parse_and_unknown_ones_are_refused() {
        assert_eq!(Offload::parse(&["tso", "gro"]), Ok(Offload::ALL));
        assert_eq!(
            Offload::parse(&["gro"]),
            Ok(Offload {
                tso: false,
                gro: true
            })
        );
        assert_eq!(Offload::parse::<&str>(&[]), Ok(Offload::NONE));
        assert!(Offload::parse(&["lro"]).unwrap_err().contains("lro"));
        assert_eq!(Offload::ALL.names(), ["tso", "gro"]);
    }

    #[test]
    fn a_super_segment_is_a_whole_number_of_mss_within_64_kib() {
        assert_eq!(tso_max_payload(1428), 45 * 1428);
        assert_eq!(tso_max_payload(1440), 45 * 1440);
        assert_eq!(tso_max_payload(9000), 7 * 9000);
        assert_eq!(tso_max_payload(70_000), 70_000);
        assert!(tso_max_payload(536) + HEADER_ROOM <= GSO_MAX_SIZE);
    }
}
