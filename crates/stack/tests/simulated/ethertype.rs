//! The EtherType names the network protocol of an Ethernet frame (RFC 894
//! for IPv4, RFC 2464 §3 for IPv6): a packet whose Version field disagrees
//! with it is malformed and dropped, never taken for the other protocol.
//! (Found by the kernel interop test that injects malformed frames over a
//! TAP: the host answered IPv4 echo requests sent under the IPv6
//! EtherType, and the other way round.)

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use stack::iface::host::{Host, HostConfig, InterfaceConfig};
use stack::phy::{Link, VirtualWire, WireConfig, WireEnd};
use stack::time::Instant;
use stack::topology::{Ipv4Cidr, Ipv6Cidr};
use wire::checksum;
use wire::ethernet::EthernetAddress;

const HOST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];
const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const ETHERTYPE_IPV6: [u8; 2] = [0x86, 0xdd];

fn host6() -> Ipv6Addr {
    "2001:db8::1".parse().unwrap()
}

fn peer6() -> Ipv6Addr {
    "2001:db8::2".parse().unwrap()
}

fn host4() -> Ipv4Addr {
    Ipv4Addr::new(192, 0, 2, 1)
}

fn peer4() -> Ipv4Addr {
    Ipv4Addr::new(192, 0, 2, 2)
}

struct Bench {
    host: Host,
    peer: WireEnd,
    now: Instant,
}

impl Bench {
    /// A host with 2001:db8::1/64 and 192.0.2.1/24, past DAD.
    fn new() -> Bench {
        let (ours, peer) = VirtualWire::pair(WireConfig::default()).unwrap();
        let interface = InterfaceConfig {
            name: "eth0".into(),
            link: Box::new(ours),
            mac: EthernetAddress(HOST_MAC),
            ipv4: Some(Ipv4Cidr::new(host4(), 24).unwrap()),
            ipv6: vec![Ipv6Cidr::new(host6(), 64).unwrap()],
            advertise: Vec::new(),
            dad_transmits: None,
        };
        let mut config = HostConfig::new("host", false);
        config.seed = 1;
        let host = Host::new(config, vec![interface], &[]).unwrap();
        let mut bench = Bench {
            host,
            peer,
            now: Instant::ZERO,
        };
        bench.run(Duration::from_secs(3));
        bench.frames_from_host();
        bench
    }

    fn run(&mut self, duration: Duration) {
        let end = self.now + duration;
        while self.now < end {
            self.host.poll(self.now);
            self.now += Duration::from_millis(10);
        }
    }

    /// Sends `packet` under `ethertype` to the host's MAC; returns the
    /// EtherTypes and payloads of the frames the host sent since.
    fn send(&mut self, ethertype: [u8; 2], packet: &[u8]) -> Vec<Vec<u8>> {
        let mut frame = HOST_MAC.to_vec();
        frame.extend_from_slice(&PEER_MAC);
        frame.extend_from_slice(&ethertype);
        frame.extend_from_slice(packet);
        self.peer.transmit(self.now, &[&frame]).unwrap();
        self.run(Duration::from_secs(2));
        self.frames_from_host()
    }

    fn frames_from_host(&mut self) -> Vec<Vec<u8>> {
        let mut frames = Vec::new();
        let mut buf = [0u8; 2048];
        while let Some(len) = self.peer.receive(self.now, &mut buf) {
            frames.push(buf[..len].to_vec());
        }
        frames
    }

    fn drops(&self, reason: &str) -> u64 {
        self.host.drops().get(reason).copied().unwrap_or(0)
    }
}

/// An IPv6 Echo Request from the peer (the host solicits the peer before
/// it can answer: `answered` counts that as an answer on its way).
fn echo6() -> Vec<u8> {
    let mut message = vec![128, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g'];
    let sum = checksum::add(
        checksum::pseudo_header_v6(peer6(), host6(), 58, message.len() as u32),
        checksum::sum(&message),
    );
    message[2..4].copy_from_slice(&checksum::finish(sum).to_be_bytes());
    let mut packet = vec![0x60, 0, 0, 0];
    packet.extend_from_slice(&(message.len() as u16).to_be_bytes());
    packet.extend_from_slice(&[58, 64]);
    packet.extend_from_slice(&peer6().octets());
    packet.extend_from_slice(&host6().octets());
    packet.extend_from_slice(&message);
    packet
}

/// An IPv4 Echo Request from the peer.
fn echo4() -> Vec<u8> {
    let mut message = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'p', b'i', b'n', b'g'];
    let sum = checksum::finish(checksum::sum(&message));
    message[2..4].copy_from_slice(&sum.to_be_bytes());
    let total = (20 + message.len()) as u16;
    let mut packet = vec![0x45, 0];
    packet.extend_from_slice(&total.to_be_bytes());
    packet.extend_from_slice(&[0, 1, 0, 0, 64, 1, 0, 0]);
    packet.extend_from_slice(&peer4().octets());
    packet.extend_from_slice(&host4().octets());
    let sum = checksum::finish(checksum::sum(&packet));
    packet[10..12].copy_from_slice(&sum.to_be_bytes());
    packet.extend_from_slice(&message);
    packet
}

/// Whether any frame is an Echo Reply (IPv4 type 0 or ICMPv6 type 129)
/// or a request to resolve the peer on the way to one.
fn answered(frames: &[Vec<u8>]) -> bool {
    frames.iter().any(|f| match [f[12], f[13]] {
        ETHERTYPE_IPV4 => f.len() > 34 && f[23] == 1 && f[34] == 0,
        ETHERTYPE_IPV6 => f.len() > 54 && f[20] == 58 && matches!(f[54], 129 | 135),
        [0x08, 0x06] => true,
        _ => false,
    })
}

#[test]
fn echo_requests_under_their_own_ethertype_are_answered() {
    let mut bench = Bench::new();
    assert!(answered(&bench.send(ETHERTYPE_IPV6, &echo6())));
    assert!(answered(&bench.send(ETHERTYPE_IPV4, &echo4())));
    assert_eq!(bench.drops("ip_bad_version"), 0);
}

#[test]
fn an_ipv4_packet_under_the_ipv6_ethertype_is_dropped() {
    let mut bench = Bench::new();
    let frames = bench.send(ETHERTYPE_IPV6, &echo4());
    assert!(!answered(&frames), "answered: {frames:02x?}");
    assert_eq!(bench.drops("ip_bad_version"), 1);
}

#[test]
fn an_ipv6_packet_under_the_ipv4_ethertype_is_dropped() {
    let mut bench = Bench::new();
    let frames = bench.send(ETHERTYPE_IPV4, &echo6());
    assert!(!answered(&frames), "answered: {frames:02x?}");
    assert_eq!(bench.drops("ip_bad_version"), 1);
}
