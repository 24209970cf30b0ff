//! GSO segmentation (`stack::phy::vnet`) against random valid super-frames
//! as a kernel hands them to an AF_PACKET link: TCP over IPv4 (with IP
//! options) and IPv6 (behind hop-by-hop and destination options headers),
//! payloads up to 64 KiB, MSS 536..=9000, any mix of FIN, PSH, URG, ECE and
//! CWR, random TCP options, sequence numbers and IPv4 identifications near
//! their wrap; and UDP segmentation likewise. Each segment must be what
//! the sender's own segmentation would have put on the wire.

use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use stack::phy::vnet::{self, Accepted, Gso, VnetHeaderRepr};
use wire::checksum::{pseudo_header_v4, pseudo_header_v6, verifies};

const SRC_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const DST_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
const SRC_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
const DST_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xf, 0, 0, 0, 0, 2);

const FIN: u8 = 0x01;
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;
const CWR: u8 = 0x80;

/// A super-frame to build.
#[derive(Debug, Clone)]
struct Spec {
    v6: bool,
    /// IPv4 option bytes (a multiple of 4), or IPv6 extension headers
    /// (each complete, next header filled in when built).
    ip_options: Vec<u8>,
    extensions: Vec<Vec<u8>>,
    tcp: Option<Tcp>,
    payload: Vec<u8>,
    mss: u16,
    ident: u16,
    /// Whether the sender left the checksum to us (a checksum start and
    /// the pseudo-header sum in the field) or GRO merged it (neither).
    partial: bool,
}

#[derive(Debug, Clone)]
struct Tcp {
    seq: u32,
    ack: u32,
    flags: u8,
    window: u16,
    options: Vec<u8>,
}

/// Option TLVs (RFC 9293 §3.2, RFC 7323, RFC 2018, RFC 6994), packed in
/// order while they fit 40 bytes and padded with NOPs to a multiple of 4.
fn tcp_options() -> impl Strategy<Value = Vec<u8>> {
    let option = prop_oneof![
        Just(vec![1]),
        any::<u16>().prop_map(|mss| [vec![2, 4], mss.to_be_bytes().to_vec()].concat()),
        (0u8..=14).prop_map(|shift| vec![3, 3, shift]),
        Just(vec![4, 2]),
        (any::<u32>(), any::<u32>()).prop_map(|(value, echo)| {
            [
                vec![8, 10],
                value.to_be_bytes().to_vec(),
                echo.to_be_bytes().to_vec(),
            ]
            .concat()
        }),
        prop::collection::vec(any::<u8>(), 8..=24).prop_map(|blocks| {
            let blocks = &blocks[..blocks.len() / 8 * 8];
            [vec![5, 2 + blocks.len() as u8], blocks.to_vec()].concat()
        }),
        prop::collection::vec(any::<u8>(), 2..=8).prop_map(|data| [
            vec![254, 2 + data.len() as u8],
            data
        ]
        .concat()),
    ];
    prop::collection::vec(option, 0..8).prop_map(|options| {
        let mut bytes = Vec::new();
        for option in options {
            if bytes.len() + option.len() <= 40 {
                bytes.extend_from_slice(&option);
            }
        }
        while bytes.len() % 4 != 0 {
            bytes.push(1);
        }
        bytes
    })
}

/// IPv4 options: words of NOPs or router alerts (RFC 2113).
fn ipv4_options() -> impl Strategy<Value = Vec<u8>> {
    let word = prop_oneof![Just(vec![1, 1, 1, 1]), Just(vec![148, 4, 0, 0])];
    prop::collection::vec(word, 0..=10).prop_map(|words| words.concat())
}

/// IPv6 extension headers a receiver steps over: an optional hop-by-hop
/// options header, then optional destination options headers, each padded
/// with a PadN option (RFC 8200 §4.2) to 8..=32 bytes.
fn extensions() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let options_header = |kind: u8| {
        (0u8..=3).prop_map(move |units| {
            let len = (usize::from(units) + 1) * 8;
            let mut header = vec![kind, units, 1, (len - 4) as u8];
            header.resize(len, 0);
            header
        })
    };
    (
        proptest::option::of(options_header(0)),
        prop::collection::vec(options_header(60), 0..=2),
    )
        .prop_map(|(hop_by_hop, destination)| hop_by_hop.into_iter().chain(destination).collect())
}

