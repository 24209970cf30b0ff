//! XTP samples: one packet of every type (JOIN, obsolete, aside), over IPv4
//! and over IPv6 (IP protocol 36), emitted through `XtpRepr::emit`.

use wire::ethernet::EtherType;
use wire::xtp::first::Traffic;
use wire::xtp::{
    Address, AddressRepr, ControlRepr, DiagCode, DiagValue, Segment, Service, Span, Spans,
    TrafficRepr, XtpOptions, XtpPacket, XtpRepr, IP_PROTOCOL, KEY_RETURN,
};
use wire::{ChecksumMode, IpProtocol};

use super::v6::ipv6;
use super::*;

const CONTROL: ControlRepr = ControlRepr {
    rseq: 1000,
    alloc: 66_536,
    echo: 42,
};

const RATES: TrafficRepr = TrafficRepr {
    service: Service::UnicastStream,
    traffic: Traffic::Rates {
        maxdata: 1460,
        inrate: 1_250_000,
        inburst: 16_384,
        outrate: 1_250_000,
        outburst: 16_384,
    },
};

const SPANS: [Span; 2] = [
    Span {
        left: 2000,
        right: 3000,
    },
    Span {
        left: 4000,
        right: 4096,
    },
];

fn repr(options: XtpOptions, segment: Segment<'static>) -> XtpRepr<'static> {
    XtpRepr {
        key: 0x0101,
        options,
        sort: 0,
        sync: 42,
        seq: 1000,
        segment,
    }
}

/// The packet types carried the same way over both families.
fn common() -> Vec<XtpRepr<'static>> {
    vec![
        repr(
            XtpOptions::EOM,
            Segment::Data {
                btag: None,
                data: b"hello over XTP",
            },
        ),
        repr(
            XtpOptions::empty(),
            Segment::Data {
                btag: Some(0x1122_3344_5566_7788),
                data: b"tagged",
            },
        ),
        repr(
            XtpOptions::NOCHECK,
            Segment::Data {
                btag: None,
                data: b"data not summed",
            },
        ),
        repr(XtpOptions::SREQ, Segment::Cntl(CONTROL)),
        repr(
            XtpOptions::empty(),
            Segment::Ecntl {
                control: CONTROL,
                spans: Spans::List(&SPANS),
            },
        ),
        XtpRepr {
            key: KEY_RETURN | 0x0101,
            ..repr(
                XtpOptions::empty(),
                Segment::Tcntl {
                    control: CONTROL,
                    xkey: KEY_RETURN | 0x0202,
                    traffic: RATES,
                },
            )
        },
        repr(
            XtpOptions::END,
            Segment::Diag {
                code: DiagCode::ContextRefused,
                value: DiagValue::NoListener,
                message: b"no listener",
            },
        ),
    ]
}

fn first(address: Address, data: &'static [u8]) -> XtpRepr<'static> {
    repr(
        XtpOptions::SORT | XtpOptions::FASTNAK,
        Segment::First {
            address: AddressRepr { domain: 0, address },
            traffic: RATES,
            btag: None,
            data,
        },
    )
}

/// Multicast join control for the group at `address`.
fn jcntl(address: Address) -> XtpRepr<'static> {
    repr(
        XtpOptions::MULTI,
        Segment::Jcntl {
            control: CONTROL,
            xkey: 0x0303,
            address: AddressRepr { domain: 0, address },
            traffic: RATES,
        },
    )
}

pub fn packet(repr: &XtpRepr<'_>) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(
        &mut XtpPacket::new_unchecked(&mut buf[..]),
        ChecksumMode::Full,
    )
    .expect("xtp emit");
    buf
}

