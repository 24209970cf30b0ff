//! IPv6 input on a live host, frames hand-built and injected over a
//! virtual wire, answers read from it: extension-header processing (RFC 8200
//! §4: the option-type action bits, Hop-by-Hop only first, RH0 refused per
//! RFC 5095, unknown next headers, Parameter Problem pointers) and a
//! router's forwarding decisions (hop limit, Redirect, RFC 4861 §8.2).

use std::net::Ipv6Addr;
use std::time::Duration;

use stack::iface::host::{Host, HostConfig, InterfaceConfig, StaticRoute};
use stack::phy::{Link, VirtualWire, WireConfig, WireEnd};
use stack::time::Instant;
use stack::topology::{IpCidr, Ipv6Cidr};
use wire::checksum;
use wire::ethernet::EthernetAddress;

const HOST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

fn host_addr() -> Ipv6Addr {
    "2001:db8::1".parse().unwrap()
}

fn peer_addr() -> Ipv6Addr {
    "fe80::2".parse().unwrap()
}

struct Bench {
    host: Host,
    peer: WireEnd,
    now: Instant,
}

/// An ICMPv6 message with its checksum filled.
fn icmpv6(src: Ipv6Addr, dst: Ipv6Addr, mut message: Vec<u8>) -> Vec<u8> {
    message[2..4].fill(0);
    let sum = checksum::add(
        checksum::pseudo_header_v6(src, dst, 58, message.len() as u32),
        checksum::sum(&message),
    );
    message[2..4].copy_from_slice(&checksum::finish(sum).to_be_bytes());
    message
}

fn echo_request(src: Ipv6Addr, dst: Ipv6Addr) -> Vec<u8> {
    icmpv6(
        src,
        dst,
        vec![128, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g'],
    )
}

/// Ethernet + IPv6 header (next header `first`) + `rest`.
fn frame(
    dst_mac: [u8; 6],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    first: u8,
    hop_limit: u8,
    rest: &[u8],
) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&PEER_MAC);
    f.extend_from_slice(&[0x86, 0xdd]);
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(rest.len() as u16).to_be_bytes());
    f.extend_from_slice(&[first, hop_limit]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(rest);
    f
}

/// An 8-byte options header: next header, length 0, then one option of
/// `option_type` with 4 data bytes.
fn options_header(next: u8, option_type: u8) -> Vec<u8> {
    vec![next, 0, option_type, 4, 0, 0, 0, 0]
}

impl Bench {
    fn new() -> Self {
        Self::with(false, &[])
    }

    /// A host (or router) with 2001:db8::1/64 and `routes`.
    fn with(router: bool, routes: &[StaticRoute]) -> Self {
        let (ours, peer) = VirtualWire::pair(WireConfig::default()).unwrap();
        let interface = InterfaceConfig {
            name: "eth0".into(),
            link: Box::new(ours),
            mac: EthernetAddress(HOST_MAC),
            ipv4: None,
            ipv6: vec![Ipv6Cidr::new(host_addr(), 64).unwrap()],
            advertise: Vec::new(),
            dad_transmits: None,
        };
        let mut config = HostConfig::new("host", router);
        config.seed = 1;
        let host = Host::new(config, vec![interface], routes).unwrap();
        let mut bench = Bench {
            host,
            peer,
            now: Instant::ZERO,
        };
        // DAD for the addresses, then teach the host our MAC.
        bench.run(Duration::from_secs(3));
        bench.introduce(peer_addr());
        bench
    }

    /// Teaches the host that `addr` is ours (at PEER_MAC) with a Neighbor
    /// Solicitation carrying the source link-layer option.
    fn introduce(&mut self, addr: Ipv6Addr) {
        let mut ns = vec![135, 0, 0, 0, 0, 0, 0, 0];
        ns.extend_from_slice(&host_addr().octets());
        ns.extend_from_slice(&[1, 1]);
        ns.extend_from_slice(&PEER_MAC);
        let ns = icmpv6(addr, host_addr(), ns);
        self.inject(&frame(HOST_MAC, addr, host_addr(), 58, 255, &ns));
        self.answers();
    }

