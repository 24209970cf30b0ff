//! Property tests for the IPv6 formats: every Repr survives emit → parse;
//! option lists survive emit → iterate; and no parser panics on truncated
//! packets, on packets whose length fields lie, or on arbitrary bytes.

use core::net::Ipv6Addr;

use proptest::prelude::*;
use wire::ipv6::{self, Ipv6Packet, Ipv6Repr};
use wire::ipv6_ext_header::{
    walk_chain, ChainEnd, Ipv6ExtHeader, Ipv6OptionsBuilder, Ipv6OptionsRepr, MAX_CHAIN_HEADERS,
};
use wire::ipv6_fragment::{Ipv6FragmentHeader, Ipv6FragmentRepr};
use wire::ipv6_option::{self, Ipv6Option, Ipv6OptionView};
use wire::ipv6_routing::{AddressList, Ipv6RoutingHeader, Ipv6RoutingRepr};
use wire::trace_option::TraceOption;
use wire::IpProtocol;

// ---------------------------------------------------------------------------
// Strategies. Options and routing data borrow bytes, so the strategies make
// owned values and the tests borrow from them.

/// An option with owned data.
#[derive(Debug, Clone)]
enum OwnedOption {
    Pad1,
    PadN(u8),
    Trace(u32),
    RouterAlert(u16),
    Unknown(u8, Vec<u8>),
}

impl OwnedOption {
    fn borrow(&self) -> Ipv6Option<'_> {
        match self {
            Self::Pad1 => Ipv6Option::Pad1,
            Self::PadN(n) => Ipv6Option::PadN(*n),
            Self::Trace(flow) => Ipv6Option::Trace(TraceOption { flow: *flow }),
            Self::RouterAlert(value) => Ipv6Option::RouterAlert(*value),
            Self::Unknown(option_type, data) => Ipv6Option::Unknown {
                option_type: *option_type,
                data,
            },
        }
    }
}

fn unknown_option_type() -> impl Strategy<Value = u8> {
    any::<u8>().prop_filter("a type the module models", |t| {
        !matches!(
            *t,
            ipv6_option::PAD1 | ipv6_option::PADN | ipv6_option::TRACE | ipv6_option::ROUTER_ALERT
        )
    })
}

fn option() -> impl Strategy<Value = OwnedOption> {
    prop_oneof![
        Just(OwnedOption::Pad1),
        (0u8..=16).prop_map(OwnedOption::PadN),
        any::<u32>().prop_map(OwnedOption::Trace),
        any::<u16>().prop_map(OwnedOption::RouterAlert),
        (
            unknown_option_type(),
            proptest::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(t, d)| OwnedOption::Unknown(t, d)),
    ]
}

fn options() -> impl Strategy<Value = Vec<OwnedOption>> {
    proptest::collection::vec(option(), 0..8)
}

fn protocol() -> impl Strategy<Value = IpProtocol> {
    any::<u8>().prop_map(IpProtocol::from)
}

fn ipv6_repr(max_payload: usize) -> impl Strategy<Value = Ipv6Repr> {
    (
        any::<u128>(),
        any::<u128>(),
        protocol(),
        0..=max_payload,
        any::<u8>(),
        any::<u8>(),
        0..=ipv6::MAX_FLOW_LABEL,
    )
        .prop_map(
            |(src, dst, next_header, payload_len, hop_limit, traffic_class, flow_label)| Ipv6Repr {
                src: Ipv6Addr::from(src),
                dst: Ipv6Addr::from(dst),
                next_header,
                payload_len,
                hop_limit,
                traffic_class,
                flow_label,
            },
        )
}

/// A routing header with owned data: (next header, routing type,
/// segments left, data). Type 0 data is the address list; other types have
/// `8k + 4` bytes of data.
fn routing() -> impl Strategy<Value = (IpProtocol, u8, u8, Vec<u8>)> {
    prop_oneof![
        (
            protocol(),
            Just(0u8),
            any::<u8>(),
            (0usize..6).prop_flat_map(|n| proptest::collection::vec(any::<u8>(), n * 16))
        ),
        (
            protocol(),
            1u8..=255,
            any::<u8>(),
            (0usize..6).prop_flat_map(|k| proptest::collection::vec(any::<u8>(), 8 * k + 4))
        ),
    ]
}