/// A payload of `len` bytes from `seed` (cheap to make, unlike 64 KiB of
/// strategy values).
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

fn tcp_spec() -> impl Strategy<Value = Spec> {
    let tcp = (
        any::<u32>(),
        any::<u32>(),
        // Any of FIN, PSH, URG, ECE, CWR, always with ACK.
        any::<u8>().prop_map(|bits| (bits & 0xe9) | ACK),
        any::<u16>(),
        tcp_options(),
    )
        .prop_map(|(seq, ack, flags, window, options)| Tcp {
            seq,
            ack,
            flags,
            window,
            options,
        });
    (
        any::<bool>(),
        ipv4_options(),
        extensions(),
        tcp,
        (1usize..=65536, any::<u64>()),
        536u16..=9000,
        any::<u16>(),
        any::<bool>(),
    )
        .prop_map(
            |(v6, ip_options, extensions, tcp, (len, seed), mss, ident, partial)| {
                build_spec(
                    v6,
                    ip_options,
                    extensions,
                    Some(tcp),
                    len,
                    seed,
                    mss,
                    ident,
                    partial,
                )
            },
        )
}

fn udp_spec() -> impl Strategy<Value = Spec> {
    (
        any::<bool>(),
        ipv4_options(),
        extensions(),
        (1usize..=65536, any::<u64>()),
        8u16..=9000,
        any::<u16>(),
        any::<bool>(),
    )
        .prop_map(
            |(v6, ip_options, extensions, (len, seed), size, ident, partial)| {
                build_spec(
                    v6, ip_options, extensions, None, len, seed, size, ident, partial,
                )
            },
        )
}

/// A spec whose payload is cut to what the 16-bit IP length allows.
#[allow(clippy::too_many_arguments)]
fn build_spec(
    v6: bool,
    ip_options: Vec<u8>,
    extensions: Vec<Vec<u8>>,
    tcp: Option<Tcp>,
    len: usize,
    seed: u64,
    mss: u16,
    ident: u16,
    partial: bool,
) -> Spec {
    let mut spec = Spec {
        v6,
        ip_options: if v6 { Vec::new() } else { ip_options },
        extensions: if v6 { extensions } else { Vec::new() },
        tcp,
        payload: Vec::new(),
        mss,
        ident,
        partial,
    };
    let room = 65535 - (spec.ip_len_of_headers() + spec.transport_len());
    spec.payload = payload(len.min(room), seed);
    spec
}

impl Spec {
    /// Bytes from the IP header to the transport header, less the fixed
    /// IPv6 header (which its payload length does not count).
    fn ip_len_of_headers(&self) -> usize {
        if self.v6 {
            self.extensions.iter().map(Vec::len).sum()
        } else {
            20 + self.ip_options.len()
        }
    }

    fn transport_len(&self) -> usize {
        self.tcp.as_ref().map_or(8, |tcp| 20 + tcp.options.len())
    }

    /// Offset of the transport header in the frame.
    fn l4(&self) -> usize {
        14 + if self.v6 { 40 } else { 0 } + self.ip_len_of_headers()
    }

    fn headers(&self) -> usize {
        self.l4() + self.transport_len()
    }

    fn protocol(&self) -> u8 {
        if self.tcp.is_some() {
            6
        } else {
            17
        }
    }

    /// The transport's pseudo-header sum for `len` bytes of it.
    fn pseudo(&self, len: usize) -> u16 {
        if self.v6 {
            pseudo_header_v6(SRC_V6, DST_V6, self.protocol(), len as u32)
        } else {
            pseudo_header_v4(SRC_V4, DST_V4, self.protocol(), len as u16)
        }
    }

