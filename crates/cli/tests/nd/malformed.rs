//! Malformed input for the host, seeded and repeatable: crafted kinds,
//! one per flaw from Ethernet to TCP and ND, each with the drop reason
//! the host must count; frames of random bytes; and well-formed frames
//! with a few bytes mutated. Among the crafted kinds, the attacks of
//! issue 23: broadcast sources and destinations, MSS 0 and 1, SYN+FIN.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::frames::{
    checksum, dest_options, echo_body, ethernet, fragment_header, icmpv6, ipv4, ipv6, parse_mac,
    pseudo_header6, Ends, CRAFTED_ECHO_ID, DEST_OPTS, ETHERTYPE_ARP, ETHERTYPE_IPV4,
    ETHERTYPE_IPV6, ETHERTYPE_MARKER, ETHERTYPE_VLAN, FRAGMENT, HOP_BY_HOP, ICMPV4, ICMPV6,
    IPV4_MORE_FRAGMENTS, MUTATED_ECHO_ID, NO_NEXT, TCP, TCP_SYN, UDP,
};
use super::lab::{HOST4, HOST6, KERNEL4, KERNEL6, NOBODY_MAC};

/// The sequence number of every crafted SYN+FIN: no SYN-ACK may
/// acknowledge it.
pub const SYN_FIN_SEQ: u32 = 0x5f1f_0000;
/// FIN, to join [`TCP_SYN`].
const TCP_FIN: u8 = 0x01;

/// splitmix64: a seeded, repeatable stream of numbers.
pub struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// Builds frames from the kernel's MAC and addresses to the host's.
pub struct Forge {
    pub host_mac: [u8; 6],
    pub kernel_mac: [u8; 6],
    pub k6: Ipv6Addr,
    pub h6: Ipv6Addr,
    pub k4: Ipv4Addr,
    pub h4: Ipv4Addr,
}

impl Forge {
    pub fn new(ends: &Ends<'_>) -> Forge {
        Forge {
            host_mac: parse_mac(ends.host),
            kernel_mac: parse_mac(ends.kernel),
            k6: KERNEL6.parse().unwrap(),
            h6: HOST6.parse().unwrap(),
            k4: KERNEL4.parse().unwrap(),
            h4: HOST4.parse().unwrap(),
        }
    }

    fn frame(&self, ethertype: u16, payload: &[u8]) -> Vec<u8> {
        ethernet(self.host_mac, self.kernel_mac, ethertype, payload)
    }

    /// An IPv6 packet kernel → host in a frame.
    fn v6(&self, next_header: u8, payload: &[u8]) -> Vec<u8> {
        self.frame(
            ETHERTYPE_IPV6,
            &ipv6(self.k6, self.h6, next_header, 64, payload),
        )
    }

    /// An IPv4 packet kernel → host in a frame.
    fn v4(&self, protocol: u8, fragment: u16, payload: &[u8]) -> Vec<u8> {
        self.v4_ident(protocol, 0x5e5e, fragment, payload)
    }

    /// The directed broadcast of the host's /24 (192.0.2.255).
    pub fn broadcast4(&self) -> Ipv4Addr {
        let o = self.h4.octets();
        Ipv4Addr::new(o[0], o[1], o[2], 255)
    }

    /// An IPv4 packet from `src` to `dst` in a unicast frame to the host.
    fn v4_between(&self, src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, payload: &[u8]) -> Vec<u8> {
        self.frame(
            ETHERTYPE_IPV4,
            &ipv4(src, dst, protocol, 0x5e5f, 0, payload),
        )
    }

