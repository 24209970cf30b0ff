//! Property tests for ICMPv6, Neighbor Discovery and MLD.
//!
//! For every `Icmpv6Repr` variant: an arbitrary repr emits and parses back
//! to itself with a verified checksum. For every message type: the emitted
//! message cut at every length, with every length or count field overwritten,
//! and arbitrary bytes under that type, all parse without panicking; whatever
//! does parse re-emits to a message that parses to the same repr.

use core::net::Ipv6Addr;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use wire::ethernet::EthernetAddress;
use wire::icmpv6::{
    DstUnreachableReason, Icmpv6Message, Icmpv6Packet, Icmpv6Repr, ParamProblemReason,
    TimeExceededReason,
};
use wire::mld::{MldAddressRecord, MldRecordType, MldRepr, MldSources};
use wire::ndisc::{NdiscOption, NdiscOptions, NdiscRepr, NeighborFlags, RouterFlags};
use wire::ChecksumMode;

const SRC: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0x0200, 0, 0, 1);
const DST: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// Every type this crate models, and two it does not.
const MESSAGE_TYPES: [u8; 17] = [
    1, 2, 3, 4, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 143, 0, 200,
];

fn emit(repr: &Icmpv6Repr, mode: ChecksumMode) -> Vec<u8> {
    let mut buf = vec![0xa5; repr.buffer_len()];
    repr.emit(
        &mut Icmpv6Packet::new_unchecked(&mut buf[..]),
        &SRC,
        &DST,
        mode,
    )
    .expect("a valid repr emits");
    buf
}

fn fill_checksum(buf: &mut [u8]) {
    if buf.len() >= 4 {
        Icmpv6Packet::new_unchecked(buf).fill_checksum(&SRC, &DST);
    }
}

/// Reads everything a consumer could read from a parsed repr.
fn walk(repr: &Icmpv6Repr) -> usize {
    let mut seen = 0;
    match repr {
        Icmpv6Repr::Ndisc(nd) => {
            for option in nd.options() {
                seen += match option {
                    Ok(option) => option.buffer_len(),
                    Err(_) => 1,
                };
            }
            let options = nd.options();
            seen += usize::from(options.source_link_layer_addr().is_some());
            seen += usize::from(options.target_link_layer_addr().is_some());
            seen += usize::from(options.mtu().is_some());
        }
        Icmpv6Repr::Mld(MldRepr::QueryV2 { sources, .. }) => {
            seen += sources.iter().count();
            seen += usize::from(sources.get(sources.len()).is_some());
            seen += usize::from(sources.get(usize::MAX).is_some());
        }
        Icmpv6Repr::Mld(MldRepr::ReportV2 { records }) => {
            for record in records.iter() {
                seen += record.sources.iter().count() + record.aux_data.len();
                seen += usize::from(u8::from(record.record_type));
            }
        }
        _ => {}
    }
    seen
}

/// Parses `buf` every way there is; must never panic. What parses must
/// re-emit to a message that parses to the same repr.
fn exercise(buf: &[u8]) {
    let packet = Icmpv6Packet::new_unchecked(buf);
    // Accessors are total even on an unchecked buffer.
    let _ = (
        packet.msg_type(),
        packet.msg_code(),
        packet.checksum(),
        packet.echo_ident(),
        packet.echo_seq_no(),
        packet.mtu(),
        packet.pointer(),
        packet.payload().len(),
        packet.target_addr(),
        packet.dest_addr(),
        packet.router_flags(),
        packet.neighbor_flags(),
        packet.reachable_time(),
        packet.retrans_time(),
    );
    let _ = (
        packet.max_resp_code(),
        packet.mcast_addr(),
        packet.num_sources(),
        packet.num_records(),
        packet.robustness_variable(),
        packet.query_interval_code(),
        packet.suppress_router_processing(),
    );
    let _ = packet.ndisc_options().iter().count();
    let _ = NdiscOptions::new(buf).iter().count();

    let Ok(packet) = Icmpv6Packet::new_checked(buf) else {
        return;
    };
    for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
        if let Ok(repr) = Icmpv6Repr::parse(&packet, &SRC, &DST, mode) {
            walk(&repr);
            assert!(repr.buffer_len() <= buf.len());
            let out = emit(&repr, mode);
            let again =
                Icmpv6Packet::new_checked(&out[..]).expect("emitted message is long enough");
            assert_eq!(Icmpv6Repr::parse(&again, &SRC, &DST, mode), Ok(repr));
        }
    }
}

