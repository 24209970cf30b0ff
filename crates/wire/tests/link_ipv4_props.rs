//! Property tests for the link and IPv4 formats: Ethernet, ARP, IPv4 (with
//! options) and ICMPv4.
//!
//! For every repr: arbitrary repr → emit → parse gives the repr back. For
//! every format, starting from a valid emitted packet: (a) every truncation
//! parses without panic, (b) overwriting the length-like fields with
//! arbitrary values parses without panic, (c) random bytes parse without
//! panic. Whenever a mangled packet does parse, its repr re-emits and
//! re-parses to itself, and every accessor of a checked view is safe.

use core::net::Ipv4Addr;

use proptest::collection::vec;
use proptest::prelude::*;
use wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, VlanTag};
use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4Packet, Icmpv4Repr, Icmpv4TimeExceeded};
use wire::ipv4::{Ipv4Option, Ipv4Options, Ipv4Packet, Ipv4Repr};
use wire::trace_option::TraceOption;
use wire::{ChecksumMode, IpProtocol};

const MODES: [ChecksumMode; 2] = [ChecksumMode::Full, ChecksumMode::Skip];

// ---------------------------------------------------------------- strategies

fn ethernet_addr() -> impl Strategy<Value = EthernetAddress> {
    any::<[u8; 6]>().prop_map(EthernetAddress)
}

fn ipv4_addr() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

fn vlan_tag() -> impl Strategy<Value = VlanTag> {
    (0u8..=7, any::<bool>(), 0u16..=0x0fff).prop_map(|(pcp, dei, vid)| VlanTag { pcp, dei, vid })
}

fn ethernet_repr() -> impl Strategy<Value = EthernetRepr> {
    (
        ethernet_addr(),
        ethernet_addr(),
        proptest::option::of(vlan_tag()),
        (0x0600u16..=0xffff).prop_map(EtherType::from),
    )
        .prop_map(|(dst, src, vlan, ethertype)| EthernetRepr {
            dst,
            src,
            vlan,
            ethertype,
        })
        // An untagged frame cannot say 0x8100: it would read back as tagged.
        .prop_filter("untagged 802.1Q type", |r| {
            r.vlan.is_some() || r.ethertype != EtherType::Vlan
        })
}

fn arp_repr() -> impl Strategy<Value = ArpRepr> {
    (
        any::<u16>().prop_map(ArpOperation::from),
        ethernet_addr(),
        ipv4_addr(),
        ethernet_addr(),
        ipv4_addr(),
    )
        .prop_map(|(operation, sha, spa, tha, tpa)| ArpRepr::EthernetIpv4 {
            operation,
            source_hardware_addr: sha,
            source_protocol_addr: spa,
            target_hardware_addr: tha,
            target_protocol_addr: tpa,
        })
}

/// An option as owned data, turned into a borrowed [`Ipv4Option`] later.
#[derive(Debug, Clone)]
enum OptionSpec {
    Nop,
    Trace(u32),
    Unknown(u8, Vec<u8>),
}

fn option_spec() -> impl Strategy<Value = OptionSpec> {
    prop_oneof![
        Just(OptionSpec::Nop),
        any::<u32>().prop_map(OptionSpec::Trace),
        (
            any::<u8>().prop_filter("kind this crate interprets", |k| ![0, 1, 0x9e].contains(k)),
            vec(any::<u8>(), 0..12),
        )
            .prop_map(|(kind, data)| OptionSpec::Unknown(kind, data)),
    ]
}

fn build_options(specs: &[OptionSpec], end_of_list: bool) -> wire::Result<Ipv4Options> {
    let mut options: Vec<Ipv4Option<'_>> = specs
        .iter()
        .map(|spec| match spec {
            OptionSpec::Nop => Ipv4Option::NoOperation,
            OptionSpec::Trace(flow) => Ipv4Option::Trace(TraceOption { flow: *flow }),
            OptionSpec::Unknown(kind, data) => Ipv4Option::Unknown { kind: *kind, data },
        })
        .collect();
    if end_of_list {
        options.push(Ipv4Option::EndOfList);
    }
    Ipv4Options::from_options(&options)
}