/// What tshark must show for a packet of this segment.
fn decoded_text(segment: &Segment<'_>) -> &'static [&'static str] {
    match segment {
        Segment::Data { btag: Some(_), .. } => &["Beginning tag: 0x1122334455667788"],
        Segment::Data { .. } => &["Data Segment"],
        Segment::Cntl(_) => &["Common Control Segment, Recv-Seq: 1000"],
        Segment::First { .. } => &["Address Segment"],
        Segment::Ecntl { .. } => &[
            "Error Control Segment, Recv-Seq: 1000",
            "Number of spans: 2",
        ],
        Segment::Tcntl { .. } => &["Traffic Control Segment, Recv-Seq: 1000"],
        Segment::Jcntl { .. } => &["Traffic Control Segment, Recv-Seq: 1000", "Address Segment"],
        Segment::Diag { .. } => &["Diagnostic Segment", "Message: no listener"],
    }
}

const V4_NAMES: [&str; 7] = [
    "xtp-v4-data",
    "xtp-v4-data-btag",
    "xtp-v4-data-nocheck",
    "xtp-v4-cntl",
    "xtp-v4-ecntl",
    "xtp-v4-tcntl",
    "xtp-v4-diag",
];
const V6_NAMES: [&str; 7] = [
    "xtp-v6-data",
    "xtp-v6-data-btag",
    "xtp-v6-data-nocheck",
    "xtp-v6-cntl",
    "xtp-v6-ecntl",
    "xtp-v6-tcntl",
    "xtp-v6-diag",
];

fn sample(name: &'static str, frame: Vec<u8>, decoded_text: &'static [&'static str]) -> Sample {
    Sample {
        name,
        frame,
        protocols: &["xtp"],
        decoded_text,
        has_checksum: true,
    }
}

pub fn samples() -> Vec<Sample> {
    let protocol = IpProtocol::from(IP_PROTOCOL);
    let over_v4 = |xtp: &[u8]| ethernet(EtherType::Ipv4, None, &ipv4(protocol, xtp));
    let over_v6 = |xtp: &[u8]| ethernet(EtherType::Ipv6, None, &ipv6(protocol, xtp));
    let mut samples = Vec::new();
    for ((v4_name, v6_name), repr) in V4_NAMES.iter().zip(V6_NAMES).zip(common()) {
        let xtp = packet(&repr);
        let text = decoded_text(&repr.segment);
        samples.push(sample(v4_name, over_v4(&xtp), text));
        samples.push(sample(v6_name, over_v6(&xtp), text));
    }
    let v4_first = first(
        Address::Ipv4 {
            dst_host: V4_B,
            src_host: V4_A,
            dst_port: 5001,
            src_port: 40_000,
        },
        b"implicit setup",
    );
    samples.push(sample(
        "xtp-v4-first",
        over_v4(&packet(&v4_first)),
        &[
            "Address Segment, Dst Port: 5001, Src Port: 40000",
            "Destination host: 198.51.100.2",
            "Outgoing burst size: 16384",
        ],
    ));
    samples.push(sample(
        "xtp-v4-jcntl",
        over_v4(&packet(&jcntl(Address::Ipv4 {
            dst_host: Ipv4Addr::new(233, 252, 0, 1),
            src_host: V4_A,
            dst_port: 5001,
            src_port: 40_000,
        }))),
        &[
            "Traffic Control Segment, Recv-Seq: 1000",
            "Destination host: 233.252.0.1",
            "Outgoing burst size: 16384",
        ],
    ));
    samples.push(sample(
        "xtp-v6-jcntl",
        over_v6(&packet(&jcntl(Address::Ipv6 {
            dst_host: Ipv6Addr::new(0xff0e, 0, 0, 0, 0, 0, 0xdb8, 1),
            src_host: V6_A,
            dst_port: 5001,
            src_port: 40_000,
        }))),
        &[
            "Traffic Control Segment, Recv-Seq: 1000",
            "Unsupported aformat(6)",
        ],
    ));
    let v6_first = first(
        Address::Ipv6 {
            dst_host: V6_B,
            src_host: V6_A,
            dst_port: 5001,
            src_port: 40_000,
        },
        b"",
    );
    // Wireshark knows address format 6 by name only.
    samples.push(sample(
        "xtp-v6-first",
        over_v6(&packet(&v6_first)),
        &["Unsupported aformat(6)"],
    ));
    samples
}