/// (offset, width) of every length or count field in a message this test
/// emitted (so its structure is known to be sound).
fn length_fields(buf: &[u8]) -> Vec<(usize, usize)> {
    let mut fields = Vec::new();
    let u16_at = |at: usize| usize::from(u16::from_be_bytes([buf[at], buf[at + 1]]));
    match buf[0] {
        133..=137 => {
            let mut at = Icmpv6Message::from(buf[0]).fixed_len();
            while at < buf.len() {
                fields.push((at + 1, 1));
                at += usize::from(buf[at + 1]) * 8;
            }
        }
        130 if buf.len() >= 28 => fields.push((26, 2)),
        143 => {
            fields.push((6, 2));
            let mut at = 8;
            for _ in 0..u16_at(6) {
                fields.push((at + 1, 1));
                fields.push((at + 2, 2));
                at += 20 + u16_at(at + 2) * 16 + usize::from(buf[at + 1]) * 4;
            }
        }
        _ => {}
    }
    fields
}

fn overwrite(buf: &mut [u8], (offset, width): (usize, usize), value: u16) {
    if width == 1 {
        buf[offset] = value as u8;
    } else {
        buf[offset..offset + 2].copy_from_slice(&value.to_be_bytes());
    }
}

/// (a) every truncation and (b) every length/count field overwritten, one
/// at a time with edge and arbitrary values, then all at once.
fn check_robust(buf: &[u8], values: &[u16]) {
    for len in 0..=buf.len() {
        exercise(&buf[..len]);
    }
    let fields = length_fields(buf);
    for (i, &field) in fields.iter().enumerate() {
        for value in [0, 1, 2, 0x7f, 0xff, 0x100, 0xffff, values[i % values.len()]] {
            let mut copy = buf.to_vec();
            overwrite(&mut copy, field, value);
            exercise(&copy);
            fill_checksum(&mut copy);
            exercise(&copy);
        }
    }
    let mut copy = buf.to_vec();
    for (i, &field) in fields.iter().enumerate() {
        overwrite(&mut copy, field, values[i % values.len()]);
    }
    fill_checksum(&mut copy);
    exercise(&copy);
}

/// Emits, checks the checksum, parses back to the same repr, then runs the
/// robustness checks on the emitted bytes.
fn round_trip(repr: Icmpv6Repr, values: &[u16]) {
    let buf = emit(&repr, ChecksumMode::Full);
    let packet = Icmpv6Packet::new_checked(&buf[..]).unwrap();
    assert!(packet.verify_checksum(&SRC, &DST));
    assert_eq!(packet.msg_type(), repr.msg_type());
    assert_eq!(
        Icmpv6Repr::parse(&packet, &SRC, &DST, ChecksumMode::Full),
        Ok(repr)
    );
    // A flipped bit anywhere fails the checksum.
    let mut corrupt = buf.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x01;
    let packet = Icmpv6Packet::new_checked(&corrupt[..]).unwrap();
    assert_eq!(
        Icmpv6Repr::parse(&packet, &SRC, &DST, ChecksumMode::Full),
        Err(wire::Error::Checksum)
    );
    check_robust(&buf, values);
}

// --- strategies -------------------------------------------------------------

fn arb_addr() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(Ipv6Addr::from)
}

fn arb_non_multicast_addr() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(|mut b| {
        if b[0] == 0xff {
            b[0] = 0x20;
        }
        Ipv6Addr::from(b)
    })
}

fn arb_link_local_addr() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(|mut b| {
        b[0] = 0xfe;
        b[1] = 0x80 | (b[1] & 0x3f);
        Ipv6Addr::from(b)
    })
}

fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
    vec(any::<u8>(), 0..300)
}

fn arb_values() -> impl Strategy<Value = Vec<u16>> {
    vec(any::<u16>(), 1..8)
}

/// Byte strings of `units * 8 + extra` bytes: option data that needs no
/// padding, so it parses back unchanged.
fn arb_unpadded(extra: usize) -> impl Strategy<Value = Vec<u8>> {
    (0usize..6).prop_flat_map(move |units| vec(any::<u8>(), units * 8 + extra))
}

/// An ND option owning its data.
#[derive(Debug, Clone)]
enum OwnedOption {
    SourceLinkLayerAddr([u8; 6]),
    TargetLinkLayerAddr([u8; 6]),
    PrefixInformation {
        prefix_len: u8,
        on_link: bool,
        autonomous: bool,
        valid_lifetime: u32,
        preferred_lifetime: u32,
        prefix: Ipv6Addr,
    },
    RedirectedHeader(Vec<u8>),
    Mtu(u32),
    Unknown(u8, Vec<u8>),
}

