//! ICMPv6 samples: echo, every error, every Neighbor Discovery message with
//! its options, and MLDv1/MLDv2 queries and reports.

use wire::ethernet::EtherType;
use wire::icmpv6::{
    DstUnreachableReason, Icmpv6Packet, Icmpv6Repr, ParamProblemReason, TimeExceededReason,
};
use wire::ipv6::{self, ALL_NODES, ALL_ROUTERS};
use wire::ipv6_option::Ipv6Option;
use wire::mld::{MldAddressRecord, MldRecordType, MldRepr, MldSources};
use wire::ndisc::{NdiscOption, NdiscOptions, NdiscRepr, NeighborFlags, RouterFlags};
use wire::{ChecksumMode, IpProtocol};

use super::v6::{ipv6_between, options_header};
use super::*;

const LL_A: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0xa);
const LL_B: Ipv6Addr = Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0xb);
const GROUP: Ipv6Addr = Ipv6Addr::new(0xff05, 0, 0, 0, 0, 0, 1, 0x0203);

fn message(repr: &Icmpv6Repr, src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(
        &mut Icmpv6Packet::new_unchecked(&mut buf[..]),
        &src,
        &dst,
        ChecksumMode::Full,
    )
    .expect("icmpv6 emit");
    buf
}

/// An ICMPv6 message in IPv6 in Ethernet, with `hop_limit`.
fn icmpv6(repr: Icmpv6Repr, src: Ipv6Addr, dst: Ipv6Addr, hop_limit: u8) -> Vec<u8> {
    let body = message(&repr, src, dst);
    let packet = ipv6_between(src, dst, IpProtocol::Icmpv6, hop_limit, &body);
    ethernet(EtherType::Ipv6, None, &packet)
}

/// Neighbor Discovery travels with hop limit 255 (RFC 4861 §6.1.1).
fn ndisc(repr: NdiscRepr, src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    icmpv6(Icmpv6Repr::Ndisc(repr), src, dst, 255)
}

/// MLD travels link-local with hop limit 1 and a Router Alert
/// (RFC 2710 §3, RFC 3810 §5).
fn mld(repr: MldRepr, dst: Ipv6Addr) -> Vec<u8> {
    let body = message(&Icmpv6Repr::Mld(repr), LL_A, dst);
    let hbh = options_header(IpProtocol::Icmpv6, &[Ipv6Option::RouterAlert(0)], &body);
    let packet = ipv6_between(LL_A, dst, IpProtocol::HopByHop, 1, &hbh);
    ethernet(EtherType::Ipv6, None, &packet)
}

fn error(repr: Icmpv6Repr) -> Vec<u8> {
    icmpv6(repr, V6_B, V6_A, 64)
}

