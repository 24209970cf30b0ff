//! XTP property tests: every packet type round-trips through emit and parse
//! with any field values, and no random or damaged packet makes parsing
//! panic. Whatever parses re-emits to a packet that parses back the same.

use core::net::{Ipv4Addr, Ipv6Addr};

use proptest::collection::vec;
use proptest::prelude::*;
use wire::xtp::first::Traffic;
use wire::xtp::{
    Address, AddressRepr, ControlRepr, DiagCode, DiagValue, Segment, Service, Span, Spans,
    TrafficRepr, XtpOptions, XtpPacket, XtpRepr, HEADER_LEN,
};
use wire::{ChecksumMode, Error};

const MODES: [ChecksumMode; 2] = [ChecksumMode::Full, ChecksumMode::Skip];

/// The owned parts of a packet; the repr borrows data and spans from it.
#[derive(Debug, Clone)]
struct Parts {
    key: u64,
    options: XtpOptions,
    sort: u16,
    sync: u32,
    seq: u64,
    kind: u8,
    btag: Option<u64>,
    data: Vec<u8>,
    control: ControlRepr,
    /// Sorted edges, paired into ascending disjoint spans.
    edges: Vec<u64>,
    xkey: u64,
    address: AddressRepr,
    traffic: TrafficRepr,
    code: u32,
    value: u32,
}

impl Parts {
    fn spans(&self) -> Vec<Span> {
        self.edges
            .chunks_exact(2)
            .map(|e| Span {
                left: e[0],
                right: e[1],
            })
            .collect()
    }

    fn repr<'a>(&'a self, spans: &'a [Span]) -> XtpRepr<'a> {
        let segment = match self.kind {
            0 => Segment::Data {
                btag: self.btag,
                data: &self.data,
            },
            1 => Segment::Cntl(self.control),
            2 => Segment::First {
                address: self.address,
                traffic: self.traffic,
                btag: self.btag,
                data: &self.data,
            },
            3 => Segment::Ecntl {
                control: self.control,
                spans: Spans::List(spans),
            },
            4 => Segment::Tcntl {
                control: self.control,
                xkey: self.xkey,
                traffic: self.traffic,
            },
            5 => Segment::Jcntl {
                control: self.control,
                xkey: self.xkey,
                address: self.address,
                traffic: self.traffic,
            },
            _ => Segment::Diag {
                code: DiagCode::from(self.code),
                value: DiagValue::from(self.value),
                message: &self.data,
            },
        };
        XtpRepr {
            key: self.key,
            options: self.options,
            sort: self.sort,
            sync: self.sync,
            seq: self.seq,
            segment,
        }
    }
}

fn address() -> impl Strategy<Value = AddressRepr> {
    let address = prop_oneof![
        any::<u32>().prop_map(|address| Address::Null { address }),
        (
            any::<[u8; 4]>(),
            any::<[u8; 4]>(),
            any::<u16>(),
            any::<u16>()
        )
            .prop_map(|(d, s, dp, sp)| Address::Ipv4 {
                dst_host: Ipv4Addr::from(d),
                src_host: Ipv4Addr::from(s),
                dst_port: dp,
                src_port: sp,
            }),
        (
            any::<[u8; 16]>(),
            any::<[u8; 16]>(),
            any::<u16>(),
            any::<u16>()
        )
            .prop_map(|(d, s, dp, sp)| Address::Ipv6 {
                dst_host: Ipv6Addr::from(d),
                src_host: Ipv6Addr::from(s),
                dst_port: dp,
                src_port: sp,
            }),
    ];
    (any::<u8>(), address).prop_map(|(domain, address)| AddressRepr { domain, address })
}

fn traffic() -> impl Strategy<Value = TrafficRepr> {
    let traffic = prop_oneof![
        any::<u32>().prop_map(|traffic| Traffic::None { traffic }),
        any::<[u32; 5]>().prop_map(|w| Traffic::Rates {
            maxdata: w[0],
            inrate: w[1],
            inburst: w[2],
            outrate: w[3],
            outburst: w[4],
        }),
    ];
    (any::<u8>(), traffic).prop_map(|(service, traffic)| TrafficRepr {
        service: Service::from(service),
        traffic,
    })
}