impl OwnedOption {
    fn borrow(&self) -> NdiscOption<'_> {
        match self {
            Self::SourceLinkLayerAddr(a) => NdiscOption::SourceLinkLayerAddr(EthernetAddress(*a)),
            Self::TargetLinkLayerAddr(a) => NdiscOption::TargetLinkLayerAddr(EthernetAddress(*a)),
            Self::PrefixInformation {
                prefix_len,
                on_link,
                autonomous,
                valid_lifetime,
                preferred_lifetime,
                prefix,
            } => NdiscOption::PrefixInformation {
                prefix_len: *prefix_len,
                on_link: *on_link,
                autonomous: *autonomous,
                valid_lifetime: *valid_lifetime,
                preferred_lifetime: *preferred_lifetime,
                prefix: *prefix,
            },
            Self::RedirectedHeader(data) => NdiscOption::RedirectedHeader {
                header_and_data: data,
            },
            Self::Mtu(mtu) => NdiscOption::Mtu(*mtu),
            Self::Unknown(kind, data) => NdiscOption::Unknown { kind: *kind, data },
        }
    }
}

fn arb_option() -> impl Strategy<Value = OwnedOption> {
    prop_oneof![
        any::<[u8; 6]>().prop_map(OwnedOption::SourceLinkLayerAddr),
        any::<[u8; 6]>().prop_map(OwnedOption::TargetLinkLayerAddr),
        (
            any::<u8>(),
            any::<bool>(),
            any::<bool>(),
            any::<u32>(),
            any::<u32>(),
            arb_addr()
        )
            .prop_map(
                |(prefix_len, on_link, autonomous, valid_lifetime, preferred_lifetime, prefix)| {
                    OwnedOption::PrefixInformation {
                        prefix_len,
                        on_link,
                        autonomous,
                        valid_lifetime,
                        preferred_lifetime,
                        prefix,
                    }
                }
            ),
        arb_unpadded(0).prop_map(OwnedOption::RedirectedHeader),
        any::<u32>().prop_map(OwnedOption::Mtu),
        (prop_oneof![Just(0u8), 6u8..=255], arb_unpadded(6))
            .prop_map(|(kind, data)| OwnedOption::Unknown(kind, data)),
    ]
}

fn arb_options() -> impl Strategy<Value = Vec<OwnedOption>> {
    vec(arb_option(), 0..6)
}

fn borrow_options(owned: &[OwnedOption]) -> Vec<NdiscOption<'_>> {
    owned.iter().map(OwnedOption::borrow).collect()
}

/// An MLDv2 record owning its sources and auxiliary data.
#[derive(Debug, Clone)]
struct OwnedRecord {
    record_type: u8,
    group: Ipv6Addr,
    sources: Vec<Ipv6Addr>,
    aux_data: Vec<u8>,
}

fn arb_record() -> impl Strategy<Value = OwnedRecord> {
    (
        any::<u8>(),
        arb_addr(),
        vec(arb_addr(), 0..5),
        (0usize..4).prop_flat_map(|words| vec(any::<u8>(), words * 4)),
    )
        .prop_map(|(record_type, group, sources, aux_data)| OwnedRecord {
            record_type,
            group,
            sources,
            aux_data,
        })
}

fn borrow_records(owned: &[OwnedRecord]) -> Vec<MldAddressRecord<'_>> {
    owned
        .iter()
        .map(|r| MldAddressRecord {
            record_type: MldRecordType::from(r.record_type),
            group: r.group,
            sources: MldSources::from_list(&r.sources),
            aux_data: &r.aux_data,
        })
        .collect()
}

// --- round trips, truncation and lying fields, one per variant ---------------

