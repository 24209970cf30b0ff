//! Arbitrary (virtio_net_hdr, frame) pairs as an AF_PACKET link receives
//! them, through `stack::phy::vnet`: acceptance (checksum completion, GSO
//! detection) and, for GSO frames, segmentation into a bounded buffer.
//!
//! Nothing may panic or loop without end, and what comes out must be right,
//! not just harmless:
//!
//! * a completed partial checksum verifies against the pseudo-header sum
//!   the field held (for an even `csum_offset`: an odd one splits the field
//!   across two checksum words, which no sender does);
//! * every segment fits the buffer, is no longer than the segmenter says,
//!   and carries IP (and UDP) length fields that match its length; the
//!   segments' payloads, in order, are the super-frame's payload; nothing
//!   is written past the longest segment;
//! * every segment that a receiver would take as an IPv4 or IPv6 TCP or UDP
//!   packet has a correct IPv4 header checksum and a correct transport
//!   checksum, where the receiver finds the transport header (not where the
//!   `virtio_net_hdr` says it is); none is a fragment or carries an IPv6
//!   routing header (whose pseudo-header would take the final destination,
//!   RFC 8200 §8.1).
//!
//! Input: two bytes (little-endian) of output buffer length, in units of 2
//! bytes (so segments longer than the IP length fields allow fit); two
//! bytes of extra frame length, filled with a pattern after the given frame
//! so that super-frames up to 64 KiB and more are reached from short
//! inputs; an options byte; then the `virtio_net_hdr` and the Ethernet
//! frame. Options bit 0 turns segmentation on. With bit 1, the bytes are
//! XORed over a template instead (a valid header and super-frame headers,
//! picked by the options' upper bits), and bytes past it are payload: all
//! zeroes is then a valid GSO frame, and every mutation a corrupted field of
//! one, so the fuzzer starts deep instead of at the EtherType check (as
//! `host_input` builds its packets).

#![no_main]

use std::net::IpAddr;

use libfuzzer_sys::fuzz_target;
use stack::phy::vnet::{self, Accepted, VnetHeaderRepr, HEADER_LEN};
use wire::ip::IpProtocol;
use wire::ipv4::Ipv4Packet;
use wire::ipv6::Ipv6Packet;
use wire::tcp::TcpPacket;
use wire::udp::UdpPacket;

/// What the output buffer holds where nothing was written.
const CANARY: u8 = 0xa5;

fuzz_target!(|data: &[u8]| {
    let [b0, b1, p0, p1, options, rest @ ..] = data else {
        return;
    };
    let buf_len = 2 * usize::from(u16::from_le_bytes([*b0, *b1]));
    let extra = usize::from(u16::from_le_bytes([*p0, *p1]));
    let segment_gso = options & 1 == 1;
    let mut packet = if options & 2 == 2 {
        over_template(usize::from(options >> 2), rest)
    } else {
        rest.to_vec()
    };
    packet.extend((0..extra).map(|i| (i as u8).wrapping_mul(167).wrapping_add(13)));

    check_header_round_trip(&packet);
    let original = packet.clone();
    match vnet::accept(&mut packet, segment_gso) {
        Accepted::Frame {
            frame,
            checksum_completed,
        } => {
            assert_eq!(frame.len(), original.len() - HEADER_LEN);
            if checksum_completed {
                check_completed_checksum(&original, frame);
            } else {
                assert_eq!(frame, &original[HEADER_LEN..], "untouched");
            }
        }
        Accepted::Gso(segmenter) => {
            assert!(segment_gso);
            cut_all(segmenter, &original[HEADER_LEN..], buf_len);
        }
        Accepted::GsoRefused(_) => {
            let header = VnetHeaderRepr::parse(&original).unwrap();
            assert_ne!(header.gso, vnet::Gso::None);
        }
        Accepted::Malformed => {
            if let Ok(header) = VnetHeaderRepr::parse(&original) {
                let field = usize::from(header.csum_start) + usize::from(header.csum_offset);
                assert!(header.needs_csum && field + 2 > original.len() - HEADER_LEN);
            }
        }
    }
});

/// A header that parses emits to bytes that parse back to it.
fn check_header_round_trip(packet: &[u8]) {
    let Ok(header) = VnetHeaderRepr::parse(packet) else {
        assert!(packet.len() < HEADER_LEN);
        return;
    };
    let mut bytes = [0u8; HEADER_LEN];
    header.emit(&mut bytes).unwrap();
    assert_eq!(VnetHeaderRepr::parse(&bytes), Ok(header));
    assert_eq!(bytes[1..], packet[1..HEADER_LEN]);
}

