//! Whole-packet tests: every packet type round-trips, the checksum catches
//! a corrupted byte, and a packet written out by hand from the dissector's
//! layout parses to what it says.

use core::net::{Ipv4Addr, Ipv6Addr};

use super::*;
use crate::{ChecksumMode, Error};

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

const CONTROL: ControlRepr = ControlRepr {
    rseq: 1000,
    alloc: 65_536,
    echo: 42,
};

const RATES: TrafficRepr = TrafficRepr {
    service: Service::UnicastStream,
    traffic: first::Traffic::Rates {
        maxdata: 1460,
        inrate: 1_250_000,
        inburst: 16_384,
        outrate: 1_250_000,
        outburst: 16_384,
    },
};

fn repr(options: XtpOptions, segment: Segment<'static>) -> XtpRepr<'static> {
    XtpRepr {
        key: 0x0000_0000_0000_0101,
        options,
        sort: 0,
        sync: 42,
        seq: 1000,
        segment,
    }
}

/// One packet of every type, and the variants that change the layout.
fn samples() -> Vec<XtpRepr<'static>> {
    let ipv4 = AddressRepr {
        domain: 0,
        address: Address::Ipv4 {
            dst_host: Ipv4Addr::new(198, 51, 100, 2),
            src_host: Ipv4Addr::new(192, 0, 2, 1),
            dst_port: 5001,
            src_port: 40_000,
        },
    };
    let ipv6 = AddressRepr {
        domain: 0,
        address: Address::Ipv6 {
            dst_host: Ipv6Addr::new(0x2001, 0xdb8, 0xb, 0, 0, 0, 0, 2),
            src_host: Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 1),
            dst_port: 5001,
            src_port: 40_000,
        },
    };
    vec![
        repr(
            XtpOptions::EOM,
            Segment::Data {
                btag: None,
                data: b"hello, xtp",
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
                data: b"not summed",
            },
        ),
        repr(XtpOptions::SREQ, Segment::Cntl(CONTROL)),
        repr(
            XtpOptions::SORT | XtpOptions::FASTNAK,
            Segment::First {
                address: ipv4,
                traffic: RATES,
                btag: None,
                data: b"",
            },
        ),
        repr(
            XtpOptions::empty(),
            Segment::First {
                address: ipv6,
                traffic: TrafficRepr {
                    service: Service::Transaction,
                    traffic: first::Traffic::None { traffic: 0 },
                },
                btag: Some(7),
                data: b"request",
            },
        ),
        repr(
            XtpOptions::empty(),
            Segment::Ecntl {
                control: CONTROL,
                spans: Spans::List(&SPANS),
            },
        ),
        repr(
            XtpOptions::empty(),
            Segment::Ecntl {
                control: CONTROL,
                spans: Spans::List(&[]),
            },
        ),
        repr(
            XtpOptions::empty(),
            Segment::Tcntl {
                control: CONTROL,
                xkey: KEY_RETURN | 0x77,
                traffic: RATES,
            },
        ),
        repr(
            XtpOptions::MULTI,
            Segment::Jcntl {
                control: CONTROL,
                xkey: 0x99,
                address: ipv4,
                traffic: RATES,
            },
        ),
        repr(
            XtpOptions::END,
            Segment::Diag {
                code: DiagCode::ContextRefused,
                value: DiagValue::NoListener,
                message: b"no listener on port 5001",
            },
        ),
    ]
}

fn emit(repr: &XtpRepr<'_>, mode: ChecksumMode) -> Vec<u8> {
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut XtpPacket::new_unchecked(&mut buf[..]), mode)
        .expect("emit");
    buf
}

fn parse(buf: &[u8], mode: ChecksumMode) -> crate::Result<XtpRepr<'_>> {
    XtpRepr::parse(&XtpPacket::new_checked(buf)?, mode)
}

#[test]
fn every_packet_type_round_trips() {
    for sample in samples() {
        for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
            let buf = emit(&sample, mode);
            assert_eq!(parse(&buf, ChecksumMode::Skip), Ok(sample), "{sample:?}");
        }
        let buf = emit(&sample, ChecksumMode::Full);
        assert_eq!(parse(&buf, ChecksumMode::Full), Ok(sample));
        let packet = XtpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(packet.dlen() as usize, sample.segment_len());
        assert_eq!(packet.packet_type(), sample.segment.packet_type());
        assert_eq!(
            packet.options().contains(XtpOptions::BTAG),
            sample.segment.btag().is_some()
        );
    }
}

