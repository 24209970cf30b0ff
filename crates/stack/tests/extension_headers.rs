//! IPv6 extension-header processing (RFC 8200 §4) on a live host: the
//! option-type action bits, Hop-by-Hop only first, RH0 refused (RFC 5095),
//! unknown next headers, and ICMPv6 Parameter Problem pointers. Frames are
//! hand-built and injected over a virtual wire; answers are read from it.

use std::net::Ipv6Addr;
use std::time::Duration;

use stack::iface::host::{Host, HostConfig, InterfaceConfig};
use stack::phy::{Link, VirtualWire, WireConfig, WireEnd};
use stack::time::Instant;
use stack::topology::Ipv6Cidr;
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
        let (ours, peer) = VirtualWire::pair(WireConfig::default()).unwrap();
        let interface = InterfaceConfig {
            name: "eth0".into(),
            link: Box::new(ours),
            mac: EthernetAddress(HOST_MAC),
            ipv4: None,
            ipv6: vec![Ipv6Cidr::new(host_addr(), 64).unwrap()],
            advertise: Vec::new(),
        };
        let mut config = HostConfig::new("host", false);
        config.seed = 1;
        let host = Host::new(config, vec![interface], &[]).unwrap();
        let mut bench = Bench {
            host,
            peer,
            now: Instant::ZERO,
        };
        // DAD for the addresses, then teach the host our MAC with a
        // Neighbor Solicitation carrying the source link-layer option.
        bench.run(Duration::from_secs(3));
        let mut ns = vec![135, 0, 0, 0, 0, 0, 0, 0];
        ns.extend_from_slice(&host_addr().octets());
        ns.extend_from_slice(&[1, 1]);
        ns.extend_from_slice(&PEER_MAC);
        let ns = icmpv6(peer_addr(), host_addr(), ns);
        bench.inject(&frame(HOST_MAC, peer_addr(), host_addr(), 58, 255, &ns));
        bench.answers();
        bench
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