fn routing_repr<'a>(
    (next_header, routing_type, segments_left, data): &'a (IpProtocol, u8, u8, Vec<u8>),
) -> Ipv6RoutingRepr<'a> {
    if *routing_type == 0 {
        Ipv6RoutingRepr::Type0 {
            next_header: *next_header,
            segments_left: *segments_left,
            addresses: AddressList::new(data).unwrap(),
        }
    } else {
        Ipv6RoutingRepr::Other {
            next_header: *next_header,
            routing_type: *routing_type,
            segments_left: *segments_left,
            data,
        }
    }
}

fn fragment_repr() -> impl Strategy<Value = Ipv6FragmentRepr> {
    (protocol(), 0usize..=0x1fff, any::<bool>(), any::<u32>()).prop_map(
        |(next_header, units, more_frags, ident)| Ipv6FragmentRepr {
            next_header,
            frag_offset: units * 8,
            more_frags,
            ident,
        },
    )
}

// ---------------------------------------------------------------------------
// Emitters.

fn emit_ipv6(repr: &Ipv6Repr) -> Vec<u8> {
    let mut buf = vec![0xa5; repr.buffer_len()];
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]))
        .unwrap();
    buf
}

fn emit_options_header(next_header: IpProtocol, options: &[Ipv6Option]) -> Vec<u8> {
    let builder = Ipv6OptionsBuilder {
        next_header,
        options,
    };
    let mut buf = vec![0xa5; builder.buffer_len().unwrap()];
    assert_eq!(builder.emit(&mut buf), Ok(buf.len()));
    buf
}

fn emit_routing(repr: &Ipv6RoutingRepr) -> Vec<u8> {
    let mut buf = vec![0xa5; repr.buffer_len()];
    repr.emit(&mut Ipv6RoutingHeader::new_unchecked(&mut buf[..]))
        .unwrap();
    buf
}

fn emit_fragment(repr: &Ipv6FragmentRepr) -> Vec<u8> {
    let mut buf = vec![0xa5; repr.buffer_len()];
    repr.emit(&mut Ipv6FragmentHeader::new_unchecked(&mut buf[..]))
        .unwrap();
    buf
}

/// Offsets of the length byte of every option (not Pad1) in a well-formed
/// options area.
fn option_length_offsets(area: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut pos = 0;
    while pos < area.len() {
        let view = Ipv6OptionView::new_checked(&area[pos..]).unwrap();
        if view.option_type() != ipv6_option::PAD1 {
            offsets.push(pos + 1);
        }
        pos += view.total_len();
    }
    offsets
}

// ---------------------------------------------------------------------------
// Parsers that exercise every accessor on success and must never panic.

fn parse_options_area(area: &[u8]) {
    // The iterator is fused after an error, so flatten ends.
    for option in ipv6_option::iter_options(area).flatten() {
        let _ = (option.buffer_len(), option.unrecognized_action());
    }
}

fn parse_options_header(bytes: &[u8]) {
    if let Ok(header) = Ipv6ExtHeader::new_checked(bytes) {
        let _ = (header.next_header(), header.header_len());
        parse_options_area(header.options());
        if let Ok(repr) = Ipv6OptionsRepr::parse(&header) {
            assert!(repr.iter_options().all(|o| o.is_ok()));
            assert_eq!(repr.buffer_len(), header.header_len());
        }
    }
}

fn parse_routing(bytes: &[u8]) {
    if let Ok(header) = Ipv6RoutingHeader::new_checked(bytes) {
        let _ = (header.routing_type(), header.segments_left(), header.data());
        if let Ok(Ipv6RoutingRepr::Type0 { addresses, .. }) = Ipv6RoutingRepr::parse(&header) {
            assert_eq!(addresses.iter().count(), addresses.len());
        }
    }
}

fn parse_fragment(bytes: &[u8]) {
    if let Ok(header) = Ipv6FragmentHeader::new_checked(bytes) {
        let repr = Ipv6FragmentRepr::parse(&header).unwrap();
        assert_eq!(repr.frag_offset % 8, 0);
        let _ = header.payload();
    }
}

