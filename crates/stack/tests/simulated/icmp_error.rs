//! ICMP error policy (RFC 4443 §2.4, RFC 1122 §3.2.2, RFC 1812 §4.3.2) and
//! error bodies, emitted and parsed back with the wire crate.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use stack::iface::icmp_error::{
    icmpv4_error_body, icmpv6_error_body, may_send_icmpv4_error, may_send_icmpv6_error,
    Icmpv4ErrorKind, Icmpv6ErrorKind, InvokingV4, InvokingV6, Suppressed,
    MAX_ICMPV4_ERROR_DATAGRAM,
};
use stack::iface::route::{IcmpRateLimiter, RateLimitConfig};
use stack::time::Instant;
use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4Packet, Icmpv4Repr, Icmpv4TimeExceeded};
use wire::icmpv6::{
    DstUnreachableReason, Icmpv6Packet, Icmpv6Repr, ParamProblemReason, TimeExceededReason,
};
use wire::ipv4::{Ipv4Options, Ipv4Packet, Ipv4Repr};
use wire::ipv6::{Ipv6Packet, Ipv6Repr};
use wire::{ChecksumMode, IpProtocol};

const A6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 1);
const B6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xb, 0, 0, 0, 0, 2);
const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
const A4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const B4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);

fn unlimited() -> IcmpRateLimiter {
    IcmpRateLimiter::new(RateLimitConfig {
        burst: 1,
        interval: Duration::ZERO,
    })
}

fn inv6(src: Ipv6Addr, dst: Ipv6Addr) -> InvokingV6 {
    InvokingV6 {
        src,
        dst,
        dst_was_multicast_or_link_multicast: false,
        is_icmpv6_error: false,
        src_is_anycast: false,
        locally_originated: false,
    }
}

fn inv4(src: Ipv4Addr, dst: Ipv4Addr) -> InvokingV4 {
    InvokingV4 {
        src,
        dst,
        dst_was_broadcast_or_multicast: false,
        is_icmp_error: false,
        frag_offset: 0,
        src_is_subnet_broadcast: false,
        locally_originated: false,
    }
}

fn v6(invoking: &InvokingV6, kind: Icmpv6ErrorKind) -> Result<(), Suppressed> {
    may_send_icmpv6_error(invoking, &kind, &mut unlimited(), Instant::ZERO)
}

fn v4(invoking: &InvokingV4) -> Result<(), Suppressed> {
    may_send_icmpv4_error(invoking, &mut unlimited(), Instant::ZERO)
}

const PORT_UNREACH: Icmpv6ErrorKind =
    Icmpv6ErrorKind::DstUnreachable(DstUnreachableReason::PortUnreachable);
const PTB: Icmpv6ErrorKind = Icmpv6ErrorKind::PacketTooBig { mtu: 1280 };

fn param(reason: ParamProblemReason, option_type: Option<u8>) -> Icmpv6ErrorKind {
    Icmpv6ErrorKind::ParamProblem {
        reason,
        pointer: 42,
        option_type,
    }
}

/// Every kind we can ask for, with whether RFC 4443 §2.4(e.3) allows it
/// about a packet to a multicast address.
fn v6_matrix() -> Vec<(Icmpv6ErrorKind, bool)> {
    use ParamProblemReason::*;
    vec![
        (PORT_UNREACH, false),
        (
            Icmpv6ErrorKind::DstUnreachable(DstUnreachableReason::NoRoute),
            false,
        ),
        (PTB, true),
        (
            Icmpv6ErrorKind::TimeExceeded(TimeExceededReason::HopLimitExceeded),
            false,
        ),
        (param(ErroneousHeaderField, None), false),
        (param(UnrecognizedNextHeader, None), false),
        // Code 2: allowed only for an option type whose action bits are 10.
        (param(UnrecognizedOption, Some(0b1000_0000 | 0x1e)), true),
        (param(UnrecognizedOption, Some(0b1100_0000 | 0x1e)), false),
        (param(UnrecognizedOption, Some(0b0100_0000 | 0x1e)), false),
        (param(UnrecognizedOption, Some(0x1e)), false),
        (param(UnrecognizedOption, None), false),
        // Action bits 10 but another code: not the exception.
        (param(ErroneousHeaderField, Some(0b1000_0000)), false),
    ]
}

#[test]
fn v6_unicast_allows_every_kind() {
    for (kind, _) in v6_matrix() {
        assert_eq!(v6(&inv6(A6, B6), kind), Ok(()), "{kind:?}");
    }
}