    fn run(&mut self, duration: Duration) {
        let end = self.now + duration;
        while self.now < end {
            self.host.poll(self.now);
            self.now += Duration::from_millis(10);
        }
    }

    fn inject(&mut self, frame: &[u8]) {
        self.peer.transmit(self.now, &[frame]).unwrap();
        // Errors are rate limited: a second apart, none is suppressed.
        self.run(Duration::from_secs(1));
    }

    /// The ICMPv6 messages (type, code, 4-byte parameter) the host sent us,
    /// leaving out ND and MLD.
    fn answers(&mut self) -> Vec<(u8, u8, u32)> {
        let mut out = Vec::new();
        let mut buf = [0u8; 2048];
        while let Some(len) = self.peer.receive(self.now, &mut buf) {
            let f = &buf[..len];
            if f.len() < 14 + 40 + 8 || f[12..14] != [0x86, 0xdd] {
                continue;
            }
            let ip = &f[14..];
            // Skip one 8-byte options header: Hop-by-Hop (MLD reports) or
            // destination options (the trace option of a traced reply).
            let (next, at) = if ip[6] == 0 || ip[6] == 60 {
                (ip[40], 48)
            } else {
                (ip[6], 40)
            };
            if next != 58 {
                continue;
            }
            let m = &ip[at..];
            if (130..=143).contains(&m[0]) {
                continue;
            }
            out.push((m[0], m[1], u32::from_be_bytes([m[4], m[5], m[6], m[7]])));
        }
        out
    }

    fn send(&mut self, dst: Ipv6Addr, first: u8, rest: &[u8]) -> Vec<(u8, u8, u32)> {
        let dst_mac = if dst.is_multicast() {
            let o = dst.octets();
            [0x33, 0x33, o[12], o[13], o[14], o[15]]
        } else {
            HOST_MAC
        };
        self.inject(&frame(dst_mac, peer_addr(), dst, first, 64, rest));
        self.answers()
    }

    fn drops(&self, reason: &str) -> u64 {
        self.host.drops().get(reason).copied().unwrap_or(0)
    }
}

const ECHO_REPLY: (u8, u8) = (129, 0);

fn with_options(dst: Ipv6Addr, option_type: u8) -> Vec<u8> {
    let mut rest = options_header(58, option_type);
    rest.extend_from_slice(&echo_request(peer_addr(), dst));
    rest
}

#[test]
fn a_plain_echo_request_is_answered() {
    let mut bench = Bench::new();
    let answers = bench.send(host_addr(), 58, &echo_request(peer_addr(), host_addr()));
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!((answers[0].0, answers[0].1), ECHO_REPLY);
}

#[test]
fn unknown_option_action_00_is_skipped() {
    let mut bench = Bench::new();
    let answers = bench.send(host_addr(), 60, &with_options(host_addr(), 0x3e));
    assert_eq!(
        answers.iter().map(|a| (a.0, a.1)).collect::<Vec<_>>(),
        [ECHO_REPLY]
    );
}

#[test]
fn unknown_option_action_01_discards_silently() {
    let mut bench = Bench::new();
    let answers = bench.send(host_addr(), 60, &with_options(host_addr(), 0x7e));
    assert!(answers.is_empty(), "{answers:?}");
    assert_eq!(bench.drops("ipv6_option_discard"), 1);
}

#[test]
fn unknown_option_action_10_answers_parameter_problem_even_for_multicast() {
    let mut bench = Bench::new();
    // Code 2, pointer at the option type: 40 (IPv6 header) + 2.
    let answers = bench.send(host_addr(), 60, &with_options(host_addr(), 0xbe));
    assert_eq!(answers, [(4, 2, 42)]);
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let answers = bench.send(all_nodes, 60, &with_options(all_nodes, 0xbe));
    assert_eq!(answers, [(4, 2, 42)]);
}