/// Parses a packet and, header by header, its whole extension chain; returns
/// where the chain ended if every header parsed (and it did not end at an
/// authentication header, which this walk does not follow).
fn parse_packet(bytes: &[u8]) -> Option<ChainEnd> {
    let packet = Ipv6Packet::new_checked(bytes).ok()?;
    let repr = Ipv6Repr::parse(&packet).expect("a checked packet parses");
    let payload = packet.payload();
    assert_eq!(payload.len(), repr.payload_len);
    let walked = walk_chain(payload, repr.next_header);

    let mut protocol = repr.next_header;
    let mut offset = 0;
    for index in 0..=MAX_CHAIN_HEADERS {
        let rest = &payload[offset..];
        parse_options_header(rest);
        parse_routing(rest);
        parse_fragment(rest);
        let (next, len) = match protocol {
            IpProtocol::HopByHop if index > 0 => return None,
            IpProtocol::HopByHop | IpProtocol::Ipv6Opts => {
                let header = Ipv6ExtHeader::new_checked(rest).ok()?;
                let options = Ipv6OptionsRepr::parse(&header).ok()?;
                (options.next_header, options.buffer_len())
            }
            IpProtocol::Ipv6Route => {
                let header = Ipv6RoutingHeader::new_checked(rest).ok()?;
                let routing = Ipv6RoutingRepr::parse(&header).ok()?;
                (routing.next_header(), routing.buffer_len())
            }
            IpProtocol::Ipv6Frag => {
                let header = Ipv6FragmentHeader::new_checked(rest).ok()?;
                let fragment = Ipv6FragmentRepr::parse(&header).ok()?;
                if fragment.frag_offset != 0 {
                    break;
                }
                (fragment.next_header, fragment.buffer_len())
            }
            // Mobility, HIP and Shim6: stepped over by their length field.
            IpProtocol::Unknown(135 | 139 | 140) => {
                let header = Ipv6ExtHeader::new_checked(rest).ok()?;
                (header.next_header(), header.header_len())
            }
            IpProtocol::Unknown(51) => return None,
            _ => break,
        };
        if index == MAX_CHAIN_HEADERS {
            return None;
        }
        protocol = next;
        offset += len;
    }
    let end = ChainEnd { protocol, offset };
    assert_eq!(
        walked,
        Ok(end),
        "walk_chain disagrees with a header-by-header walk"
    );
    Some(end)
}

/// A packet with hop-by-hop, routing, fragment and destination options
/// headers before `payload`; returns it and the offsets of every length
/// field (the two bytes of payload length count as one, at offset 4).
fn chain_packet(
    base: &Ipv6Repr,
    hop_by_hop: &[Ipv6Option],
    routing: &Ipv6RoutingRepr,
    fragment: &Ipv6FragmentRepr,
    destination: &[Ipv6Option],
    payload: &[u8],
) -> (Vec<u8>, Vec<usize>) {
    let hbh = emit_options_header(IpProtocol::Ipv6Route, hop_by_hop);
    let mut routing = *routing;
    match &mut routing {
        Ipv6RoutingRepr::Type0 { next_header, .. } | Ipv6RoutingRepr::Other { next_header, .. } => {
            *next_header = IpProtocol::Ipv6Frag
        }
    }
    let rt = emit_routing(&routing);
    let frag = emit_fragment(&Ipv6FragmentRepr {
        next_header: IpProtocol::Ipv6Opts,
        ..*fragment
    });
    let dst = emit_options_header(IpProtocol::Udp, destination);

    let mut lengths = vec![4];
    let mut body = Vec::new();
    // (header, has a length byte, has options)
    let headers = [
        (&hbh, true, true),
        (&rt, true, false),
        (&frag, false, false),
        (&dst, true, true),
    ];
    for (header, has_length, has_options) in headers {
        let start = ipv6::HEADER_LEN + body.len();
        if has_length {
            lengths.push(start + 1);
        }
        if has_options {
            lengths.extend(
                option_length_offsets(&header[2..])
                    .into_iter()
                    .map(|o| start + 2 + o),
            );
        }
        body.extend_from_slice(header);
    }
    body.extend_from_slice(payload);
    let repr = Ipv6Repr {
        next_header: IpProtocol::HopByHop,
        payload_len: body.len(),
        ..*base
    };
    let mut packet = emit_ipv6(&repr);
    packet[ipv6::HEADER_LEN..].copy_from_slice(&body);
    (packet, lengths)
}

// ---------------------------------------------------------------------------
// Round trips.