#[test]
fn v6_multicast_destination_matrix() {
    for (kind, allowed) in v6_matrix() {
        let expect = if allowed {
            Ok(())
        } else {
            Err(Suppressed::MulticastDestination)
        };
        // Multicast IPv6 destination (§2.4(e.3)).
        assert_eq!(v6(&inv6(A6, ALL_NODES), kind), expect, "{kind:?}");
        // Unicast IPv6 destination sent as link-layer multicast or
        // broadcast (§2.4(e.4), (e.5)): the same exceptions apply.
        let mut link = inv6(A6, B6);
        link.dst_was_multicast_or_link_multicast = true;
        assert_eq!(v6(&link, kind), expect, "{kind:?}");
    }
}

#[test]
fn v6_never_about_an_error_or_redirect() {
    let mut inv = inv6(A6, B6);
    inv.is_icmpv6_error = true;
    for (kind, _) in v6_matrix() {
        assert_eq!(v6(&inv, kind), Err(Suppressed::InvokingIsError), "{kind:?}");
    }
}

#[test]
fn v6_source_must_identify_one_node() {
    for src in [Ipv6Addr::UNSPECIFIED, ALL_NODES, Ipv6Addr::LOCALHOST] {
        for (kind, _) in v6_matrix() {
            assert_eq!(
                v6(&inv6(src, B6), kind),
                Err(Suppressed::SourceNotUnique),
                "{src} {kind:?}"
            );
        }
    }
    let mut anycast = inv6(A6, B6);
    anycast.src_is_anycast = true;
    assert_eq!(v6(&anycast, PTB), Err(Suppressed::SourceNotUnique));
    // A link-local unicast source is fine.
    let ll = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 1);
    assert_eq!(v6(&inv6(ll, B6), PORT_UNREACH), Ok(()));
}

#[test]
fn v6_rate_limit_burst_then_suppressed() {
    let mut rl = IcmpRateLimiter::new(RateLimitConfig::default()); // B=10, N=10/s
    let inv = inv6(A6, B6);
    let t0 = Instant::from_nanos(1_000_000_000);
    for _ in 0..10 {
        assert_eq!(
            may_send_icmpv6_error(&inv, &PORT_UNREACH, &mut rl, t0),
            Ok(())
        );
    }
    assert_eq!(
        may_send_icmpv6_error(&inv, &PORT_UNREACH, &mut rl, t0),
        Err(Suppressed::RateLimited)
    );
    // Refusals by rule spend no token and are not counted by the limiter.
    let mut err = inv;
    err.is_icmpv6_error = true;
    assert_eq!(
        may_send_icmpv6_error(&err, &PORT_UNREACH, &mut rl, t0),
        Err(Suppressed::InvokingIsError)
    );
    assert_eq!(rl.counters().allowed, 10);
    assert_eq!(rl.counters().suppressed, 1);
    // One token earned 100 ms later.
    let t1 = t0 + Duration::from_millis(100);
    assert_eq!(may_send_icmpv6_error(&inv, &PTB, &mut rl, t1), Ok(()));
    assert_eq!(
        may_send_icmpv6_error(&inv, &PTB, &mut rl, t1),
        Err(Suppressed::RateLimited)
    );
}

/// An IPv6 packet of `total` bytes (header included) carrying UDP.
fn ipv6_packet(total: usize) -> Vec<u8> {
    let mut buf = vec![0u8; total];
    let repr = Ipv6Repr {
        src: A6,
        dst: B6,
        next_header: IpProtocol::Udp,
        payload_len: total - 40,
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    };
    repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]))
        .unwrap();
    for (i, b) in buf[40..].iter_mut().enumerate() {
        *b = i as u8;
    }
    buf
}

/// Emits `body` as an error from B6 to A6, with its IPv6 header, and
/// parses it back with the checksum verified. Returns the datagram.
fn emit_v6(body: &Icmpv6Repr<'_>) -> Vec<u8> {
    let len = body.buffer_len();
    let mut buf = vec![0u8; 40 + len];
    Ipv6Repr {
        src: B6,
        dst: A6,
        next_header: IpProtocol::Icmpv6,
        payload_len: len,
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]))
    .unwrap();
    body.emit(
        &mut Icmpv6Packet::new_unchecked(&mut buf[40..]),
        &B6,
        &A6,
        ChecksumMode::Full,
    )
    .unwrap();
    let packet = Icmpv6Packet::new_checked(&buf[40..]).unwrap();
    let parsed = Icmpv6Repr::parse(&packet, &B6, &A6, ChecksumMode::Full).unwrap();
    assert_eq!(&parsed, body);
    buf
}