#[test]
fn unknown_option_action_11_answers_only_unicast() {
    let mut bench = Bench::new();
    let answers = bench.send(host_addr(), 60, &with_options(host_addr(), 0xfe));
    assert_eq!(answers, [(4, 2, 42)]);
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let answers = bench.send(all_nodes, 60, &with_options(all_nodes, 0xfe));
    assert!(answers.is_empty(), "{answers:?}");
}

#[test]
fn a_hop_by_hop_header_after_another_header_is_refused() {
    let mut bench = Bench::new();
    // Destination options naming Hop-by-Hop (0) as the next header.
    let mut rest = options_header(0, 0x3e);
    rest.extend_from_slice(&options_header(58, 0x3e));
    rest.extend_from_slice(&echo_request(peer_addr(), host_addr()));
    let answers = bench.send(host_addr(), 60, &rest);
    // Code 1 (unrecognized next header), pointing at the Next Header field
    // of the destination options header: offset 40.
    assert_eq!(answers, [(4, 1, 40)]);
    assert_eq!(bench.drops("ipv6_hop_by_hop_not_first"), 1);
}

#[test]
fn a_hop_by_hop_header_first_is_processed() {
    let mut bench = Bench::new();
    let answers = bench.send(host_addr(), 0, &with_options(host_addr(), 0x3e));
    assert_eq!(
        answers.iter().map(|a| (a.0, a.1)).collect::<Vec<_>>(),
        [ECHO_REPLY]
    );
}

/// A type 0 routing header with one address and `segments_left`.
fn rh0(segments_left: u8) -> Vec<u8> {
    let mut rest = vec![58, 2, 0, segments_left, 0, 0, 0, 0];
    rest.extend_from_slice(&"2001:db8::99".parse::<Ipv6Addr>().unwrap().octets());
    rest.extend_from_slice(&echo_request(peer_addr(), host_addr()));
    rest
}

#[test]
fn rh0_with_segments_left_is_refused_and_without_is_ignored() {
    let mut bench = Bench::new();
    // RFC 5095 §3: Parameter Problem code 0 at the Routing Type field.
    let answers = bench.send(host_addr(), 43, &rh0(1));
    assert_eq!(answers, [(4, 0, 42)]);
    assert_eq!(bench.drops("ipv6_rh0_refused"), 1);
    // Segments Left 0: the header is skipped (RFC 8200 §4.4).
    let answers = bench.send(host_addr(), 43, &rh0(0));
    assert_eq!(
        answers.iter().map(|a| (a.0, a.1)).collect::<Vec<_>>(),
        [ECHO_REPLY]
    );
}

#[test]
fn an_unknown_next_header_gets_parameter_problem_code_1() {
    let mut bench = Bench::new();
    let answers = bench.send(host_addr(), 143, &[0u8; 16]);
    // Pointer at the IPv6 header's Next Header field, offset 6.
    assert_eq!(answers, [(4, 1, 6)]);
}

#[test]
fn the_trace_option_is_understood() {
    let mut bench = Bench::new();
    let answers = bench.send(host_addr(), 60, &with_options(host_addr(), 0x1e));
    assert_eq!(
        answers.iter().map(|a| (a.0, a.1)).collect::<Vec<_>>(),
        [ECHO_REPLY]
    );
}

#[test]
fn a_bad_checksum_is_dropped_and_counted() {
    let mut bench = Bench::new();
    let mut message = echo_request(peer_addr(), host_addr());
    message[9] ^= 0xff;
    let answers = bench.send(host_addr(), 58, &message);
    assert!(answers.is_empty());
    assert_eq!(bench.drops("icmpv6_bad_checksum"), 1);
}