    /// A UDP datagram from `src` to `dst` (IPv4), checksum filled.
    fn udp4(&self, src: Ipv4Addr, dst: Ipv4Addr, dst_port: u16, payload: &[u8]) -> Vec<u8> {
        let mut datagram = Vec::new();
        datagram.extend_from_slice(&40_000u16.to_be_bytes());
        datagram.extend_from_slice(&dst_port.to_be_bytes());
        datagram.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        datagram.extend_from_slice(&[0, 0]);
        datagram.extend_from_slice(payload);
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&src.octets());
        pseudo.extend_from_slice(&dst.octets());
        pseudo.extend_from_slice(&[0, UDP]);
        pseudo.extend_from_slice(&(datagram.len() as u16).to_be_bytes());
        let sum = match checksum(&[&pseudo, &datagram]) {
            0 => 0xffff,
            sum => sum,
        };
        datagram[6..8].copy_from_slice(&sum.to_be_bytes());
        datagram
    }

    /// An IPv4 packet with Identification `ident`: fragments of distinct
    /// datagrams need distinct ones.
    fn v4_ident(&self, protocol: u8, ident: u16, fragment: u16, payload: &[u8]) -> Vec<u8> {
        self.frame(
            ETHERTYPE_IPV4,
            &ipv4(self.k4, self.h4, protocol, ident, fragment, payload),
        )
    }

    fn echo6(&self, seq: u16) -> Vec<u8> {
        self.echo6_with(CRAFTED_ECHO_ID, seq)
    }

    fn echo6_with(&self, ident: u16, seq: u16) -> Vec<u8> {
        icmpv6(self.k6, self.h6, 128, 0, &echo_body(ident, seq))
    }

    fn echo4(&self, seq: u16) -> Vec<u8> {
        self.echo4_with(CRAFTED_ECHO_ID, seq)
    }

    fn echo4_with(&self, ident: u16, seq: u16) -> Vec<u8> {
        let mut message = vec![8, 0, 0, 0];
        message.extend_from_slice(&echo_body(ident, seq));
        let sum = checksum(&[&message]);
        message[2..4].copy_from_slice(&sum.to_be_bytes());
        message
    }

    /// A UDP datagram with its checksum over the IPv6 (`v6`) or IPv4
    /// pseudo-header (RFC 768, RFC 8200 §8.1).
    fn udp(&self, v6: bool, dst_port: u16, payload: &[u8]) -> Vec<u8> {
        let mut datagram = Vec::new();
        datagram.extend_from_slice(&40_000u16.to_be_bytes());
        datagram.extend_from_slice(&dst_port.to_be_bytes());
        datagram.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        datagram.extend_from_slice(&[0, 0]);
        datagram.extend_from_slice(payload);
        let sum = self.transport_checksum(v6, UDP, &datagram);
        datagram[6..8].copy_from_slice(&sum.to_be_bytes());
        datagram
    }

    /// A TCP segment with `options` (padded to 4 bytes with End of
    /// Option List) and its checksum (RFC 9293 §3.1).
    fn tcp(&self, v6: bool, dst_port: u16, flags: u8, options: &[u8], payload: &[u8]) -> Vec<u8> {
        self.tcp_seq(v6, dst_port, flags, options, payload, 0x0102_0304)
    }

    /// [`tcp`](Self::tcp) with sequence number `seq`.
    fn tcp_seq(
        &self,
        v6: bool,
        dst_port: u16,
        flags: u8,
        options: &[u8],
        payload: &[u8],
        seq: u32,
    ) -> Vec<u8> {
        let mut options = options.to_vec();
        options.resize(options.len().div_ceil(4) * 4, 0);
        let offset = ((20 + options.len()) / 4) as u8;
        let mut segment = Vec::new();
        segment.extend_from_slice(&41_000u16.to_be_bytes());
        segment.extend_from_slice(&dst_port.to_be_bytes());
        segment.extend_from_slice(&seq.to_be_bytes());
        segment.extend_from_slice(&0u32.to_be_bytes());
        segment.extend_from_slice(&[offset << 4, flags]);
        segment.extend_from_slice(&65_535u16.to_be_bytes());
        segment.extend_from_slice(&[0, 0, 0, 0]);
        segment.extend_from_slice(&options);
        segment.extend_from_slice(payload);
        let sum = self.transport_checksum(v6, TCP, &segment);
        segment[16..18].copy_from_slice(&sum.to_be_bytes());
        segment
    }

    fn transport_checksum(&self, v6: bool, protocol: u8, upper: &[u8]) -> u16 {
        if v6 {
            checksum(&[
                &pseudo_header6(self.k6, self.h6, protocol, upper.len()),
                upper,
            ])
        } else {
            let mut pseudo = Vec::new();
            pseudo.extend_from_slice(&self.k4.octets());
            pseudo.extend_from_slice(&self.h4.octets());
            pseudo.extend_from_slice(&[0, protocol]);
            pseudo.extend_from_slice(&(upper.len() as u16).to_be_bytes());
            let sum = checksum(&[&pseudo, upper]);
            if protocol == UDP && sum == 0 {
                0xffff
            } else {
                sum
            }
        }
    }

    /// An ND message kernel → host with `hop_limit`, to `dst` (the
    /// host's MAC unless multicast).
    fn nd(&self, dst: Ipv6Addr, kind: u8, code: u8, hop_limit: u8, body: &[u8]) -> Vec<u8> {
        let message = icmpv6(self.k6, dst, kind, code, body);
        let dst_mac = if dst.is_multicast() {
            let o = dst.octets();
            [0x33, 0x33, o[12], o[13], o[14], o[15]]
        } else {
            self.host_mac
        };
        ethernet(
            dst_mac,
            self.kernel_mac,
            ETHERTYPE_IPV6,
            &ipv6(self.k6, dst, ICMPV6, hop_limit, &message),
        )
    }
}