/// Valid option areas: built from options (with or without an end-of-list),
/// or built with an end-of-list followed by arbitrary padding bytes.
fn ipv4_options() -> impl Strategy<Value = Ipv4Options> {
    let built = (vec(option_spec(), 0..6), any::<bool>())
        .prop_filter_map("options over 40 bytes", |(specs, eol)| {
            build_options(&specs, eol).ok()
        });
    let garbage_after_end = (vec(option_spec(), 0..4), vec(any::<u8>(), 40)).prop_filter_map(
        "options over 40 bytes",
        |(specs, garbage)| {
            let options = build_options(&specs, true).ok()?;
            let end: usize = options
                .iter()
                .take_while(|o| *o != Ipv4Option::EndOfList)
                .map(|o| o.buffer_len())
                .sum::<usize>()
                + 1;
            let mut area = options.as_bytes().to_vec();
            let len = area.len();
            area[end..].copy_from_slice(&garbage[..len - end]);
            Some(Ipv4Options::parse(&area).expect("padding after end-of-list is not read"))
        },
    );
    prop_oneof![
        1 => Just(Ipv4Options::EMPTY),
        1 => any::<u32>().prop_map(|flow| Ipv4Options::with_trace(TraceOption { flow })),
        3 => built,
        1 => garbage_after_end,
    ]
}

fn ipv4_repr() -> impl Strategy<Value = Ipv4Repr> {
    (
        (
            ipv4_addr(),
            ipv4_addr(),
            any::<u8>().prop_map(IpProtocol::from),
        ),
        (any::<u8>(), any::<u16>(), any::<bool>(), any::<bool>()),
        (
            (0u16..=0x1fff).prop_map(|units| units * 8),
            any::<u8>(),
            0usize..200,
        ),
        ipv4_options(),
    )
        .prop_map(
            |(
                (src, dst, protocol),
                (dscp_ecn, ident, dont_frag, more_frags),
                (frag_offset, ttl, payload_len),
                options,
            )| Ipv4Repr {
                src,
                dst,
                protocol,
                dscp_ecn,
                ident,
                dont_frag,
                more_frags,
                frag_offset,
                ttl,
                payload_len,
                options,
            },
        )
}

/// An ICMPv4 message as owned fields; [`IcmpSpec::repr`] borrows the data.
#[derive(Debug, Clone)]
struct IcmpSpec {
    kind: u8,
    a: u16,
    b: u16,
    code: u8,
    data: Vec<u8>,
}

impl IcmpSpec {
    fn repr(&self) -> Icmpv4Repr<'_> {
        let data = &self.data[..];
        match self.kind {
            0 => Icmpv4Repr::EchoRequest {
                ident: self.a,
                seq_no: self.b,
                data,
            },
            1 => Icmpv4Repr::EchoReply {
                ident: self.a,
                seq_no: self.b,
                data,
            },
            2 => Icmpv4Repr::DstUnreachable {
                reason: Icmpv4DstUnreachable::from(self.code),
                next_hop_mtu: self.b,
                invoking: data,
            },
            3 => Icmpv4Repr::TimeExceeded {
                reason: Icmpv4TimeExceeded::from(self.code),
                invoking: data,
            },
            _ => Icmpv4Repr::ParamProblem {
                pointer: self.code,
                invoking: data,
            },
        }
    }
}

fn icmp_spec() -> impl Strategy<Value = IcmpSpec> {
    (
        0u8..5,
        any::<u16>(),
        any::<u16>(),
        any::<u8>(),
        vec(any::<u8>(), 0..80),
    )
        .prop_map(|(kind, a, b, code, data)| IcmpSpec {
            kind,
            a,
            b,
            code,
            data,
        })
}

// ----------------------------------------------------- emit and check helpers