#[test]
fn v6_quote_fills_the_minimum_mtu() {
    let invoking = ipv6_packet(2000);
    for (kind, _) in v6_matrix() {
        let body = icmpv6_error_body(kind, &invoking);
        assert_eq!(body.buffer_len(), 1240);
        let datagram = emit_v6(&body);
        assert_eq!(datagram.len(), 1280, "{kind:?}");
        assert_eq!(&datagram[48..], &invoking[..1232]);
    }
    // Fields of the second word.
    match icmpv6_error_body(PTB, &invoking) {
        Icmpv6Repr::PacketTooBig { mtu, .. } => assert_eq!(mtu, 1280),
        other => panic!("{other:?}"),
    }
    match icmpv6_error_body(
        param(ParamProblemReason::UnrecognizedOption, Some(0x80)),
        &invoking,
    ) {
        Icmpv6Repr::ParamProblem {
            reason, pointer, ..
        } => {
            assert_eq!(reason, ParamProblemReason::UnrecognizedOption);
            assert_eq!(pointer, 42);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn v6_small_packet_quoted_whole_without_padding() {
    let mut invoking = ipv6_packet(100);
    let body = icmpv6_error_body(PORT_UNREACH, &invoking);
    assert_eq!(emit_v6(&body).len(), 40 + 8 + 100);
    // Link-layer padding after the declared length is not quoted.
    invoking.extend_from_slice(&[0xee; 20]);
    let body = icmpv6_error_body(PORT_UNREACH, &invoking);
    assert_eq!(body.buffer_len(), 8 + 100);
}

#[test]
fn builders_never_panic() {
    let kinds6 = v6_matrix();
    let kinds4 = v4_kinds();
    for len in [0usize, 1, 7, 39, 40, 41, 100, 1500, 3000] {
        for fill in [0x00u8, 0x45, 0x60, 0xff] {
            let buf = vec![fill; len];
            for (kind, _) in &kinds6 {
                let body = icmpv6_error_body(*kind, &buf);
                assert!(body.buffer_len() <= 1240);
                emit_v6(&body);
            }
            for kind in &kinds4 {
                let body = icmpv4_error_body(*kind, &buf);
                assert!(20 + body.buffer_len() <= MAX_ICMPV4_ERROR_DATAGRAM);
                emit_v4(&body);
            }
        }
    }
}

// ---------------------------------------------------------------- ICMPv4

fn v4_kinds() -> Vec<Icmpv4ErrorKind> {
    vec![
        Icmpv4ErrorKind::DstUnreachable(Icmpv4DstUnreachable::PortUnreachable),
        Icmpv4ErrorKind::DstUnreachable(Icmpv4DstUnreachable::HostUnreachable),
        Icmpv4ErrorKind::FragNeeded { next_hop_mtu: 1400 },
        Icmpv4ErrorKind::TimeExceeded(Icmpv4TimeExceeded::TtlExpired),
        Icmpv4ErrorKind::ParamProblem { pointer: 9 },
    ]
}

#[test]
fn v4_unicast_is_allowed() {
    assert_eq!(v4(&inv4(A4, B4)), Ok(()));
}

#[test]
/// RFC 1122 has no per-kind exceptions, so the policy does not take the
/// kind: one set of rules covers every ICMPv4 error.
fn v4_suppression_rules() {
    let mut err = inv4(A4, B4);
    err.is_icmp_error = true;
    assert_eq!(v4(&err), Err(Suppressed::InvokingIsError));

    // Broadcast and multicast destinations, with no exception (RFC
    // 1122 §3.2.2), and link-layer broadcast of a unicast datagram.
    for dst in [Ipv4Addr::BROADCAST, Ipv4Addr::new(224, 0, 0, 1)] {
        assert_eq!(v4(&inv4(A4, dst)), Err(Suppressed::MulticastDestination));
    }
    let mut link = inv4(A4, B4);
    link.dst_was_broadcast_or_multicast = true;
    assert_eq!(v4(&link), Err(Suppressed::MulticastDestination));

    let mut frag = inv4(A4, B4);
    frag.frag_offset = 1480;
    assert_eq!(v4(&frag), Err(Suppressed::NonInitialFragment));

    for src in [
        Ipv4Addr::UNSPECIFIED,
        Ipv4Addr::LOCALHOST,
        Ipv4Addr::new(127, 1, 2, 3),
        Ipv4Addr::BROADCAST,
        Ipv4Addr::new(239, 1, 1, 1),
        Ipv4Addr::new(240, 0, 0, 1),
    ] {
        assert_eq!(
            v4(&inv4(src, B4)),
            Err(Suppressed::SourceNotUnique),
            "{src}"
        );
    }
    let mut subnet_bcast = inv4(Ipv4Addr::new(192, 0, 2, 255), B4);
    subnet_bcast.src_is_subnet_broadcast = true;
    assert_eq!(v4(&subnet_bcast), Err(Suppressed::SourceNotUnique));

    let mut local = inv4(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST);
    local.locally_originated = true;
    assert_eq!(v4(&local), Ok(()));
}

#[test]
fn v4_rate_limit_burst_then_suppressed() {
    let mut rl = IcmpRateLimiter::new(RateLimitConfig {
        burst: 3,
        interval: Duration::from_millis(10),
    });
    let inv = inv4(A4, B4);
    for _ in 0..3 {
        assert_eq!(may_send_icmpv4_error(&inv, &mut rl, Instant::ZERO), Ok(()));
    }
    assert_eq!(
        may_send_icmpv4_error(&inv, &mut rl, Instant::ZERO),
        Err(Suppressed::RateLimited)
    );
    let later = Instant::ZERO + Duration::from_millis(10);
    assert_eq!(may_send_icmpv4_error(&inv, &mut rl, later), Ok(()));
}

/// An IPv4 datagram of `total` bytes with a valid header and `options`.
fn ipv4_packet(total: usize, options: Ipv4Options) -> Vec<u8> {
    let repr = Ipv4Repr {
        src: A4,
        dst: B4,
        protocol: IpProtocol::Udp,
        dscp_ecn: 0,
        ident: 7,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        ttl: 1,
        payload_len: total - 20 - options.len(),
        options,
    };
    let mut buf = vec![0u8; total];
    repr.emit(
        &mut Ipv4Packet::new_unchecked(&mut buf[..]),
        ChecksumMode::Full,
    )
    .unwrap();
    for (i, b) in buf[repr.header_len()..].iter_mut().enumerate() {
        *b = i as u8;
    }
    buf
}

/// Emits `body` in a 20-byte-header IPv4 datagram and parses it back with
/// the checksum verified.
fn emit_v4(body: &Icmpv4Repr<'_>) -> Vec<u8> {
    let len = body.buffer_len();
    let mut buf = vec![0u8; 20 + len];
    Ipv4Repr {
        src: B4,
        dst: A4,
        protocol: IpProtocol::Icmp,
        dscp_ecn: 0,
        ident: 1,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
        ttl: 64,
        payload_len: len,
        options: Ipv4Options::EMPTY,
    }
    .emit(
        &mut Ipv4Packet::new_unchecked(&mut buf[..]),
        ChecksumMode::Full,
    )
    .unwrap();
    body.emit(
        &mut Icmpv4Packet::new_unchecked(&mut buf[20..]),
        ChecksumMode::Full,
    )
    .unwrap();
    let packet = Icmpv4Packet::new_checked(&buf[20..]).unwrap();
    let parsed = Icmpv4Repr::parse(&packet, ChecksumMode::Full).unwrap();
    assert_eq!(&parsed, body);
    buf
}

#[test]
fn v4_quote_up_to_576() {
    let invoking = ipv4_packet(1500, Ipv4Options::EMPTY);
    for kind in v4_kinds() {
        let body = icmpv4_error_body(kind, &invoking);
        let datagram = emit_v4(&body);
        assert_eq!(datagram.len(), MAX_ICMPV4_ERROR_DATAGRAM);
        assert_eq!(&datagram[28..], &invoking[..548]);
    }
    match icmpv4_error_body(
        Icmpv4ErrorKind::FragNeeded { next_hop_mtu: 1400 },
        &invoking,
    ) {
        Icmpv4Repr::DstUnreachable {
            reason,
            next_hop_mtu,
            ..
        } => {
            assert_eq!(reason, Icmpv4DstUnreachable::FragRequired);
            assert_eq!(next_hop_mtu, 1400);
        }
        other => panic!("{other:?}"),
    }
    match icmpv4_error_body(
        Icmpv4ErrorKind::DstUnreachable(Icmpv4DstUnreachable::PortUnreachable),
        &invoking,
    ) {
        Icmpv4Repr::DstUnreachable { next_hop_mtu, .. } => assert_eq!(next_hop_mtu, 0),
        other => panic!("{other:?}"),
    }
    match icmpv4_error_body(Icmpv4ErrorKind::ParamProblem { pointer: 9 }, &invoking) {
        Icmpv4Repr::ParamProblem { pointer, .. } => assert_eq!(pointer, 9),
        other => panic!("{other:?}"),
    }
}

#[test]
fn v4_small_datagram_quoted_whole_covers_rfc792_minimum() {
    // Header + 8 bytes: RFC 792's minimum is the whole datagram here.
    let invoking = ipv4_packet(28, Ipv4Options::EMPTY);
    let body = icmpv4_error_body(Icmpv4ErrorKind::ParamProblem { pointer: 0 }, &invoking);
    assert_eq!(body.data(), &invoking[..]);
    emit_v4(&body);
    // Padding after the declared total length is not quoted.
    let mut padded = invoking.clone();
    padded.extend_from_slice(&[0; 18]);
    let body = icmpv4_error_body(Icmpv4ErrorKind::ParamProblem { pointer: 0 }, &padded);
    assert_eq!(body.data(), &invoking[..]);
}
