//! IPv6 samples: extension headers (hop-by-hop, destination options with the
//! trace option, routing type 0, fragments) over UDP.

use wire::ethernet::EtherType;
use wire::ipv6::{Ipv6Packet, Ipv6Repr};
use wire::ipv6_ext_header::Ipv6OptionsBuilder;
use wire::ipv6_fragment::{Ipv6FragmentHeader, Ipv6FragmentRepr};
use wire::ipv6_option::Ipv6Option;
use wire::ipv6_routing::{AddressList, Ipv6RoutingHeader, Ipv6RoutingRepr};
use wire::trace_option::TraceOption;
use wire::IpProtocol;

use super::*;

pub fn ipv6(next_header: IpProtocol, payload: &[u8]) -> Vec<u8> {
    ipv6_between(V6_A, V6_B, next_header, 64, payload)
}

pub fn ipv6_between(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next_header: IpProtocol,
    hop_limit: u8,
    payload: &[u8],
) -> Vec<u8> {
    let repr = Ipv6Repr {
        src,
        dst,
        next_header,
        payload_len: payload.len(),
        hop_limit,
        traffic_class: 0,
        flow_label: 0x12345,
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]))
        .expect("ipv6 emit");
    buf[repr.header_len()..].copy_from_slice(payload);
    buf
}

/// An options header (hop-by-hop or destination) followed by `rest`.
pub fn options_header(next_header: IpProtocol, options: &[Ipv6Option], rest: &[u8]) -> Vec<u8> {
    let builder = Ipv6OptionsBuilder {
        next_header,
        options,
    };
    let mut buf = vec![0; builder.buffer_len().expect("options fit")];
    builder.emit(&mut buf).expect("options emit");
    buf.extend_from_slice(rest);
    buf
}

fn udp_v6(payload: &[u8]) -> Vec<u8> {
    let (src, dst) = v6_pair();
    udp(src, dst, payload)
}

fn routing_type0(rest: &[u8]) -> Vec<u8> {
    let via = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 3).octets();
    let repr = Ipv6RoutingRepr::Type0 {
        next_header: IpProtocol::Udp,
        segments_left: 0,
        addresses: AddressList::new(&via).expect("one address"),
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut Ipv6RoutingHeader::new_unchecked(&mut buf[..]))
        .expect("routing emit");
    buf.extend_from_slice(rest);
    buf
}

/// The two fragments of one UDP datagram (RFC 8200 §4.5), first and last.
fn fragments() -> [Vec<u8>; 2] {
    let datagram = udp_v6(&[0x5a; 100]);
    let (first, last) = datagram.split_at(56);
    let fragment = |offset: usize, more: bool, data: &[u8]| {
        let repr = Ipv6FragmentRepr {
            next_header: IpProtocol::Udp,
            frag_offset: offset,
            more_frags: more,
            ident: 0xfeed_f00d,
        };
        let mut buf = vec![0; repr.buffer_len()];
        repr.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut buf[..]))
            .expect("fragment emit");
        buf.extend_from_slice(data);
        ethernet(EtherType::Ipv6, None, &ipv6(IpProtocol::Ipv6Frag, &buf))
    };
    [fragment(0, true, first), fragment(56, false, last)]
}

pub fn samples() -> Vec<Sample> {
    let [first_fragment, last_fragment] = fragments();
    vec![
        Sample {
            name: "ipv6-udp",
            frame: ethernet(
                EtherType::Ipv6,
                None,
                &ipv6(IpProtocol::Udp, &udp_v6(b"hello over IPv6")),
            ),
            protocols: &["ipv6", "udp"],
            decoded_text: &["Destination Port: 5001", "Flow Label: 0x12345"],
            has_checksum: true,
        },
        Sample {
            name: "ipv6-hop-by-hop-router-alert-udp",
            frame: {
                let hbh = options_header(
                    IpProtocol::Udp,
                    &[Ipv6Option::RouterAlert(0)],
                    &udp_v6(b"alert"),
                );
                ethernet(EtherType::Ipv6, None, &ipv6(IpProtocol::HopByHop, &hbh))
            },
            protocols: &["ipv6", "ipv6.hopopts", "udp"],
            decoded_text: &["Router Alert"],
            has_checksum: true,
        },
        Sample {
            name: "ipv6-destination-options-trace-udp",
            frame: {
                let dst = options_header(
                    IpProtocol::Udp,
                    &[Ipv6Option::Trace(TraceOption { flow: 7 })],
                    &udp_v6(b"traced"),
                );
                ethernet(EtherType::Ipv6, None, &ipv6(IpProtocol::Ipv6Opts, &dst))
            },
            protocols: &["ipv6", "ipv6.dstopts", "udp"],
            decoded_text: &["Destination Options"],
            has_checksum: true,
        },
        Sample {
            name: "ipv6-routing-type0-udp",
            frame: ethernet(
                EtherType::Ipv6,
                None,
                &ipv6(IpProtocol::Ipv6Route, &routing_type0(&udp_v6(b"routed"))),
            ),
            protocols: &["ipv6", "ipv6.routing", "udp"],
            decoded_text: &["Type: Source Route (0)"],
            has_checksum: true,
        },
        Sample {
            name: "ipv6-fragment-first",
            frame: first_fragment,
            protocols: &["ipv6", "ipv6.fraghdr"],
            decoded_text: &["More Fragments: Yes"],
            has_checksum: false,
        },
        Sample {
            name: "ipv6-fragment-last-reassembled-udp",
            frame: last_fragment,
            protocols: &["ipv6", "ipv6.fraghdr", "udp"],
            decoded_text: &["Reassembled IPv6 length: 108"],
            has_checksum: true,
        },
    ]
}