fn parts() -> impl Strategy<Value = Parts> {
    let header = (
        any::<u64>(),
        any::<u32>().prop_map(|b| XtpOptions::from_bits(b) - XtpOptions::BTAG),
        any::<u16>(),
        any::<u32>(),
        any::<u64>(),
        0..7u8,
    );
    let body = (
        any::<Option<u64>>(),
        vec(any::<u8>(), 0..64),
        any::<(u64, u64, u32)>(),
        vec(any::<u64>(), 0..12),
        any::<u64>(),
        address(),
        traffic(),
        any::<(u32, u32)>(),
    );
    (header, body).prop_map(
        |(
            (key, options, sort, sync, seq, kind),
            (btag, data, control, mut edges, xkey, address, traffic, (code, value)),
        )| {
            edges.sort_unstable();
            edges.truncate(edges.len() / 2 * 2);
            Parts {
                key,
                options,
                sort,
                sync,
                seq,
                kind,
                // Only DATA and FIRST carry a tag.
                btag: btag.filter(|_| kind == 0 || kind == 2),
                data,
                control: ControlRepr {
                    rseq: control.0,
                    alloc: control.1,
                    echo: control.2,
                },
                edges,
                xkey,
                address,
                traffic,
                code,
                value,
            }
        },
    )
}

fn emit(repr: &XtpRepr<'_>, mode: ChecksumMode) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut XtpPacket::new_unchecked(&mut buf[..]), mode)
        .expect("a generated repr emits");
    buf
}

/// Parses under every mode; whatever parses must re-emit to a packet that
/// parses to the same repr (the bytes may differ: reserved words are sent
/// as zero).
fn parse_and_reemit(data: &[u8]) {
    let Ok(packet) = XtpPacket::new_checked(data) else {
        return;
    };
    let _ = (packet.verify_checksum(), packet.segment(), packet.options());
    for mode in MODES {
        if let Ok(repr) = XtpRepr::parse(&packet, mode) {
            let again = emit(&repr, ChecksumMode::Full);
            let view = XtpPacket::new_checked(&again[..]).expect("re-emitted length");
            assert_eq!(XtpRepr::parse(&view, ChecksumMode::Full), Ok(repr));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_packet_type_round_trips(parts in parts()) {
        let spans = parts.spans();
        let repr = parts.repr(&spans);
        for mode in MODES {
            let buf = emit(&repr, mode);
            let packet = XtpPacket::new_checked(&buf[..]).unwrap();
            prop_assert_eq!(packet.dlen() as usize, buf.len() - HEADER_LEN);
            prop_assert_eq!(XtpRepr::parse(&packet, mode), Ok(repr));
        }
    }

    #[test]
    fn a_flipped_covered_bit_is_caught(parts in parts(), at in any::<prop::sample::Index>(), bit in 0..8u8) {
        let spans = parts.spans();
        let repr = parts.repr(&spans);
        let mut buf = emit(&repr, ChecksumMode::Full);
        let covered = if repr.options.contains(XtpOptions::NOCHECK) { HEADER_LEN } else { buf.len() };
        let at = at.index(covered);
        buf[at] ^= 1 << bit;
        if let Ok(packet) = XtpPacket::new_checked(&buf[..]) {
            prop_assert!(!packet.verify_checksum());
            if packet.check_version().is_ok() {
                prop_assert_eq!(XtpRepr::parse(&packet, ChecksumMode::Full), Err(Error::Checksum));
            }
        }
    }

    #[test]
    fn random_bytes_never_panic(data in vec(any::<u8>(), 0..160)) {
        parse_and_reemit(&data);
    }

    /// A valid version-4.0 header over random segment bytes, so parsing
    /// reaches every segment parser.
    #[test]
    fn random_segments_never_panic(
        options in any::<u32>(),
        ptype in 0..10u8,
        segment in vec(any::<u8>(), 0..120),
        padding in 0..4usize,
    ) {
        let mut buf = vec![0u8; HEADER_LEN + segment.len() + padding];
        let mut packet = XtpPacket::new_unchecked(&mut buf[..]);
        packet.set_cmd((options << 8) | 0x20 | u32::from(ptype));
        packet.set_dlen(segment.len() as u32);
        packet.segment_mut().copy_from_slice(&segment);
        packet.fill_checksum();
        parse_and_reemit(&buf);
    }

    #[test]
    fn damaged_packets_never_panic(
        parts in parts(),
        damage in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let spans = parts.spans();
        let repr = parts.repr(&spans);
        let mut buf = emit(&repr, ChecksumMode::Full);
        for (at, byte) in damage {
            let at = at.index(buf.len());
            buf[at] = byte;
        }
        parse_and_reemit(&buf);
        parse_and_reemit(&buf[..cut.index(buf.len() + 1)]);
    }
}