/// One kind of malformed frame: its name, the drop reason the host must
/// count for each (when there is a single right one), and how to make
/// the i-th.
pub struct Malformed {
    pub name: &'static str,
    pub reason: Option<&'static str>,
    pub make: fn(&Forge, &mut Rng, u32) -> Vec<Vec<u8>>,
}

/// The kinds of malformed input: every layer from Ethernet to TCP and ND.
/// Each `make` returns the frames of one instance (two for an overlap).
pub fn malformed_kinds() -> Vec<Malformed> {
    vec![
        Malformed {
            // Shorter than an Ethernet header: the kernel refuses to send
            // it (AF_PACKET needs the whole link header), so nothing
            // reaches the host; kept to show the path is covered.
            name: "runt Ethernet frame",
            reason: None,
            make: |f, rng, _| vec![f.frame(ETHERTYPE_IPV6, &[])[..6 + rng.below(7)].to_vec()],
        },
        Malformed {
            name: "Ethernet header only (IPv6)",
            reason: Some("ipv6_truncated"),
            make: |f, _, _| vec![f.frame(ETHERTYPE_IPV6, &[])],
        },
        Malformed {
            name: "Ethernet header only (IPv4)",
            reason: Some("ipv4_malformed"),
            make: |f, _, _| vec![f.frame(ETHERTYPE_IPV4, &[])],
        },
        Malformed {
            name: "VLAN-tagged frame",
            reason: Some("ethernet_vlan_unsupported"),
            make: |f, _, i| {
                let mut tagged = vec![0, 7];
                tagged.extend_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
                tagged.extend_from_slice(&ipv6(f.k6, f.h6, ICMPV6, 64, &f.echo6(i as u16)));
                vec![f.frame(ETHERTYPE_VLAN, &tagged)]
            },
        },
        Malformed {
            name: "unknown EtherType",
            reason: Some("ethertype_unsupported"),
            make: |f, rng, _| vec![f.frame(ETHERTYPE_MARKER, &rng.bytes(46))],
        },
        Malformed {
            name: "IPv6 header cut short",
            reason: Some("ipv6_truncated"),
            make: |f, rng, i| {
                let packet = ipv6(f.k6, f.h6, ICMPV6, 64, &f.echo6(i as u16));
                vec![f.frame(ETHERTYPE_IPV6, &packet[..1 + rng.below(39)])]
            },
        },
        Malformed {
            name: "IPv6 payload length beyond the frame",
            reason: Some("ipv6_truncated"),
            make: |f, rng, i| {
                let mut packet = ipv6(f.k6, f.h6, ICMPV6, 64, &f.echo6(i as u16));
                let claimed = 100 + rng.below(60_000) as u16;
                packet[4..6].copy_from_slice(&claimed.to_be_bytes());
                vec![f.frame(ETHERTYPE_IPV6, &packet)]
            },
        },
        Malformed {
            name: "IPv4 in an IPv6 EtherType",
            reason: Some("ip_bad_version"),
            make: |f, _, i| {
                let packet = ipv4(f.k4, f.h4, ICMPV4, 1, 0, &f.echo4(i as u16));
                vec![f.frame(ETHERTYPE_IPV6, &packet)]
            },
        },
        Malformed {
            name: "IPv6 in an IPv4 EtherType",
            reason: Some("ip_bad_version"),
            make: |f, _, i| {
                let packet = ipv6(f.k6, f.h6, ICMPV6, 64, &f.echo6(i as u16));
                vec![f.frame(ETHERTYPE_IPV4, &packet)]
            },
        },
        Malformed {
            name: "IPv4 header checksum wrong",
            reason: Some("ipv4_bad_checksum"),
            make: |f, rng, i| {
                let mut packet = ipv4(f.k4, f.h4, ICMPV4, 1, 0, &f.echo4(i as u16));
                packet[10] ^= 1 + rng.below(255) as u8;
                vec![f.frame(ETHERTYPE_IPV4, &packet)]
            },
        },
        Malformed {
            name: "IPv4 header length below 20",
            reason: Some("ipv4_malformed"),
            make: |f, rng, i| {
                let mut packet = ipv4(f.k4, f.h4, ICMPV4, 1, 0, &f.echo4(i as u16));
                packet[0] = 0x40 | rng.below(5) as u8;
                vec![f.frame(ETHERTYPE_IPV4, &packet)]
            },
        },
        Malformed {
            name: "IPv4 total length beyond the frame",
            reason: None,
            make: |f, rng, i| {
                let mut packet = ipv4(f.k4, f.h4, ICMPV4, 1, 0, &f.echo4(i as u16));
                let claimed = 200 + rng.below(60_000) as u16;
                packet[2..4].copy_from_slice(&claimed.to_be_bytes());
                packet[10..12].copy_from_slice(&[0, 0]);
                let sum = checksum(&[&packet[..20]]);
                packet[10..12].copy_from_slice(&sum.to_be_bytes());
                vec![f.frame(ETHERTYPE_IPV4, &packet)]
            },
        },
        Malformed {
            name: "IPv4 unknown protocol",
            reason: Some("ipv4_unknown_protocol"),
            make: |f, rng, _| vec![f.v4(200 + rng.below(50) as u8, 0, &rng.bytes(32))],
        },
        Malformed {
            name: "Hop-by-Hop header not first",
            reason: Some("ipv6_hop_by_hop_not_first"),
            make: |f, _, i| {
                let mut payload = dest_options(HOP_BY_HOP, &[]);
                payload.extend_from_slice(&dest_options(ICMPV6, &[]));
                payload.extend_from_slice(&f.echo6(i as u16));
                vec![f.v6(DEST_OPTS, &payload)]
            },
        },
        Malformed {
            name: "extension header longer than the packet",
            reason: Some("ipv6_truncated"),
            make: |f, rng, _| {
                let mut header = dest_options(ICMPV6, &[]);
                header[1] = 10 + rng.below(200) as u8;
                vec![f.v6(DEST_OPTS, &header)]
            },
        },
        Malformed {
            name: "extension header chain too long",
            reason: Some("ipv6_header_chain_too_long"),
            make: |f, rng, _| {
                let headers = 20 + rng.below(40);
                let mut payload = Vec::new();
                for k in 0..headers {
                    let next = if k + 1 == headers { NO_NEXT } else { DEST_OPTS };
                    payload.extend_from_slice(&dest_options(next, &[]));
                }
                vec![f.v6(DEST_OPTS, &payload)]
            },
        },
        Malformed {
            name: "unknown option, discard and report",
            reason: Some("ipv6_option_discard"),
            make: |f, rng, i| {
                // Type 10xxxxxx: discard, Parameter Problem (RFC 8200 §4.2).
                let kind = 0x80 | (0x10 + rng.below(0x2f) as u8);
                let mut payload = dest_options(ICMPV6, &[kind, 2, 0, 0]);
                payload.extend_from_slice(&f.echo6(i as u16));
                vec![f.v6(DEST_OPTS, &payload)]
            },
        },
        Malformed {
            name: "option running past its header",
            reason: Some("ipv6_bad_option"),
            make: |f, _, i| {
                let mut header = dest_options(ICMPV6, &[]);
                header[2..4].copy_from_slice(&[1, 200]);
                header.extend_from_slice(&f.echo6(i as u16));
                vec![f.v6(DEST_OPTS, &header)]
            },
        },
        Malformed {
            name: "IPv6 unknown next header",
            reason: Some("ipv6_unknown_next_header"),
            make: |f, rng, _| vec![f.v6(200 + rng.below(50) as u8, &rng.bytes(32))],
        },
        Malformed {
            name: "IPv6 overlapping fragments",
            reason: Some("reassembly_overlap"),
            make: |f, rng, i| {
                let ident = 0x5e00_0000 | i;
                let data = rng.bytes(32);
                let mut first = fragment_header(ICMPV6, 0, true, ident);
                first.extend_from_slice(&data[..24]);
                let mut second = fragment_header(ICMPV6, 16, false, ident);
                second.extend_from_slice(&data[..16]);
                vec![f.v6(FRAGMENT, &first), f.v6(FRAGMENT, &second)]
            },
        },
        Malformed {
            name: "IPv6 fragment beyond 65 535 bytes",
            reason: Some("ipv6_fragment_too_long"),
            make: |f, rng, i| {
                let mut fragment = fragment_header(ICMPV6, 65_528, false, 0x5f00_0000 | i);
                fragment.extend_from_slice(&rng.bytes(16));
                vec![f.v6(FRAGMENT, &fragment)]
            },
        },
        Malformed {
            name: "IPv6 fragment length not a multiple of 8",
            reason: Some("ipv6_fragment_bad_length"),
            make: |f, rng, i| {
                let mut fragment = fragment_header(ICMPV6, 0, true, 0x6000_0000 | i);
                fragment.extend_from_slice(&f.echo6(i as u16)[..8]);
                fragment.extend_from_slice(&rng.bytes(5));
                vec![f.v6(FRAGMENT, &fragment)]
            },
        },
        Malformed {
            name: "IPv4 overlapping fragments",
            reason: Some("reassembly_overlap"),
            make: |f, rng, i| {
                let data = rng.bytes(32);
                let echo = f.echo4(i as u16);
                let mut first = echo[..8].to_vec();
                first.extend_from_slice(&data[..16]);
                let ident = 0x7000 + i as u16;
                vec![
                    f.v4_ident(ICMPV4, ident, IPV4_MORE_FRAGMENTS, &first),
                    f.v4_ident(ICMPV4, ident, 2, &data[..16]),
                ]
            },
        },
        Malformed {
            name: "IPv4 fragment beyond 65 535 bytes",
            reason: Some("ipv4_fragment_too_long"),
            make: |f, rng, i| vec![f.v4_ident(ICMPV4, 0x7100 + i as u16, 8189, &rng.bytes(48))],
        },
        Malformed {
            name: "TCP checksum wrong",
            reason: Some("tcp_bad_checksum"),
            make: |f, _, i| {
                let mut segment = f.tcp(i.is_multiple_of(2), 7, TCP_SYN, &[], &[]);
                segment[17] ^= 0x5a;
                vec![if i.is_multiple_of(2) {
                    f.v6(TCP, &segment)
                } else {
                    f.v4(TCP, 0, &segment)
                }]
            },
        },
        Malformed {
            name: "TCP data offset below 5",
            reason: Some("tcp_bad_header_length"),
            make: |f, rng, i| {
                let v6 = i.is_multiple_of(2);
                let mut segment = f.tcp(v6, 7, TCP_SYN, &[], &[]);
                segment[12] = (rng.below(5) as u8) << 4;
                segment[16..18].copy_from_slice(&[0, 0]);
                let sum = f.transport_checksum(v6, TCP, &segment);
                segment[16..18].copy_from_slice(&sum.to_be_bytes());
                vec![if v6 {
                    f.v6(TCP, &segment)
                } else {
                    f.v4(TCP, 0, &segment)
                }]
            },
        },
        Malformed {
            // Options that lie about their lengths (MSS of length 1, a
            // kind whose length runs past the header): RFC 9293 §3.1
            // leaves the segment to be dropped or the options ignored.
            name: "TCP SYN with garbage options",
            reason: None,
            make: |f, rng, i| {
                let mut options = vec![2, 1, 255, 40, 3];
                options.extend_from_slice(&rng.bytes(11));
                let segment = f.tcp(i.is_multiple_of(2), 7, TCP_SYN, &options, &[]);
                vec![if i.is_multiple_of(2) {
                    f.v6(TCP, &segment)
                } else {
                    f.v4(TCP, 0, &segment)
                }]
            },
        },
        Malformed {
            // RFC 1122 §3.2.1.3: a datagram from a broadcast address is
            // discarded (answering it would answer the whole subnet).
            name: "echo request from the subnet's directed broadcast",
            reason: Some("ipv4_broadcast_source"),
            make: |f, _, i| vec![f.v4_between(f.broadcast4(), f.h4, ICMPV4, &f.echo4(i as u16))],
        },
        Malformed {
            name: "UDP echo from a broadcast source",
            reason: Some("ipv4_broadcast_source"),
            make: |f, rng, i| {
                let src = if i.is_multiple_of(2) {
                    f.broadcast4()
                } else {
                    Ipv4Addr::BROADCAST
                };
                vec![f.v4_between(src, f.h4, UDP, &f.udp4(src, f.h4, 7, &rng.bytes(16)))]
            },
        },
        Malformed {
            // RFC 1122 §3.2.2: no ICMP error about a datagram to a
            // broadcast address, in a unicast frame too.
            name: "UDP to the directed broadcast, closed port, unicast frame",
            reason: Some("udp_no_socket"),
            make: |f, rng, _| {
                let (src, dst) = (f.k4, f.broadcast4());
                let port = 40_000 + rng.below(1000) as u16;
                vec![f.v4_between(src, dst, UDP, &f.udp4(src, dst, port, &rng.bytes(16)))]
            },
        },
        Malformed {
            // CVE-2019-11479's class: the host raises the MSS to its floor
            // (counted as tcp_mss_clamped), it does not send 1-byte
            // segments.
            name: "TCP SYN with MSS 0 or 1",
            reason: None,
            make: |f, _, i| {
                let v6 = i % 4 < 2;
                let segment = f.tcp(v6, 9, TCP_SYN, &[2, 4, 0, (i % 2) as u8], &[]);
                vec![if v6 {
                    f.v6(TCP, &segment)
                } else {
                    f.v4(TCP, 0, &segment)
                }]
            },
        },
        Malformed {
            name: "TCP SYN+FIN to a listener",
            reason: Some("tcp_syn_fin"),
            make: |f, _, i| {
                let v6 = i.is_multiple_of(2);
                let flags = TCP_SYN | TCP_FIN;
                let segment = f.tcp_seq(v6, 7, flags, &[2, 4, 5, 0xb4], &[], SYN_FIN_SEQ);
                vec![if v6 {
                    f.v6(TCP, &segment)
                } else {
                    f.v4(TCP, 0, &segment)
                }]
            },
        },
        Malformed {
            name: "UDP length beyond the packet",
            reason: Some("udp_bad_length"),
            make: |f, rng, i| {
                let v6 = i.is_multiple_of(2);
                let mut datagram = f.udp(v6, 7, &rng.bytes(12));
                datagram[4..6].copy_from_slice(&(40 + rng.below(1000) as u16).to_be_bytes());
                vec![if v6 {
                    f.v6(UDP, &datagram)
                } else {
                    f.v4(UDP, 0, &datagram)
                }]
            },
        },
        Malformed {
            name: "UDP checksum wrong",
            reason: Some("udp_bad_checksum"),
            make: |f, rng, i| {
                let v6 = i.is_multiple_of(2);
                let mut datagram = f.udp(v6, 7, &rng.bytes(12));
                datagram[7] ^= 0x33;
                vec![if v6 {
                    f.v6(UDP, &datagram)
                } else {
                    f.v4(UDP, 0, &datagram)
                }]
            },
        },
        Malformed {
            // RFC 8200 §8.1: an IPv6 UDP checksum of zero is invalid.
            name: "UDP over IPv6 without checksum",
            reason: Some("udp_zero_checksum_ipv6"),
            make: |f, rng, _| {
                let mut datagram = f.udp(true, 7, &rng.bytes(12));
                datagram[6..8].copy_from_slice(&[0, 0]);
                vec![f.v6(UDP, &datagram)]
            },
        },
        Malformed {
            name: "ICMPv6 checksum wrong",
            reason: Some("icmpv6_bad_checksum"),
            make: |f, _, i| {
                let mut message = f.echo6(i as u16);
                message[3] ^= 0x77;
                vec![f.v6(ICMPV6, &message)]
            },
        },
        Malformed {
            name: "ICMPv4 checksum wrong",
            reason: Some("icmpv4_bad_checksum"),
            make: |f, _, i| {
                let mut message = f.echo4(i as u16);
                message[3] ^= 0x77;
                vec![f.v4(ICMPV4, 0, &message)]
            },
        },
        Malformed {
            // RFC 4861 §4.6: "Nodes MUST silently discard an ND packet
            // that contains an option with length zero." The SLLA names a
            // MAC nobody has: accepted, it would poison the cache.
            name: "NS with an option of length zero",
            reason: Some("icmpv6_malformed"),
            make: |f, _, _| {
                let mut body = vec![0; 4];
                body.extend_from_slice(&f.h6.octets());
                body.extend_from_slice(&[1, 1]);
                body.extend_from_slice(&parse_mac(NOBODY_MAC));
                body.extend_from_slice(&[14, 0, 0, 0, 0, 0, 0, 0]);
                vec![f.nd(f.h6, 135, 0, 255, &body)]
            },
        },
        Malformed {
            name: "NS with an option past the message",
            reason: Some("icmpv6_malformed"),
            make: |f, _, _| {
                let mut body = vec![0; 4];
                body.extend_from_slice(&f.h6.octets());
                body.extend_from_slice(&[1, 3]);
                body.extend_from_slice(&parse_mac(NOBODY_MAC));
                vec![f.nd(f.h6, 135, 0, 255, &body)]
            },
        },
        Malformed {
            name: "NS with a nonzero code",
            reason: Some("icmpv6_malformed"),
            make: |f, rng, _| {
                let mut body = vec![0; 4];
                body.extend_from_slice(&f.h6.octets());
                body.extend_from_slice(&[1, 1]);
                body.extend_from_slice(&parse_mac(NOBODY_MAC));
                vec![f.nd(f.h6, 135, 1 + rng.below(255) as u8, 255, &body)]
            },
        },
        Malformed {
            // RFC 4861 §7.1.1: hop limit 255, or it may come from off-link.
            name: "NS with hop limit below 255",
            reason: Some("ndisc_bad_hop_limit"),
            make: |f, rng, _| {
                let mut body = vec![0; 4];
                body.extend_from_slice(&f.h6.octets());
                body.extend_from_slice(&[1, 1]);
                body.extend_from_slice(&parse_mac(NOBODY_MAC));
                vec![f.nd(f.h6, 135, 0, 1 + rng.below(254) as u8, &body)]
            },
        },
        Malformed {
            // RFC 4861 §7.1.2: a solicited NA is never multicast. Its
            // TLLA claims the kernel's address for a MAC nobody has.
            name: "multicast NA with the solicited flag",
            reason: Some("ndisc_na_invalid"),
            make: |f, _, _| {
                let mut body = vec![0x60, 0, 0, 0];
                body.extend_from_slice(&f.k6.octets());
                body.extend_from_slice(&[2, 1]);
                body.extend_from_slice(&parse_mac(NOBODY_MAC));
                vec![f.nd("ff02::1".parse().unwrap(), 136, 0, 255, &body)]
            },
        },
        Malformed {
            name: "ARP cut short",
            reason: Some("arp_malformed"),
            make: |f, rng, _| {
                let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 1];
                arp.extend_from_slice(&parse_mac(NOBODY_MAC));
                arp.truncate(1 + rng.below(arp.len()));
                vec![f.frame(ETHERTYPE_ARP, &arp)]
            },
        },
    ]
}