    /// The `virtio_net_hdr` and the super-frame, as a kernel hands them over.
    fn packet(&self) -> Vec<u8> {
        let header = VnetHeaderRepr {
            needs_csum: self.partial,
            data_valid: !self.partial,
            gso: match (&self.tcp, self.v6) {
                (Some(_), false) => Gso::TcpV4,
                (Some(_), true) => Gso::TcpV6,
                (None, _) => Gso::UdpL4,
            },
            gso_ecn: self.tcp.as_ref().is_some_and(|tcp| tcp.flags & CWR != 0),
            hdr_len: self.headers() as u16,
            gso_size: self.mss,
            csum_start: if self.partial { self.l4() as u16 } else { 0 },
            csum_offset: if self.tcp.is_some() { 16 } else { 6 },
        };
        let mut packet = vec![0u8; vnet::HEADER_LEN];
        header.emit(&mut packet).unwrap();
        packet.extend_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
        let ip_len = self.ip_len_of_headers() + self.transport_len() + self.payload.len();
        if self.v6 {
            packet.extend_from_slice(&[0x86, 0xdd, 0x60, 0, 0, 0]);
            packet.extend_from_slice(&(ip_len as u16).to_be_bytes());
            let first = self.extensions.first().map_or(self.protocol(), |h| h[0]);
            packet.extend_from_slice(&[first, 64]);
            packet.extend_from_slice(&SRC_V6.octets());
            packet.extend_from_slice(&DST_V6.octets());
            for (index, header) in self.extensions.iter().enumerate() {
                let next = self
                    .extensions
                    .get(index + 1)
                    .map_or(self.protocol(), |h| h[0]);
                packet.push(next);
                packet.extend_from_slice(&header[1..]);
            }
        } else {
            packet.extend_from_slice(&[0x08, 0x00]);
            let start = packet.len();
            let ihl = (20 + self.ip_options.len()) / 4;
            packet.extend_from_slice(&[0x40 | ihl as u8, 0]);
            packet.extend_from_slice(&(ip_len as u16).to_be_bytes());
            packet.extend_from_slice(&self.ident.to_be_bytes());
            packet.extend_from_slice(&[0x40, 0, 64, self.protocol(), 0, 0]);
            packet.extend_from_slice(&SRC_V4.octets());
            packet.extend_from_slice(&DST_V4.octets());
            packet.extend_from_slice(&self.ip_options);
            let sum = wire::checksum::checksum(&packet[start..]);
            packet[start + 10..start + 12].copy_from_slice(&sum.to_be_bytes());
        }
        let transport_len = self.transport_len() + self.payload.len();
        match &self.tcp {
            Some(tcp) => {
                packet.extend_from_slice(&[0x30, 0x39, 0x13, 0x89]);
                packet.extend_from_slice(&tcp.seq.to_be_bytes());
                packet.extend_from_slice(&tcp.ack.to_be_bytes());
                packet.push((((20 + tcp.options.len()) / 4) << 4) as u8);
                packet.push(tcp.flags);
                packet.extend_from_slice(&tcp.window.to_be_bytes());
                // CHECKSUM_PARTIAL: the field holds the pseudo-header sum.
                packet.extend_from_slice(&self.pseudo(transport_len).to_be_bytes());
                packet.extend_from_slice(&[0, 0]);
                packet.extend_from_slice(&tcp.options);
            }
            None => {
                packet.extend_from_slice(&[0x30, 0x39, 0x13, 0x89]);
                packet.extend_from_slice(&(transport_len as u16).to_be_bytes());
                packet.extend_from_slice(&self.pseudo(transport_len).to_be_bytes());
            }
        }
        packet.extend_from_slice(&self.payload);
        packet
    }

    /// The segments `vnet` makes of the super-frame, into a buffer just
    /// long enough for the longest one the MSS allows.
    fn segments(&self) -> Vec<Vec<u8>> {
        let mut packet = self.packet();
        let mut segmenter = match vnet::accept(&mut packet, true) {
            Accepted::Gso(segmenter) => segmenter,
            other => panic!("a valid super-frame refused: {other:?}"),
        };
        let frame = &packet[vnet::HEADER_LEN..];
        let mut buf = vec![0u8; self.headers() + usize::from(self.mss)];
        let mut segments = Vec::new();
        while let Some(result) = segmenter.next_into(frame, &mut buf) {
            let len = result.expect("a segment longer than the MSS allows");
            segments.push(buf[..len].to_vec());
        }
        segments
    }
}

