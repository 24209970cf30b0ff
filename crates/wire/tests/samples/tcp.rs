//! TCP samples over both families: a SYN with every option, a SACK-carrying
//! ACK, data with PSH/URG and ECN flags, FIN, RST, and an unknown option.

use wire::ethernet::EtherType;
use wire::tcp::{TcpFlags, TcpPacket, TcpRepr, TcpUnknownOptions};
use wire::{ChecksumMode, IpProtocol};

use super::v6::ipv6;
use super::*;

fn base() -> TcpRepr {
    TcpRepr {
        src_port: 40_001,
        dst_port: 5001,
        seq_number: 0x1000_0000,
        ack_number: Some(0x2000_0000),
        flags: TcpFlags::empty(),
        window_len: 65_000,
        urgent_pointer: 0,
        max_seg_size: None,
        window_scale: None,
        sack_permitted: false,
        sack_ranges: [None; 4],
        timestamps: None,
        unknown_options: TcpUnknownOptions::new(),
        payload_len: 0,
    }
}

fn segment(repr: &TcpRepr, src: IpAddr, dst: IpAddr, payload: &[u8]) -> Vec<u8> {
    let repr = TcpRepr {
        payload_len: payload.len(),
        ..*repr
    };
    let mut buf = vec![0; repr.buffer_len(payload.len())];
    repr.emit(
        &mut TcpPacket::new_unchecked(&mut buf[..]),
        &src,
        &dst,
        payload.len(),
        |p| p.copy_from_slice(payload),
        ChecksumMode::Full,
    )
    .expect("tcp emit");
    buf
}

fn over_v4(repr: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = v4_pair();
    let packet = ipv4(IpProtocol::Tcp, &segment(repr, src, dst, payload));
    ethernet(EtherType::Ipv4, None, &packet)
}

fn over_v6(repr: &TcpRepr, payload: &[u8]) -> Vec<u8> {
    let (src, dst) = v6_pair();
    let packet = ipv6(IpProtocol::Tcp, &segment(repr, src, dst, payload));
    ethernet(EtherType::Ipv6, None, &packet)
}

pub fn samples() -> Vec<Sample> {
    let syn = TcpRepr {
        ack_number: None,
        flags: TcpFlags::SYN,
        max_seg_size: Some(1460),
        window_scale: Some(7),
        sack_permitted: true,
        timestamps: Some((123_456, 0)),
        ..base()
    };
    let sack_ack = TcpRepr {
        timestamps: Some((123_999, 654_321)),
        sack_ranges: [
            Some((0x2000_1000, 0x2000_2000)),
            Some((0x2000_3000, 0x2000_4000)),
            None,
            None,
        ],
        ..base()
    };
    let urgent_ecn = TcpRepr {
        flags: TcpFlags::PSH | TcpFlags::URG | TcpFlags::ECE | TcpFlags::CWR,
        urgent_pointer: 3,
        ..base()
    };
    let mut unknown = TcpUnknownOptions::new();
    unknown
        .push(253, &[0x12, 0x34, 0x56, 0x78])
        .expect("experimental option fits");
    let with_unknown = TcpRepr {
        unknown_options: unknown,
        flags: TcpFlags::PSH,
        ..base()
    };
    vec![
        Sample {
            name: "tcp-ipv4-syn-all-options",
            frame: over_v4(&syn, b""),
            protocols: &["ip", "tcp"],
            decoded_text: &[
                "Maximum segment size: 1460 bytes",
                "Window scale: 7",
                "SACK permitted",
                "Timestamps: TSval 123456",
                ".... .... ..1. = Syn: Set",
            ],
            has_checksum: true,
        },
        Sample {
            name: "tcp-ipv6-ack-sack-timestamps",
            frame: over_v6(&sack_ack, b""),
            protocols: &["ipv6", "tcp"],
            decoded_text: &[
                "SACK",
                "TSecr 654321",
                ".... ...1 .... = Acknowledgment: Set",
            ],
            has_checksum: true,
        },
        Sample {
            name: "tcp-ipv4-psh-urg-ece-cwr-data",
            frame: over_v4(&urgent_ecn, b"urgent data"),
            protocols: &["ip", "tcp"],
            decoded_text: &[
                "Urgent Pointer: 3",
                "1... .... = Congestion Window Reduced",
                ".1.. .... = ECN-Echo: Set",
            ],
            has_checksum: true,
        },
        Sample {
            name: "tcp-ipv6-fin",
            frame: over_v6(
                &TcpRepr {
                    flags: TcpFlags::FIN,
                    ..base()
                },
                b"",
            ),
            protocols: &["ipv6", "tcp"],
            decoded_text: &[".... .... ...1 = Fin: Set"],
            has_checksum: true,
        },
        Sample {
            name: "tcp-ipv4-rst",
            frame: over_v4(
                &TcpRepr {
                    ack_number: None,
                    flags: TcpFlags::RST,
                    window_len: 0,
                    ..base()
                },
                b"",
            ),
            protocols: &["ip", "tcp"],
            decoded_text: &[".... .... .1.. = Reset: Set"],
            has_checksum: true,
        },
        Sample {
            name: "tcp-ipv6-unknown-option-data",
            frame: over_v6(&with_unknown, b"payload with an unknown option"),
            protocols: &["ipv6", "tcp"],
            decoded_text: &["Kind: RFC3692-style Experiment 1 (253)"],
            has_checksum: true,
        },
    ]
}