/// The completed checksum verifies against the pseudo-header sum that its
/// field held before.
fn check_completed_checksum(original: &[u8], frame: &[u8]) {
    let header = VnetHeaderRepr::parse(original).unwrap();
    let (start, offset) = (
        usize::from(header.csum_start),
        usize::from(header.csum_offset),
    );
    let field = start + offset;
    let before = &original[HEADER_LEN..];
    let pseudo = u16::from_be_bytes([before[field], before[field + 1]]);
    assert_eq!(frame[..field], before[..field]);
    assert_eq!(frame[field + 2..], before[field + 2..]);
    if offset % 2 == 0 {
        assert!(wire::checksum::verifies(pseudo, &frame[start..]));
    }
}

/// Cuts `frame` into a buffer of `buf_len` bytes and checks every segment.
fn cut_all(mut segmenter: vnet::Segmenter, frame: &[u8], buf_len: usize) {
    let headers = segmenter.header_len();
    let max_len = segmenter.max_segment_len();
    assert!(headers < max_len && max_len <= frame.len());
    let mut buf = vec![CANARY; buf_len];
    let (mut segments, mut skipped, mut longest) = (0usize, 0usize, 0usize);
    let mut payload = Vec::new();
    while let Some(result) = segmenter.next_into(frame, &mut buf) {
        segments += 1;
        // Every segment carries a payload byte at least: no endless loop.
        assert!(
            segments <= frame.len() - headers,
            "more segments than bytes"
        );
        let Ok(len) = result else {
            assert!(max_len > buf_len, "a segment that fits refused");
            skipped += 1;
            continue;
        };
        assert!(headers < len && len <= max_len && len <= buf_len);
        let segment = &buf[..len];
        assert_eq!(segment[..14], frame[..14], "Ethernet header copied");
        check_segment(segment);
        payload.extend_from_slice(&segment[headers..]);
        longest = longest.max(len);
    }
    assert!(segments > 0);
    if skipped == 0 {
        assert_eq!(payload, frame[headers..], "the payload, cut in order");
    }
    assert!(
        buf[longest..].iter().all(|&b| b == CANARY),
        "written past the longest segment"
    );
}

/// One segment as a receiver would read it.
fn check_segment(segment: &[u8]) {
    let ip = &segment[14..];
    match u16::from_be_bytes([segment[12], segment[13]]) {
        0x0800 => {
            let total_len = u16::from_be_bytes([ip[2], ip[3]]);
            assert_eq!(usize::from(total_len), ip.len(), "IPv4 total length");
            check_ipv4(ip);
        }
        0x86dd => {
            let payload_len = u16::from_be_bytes([ip[4], ip[5]]);
            assert_eq!(usize::from(payload_len) + 40, ip.len(), "IPv6 length");
            check_ipv6(ip);
        }
        other => panic!("a segment of EtherType {other:#06x}"),
    }
}

fn check_ipv4(ip: &[u8]) {
    let Ok(packet) = Ipv4Packet::new_checked(ip) else {
        return;
    };
    assert!(packet.verify_checksum(), "IPv4 header checksum");
    assert!(
        !packet.more_frags() && packet.frag_offset() == 0,
        "a segment that is a fragment"
    );
    let (src, dst) = (packet.src_addr().into(), packet.dst_addr().into());
    check_transport(packet.protocol(), packet.payload(), &src, &dst);
}

fn check_ipv6(ip: &[u8]) {
    let Ok(packet) = Ipv6Packet::new_checked(ip) else {
        return;
    };
    if packet.version() != 6 {
        return;
    }
    let Some(upper) = upper_layer(packet.payload(), packet.next_header()) else {
        return;
    };
    assert!(
        !upper.routed_or_fragment,
        "a segment with a routing or fragment header"
    );
    let (src, dst) = (packet.src_addr().into(), packet.dst_addr().into());
    let transport = &packet.payload()[upper.offset..];
    check_transport(upper.protocol, transport, &src, &dst);
}

/// A TCP segment or UDP datagram that parses has a correct checksum (and a
/// UDP length that is the datagram's).
fn check_transport(protocol: IpProtocol, transport: &[u8], src: &IpAddr, dst: &IpAddr) {
    match protocol {
        IpProtocol::Tcp => {
            if let Ok(tcp) = TcpPacket::new_checked(transport) {
                assert!(tcp.verify_checksum(src, dst), "TCP checksum");
            }
        }
        IpProtocol::Udp => {
            if let Ok(udp) = UdpPacket::new_checked(transport) {
                assert_eq!(usize::from(udp.len()), transport.len(), "UDP length");
                assert_ne!(udp.checksum(), 0, "UDP checksum left out");
                assert!(udp.verify_checksum(src, dst), "UDP checksum");
            }
        }
        _ => {}
    }
}

/// Where a receiver finds the upper layer of an IPv6 payload.
struct UpperLayer {
    protocol: IpProtocol,
    offset: usize,
    /// Whether a routing or fragment header comes before it.
    routed_or_fragment: bool,
}