/// A router whose route for 2001:db8:c::/64 points back out the interface
/// a packet came in on, to another router of that link (named by its
/// link-local address, which is what a Redirect may name).
fn redirecting_router() -> Bench {
    let route = StaticRoute {
        to: IpCidr::V6(Ipv6Cidr::new("2001:db8:c::".parse().unwrap(), 64).unwrap()),
        via: "fe80::3".parse().unwrap(),
    };
    let mut bench = Bench::with(true, &[route]);
    bench.introduce(peer_global());
    bench
}

/// The peer's global address: routers forward nothing from link-local
/// sources (RFC 4291 §2.5.6).
fn peer_global() -> Ipv6Addr {
    "2001:db8::2".parse().unwrap()
}

/// A UDP packet from the peer's global address to `dst`, hop limit `hops`.
fn udp_to(dst: Ipv6Addr, hops: u8) -> Vec<u8> {
    let mut udp = vec![0x30, 0x39, 0x00, 0x07, 0, 12, 0, 0, b'd', b'a', b't', b'a'];
    let sum = checksum::add(
        checksum::pseudo_header_v6(peer_global(), dst, 17, udp.len() as u32),
        checksum::sum(&udp),
    );
    udp[6..8].copy_from_slice(&checksum::finish(sum).to_be_bytes());
    frame(HOST_MAC, peer_global(), dst, 17, hops, &udp)
}

/// ICMPv6 messages of `kind` on the wire: the IPv6 source and the body
/// (after the 4-byte type/code/checksum), from frames the router sent.
fn messages(bench: &mut Bench, kind: u8) -> Vec<(Ipv6Addr, Vec<u8>)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    while let Some(len) = bench.peer.receive(bench.now, &mut buf) {
        let ip = &buf[14..len];
        if ip.len() > 44 && ip[6] == 58 && ip[40] == kind {
            let src = Ipv6Addr::from(<[u8; 16]>::try_from(&ip[8..24]).unwrap());
            out.push((src, ip[44..].to_vec()));
        }
    }
    out
}

#[test]
fn a_router_redirects_a_packet_that_leaves_by_the_link_it_came_in_on() {
    let mut bench = redirecting_router();
    let dst: Ipv6Addr = "2001:db8:c::1".parse().unwrap();
    bench.peer.transmit(bench.now, &[&udp_to(dst, 64)]).unwrap();
    bench.run(Duration::from_millis(100));
    let redirects = messages(&mut bench, 137);
    assert_eq!(redirects.len(), 1, "one Redirect");
    let (source, body) = &redirects[0];
    // RFC 4861 §4.5: from the router's link-local address (receivers
    // discard any other, §8.1).
    assert!(source.is_unicast_link_local(), "from {source}");
    // Reserved (4 bytes), Target, Destination (RFC 4861 §4.5).
    let target = Ipv6Addr::from(<[u8; 16]>::try_from(&body[4..20]).unwrap());
    let destination = Ipv6Addr::from(<[u8; 16]>::try_from(&body[20..36]).unwrap());
    assert_eq!(destination, dst);
    assert_eq!(target, "fe80::3".parse::<Ipv6Addr>().unwrap());
    assert_eq!(bench.host.counters().redirects_sent, 1);
    // The packet itself is still forwarded (to fe80::3, being resolved).
    assert_eq!(bench.host.counters().ipv6_forwarded, 1);
}

#[test]
fn a_router_answers_hop_limit_1_with_time_exceeded_and_does_not_forward() {
    let mut bench = redirecting_router();
    let dst: Ipv6Addr = "2001:db8:c::1".parse().unwrap();
    bench.peer.transmit(bench.now, &[&udp_to(dst, 1)]).unwrap();
    bench.run(Duration::from_millis(100));
    let errors = messages(&mut bench, 3);
    assert_eq!(errors.len(), 1, "one Time Exceeded");
    assert_eq!(bench.host.counters().ipv6_forwarded, 0);
    assert_eq!(bench.drops("ipv6_hop_limit_exceeded"), 1);
}