proptest! {
    #[test]
    fn echo_request(ident: u16, seq_no: u16, data in arb_bytes(), values in arb_values()) {
        round_trip(Icmpv6Repr::EchoRequest { ident, seq_no, data: &data }, &values);
    }

    #[test]
    fn echo_reply(ident: u16, seq_no: u16, data in arb_bytes(), values in arb_values()) {
        round_trip(Icmpv6Repr::EchoReply { ident, seq_no, data: &data }, &values);
    }

    #[test]
    fn dst_unreachable(code: u8, invoking in arb_bytes(), values in arb_values()) {
        let reason = DstUnreachableReason::from(code);
        prop_assert_eq!(u8::from(reason), code);
        round_trip(Icmpv6Repr::DstUnreachable { reason, invoking: &invoking }, &values);
    }

    #[test]
    fn packet_too_big(mtu: u32, invoking in arb_bytes(), values in arb_values()) {
        round_trip(Icmpv6Repr::PacketTooBig { mtu, invoking: &invoking }, &values);
    }

    #[test]
    fn time_exceeded(code: u8, invoking in arb_bytes(), values in arb_values()) {
        let reason = TimeExceededReason::from(code);
        prop_assert_eq!(u8::from(reason), code);
        round_trip(Icmpv6Repr::TimeExceeded { reason, invoking: &invoking }, &values);
    }

    #[test]
    fn param_problem(code: u8, pointer: u32, invoking in arb_bytes(), values in arb_values()) {
        let reason = ParamProblemReason::from(code);
        prop_assert_eq!(u8::from(reason), code);
        round_trip(Icmpv6Repr::ParamProblem { reason, pointer, invoking: &invoking }, &values);
    }

    #[test]
    fn router_solicit(options in arb_options(), values in arb_values()) {
        let list = borrow_options(&options);
        let options = NdiscOptions::from_list(&list);
        round_trip(Icmpv6Repr::Ndisc(NdiscRepr::RouterSolicit { options }), &values);
    }

    #[test]
    fn router_advert(
        hop_limit: u8,
        managed: bool,
        other: bool,
        router_lifetime: u16,
        reachable_time: u32,
        retrans_time: u32,
        options in arb_options(),
        values in arb_values(),
    ) {
        let list = borrow_options(&options);
        let repr = NdiscRepr::RouterAdvert {
            hop_limit,
            flags: RouterFlags { managed, other },
            router_lifetime,
            reachable_time,
            retrans_time,
            options: NdiscOptions::from_list(&list),
        };
        round_trip(Icmpv6Repr::Ndisc(repr), &values);
    }

    #[test]
    fn neighbor_solicit(
        target in arb_non_multicast_addr(),
        options in arb_options(),
        values in arb_values(),
    ) {
        let list = borrow_options(&options);
        let repr = NdiscRepr::NeighborSolicit { target, options: NdiscOptions::from_list(&list) };
        round_trip(Icmpv6Repr::Ndisc(repr), &values);
    }

    #[test]
    fn neighbor_advert(
        router: bool,
        solicited: bool,
        override_: bool,
        target in arb_non_multicast_addr(),
        options in arb_options(),
        values in arb_values(),
    ) {
        let list = borrow_options(&options);
        let repr = NdiscRepr::NeighborAdvert {
            flags: NeighborFlags { router, solicited, override_ },
            target,
            options: NdiscOptions::from_list(&list),
        };
        round_trip(Icmpv6Repr::Ndisc(repr), &values);
    }

    #[test]
    fn redirect(
        router in arb_link_local_addr(),
        destination in arb_non_multicast_addr(),
        on_link: bool,
        options in arb_options(),
        values in arb_values(),
    ) {
        let list = borrow_options(&options);
        let target = if on_link { destination } else { router };
        let repr = NdiscRepr::Redirect {
            target,
            destination,
            options: NdiscOptions::from_list(&list),
        };
        round_trip(Icmpv6Repr::Ndisc(repr), &values);
    }

    #[test]
    fn mld_query_v1(max_response_delay: u16, group in arb_addr(), values in arb_values()) {
        round_trip(Icmpv6Repr::Mld(MldRepr::QueryV1 { max_response_delay, group }), &values);
    }

    #[test]
    fn mld_query_v2(
        max_resp_code: u16,
        group in arb_addr(),
        suppress_router_processing: bool,
        robustness_variable in 0u8..8,
        query_interval_code: u8,
        sources in vec(arb_addr(), 0..10),
        values in arb_values(),
    ) {
        let repr = MldRepr::QueryV2 {
            max_resp_code,
            group,
            suppress_router_processing,
            robustness_variable,
            query_interval_code,
            sources: MldSources::from_list(&sources),
        };
        round_trip(Icmpv6Repr::Mld(repr), &values);
    }

    #[test]
    fn mld_report_v1(group in arb_addr(), values in arb_values()) {
        round_trip(Icmpv6Repr::Mld(MldRepr::ReportV1 { group }), &values);
    }

    #[test]
    fn mld_done(group in arb_addr(), values in arb_values()) {
        round_trip(Icmpv6Repr::Mld(MldRepr::Done { group }), &values);
    }

    #[test]
    fn mld_report_v2(records in vec(arb_record(), 0..6), values in arb_values()) {
        let list = borrow_records(&records);
        round_trip(Icmpv6Repr::Mld(MldRepr::report_v2(&list)), &values);
    }

    // --- (c) arbitrary bytes ---------------------------------------------------

    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..600)) {
        exercise(&bytes);
    }

    #[test]
    fn arbitrary_bodies_of_every_type_never_panic(
        msg_type in select(&MESSAGE_TYPES[..]),
        code in prop_oneof![Just(0u8), any::<u8>()],
        body in vec(any::<u8>(), 0..600),
    ) {
        let mut buf = vec![msg_type, code, 0, 0];
        buf.extend_from_slice(&body);
        fill_checksum(&mut buf);
        exercise(&buf);
    }

    /// Raw option bytes with arbitrary lengths: the iterator ends, never
    /// panics, and never yields more items than there are 8-byte units.
    #[test]
    fn arbitrary_option_bytes_iterate_safely(bytes in vec(any::<u8>(), 0..300)) {
        let view = NdiscOptions::new(&bytes);
        let items = view.iter().count();
        prop_assert!(items <= bytes.len() / 8 + 1);
        let _ = view.check_lengths();
    }
}