proptest! {
    #[test]
    fn ipv6_repr_round_trip(repr in ipv6_repr(1500)) {
        let buf = emit_ipv6(&repr);
        let packet = Ipv6Packet::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(Ipv6Repr::parse(&packet), Ok(repr));
        prop_assert_eq!(packet.payload().len(), repr.payload_len);
    }

    #[test]
    fn options_round_trip(list in options()) {
        let options: Vec<_> = list.iter().map(OwnedOption::borrow).collect();
        let len = ipv6_option::options_area_len(&options).unwrap();
        prop_assert_eq!((len + ipv6_option::AREA_OFFSET) % 8, 0);
        let mut area = vec![0xa5; len];
        prop_assert_eq!(ipv6_option::emit_options(&options, &mut area), Ok(len));
        let parsed: Vec<_> = ipv6_option::iter_options(&area)
            .collect::<Result<_, _>>()
            .unwrap();
        let strip = |o: &[Ipv6Option<'_>]| -> Vec<String> {
            o.iter().filter(|o| !o.is_padding()).map(|o| format!("{o:?}")).collect()
        };
        prop_assert_eq!(strip(&parsed), strip(&options));
        // Every option that needs alignment got it (header coordinates).
        let mut pos = ipv6_option::AREA_OFFSET;
        for option in &parsed {
            let (x, y) = option.alignment();
            prop_assert_eq!(pos % x, y);
            pos += option.buffer_len();
        }
    }

    #[test]
    fn single_option_round_trip(owned in option()) {
        let option = owned.borrow();
        let mut buf = vec![0xa5; option.buffer_len() + 3];
        prop_assert_eq!(option.emit(&mut buf), Ok(option.buffer_len()));
        let view = Ipv6OptionView::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(view.total_len(), option.buffer_len());
        prop_assert_eq!(Ipv6Option::parse(&view), Ok(option));
    }

    #[test]
    fn options_repr_round_trip(next_header in protocol(), list in options()) {
        let options: Vec<_> = list.iter().map(OwnedOption::borrow).collect();
        let built = emit_options_header(next_header, &options);
        let area = &built[2..];
        let repr = Ipv6OptionsRepr {
            next_header,
            length: u8::try_from(built.len() / 8 - 1).unwrap(),
            options: area,
        };
        let mut buf = vec![0xa5; repr.buffer_len()];
        repr.emit(&mut Ipv6ExtHeader::new_unchecked(&mut buf[..])).unwrap();
        prop_assert_eq!(&buf, &built);
        let header = Ipv6ExtHeader::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(Ipv6OptionsRepr::parse(&header), Ok(repr));
    }

    #[test]
    fn routing_repr_round_trip(owned in routing()) {
        let repr = routing_repr(&owned);
        let buf = emit_routing(&repr);
        prop_assert_eq!(buf.len() % 8, 0);
        let header = Ipv6RoutingHeader::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(header.header_len(), buf.len());
        prop_assert_eq!(Ipv6RoutingRepr::parse(&header), Ok(repr));
    }

    #[test]
    fn fragment_repr_round_trip(repr in fragment_repr()) {
        let buf = emit_fragment(&repr);
        let header = Ipv6FragmentHeader::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(Ipv6FragmentRepr::parse(&header), Ok(repr));
    }

    #[test]
    fn chain_round_trip(
        base in ipv6_repr(0),
        hbh in options(),
        rt in routing(),
        frag in fragment_repr(),
        dst in options(),
        payload in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let hbh: Vec<_> = hbh.iter().map(OwnedOption::borrow).collect();
        let dst: Vec<_> = dst.iter().map(OwnedOption::borrow).collect();
        let frag = Ipv6FragmentRepr { frag_offset: 0, ..frag };
        let (packet, _) = chain_packet(&base, &hbh, &routing_repr(&rt), &frag, &dst, &payload);
        let end = parse_packet(&packet).expect("a well-formed chain walks");
        prop_assert_eq!(end.protocol, IpProtocol::Udp);
        prop_assert_eq!(packet.len() - ipv6::HEADER_LEN - end.offset, payload.len());
    }
}

// ---------------------------------------------------------------------------
// Truncation at every length, lying length fields, arbitrary bytes.