fn sample(name: &'static str, frame: Vec<u8>, decoded_text: &'static [&'static str]) -> Sample {
    Sample {
        name,
        frame,
        protocols: &["ipv6", "icmpv6"],
        decoded_text,
        has_checksum: true,
    }
}

pub fn samples() -> Vec<Sample> {
    // What ICMPv6 errors quote: the start of the invoking packet.
    let (src, dst) = v6_pair();
    let invoking = super::v6::ipv6(IpProtocol::Udp, &udp(src, dst, b"invoking datagram"));
    let sources = [V6_A, V6_B];
    let records = [
        MldAddressRecord::new(MldRecordType::ModeIsExclude, GROUP, &[]),
        MldAddressRecord::new(MldRecordType::AllowNewSources, GROUP, &sources[..1]),
    ];
    let prefix_a = Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 0);
    let ra_options = [
        NdiscOption::SourceLinkLayerAddr(MAC_A),
        NdiscOption::Mtu(1500),
        NdiscOption::PrefixInformation {
            prefix_len: 64,
            on_link: true,
            autonomous: true,
            valid_lifetime: 2_592_000,
            preferred_lifetime: 604_800,
            prefix: prefix_a,
        },
    ];
    let slla = [NdiscOption::SourceLinkLayerAddr(MAC_A)];
    let tlla = [NdiscOption::TargetLinkLayerAddr(MAC_B)];
    let redirect_options = [
        NdiscOption::TargetLinkLayerAddr(MAC_B),
        NdiscOption::RedirectedHeader {
            header_and_data: &invoking[..48],
        },
    ];
    vec![
        sample(
            "icmpv6-echo-request",
            icmpv6(
                Icmpv6Repr::EchoRequest {
                    ident: 7,
                    seq_no: 1,
                    data: b"ping6 payload",
                },
                V6_A,
                V6_B,
                64,
            ),
            &["Echo (ping) request"],
        ),
        sample(
            "icmpv6-echo-reply",
            icmpv6(
                Icmpv6Repr::EchoReply {
                    ident: 7,
                    seq_no: 1,
                    data: b"ping6 payload",
                },
                V6_B,
                V6_A,
                64,
            ),
            &["Echo (ping) reply"],
        ),
        sample(
            "icmpv6-port-unreachable",
            error(Icmpv6Repr::DstUnreachable {
                reason: DstUnreachableReason::PortUnreachable,
                invoking: &invoking,
            }),
            &["Destination Unreachable", "Port unreachable"],
        ),
        sample(
            "icmpv6-packet-too-big",
            error(Icmpv6Repr::PacketTooBig {
                mtu: 1280,
                invoking: &invoking,
            }),
            &["Packet Too Big", "MTU: 1280"],
        ),
        sample(
            "icmpv6-time-exceeded",
            error(Icmpv6Repr::TimeExceeded {
                reason: TimeExceededReason::HopLimitExceeded,
                invoking: &invoking,
            }),
            &["Time Exceeded", "hop limit exceeded in transit"],
        ),
        sample(
            "icmpv6-parameter-problem",
            error(Icmpv6Repr::ParamProblem {
                reason: ParamProblemReason::UnrecognizedNextHeader,
                pointer: 6,
                invoking: &invoking,
            }),
            &[
                "Parameter Problem",
                "unrecognized Next Header type encountered",
            ],
        ),
        sample(
            "nd-router-solicitation",
            ndisc(
                NdiscRepr::RouterSolicit {
                    options: NdiscOptions::from_list(&slla),
                },
                LL_A,
                ALL_ROUTERS,
            ),
            &["Router Solicitation", "Source link-layer address"],
        ),
        sample(
            "nd-router-advertisement",
            ndisc(
                NdiscRepr::RouterAdvert {
                    hop_limit: 64,
                    flags: RouterFlags {
                        managed: false,
                        other: true,
                    },
                    router_lifetime: 1800,
                    reachable_time: 30_000,
                    retrans_time: 1000,
                    options: NdiscOptions::from_list(&ra_options),
                },
                LL_B,
                ALL_NODES,
            ),
            &["Router Advertisement", "Prefix: 2001:db8:a::", "MTU: 1500"],
        ),
        sample(
            "nd-neighbor-solicitation",
            ndisc(
                NdiscRepr::NeighborSolicit {
                    target: V6_B,
                    options: NdiscOptions::from_list(&slla),
                },
                V6_A,
                ipv6::solicited_node(&V6_B),
            ),
            &["Neighbor Solicitation", "Target Address: 2001:db8:b::2"],
        ),
        sample(
            "nd-neighbor-advertisement",
            ndisc(
                NdiscRepr::NeighborAdvert {
                    flags: NeighborFlags {
                        router: true,
                        solicited: true,
                        override_: true,
                    },
                    target: V6_B,
                    options: NdiscOptions::from_list(&tlla),
                },
                V6_B,
                V6_A,
            ),
            &["Neighbor Advertisement", "Target link-layer address"],
        ),
        sample(
            "nd-redirect",
            ndisc(
                NdiscRepr::Redirect {
                    target: LL_B,
                    destination: V6_B,
                    options: NdiscOptions::from_list(&redirect_options),
                },
                LL_A,
                V6_A,
            ),
            &["Redirect", "Redirected header"],
        ),
        sample(
            "mldv1-query",
            mld(
                MldRepr::QueryV1 {
                    max_response_delay: 10_000,
                    group: Ipv6Addr::UNSPECIFIED,
                },
                ALL_NODES,
            ),
            &[
                "Multicast Listener Query",
                "Maximum Response Delay [ms]: 10000",
            ],
        ),
        sample(
            "mldv1-report",
            mld(MldRepr::ReportV1 { group: GROUP }, GROUP),
            &[
                "Multicast Listener Report",
                "Multicast Address: ff05::1:203",
            ],
        ),
        sample(
            "mldv1-done",
            mld(
                MldRepr::Done { group: GROUP },
                Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2),
            ),
            &["Multicast Listener Done"],
        ),
        sample(
            "mldv2-query",
            mld(
                MldRepr::QueryV2 {
                    max_resp_code: 1000,
                    group: GROUP,
                    suppress_router_processing: false,
                    robustness_variable: 2,
                    query_interval_code: 125,
                    sources: MldSources::from_list(&sources),
                },
                GROUP,
            ),
            &["Multicast Listener Query", "Number of Sources: 2"],
        ),
        sample(
            "mldv2-report",
            mld(
                MldRepr::report_v2(&records),
                Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 0x16),
            ),
            &[
                "Multicast Listener Report Message v2",
                "Number of Multicast Address Records: 2",
            ],
        ),
    ]
}