#[test]
fn a_host_does_not_forward() {
    let mut bench = Bench::new();
    let dst: Ipv6Addr = "2001:db8:c::1".parse().unwrap();
    bench.peer.transmit(bench.now, &[&udp_to(dst, 64)]).unwrap();
    bench.run(Duration::from_millis(100));
    assert!(messages(&mut bench, 137).is_empty());
    assert_eq!(bench.host.counters().ipv6_forwarded, 0);
    assert_eq!(bench.drops("ipv6_not_for_us"), 1);
}

#[test]
fn a_routing_header_longer_than_the_packet_is_dropped_not_trusted() {
    let mut bench = Bench::new();
    // Segments Left 0 (the header would be skipped) and a length of
    // 255 units: 2048 bytes that are not there.
    let answers = bench.send(host_addr(), 43, &[58, 255, 4, 0, 0, 0, 0, 0]);
    assert!(answers.is_empty(), "{answers:?}");
    assert_eq!(bench.drops("ipv6_truncated"), 1);
}

/// A Router Advertisement from `src`: Cur Hop Limit 1, an MTU of 1280.
fn router_advertisement(src: Ipv6Addr) -> Vec<u8> {
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let mut ra = vec![134, 0, 0, 0, 1, 0, 0x07, 0x08, 0, 0, 0, 0, 0, 0, 0, 0];
    ra.extend_from_slice(&[5, 1, 0, 0, 0, 0, 0x05, 0x00]);
    let ra = icmpv6(src, all_nodes, ra);
    frame([0x33, 0x33, 0, 0, 0, 1], src, all_nodes, 58, 255, &ra)
}

#[test]
fn an_advertisement_from_a_global_address_changes_nothing() {
    let mut bench = Bench::new();
    bench.inject(&router_advertisement("2001:db8::9".parse().unwrap()));
    let state = bench.host.state(bench.now);
    assert_eq!(state.interfaces[0].hop_limit, 64);
    assert_eq!(state.interfaces[0].ipv6_mtu, 1500);
    assert!(state.interfaces[0].routers.is_empty());
    assert_eq!(bench.drops("ndisc_ra_invalid"), 1);
    // The same from a link-local address is taken (RFC 4861 §6.3.4).
    bench.inject(&router_advertisement(peer_addr()));
    let state = bench.host.state(bench.now);
    assert_eq!(state.interfaces[0].hop_limit, 1);
    assert_eq!(state.interfaces[0].ipv6_mtu, 1280);
    assert_eq!(state.interfaces[0].routers.len(), 1);
}

#[test]
fn a_first_fragment_that_cuts_the_header_chain_gets_parameter_problem_code_3() {
    let mut bench = Bench::new();
    // Fragment header: next = destination options, offset 0, M = 1; then
    // 16 bytes of a destination options header that claims 88.
    let mut rest = vec![60, 0, 0, 1, 0, 0, 0, 7];
    rest.extend_from_slice(&[58, 10, 1, 12]);
    rest.extend_from_slice(&[0; 12]);
    let answers = bench.send(host_addr(), 44, &rest);
    assert_eq!(answers, [(4, 3, 0)]);
    assert_eq!(bench.drops("ipv6_first_fragment_incomplete_chain"), 1);
}

#[test]
fn a_solicitation_from_the_unspecified_address_to_a_unicast_address_is_invalid() {
    let mut bench = Bench::new();
    let mut ns = vec![135, 0, 0, 0, 0, 0, 0, 0];
    ns.extend_from_slice(&host_addr().octets());
    let ns = icmpv6(Ipv6Addr::UNSPECIFIED, host_addr(), ns);
    bench.inject(&frame(
        HOST_MAC,
        Ipv6Addr::UNSPECIFIED,
        host_addr(),
        58,
        255,
        &ns,
    ));
    assert!(bench.answers().is_empty());
    assert_eq!(bench.drops("ndisc_ns_invalid"), 1);
}