proptest! {
    #[test]
    fn truncated_packets_do_not_panic(
        base in ipv6_repr(0),
        hbh in options(),
        rt in routing(),
        frag in fragment_repr(),
        dst in options(),
        payload in proptest::collection::vec(any::<u8>(), 0..16),
    ) {
        let hbh: Vec<_> = hbh.iter().map(OwnedOption::borrow).collect();
        let dst: Vec<_> = dst.iter().map(OwnedOption::borrow).collect();
        let (packet, _) = chain_packet(&base, &hbh, &routing_repr(&rt), &frag, &dst, &payload);
        for len in 0..packet.len() {
            let cut = &packet[..len];
            prop_assert!(parse_packet(cut).is_none());
            if len >= ipv6::HEADER_LEN {
                let rest = &cut[ipv6::HEADER_LEN..];
                parse_options_header(rest);
                parse_options_area(rest);
                parse_routing(rest);
                parse_fragment(rest);
                let _ = walk_chain(rest, IpProtocol::HopByHop);
            }
        }
    }

    #[test]
    fn truncated_headers_do_not_panic(
        list in options(),
        rt in routing(),
        frag in fragment_repr(),
    ) {
        let options: Vec<_> = list.iter().map(OwnedOption::borrow).collect();
        let opts = emit_options_header(IpProtocol::Udp, &options);
        for len in 0..opts.len() {
            prop_assert!(Ipv6ExtHeader::new_checked(&opts[..len]).is_err());
            parse_options_header(&opts[..len]);
            parse_options_area(&opts[2.min(len)..len]);
        }
        let routing = emit_routing(&routing_repr(&rt));
        for len in 0..routing.len() {
            prop_assert!(Ipv6RoutingHeader::new_checked(&routing[..len]).is_err());
        }
        let fragment = emit_fragment(&frag);
        for len in 0..fragment.len() {
            prop_assert!(Ipv6FragmentHeader::new_checked(&fragment[..len]).is_err());
        }
    }

    #[test]
    fn lying_length_fields_do_not_panic(
        base in ipv6_repr(0),
        hbh in options(),
        rt in routing(),
        frag in fragment_repr(),
        dst in options(),
        payload in proptest::collection::vec(any::<u8>(), 0..16),
        values in proptest::collection::vec(any::<u16>(), 1..8),
    ) {
        let hbh: Vec<_> = hbh.iter().map(OwnedOption::borrow).collect();
        let dst: Vec<_> = dst.iter().map(OwnedOption::borrow).collect();
        let (packet, lengths) =
            chain_packet(&base, &hbh, &routing_repr(&rt), &frag, &dst, &payload);
        // Each length field alone, then all of them at once.
        for (i, &at) in lengths.iter().enumerate() {
            let mut bad = packet.clone();
            let value = values[i % values.len()];
            if at == 4 {
                bad[4..6].copy_from_slice(&value.to_be_bytes());
            } else {
                bad[at] = value as u8;
            }
            parse_packet(&bad);
            parse_options_header(&bad[ipv6::HEADER_LEN..]);
            let _ = walk_chain(&bad[ipv6::HEADER_LEN..], IpProtocol::HopByHop);
        }
        let mut bad = packet.clone();
        for (i, &at) in lengths.iter().enumerate() {
            bad[at] = (values[i % values.len()] >> 8) as u8;
        }
        parse_packet(&bad);
    }

    #[test]
    fn arbitrary_bytes_do_not_panic(
        mut bytes in proptest::collection::vec(any::<u8>(), 0..400),
        first in protocol(),
    ) {
        parse_packet(&bytes);
        parse_options_header(&bytes);
        parse_options_area(&bytes);
        parse_routing(&bytes);
        parse_fragment(&bytes);
        let _ = walk_chain(&bytes, first);
        // Again with a plausible IPv6 header so parsing gets further.
        if bytes.len() >= ipv6::HEADER_LEN {
            bytes[0] = 0x60 | (bytes[0] & 0x0f);
            let payload_len = (bytes.len() - ipv6::HEADER_LEN) as u16;
            bytes[4..6].copy_from_slice(&payload_len.to_be_bytes());
            bytes[6] = [0, 43, 44, 60, 51, 135][usize::from(bytes[6]) % 6];
            parse_packet(&bytes);
        }
    }

    #[test]
    fn arbitrary_headers_behind_valid_lengths_do_not_panic(
        mut bytes in proptest::collection::vec(any::<u8>(), 8..200),
        hdr_ext_len in 0u8..24,
    ) {
        // Keep the length field honest so the random body reaches the option
        // iterator and the routing parser.
        let len = ((usize::from(hdr_ext_len) + 1) * 8).min(bytes.len() / 8 * 8);
        bytes[1] = (len / 8 - 1) as u8;
        parse_options_header(&bytes);
        parse_routing(&bytes);
        bytes[2] = 0;
        parse_routing(&bytes);
    }
}