/// Frames of random bytes: a random EtherType (or IPv6/IPv4/ARP) and a
/// random payload, or a well-formed IPv6/IPv4 header with a random next
/// protocol and payload, so the parsers above the header see garbage.
pub fn random_frame(f: &Forge, rng: &mut Rng) -> Vec<u8> {
    let len = rng.below(1500);
    match rng.below(4) {
        0 => {
            let ethertype = [
                ETHERTYPE_IPV6,
                ETHERTYPE_IPV4,
                ETHERTYPE_ARP,
                rng.next() as u16,
            ][rng.below(4)];
            f.frame(ethertype, &rng.bytes(len))
        }
        1 => {
            let next = [HOP_BY_HOP, DEST_OPTS, FRAGMENT, 43, ICMPV6, TCP, UDP][rng.below(7)];
            f.v6(next, &rng.bytes(len.min(1400)))
        }
        2 => {
            let protocol = [ICMPV4, TCP, UDP, rng.next() as u8][rng.below(4)];
            f.v4(
                protocol,
                rng.next() as u16 & 0x3fff,
                &rng.bytes(len.min(1400)),
            )
        }
        _ => {
            // Broadcast or multicast destination: the checks before the
            // unicast-to-us ones.
            let mut frame = f.frame(ETHERTYPE_IPV6, &rng.bytes(len));
            frame[..6].copy_from_slice(if rng.below(2) == 0 {
                &[0xff; 6]
            } else {
                &[0x33, 0x33, 0, 0, 0, 1]
            });
            frame
        }
    }
}

/// A well-formed frame (echo, UDP echo, TCP SYN, each family) with one to
/// four random bytes replaced after the MAC addresses.
pub fn mutated_frame(f: &Forge, rng: &mut Rng, i: u32) -> Vec<u8> {
    let v6 = i.is_multiple_of(2);
    let mut frame = match (rng.below(3), v6) {
        (0, true) => f.v6(ICMPV6, &f.echo6_with(MUTATED_ECHO_ID, i as u16)),
        (0, false) => f.v4(ICMPV4, 0, &f.echo4_with(MUTATED_ECHO_ID, i as u16)),
        (1, true) => f.v6(UDP, &f.udp(true, 7, &rng.bytes(20))),
        (1, false) => f.v4(UDP, 0, &f.udp(false, 7, &rng.bytes(20))),
        (_, true) => f.v6(TCP, &f.tcp(true, 9, TCP_SYN, &[2, 4, 5, 0xb4], &[])),
        (_, false) => f.v4(TCP, 0, &f.tcp(false, 9, TCP_SYN, &[2, 4, 5, 0xb4], &[])),
    };
    for _ in 0..1 + rng.below(4) {
        let at = 12 + rng.below(frame.len() - 12);
        frame[at] = rng.next() as u8;
    }
    frame
}