#[test]
fn any_corrupted_byte_fails_the_checksum() {
    for sample in samples() {
        let good = emit(&sample, ChecksumMode::Full);
        let covered = if sample.options.contains(XtpOptions::NOCHECK) {
            header::HEADER_LEN
        } else {
            good.len()
        };
        for at in 0..good.len() {
            let mut bad = good.clone();
            bad[at] ^= 0x10;
            let Ok(packet) = XtpPacket::new_checked(&bad[..]) else {
                continue; // a corrupted dlen: refused before any checksum
            };
            assert_eq!(
                packet.verify_checksum(),
                at >= covered,
                "byte {at} of {sample:?}"
            );
            if at < covered && packet.check_version().is_ok() {
                assert_eq!(
                    XtpRepr::parse(&packet, ChecksumMode::Full),
                    Err(Error::Checksum)
                );
            }
        }
    }
}

/// A DATA packet written out byte by byte from packet-xtp.c's layout, with
/// its checksum computed independently (RFC 1071 over the 44 bytes).
const HAND_BUILT: [u8; 44] = [
    0x80, 0, 0, 0, 0, 0, 0, 0x01, // key: return bit, context 1
    0x00, 0x05, 0x00, 0x20, // cmd: EOM | BTAG, version 1, DATA
    0, 0, 0, 12, // dlen: tag and 4 bytes
    0x85, 0xd7, // check
    0, 3, // sort
    0, 0, 0, 7, // sync
    0, 0, 0, 1, 0, 0, 0, 0, // seq: 2^32
    0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, // beginning tag
    b'x', b't', b'p', b'!',
];

#[test]
fn known_answer_from_the_dissector_layout() {
    let expected = XtpRepr {
        key: KEY_RETURN | 1,
        options: XtpOptions::EOM,
        sort: 3,
        sync: 7,
        seq: 1 << 32,
        segment: Segment::Data {
            btag: Some(0x1122_3344_5566_7788),
            data: b"xtp!",
        },
    };
    assert_eq!(parse(&HAND_BUILT, ChecksumMode::Full), Ok(expected));
    assert_eq!(emit(&expected, ChecksumMode::Full), HAND_BUILT);

    // NOCHECK: the same header sums to 0x3fc2 alone.
    let nocheck = XtpRepr {
        options: XtpOptions::EOM | XtpOptions::NOCHECK,
        ..expected
    };
    assert_eq!(&emit(&nocheck, ChecksumMode::Full)[16..18], &[0x3f, 0xc2]);
}

#[test]
fn packets_the_repr_cannot_mean_are_refused() {
    let good = emit(&samples()[3], ChecksumMode::Full); // CNTL
    let refit = |mutate: &dyn Fn(&mut Vec<u8>)| {
        let mut buf = good.clone();
        mutate(&mut buf);
        XtpPacket::new_unchecked(&mut buf[..]).fill_checksum();
        parse(&buf, ChecksumMode::Full).map(|_| ())
    };
    // Version 2 in the top bits of the packet-type byte.
    assert!(matches!(
        refit(&|b| b[11] = 0x41),
        Err(Error::Unsupported(_))
    ));
    // BTAG on a control packet.
    assert!(matches!(refit(&|b| b[9] |= 0x01), Err(Error::Malformed(_))));
    // The obsolete JOIN and an unassigned type.
    assert!(matches!(
        refit(&|b| b[11] = 0x26),
        Err(Error::Unsupported(_))
    ));
    assert!(matches!(refit(&|b| b[11] = 0x24), Err(Error::Malformed(_))));
    // A CNTL whose dlen (and buffer) holds one byte more.
    let longer = |b: &mut Vec<u8>| {
        b.push(0);
        b[15] += 1;
    };
    assert!(matches!(refit(&longer), Err(Error::Malformed(_))));
    // DATA with BTAG but only 4 bytes.
    let short_tag = |b: &mut Vec<u8>| {
        b[11] = 0x20;
        b[9] = 0x01;
        b.truncate(header::HEADER_LEN + 4);
        b[15] = 4;
    };
    assert_eq!(refit(&short_tag), Err(Error::Truncated));
}

#[test]
fn emit_refuses_a_short_buffer() {
    let sample = samples()[0];
    let mut buf = vec![0u8; sample.buffer_len() - 1];
    assert_eq!(
        sample.emit(
            &mut XtpPacket::new_unchecked(&mut buf[..]),
            ChecksumMode::Full
        ),
        Err(Error::Truncated)
    );
}