/// The upper layer after the extension headers (RFC 8200 §4), as the wire
/// crate's walker finds it, and which headers it stepped over.
fn upper_layer(payload: &[u8], first: IpProtocol) -> Option<UpperLayer> {
    let end = wire::ipv6_ext_header::walk_chain(payload, first).ok()?;
    let (mut next, mut at, mut routed_or_fragment) = (first, 0, false);
    while at < end.offset {
        routed_or_fragment |= matches!(next, IpProtocol::Ipv6Route | IpProtocol::Ipv6Frag);
        let len = match next {
            IpProtocol::Ipv6Frag => 8,
            // RFC 4302 §2.2: the authentication header counts 4-octet units.
            IpProtocol::Unknown(51) => (usize::from(payload[at + 1]) + 2) * 4,
            _ => (usize::from(payload[at + 1]) + 1) * 8,
        };
        next = IpProtocol::from(payload[at]);
        at += len;
    }
    Some(UpperLayer {
        protocol: end.protocol,
        offset: end.offset,
        routed_or_fragment,
    })
}

/// `bytes` XORed over template `which` (a `virtio_net_hdr` and the headers
/// of a GSO super-frame), then the rest of `bytes` as they are.
fn over_template(which: usize, bytes: &[u8]) -> Vec<u8> {
    let mut packet = template(which % TEMPLATES);
    for (byte, &flip) in packet.iter_mut().zip(bytes) {
        *byte ^= flip;
    }
    packet.extend(bytes.iter().skip(packet.len()));
    packet
}

/// How many templates there are.
const TEMPLATES: usize = 8;

/// A `virtio_net_hdr` and the headers of a GSO super-frame (no payload) as
/// a kernel hands them over, by number: TCP and UDP over IPv4 and IPv6;
/// TCP/IPv4 with IP and TCP options; TCP/IPv6 behind hop-by-hop and
/// destination options headers; UDP/IPv6 behind a routing header; TCP/IPv6
/// behind a fragment header.
fn template(which: usize) -> Vec<u8> {
    let (v6, tcp) = (which % 2 == 1 || which >= 5, !matches!(which, 2 | 3 | 6));
    let protocol = if tcp { 6 } else { 17 };
    // (extension header type, bytes) in order, then the transport.
    let extensions: &[(u8, &[u8])] = match which {
        5 => &[
            (0, &[0; 8]),
            (60, &[0, 1, 1, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ],
        6 => &[(43, &[0, 0, 4, 0, 0, 0, 0, 0])],
        7 => &[(44, &[0, 0, 0, 1, 0, 0, 0, 7])],
        _ => &[],
    };
    let ip_options: &[u8] = if which == 4 { &[1, 1, 1, 0] } else { &[] };
    let tcp_options: &[u8] = if which == 4 {
        &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]
    } else {
        &[]
    };
    let mut frame = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    frame.extend_from_slice(if v6 { &[0x86, 0xdd] } else { &[0x08, 0x00] });
    if v6 {
        let first = extensions.first().map_or(protocol, |&(kind, _)| kind);
        frame.extend_from_slice(&[0x60, 0, 0, 0, 0, 0, first, 64]);
        frame.extend_from_slice(
            &"2001:db8::1"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        frame.extend_from_slice(
            &"2001:db8::2"
                .parse::<std::net::Ipv6Addr>()
                .unwrap()
                .octets(),
        );
        for (index, &(_, header)) in extensions.iter().enumerate() {
            let next = extensions
                .get(index + 1)
                .map_or(protocol, |&(kind, _)| kind);
            frame.push(next);
            frame.extend_from_slice(&header[1..]);
        }
    } else {
        let ihl = 5 + ip_options.len() as u8 / 4;
        frame.extend_from_slice(&[0x40 | ihl, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, protocol, 0, 0]);
        frame.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]);
        frame.extend_from_slice(ip_options);
    }
    let l4 = frame.len();
    let checksum_at = if tcp {
        let offset = (20 + tcp_options.len() as u8) / 4;
        frame.extend_from_slice(&[0x30, 0x39, 0, 80, 0xff, 0xff, 0xff, 0x00, 0, 0, 0, 1]);
        frame.extend_from_slice(&[
            offset << 4,
            0x80 | 0x10 | 0x08 | 0x01,
            0xff,
            0xff,
            0,
            0,
            0,
            0,
        ]);
        frame.extend_from_slice(tcp_options);
        16
    } else {
        frame.extend_from_slice(&[0x30, 0x39, 0, 53, 0, 0, 0, 0]);
        6
    };
    let gso = match (tcp, v6) {
        (true, false) => vnet::Gso::TcpV4,
        (true, true) => vnet::Gso::TcpV6,
        (false, _) => vnet::Gso::UdpL4,
    };
    let header = VnetHeaderRepr {
        needs_csum: true,
        data_valid: false,
        gso,
        gso_ecn: false,
        hdr_len: frame.len() as u16,
        gso_size: 100,
        csum_start: l4 as u16,
        csum_offset: checksum_at,
    };
    let mut packet = vec![0; HEADER_LEN];
    header.emit(&mut packet).unwrap();
    packet.extend_from_slice(&frame);
    packet
}
