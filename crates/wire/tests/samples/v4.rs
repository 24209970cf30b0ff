//! Link-layer and IPv4 samples: ARP, 802.1Q, IPv4 with options, ICMPv4, UDP.

use wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetAddress, VlanTag};
use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4Packet, Icmpv4Repr, Icmpv4TimeExceeded};
use wire::igmp::{IgmpPacket, IgmpRepr, IgmpVersion};
use wire::ipv4::{Ipv4Option, Ipv4Options};
use wire::trace_option::TraceOption;
use wire::{ChecksumMode, IpProtocol};

use super::*;

fn arp(operation: ArpOperation) -> Vec<u8> {
    let repr = ArpRepr::EthernetIpv4 {
        operation,
        source_hardware_addr: MAC_A,
        source_protocol_addr: V4_A,
        target_hardware_addr: match operation {
            ArpOperation::Reply => MAC_B,
            _ => EthernetAddress::default(),
        },
        target_protocol_addr: V4_B,
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]))
        .expect("arp emit");
    ethernet(EtherType::Arp, None, &buf)
}

fn icmpv4(repr: Icmpv4Repr) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(
        &mut Icmpv4Packet::new_unchecked(&mut buf[..]),
        ChecksumMode::Full,
    )
    .expect("icmpv4 emit");
    ethernet(EtherType::Ipv4, None, &ipv4(IpProtocol::Icmp, &buf))
}

/// An IGMPv2 message in IPv4 with the Router Alert option (RFC 2236 §2).
fn igmp(repr: IgmpRepr) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(
        &mut IgmpPacket::new_unchecked(&mut buf[..]),
        ChecksumMode::Full,
    )
    .expect("igmp emit");
    let alert = Ipv4Options::from_options(&[Ipv4Option::Unknown {
        kind: 148,
        data: &[0, 0],
    }])
    .expect("router alert");
    ethernet(
        EtherType::Ipv4,
        None,
        &ipv4_with(IpProtocol::Igmp, alert, &buf),
    )
}

fn udp_v4(payload: &[u8]) -> Vec<u8> {
    let (src, dst) = v4_pair();
    ipv4(IpProtocol::Udp, &udp(src, dst, payload))
}

pub fn samples() -> Vec<Sample> {
    // The invoking packet quoted by ICMP errors: its header and 8 bytes.
    let invoking = udp_v4(b"a datagram that caused an error");
    let quoted = &invoking[..28];
    vec![
        Sample {
            name: "arp-request",
            frame: arp(ArpOperation::Request),
            protocols: &["arp"],
            decoded_text: &["Opcode: request (1)"],
            has_checksum: false,
        },
        Sample {
            name: "arp-reply",
            frame: arp(ArpOperation::Reply),
            protocols: &["arp"],
            decoded_text: &["Opcode: reply (2)"],
            has_checksum: false,
        },
        Sample {
            name: "ipv4-udp",
            frame: ethernet(EtherType::Ipv4, None, &udp_v4(b"hello over IPv4")),
            protocols: &["ip", "udp"],
            decoded_text: &["Destination Port: 5001"],
            has_checksum: true,
        },
        Sample {
            name: "vlan-ipv4-udp",
            frame: ethernet(
                EtherType::Ipv4,
                Some(VlanTag {
                    pcp: 5,
                    dei: false,
                    vid: 42,
                }),
                &udp_v4(b"tagged"),
            ),
            protocols: &["vlan", "ip", "udp"],
            decoded_text: &["ID: 42"],
            has_checksum: true,
        },
        Sample {
            name: "ipv4-trace-option-udp",
            frame: {
                let (src, dst) = v4_pair();
                let options = Ipv4Options::with_trace(TraceOption { flow: 0x0102_0304 });
                let packet = ipv4_with(IpProtocol::Udp, options, &udp(src, dst, b"traced"));
                ethernet(EtherType::Ipv4, None, &packet)
            },
            protocols: &["ip", "udp"],
            decoded_text: &["Options: (8 bytes)"],
            has_checksum: true,
        },
        Sample {
            name: "icmpv4-echo-request",
            frame: icmpv4(Icmpv4Repr::EchoRequest {
                ident: 0x4242,
                seq_no: 1,
                data: b"ping payload",
            }),
            protocols: &["ip", "icmp"],
            decoded_text: &["Echo (ping) request"],
            has_checksum: true,
        },
        Sample {
            name: "icmpv4-echo-reply",
            frame: icmpv4(Icmpv4Repr::EchoReply {
                ident: 0x4242,
                seq_no: 1,
                data: b"ping payload",
            }),
            protocols: &["ip", "icmp"],
            decoded_text: &["Echo (ping) reply"],
            has_checksum: true,
        },
        Sample {
            name: "icmpv4-port-unreachable",
            frame: icmpv4(Icmpv4Repr::DstUnreachable {
                reason: Icmpv4DstUnreachable::PortUnreachable,
                next_hop_mtu: 0,
                invoking: quoted,
            }),
            protocols: &["ip", "icmp"],
            decoded_text: &["Destination unreachable", "Port unreachable"],
            has_checksum: true,
        },
        Sample {
            name: "icmpv4-fragmentation-needed",
            frame: icmpv4(Icmpv4Repr::DstUnreachable {
                reason: Icmpv4DstUnreachable::FragRequired,
                next_hop_mtu: 1400,
                invoking: quoted,
            }),
            protocols: &["ip", "icmp"],
            decoded_text: &["Fragmentation needed", "MTU of next hop: 1400"],
            has_checksum: true,
        },
        Sample {
            name: "icmpv4-time-exceeded",
            frame: icmpv4(Icmpv4Repr::TimeExceeded {
                reason: Icmpv4TimeExceeded::TtlExpired,
                invoking: quoted,
            }),
            protocols: &["ip", "icmp"],
            decoded_text: &["Time-to-live exceeded"],
            has_checksum: true,
        },
        Sample {
            name: "icmpv4-parameter-problem",
            frame: icmpv4(Icmpv4Repr::ParamProblem {
                pointer: 9,
                invoking: quoted,
            }),
            protocols: &["ip", "icmp"],
            decoded_text: &["Parameter problem"],
            has_checksum: true,
        },
        Sample {
            name: "igmpv2-general-query",
            frame: igmp(IgmpRepr::MembershipQuery {
                max_resp_tenths: 100,
                group: Ipv4Addr::UNSPECIFIED,
            }),
            protocols: &["ip", "igmp"],
            decoded_text: &["Membership Query (0x11)", "Router Alert"],
            has_checksum: true,
        },
        Sample {
            name: "igmpv2-report",
            frame: igmp(IgmpRepr::MembershipReport {
                version: IgmpVersion::V2,
                group: Ipv4Addr::new(239, 192, 0, 11),
            }),
            protocols: &["ip", "igmp"],
            decoded_text: &["Membership Report (0x16)", "239.192.0.11"],
            has_checksum: true,
        },
        Sample {
            name: "igmpv2-leave",
            frame: igmp(IgmpRepr::LeaveGroup {
                group: Ipv4Addr::new(239, 192, 0, 11),
            }),
            protocols: &["ip", "igmp"],
            decoded_text: &["Leave Group (0x17)"],
            has_checksum: true,
        },
    ]
}