fn emit_ethernet(repr: &EthernetRepr, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len(payload.len())];
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    repr.emit(&mut frame).expect("valid repr emits");
    frame.payload_mut().copy_from_slice(payload);
    buf
}

fn emit_arp(repr: &ArpRepr) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut ArpPacket::new_unchecked(&mut buf[..]))
        .expect("valid repr emits");
    buf
}

fn emit_ipv4(repr: &Ipv4Repr, mode: ChecksumMode) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len()];
    let mut packet = Ipv4Packet::new_unchecked(&mut buf[..]);
    repr.emit(&mut packet, mode).expect("valid repr emits");
    for (i, byte) in packet.payload_mut().iter_mut().enumerate() {
        *byte = i as u8;
    }
    buf
}

fn emit_icmp(repr: &Icmpv4Repr<'_>, mode: ChecksumMode) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(&mut Icmpv4Packet::new_unchecked(&mut buf[..]), mode)
        .expect("valid repr emits");
    buf
}

/// Parses any bytes as an Ethernet frame; on success every accessor is
/// safe and the repr re-emits to itself.
fn check_ethernet(bytes: &[u8]) {
    let Ok(frame) = EthernetFrame::new_checked(bytes) else {
        return;
    };
    let _ = (
        frame.dst_addr(),
        frame.src_addr(),
        frame.vlan_tag(),
        frame.ethertype(),
        frame.payload(),
    );
    if let Ok(repr) = EthernetRepr::parse(&frame) {
        let again = emit_ethernet(&repr, frame.payload());
        assert_eq!(again, bytes);
        assert_eq!(
            EthernetRepr::parse(&EthernetFrame::new_checked(&again[..]).unwrap()),
            Ok(repr)
        );
    }
}

fn check_arp(bytes: &[u8]) {
    let Ok(packet) = ArpPacket::new_checked(bytes) else {
        return;
    };
    let _ = (
        packet.hardware_type(),
        packet.protocol_type(),
        packet.operation(),
        packet.source_hardware_addr(),
        packet.source_protocol_addr(),
        packet.target_hardware_addr(),
        packet.target_protocol_addr(),
    );
    if let Ok(repr) = ArpRepr::parse(&packet) {
        let again = emit_arp(&repr);
        assert_eq!(again, bytes[..repr.buffer_len()]);
    }
}

fn check_ipv4(bytes: &[u8]) {
    let Ok(packet) = Ipv4Packet::new_checked(bytes) else {
        return;
    };
    let _ = (
        packet.dscp_ecn(),
        packet.ident(),
        packet.dont_frag(),
        packet.more_frags(),
        packet.frag_offset(),
        packet.ttl(),
        packet.protocol(),
        packet.src_addr(),
        packet.dst_addr(),
        packet.options(),
        packet.payload(),
        packet.verify_checksum(),
    );
    for mode in MODES {
        if let Ok(repr) = Ipv4Repr::parse(&packet, mode) {
            assert_eq!(repr.header_len(), packet.header_len());
            assert_eq!(repr.payload_len, packet.payload().len());
            // Iterating validated options never panics.
            let _ = repr.options.iter().count();
            let mut again = vec![0; repr.buffer_len()];
            let mut view = Ipv4Packet::new_unchecked(&mut again[..]);
            repr.emit(&mut view, mode).expect("a parsed repr re-emits");
            view.payload_mut().copy_from_slice(packet.payload());
            let reparsed = Ipv4Repr::parse(&Ipv4Packet::new_checked(&again[..]).unwrap(), mode);
            assert_eq!(reparsed, Ok(repr));
        }
    }
}