fn be16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// What every segment of either transport must be: no longer than the MSS
/// allows, full-sized but for the last, headers copied but for the fields
/// that change, lengths and checksums right; and together, the payload.
fn check_segments(spec: &Spec, segments: &[Vec<u8>]) -> Result<(), TestCaseError> {
    let (headers, mss) = (spec.headers(), usize::from(spec.mss));
    let original = spec.packet();
    let original = &original[vnet::HEADER_LEN..];
    prop_assert_eq!(segments.len(), spec.payload.len().div_ceil(mss));
    let mut payload = Vec::new();
    for (index, segment) in segments.iter().enumerate() {
        let last = index + 1 == segments.len();
        prop_assert!(segment.len() <= headers + mss);
        prop_assert!(last || segment.len() == headers + mss, "full-sized");
        payload.extend_from_slice(&segment[headers..]);
        let l3 = 14;
        if spec.v6 {
            prop_assert_eq!(usize::from(be16(segment, l3 + 4)), segment.len() - l3 - 40);
            // Everything else of the IPv6 headers is copied.
            prop_assert_eq!(&segment[..l3 + 4], &original[..l3 + 4]);
            prop_assert_eq!(&segment[l3 + 6..spec.l4()], &original[l3 + 6..spec.l4()]);
        } else {
            prop_assert_eq!(usize::from(be16(segment, l3 + 2)), segment.len() - l3);
            prop_assert_eq!(be16(segment, l3 + 4), spec.ident.wrapping_add(index as u16));
            prop_assert!(verifies(0, &segment[l3..spec.l4()]), "IPv4 header checksum");
            prop_assert_eq!(&segment[l3 + 6..l3 + 10], &original[l3 + 6..l3 + 10]);
            prop_assert_eq!(&segment[l3 + 12..spec.l4()], &original[l3 + 12..spec.l4()]);
        }
        let transport = &segment[spec.l4()..];
        prop_assert!(
            verifies(spec.pseudo(transport.len()), transport),
            "transport checksum"
        );
    }
    prop_assert!(payload == spec.payload, "the payload, cut in order");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// TCP: sequence numbers advance by the payload before; FIN and PSH
    /// only on the last segment, CWR only on the first (RFC 3168 §6.1.2),
    /// the other flags and the options on all.
    #[test]
    fn tcp_super_frames_are_cut_into_the_segments_a_sender_would_send(spec in tcp_spec()) {
        let segments = spec.segments();
        check_segments(&spec, &segments)?;
        let tcp = spec.tcp.as_ref().unwrap();
        let l4 = spec.l4();
        let original = spec.packet();
        let original_tcp = &original[vnet::HEADER_LEN + l4..][..spec.transport_len()];
        let mut seq = tcp.seq;
        for (index, segment) in segments.iter().enumerate() {
            let (first, last) = (index == 0, index + 1 == segments.len());
            let header = &segment[l4..spec.headers()];
            prop_assert_eq!(be32(header, 4), seq);
            seq = seq.wrapping_add((segment.len() - spec.headers()) as u32);
            let flags = header[13];
            prop_assert_eq!(flags & (FIN | PSH), if last { tcp.flags & (FIN | PSH) } else { 0 });
            prop_assert_eq!(flags & CWR, if first { tcp.flags & CWR } else { 0 });
            prop_assert_eq!(flags & !(FIN | PSH | CWR), tcp.flags & !(FIN | PSH | CWR));
            // Ports, acknowledgment, data offset, window, urgent pointer
            // and options are copied.
            prop_assert_eq!(&header[..4], &original_tcp[..4]);
            prop_assert_eq!(&header[8..13], &original_tcp[8..13]);
            prop_assert_eq!(&header[14..16], &original_tcp[14..16]);
            prop_assert_eq!(&header[18..], &original_tcp[18..]);
        }
        prop_assert_eq!(seq, tcp.seq.wrapping_add(spec.payload.len() as u32));
    }

    /// UDP (USO): each datagram's length is its own.
    #[test]
    fn udp_super_frames_are_cut_into_datagrams(spec in udp_spec()) {
        let segments = spec.segments();
        check_segments(&spec, &segments)?;
        for segment in &segments {
            let datagram = &segment[spec.l4()..];
            prop_assert_eq!(usize::from(be16(datagram, 4)), datagram.len());
            prop_assert_ne!(be16(datagram, 6), 0, "a UDP checksum is always sent");
        }
    }
}