fn check_icmp(bytes: &[u8]) {
    let Ok(packet) = Icmpv4Packet::new_checked(bytes) else {
        return;
    };
    let _ = (
        packet.msg_type(),
        packet.msg_code(),
        packet.echo_ident(),
        packet.echo_seq_no(),
        packet.next_hop_mtu(),
        packet.pointer(),
        packet.data(),
        packet.verify_checksum(),
    );
    for mode in MODES {
        if let Ok(repr) = Icmpv4Repr::parse(&packet, mode) {
            assert_eq!(repr.buffer_len(), bytes.len());
            let again = emit_icmp(&repr, mode);
            let reparsed = Icmpv4Repr::parse(&Icmpv4Packet::new_checked(&again[..]).unwrap(), mode);
            assert_eq!(reparsed, Ok(repr));
        }
    }
}

/// Every parser on the same bytes.
fn check_all(bytes: &[u8]) {
    check_ethernet(bytes);
    check_arp(bytes);
    check_ipv4(bytes);
    check_icmp(bytes);
}

/// Positions of the length bytes of the options in an IPv4 header.
fn option_length_offsets(options: &Ipv4Options) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut pos = 20;
    for option in options {
        if option.buffer_len() > 1 {
            offsets.push(pos + 1);
        }
        pos += option.buffer_len();
    }
    offsets
}

// ------------------------------------------------------------------ Ethernet

proptest! {
    #[test]
    fn ethernet_round_trip(repr in ethernet_repr(), payload in vec(any::<u8>(), 0..64)) {
        let bytes = emit_ethernet(&repr, &payload);
        let frame = EthernetFrame::new_checked(&bytes[..]).unwrap();
        prop_assert_eq!(EthernetRepr::parse(&frame), Ok(repr));
        prop_assert_eq!(frame.header_len(), repr.header_len());
        prop_assert_eq!(frame.payload(), &payload[..]);
    }

    #[test]
    fn ethernet_truncation(repr in ethernet_repr(), payload in vec(any::<u8>(), 0..32)) {
        let bytes = emit_ethernet(&repr, &payload);
        for len in 0..bytes.len() {
            check_all(&bytes[..len]);
            if len < repr.header_len() {
                prop_assert!(EthernetFrame::new_checked(&bytes[..len]).is_err());
            }
        }
    }

    #[test]
    fn ethernet_type_fields_mangled(
        repr in ethernet_repr(),
        payload in vec(any::<u8>(), 0..8),
        outer in prop_oneof![Just(0x8100u16), any::<u16>()],
        inner in any::<u16>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = emit_ethernet(&repr, &payload);
        bytes[12..14].copy_from_slice(&outer.to_be_bytes());
        if bytes.len() >= 18 {
            bytes[16..18].copy_from_slice(&inner.to_be_bytes());
        }
        check_all(&bytes);
        check_all(&bytes[..cut.index(bytes.len() + 1)]);
    }
}

// ----------------------------------------------------------------------- ARP

proptest! {
    #[test]
    fn arp_round_trip(repr in arp_repr(), padding in 0usize..20) {
        let mut bytes = emit_arp(&repr);
        bytes.resize(bytes.len() + padding, 0);
        let packet = ArpPacket::new_checked(&bytes[..]).unwrap();
        prop_assert_eq!(ArpRepr::parse(&packet), Ok(repr));
    }

    #[test]
    fn arp_truncation(repr in arp_repr()) {
        let bytes = emit_arp(&repr);
        for len in 0..bytes.len() {
            check_all(&bytes[..len]);
            prop_assert!(ArpPacket::new_checked(&bytes[..len]).is_err());
        }
    }

    #[test]
    fn arp_lengths_mangled(
        repr in arp_repr(),
        hlen in any::<u8>(),
        plen in any::<u8>(),
        extra in vec(any::<u8>(), 0..600),
    ) {
        let mut bytes = emit_arp(&repr);
        bytes[4] = hlen;
        bytes[5] = plen;
        check_all(&bytes);
        bytes.extend_from_slice(&extra);
        check_all(&bytes);
    }
}

// ---------------------------------------------------------------------- IPv4

proptest! {
    #[test]
    fn ipv4_round_trip(repr in ipv4_repr(), padding in 0usize..20) {
        for mode in MODES {
            let mut bytes = emit_ipv4(&repr, mode);
            let payload = bytes[repr.header_len()..].to_vec();
            // Trailing link padding is allowed and not part of the payload.
            bytes.resize(bytes.len() + padding, 0);
            let packet = Ipv4Packet::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(Ipv4Repr::parse(&packet, mode), Ok(repr));
            prop_assert_eq!(packet.payload(), &payload[..]);
            if mode == ChecksumMode::Full {
                prop_assert!(packet.verify_checksum());
            }
        }
    }

    #[test]
    fn ipv4_options_round_trip(options in ipv4_options()) {
        prop_assert_eq!(options.len() % 4, 0);
        prop_assert!(options.len() <= 40);
        prop_assert_eq!(Ipv4Options::parse(options.as_bytes()), Ok(options));
        // Rebuilding from the parsed items gives the same options, up to the
        // padding after an end-of-list.
        let items: Vec<_> = options.iter().collect();
        let rebuilt = Ipv4Options::from_options(&items).unwrap();
        prop_assert_eq!(rebuilt.iter().collect::<Vec<_>>(), items);
    }

    #[test]
    fn ipv4_truncation(repr in ipv4_repr()) {
        let bytes = emit_ipv4(&repr, ChecksumMode::Full);
        for len in 0..bytes.len() {
            check_all(&bytes[..len]);
            // The total length always claims more than a truncated buffer.
            prop_assert!(Ipv4Packet::new_checked(&bytes[..len]).is_err());
        }
    }

    #[test]
    fn ipv4_length_fields_mangled(
        repr in ipv4_repr(),
        ver_ihl in any::<u8>(),
        ihl in 0u8..16,
        total_len in any::<u16>(),
        option_len in any::<u8>(),
        option_pick in any::<prop::sample::Index>(),
        which in 0u8..8,
        refill in any::<bool>(),
    ) {
        let mut bytes = emit_ipv4(&repr, ChecksumMode::Full);
        let offsets = option_length_offsets(&repr.options);
        if which & 1 != 0 {
            bytes[0] = 0x40 | ihl;
        }
        if which & 2 != 0 {
            bytes[2..4].copy_from_slice(&total_len.to_be_bytes());
        }
        if which & 4 != 0 && !offsets.is_empty() {
            bytes[offsets[option_pick.index(offsets.len())]] = option_len;
        }
        if which == 0 {
            bytes[0] = ver_ihl;
        }
        check_all(&bytes);
        // With a fresh checksum the mangled header also reaches the option
        // and length logic under ChecksumMode::Full.
        if refill && bytes[0] & 0x0f >= 5 && usize::from(bytes[0] & 0x0f) * 4 <= bytes.len() {
            let mut packet = Ipv4Packet::new_unchecked(&mut bytes[..]);
            packet.fill_checksum();
            check_all(&bytes);
        }
    }

    #[test]
    fn ipv4_every_option_length_byte(repr in ipv4_repr()) {
        let bytes = emit_ipv4(&repr, ChecksumMode::Full);
        for offset in option_length_offsets(&repr.options) {
            for value in 0..=255u8 {
                let mut mangled = bytes.clone();
                mangled[offset] = value;
                Ipv4Packet::new_unchecked(&mut mangled[..]).fill_checksum();
                check_ipv4(&mangled);
                let packet = Ipv4Packet::new_checked(&mangled[..]).unwrap();
                let parsed = Ipv4Repr::parse(&packet, ChecksumMode::Full);
                if value == bytes[offset] {
                    prop_assert_eq!(parsed, Ok(repr));
                }
            }
        }
    }
}

// -------------------------------------------------------------------- ICMPv4

proptest! {
    #[test]
    fn icmpv4_round_trip(spec in icmp_spec()) {
        let repr = spec.repr();
        for mode in MODES {
            let bytes = emit_icmp(&repr, mode);
            let packet = Icmpv4Packet::new_checked(&bytes[..]).unwrap();
            prop_assert_eq!(Icmpv4Repr::parse(&packet, mode), Ok(repr));
            if mode == ChecksumMode::Full {
                prop_assert!(packet.verify_checksum());
            }
        }
    }

    #[test]
    fn icmpv4_truncation(spec in icmp_spec()) {
        let bytes = emit_icmp(&spec.repr(), ChecksumMode::Full);
        for len in 0..bytes.len() {
            check_all(&bytes[..len]);
            if len < 8 {
                prop_assert!(Icmpv4Packet::new_checked(&bytes[..len]).is_err());
            }
        }
    }

    #[test]
    fn icmpv4_type_and_code_mangled(spec in icmp_spec(), msg_type in any::<u8>(), code in any::<u8>()) {
        // ICMPv4 has no length field; type and code decide how it is read.
        let mut bytes = emit_icmp(&spec.repr(), ChecksumMode::Full);
        bytes[0] = msg_type;
        bytes[1] = code;
        check_all(&bytes);
        Icmpv4Packet::new_unchecked(&mut bytes[..]).fill_checksum();
        check_all(&bytes);
    }

    #[test]
    fn icmpv4_in_ipv4_in_ethernet(spec in icmp_spec(), eth in ethernet_repr(), ip in ipv4_repr()) {
        // Layered: each layer's payload is the next layer's buffer.
        let icmp = emit_icmp(&spec.repr(), ChecksumMode::Full);
        let ip = Ipv4Repr { payload_len: icmp.len(), protocol: IpProtocol::Icmp, ..ip };
        let mut ip_bytes = emit_ipv4(&ip, ChecksumMode::Full);
        ip_bytes[ip.header_len()..].copy_from_slice(&icmp);
        let eth = EthernetRepr { ethertype: EtherType::Ipv4, ..eth };
        let frame_bytes = emit_ethernet(&eth, &ip_bytes);

        let frame = EthernetFrame::new_checked(&frame_bytes[..]).unwrap();
        prop_assert_eq!(EthernetRepr::parse(&frame), Ok(eth));
        let packet = Ipv4Packet::new_checked(frame.payload()).unwrap();
        prop_assert_eq!(Ipv4Repr::parse(&packet, ChecksumMode::Full), Ok(ip));
        let message = Icmpv4Packet::new_checked(packet.payload()).unwrap();
        prop_assert_eq!(Icmpv4Repr::parse(&message, ChecksumMode::Full), Ok(spec.repr()));
    }
}

// -------------------------------------------------------------- random bytes

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..128)) {
        check_all(&bytes);
    }

    #[test]
    fn random_ipv4_like_bytes_never_panic(
        ihl in 0u8..16,
        total_len in 0u16..200,
        rest in vec(any::<u8>(), 0..160),
    ) {
        // Random bytes rarely pass the version check; force it, and a
        // plausible total length, so the option parser sees random areas.
        let mut bytes = vec![0x40 | ihl, 0];
        bytes.extend_from_slice(&total_len.to_be_bytes());
        bytes.extend_from_slice(&rest);
        check_all(&bytes);
        if bytes.len() >= 20 && usize::from(ihl) * 4 <= bytes.len() && ihl >= 5 {
            Ipv4Packet::new_unchecked(&mut bytes[..]).fill_checksum();
            check_all(&bytes);
        }
    }

    #[test]
    fn random_option_areas_never_panic(area in vec(any::<u8>(), 0..48)) {
        if let Ok(options) = Ipv4Options::parse(&area) {
            prop_assert_eq!(options.as_bytes(), &area[..]);
            let _ = options.iter().count();
            let _ = options.trace();
        }
    }

    #[test]
    fn random_arp_like_bytes_never_panic(rest in vec(any::<u8>(), 0..64)) {
        let mut bytes = vec![0x00, 0x01, 0x08, 0x00];
        bytes.extend_from_slice(&rest);
        check_all(&bytes);
    }
}
