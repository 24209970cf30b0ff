//! The reference stack on simulated IPv4 networks (issue 3, item 9, the
//! IPv4 counterparts): ARP resolution and failure, ping and traceroute
//! across two routers, fragmentation at the sender over impaired links and
//! at a router, and overlapping fragments.
//!
//! Deterministic (seeded topologies and hosts, a virtual clock); every
//! test leaves pcapng captures that tshark must decode without a
//! malformed packet, a bad checksum or an error-level expert info.

use crate::network_support;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use network_support::*;
use stack::iface::host::HostState;
use stack::phy::{Link, WireEnd};
use stack::socket::{RawFamily, UdpConfig};
use stack::topology::Topology;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4Packet, Icmpv4Repr, Icmpv4TimeExceeded};
use wire::ip::{ChecksumMode, IpProtocol};
use wire::ipv4::Ipv4Packet;

const MAC_HOST: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
const MAC_PEER: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x99]);

fn ip(text: &str) -> Ipv4Addr {
    text.parse().unwrap()
}

fn v4(text: &str) -> IpAddr {
    IpAddr::V4(ip(text))
}

/// The ARP entry for `addr` on `interface`: (state, MAC).
fn arp_entry(state: &HostState, interface: usize, addr: &str) -> Option<(&'static str, String)> {
    state.interfaces[interface]
        .arp
        .iter()
        .find(|e| e.address == addr)
        .map(|e| (e.state, e.lladdr.clone().unwrap_or_default()))
}

/// The ICMP errors (types 3, 11) among raw-socket messages: (source, type,
/// code, invoking IPv4 header and data).
fn icmpv4_errors(messages: &[(IpAddr, IpAddr, u8, Vec<u8>)]) -> Vec<(IpAddr, u8, u8, Vec<u8>)> {
    messages
        .iter()
        .filter(|(_, _, _, bytes)| bytes.len() >= 8 && matches!(bytes[0], 3 | 11))
        .map(|(remote, _, _, bytes)| (*remote, bytes[0], bytes[1], bytes[8..].to_vec()))
        .collect()
}

// ----- Ping and ARP -------------------------------------------------------------

fn echo_request(ident: u16, seq_no: u16, data: &[u8]) -> Vec<u8> {
    let repr = Icmpv4Repr::EchoRequest {
        ident,
        seq_no,
        data,
    };
    let mut bytes = vec![0u8; repr.buffer_len()];
    // Checksum left zero: the host fills it.
    repr.emit(
        &mut Icmpv4Packet::new_unchecked(&mut bytes[..]),
        ChecksumMode::Skip,
    )
    .unwrap();
    bytes
}

#[test]
fn ping4_across_two_routers_resolves_every_hop_by_arp() {
    let dir = CaptureDir::new("ping4");
    let topology = Topology::from_toml_str(TWO_ROUTERS).unwrap();
    let mut sim = simulator(&topology, &dir);
    sim.run_for(Duration::from_secs(1));
    let raw = host_mut(&mut sim, "host-a").raw_open(RawFamily::Ipv4, IpProtocol::Icmp);
    let ident = 0x4242;
    // Three small pings, then one of 3000 bytes: fragmented by host-a,
    // reassembled by host-b, whose reply is fragmented and reassembled in
    // turn.
    for seq in 1..=4u16 {
        let data = if seq == 4 {
            pattern(3000)
        } else {
            format!("stackscope ping {seq}").into_bytes()
        };
        host_mut(&mut sim, "host-a")
            .raw_send_to(
                raw,
                &echo_request(ident, seq, &data),
                v4("198.51.100.10"),
                None,
            )
            .unwrap();
        let mut replies = Vec::new();
        sim.run_until_with(Duration::from_secs(2), |sim| {
            for message in drain_raw(host_mut(sim, "host-a"), raw) {
                if message.3.first() == Some(&0) {
                    replies.push(message);
                }
            }
            !replies.is_empty()
        });
        assert_eq!(replies.len(), 1, "seq {seq}: {replies:?}");
        let (remote, local, ttl, bytes) = &replies[0];
        assert_eq!((*remote, *local), (v4("198.51.100.10"), v4("192.0.2.10")));
        // Two routers on the way back, each decrementing the TTL.
        assert_eq!(*ttl, 64 - 2);
        let parsed = Icmpv4Repr::parse(
            &Icmpv4Packet::new_checked(&bytes[..]).unwrap(),
            ChecksumMode::Full,
        )
        .expect("a valid echo reply, checksum included");
        assert_eq!(
            parsed,
            Icmpv4Repr::EchoReply {
                ident,
                seq_no: seq,
                data: &data
            }
        );
    }
    let b_counters = host(&sim, "host-b").counters();
    assert_eq!(b_counters.echo_replies_sent, 4);
    assert_eq!(
        b_counters.ipv4_fragments_sent, 3,
        "the large reply, fragmented"
    );
    // Each way: 3 small packets and 3 fragments.
    assert_eq!(host(&sim, "r1").counters().ipv4_forwarded, 12);
    assert_eq!(host(&sim, "r2").counters().ipv4_forwarded, 12);

    // ARP resolved every hop, each to the MAC of the right interface.
    let now = sim.now();
    let mac = |node: &str, interface: usize| {
        host(&sim, node).state(now).interfaces[interface]
            .mac
            .clone()
    };
    let expect = [
        ("host-a", 0, "192.0.2.1", mac("r1", 0)),
        ("r1", 0, "192.0.2.10", mac("host-a", 0)),
        ("r1", 1, "203.0.113.2", mac("r2", 0)),
        ("r2", 0, "203.0.113.1", mac("r1", 1)),
        ("r2", 1, "198.51.100.10", mac("host-b", 0)),
        ("host-b", 0, "198.51.100.1", mac("r2", 1)),
    ];
    for (node, interface, addr, lladdr) in expect {
        let state = host(&sim, node).state(now);
        let entry = arp_entry(&state, interface, addr);
        assert!(
            matches!(&entry, Some((s, m)) if *m == lladdr && ["REACHABLE", "STALE", "DELAY", "PROBE"].contains(s)),
            "{node} if {interface}: ARP entry for {addr} is {entry:?}, want {lladdr}:\n{state}"
        );
    }
    drop(sim);
    dir.check();
}

#[test]
fn arp_failure_drops_the_queued_datagrams_and_a_router_reports_host_unreachable() {
    let dir = CaptureDir::new("arp-fail");
    let topology = Topology::default_network();
    let mut sim = simulator(&topology, &dir);
    sim.run_for(Duration::from_secs(1));
    let h = host_mut(&mut sim, "host-a");
    let raw = h.raw_open(RawFamily::Ipv4, IpProtocol::Icmp);
    let socket = h.udp_open(UdpConfig::default());
    // On host-a's own subnet, nobody answers for 192.0.2.99: two
    // datagrams wait for the resolution and are dropped when it fails.
    h.udp_send_to(socket, b"one", SocketAddr::new(v4("192.0.2.99"), 9))
        .unwrap();
    h.udp_send_to(socket, b"two", SocketAddr::new(v4("192.0.2.99"), 9))
        .unwrap();
    sim.run_for(Duration::from_millis(10));
    let state = host(&sim, "host-a").state(sim.now());
    let entry = state.interfaces[0]
        .arp
        .iter()
        .find(|e| e.address == "192.0.2.99");
    assert_eq!(
        entry.map(|e| (e.state, e.queued)),
        Some(("INCOMPLETE", 2)),
        "{state}"
    );
    sim.run_for(Duration::from_secs(5));
    let state = host(&sim, "host-a").state(sim.now());
    assert_eq!(arp_entry(&state, 0, "192.0.2.99"), None, "{state}");
    assert_eq!(state.drops.get("arp_unreachable"), Some(&2), "{state}");
    // Its own datagrams: no ICMP error to itself.
    assert_eq!(state.counters.icmpv4_errors_sent, 0, "{state}");

    // Beyond the router, 198.51.100.99 does not answer either: the router
    // drops the datagram and tells host-a, Destination Unreachable code 1
    // (RFC 1812 §5.2.7.1), from its address on host-a's subnet.
    host_mut(&mut sim, "host-a")
        .udp_send_to(socket, b"three", SocketAddr::new(v4("198.51.100.99"), 9))
        .unwrap();
    sim.run_for(Duration::from_secs(5));
    let errors = icmpv4_errors(&drain_raw(host_mut(&mut sim, "host-a"), raw));
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (from, msg_type, code, invoking) = &errors[0];
    assert_eq!((*from, *msg_type), (v4("192.0.2.1"), 3));
    assert_eq!(*code, u8::from(Icmpv4DstUnreachable::HostUnreachable));
    let invoking = Ipv4Packet::new_checked(&invoking[..]).unwrap();
    assert_eq!(invoking.dst_addr(), ip("198.51.100.99"));
    assert_eq!(invoking.protocol(), IpProtocol::Udp);
    let router = host(&sim, "router").state(sim.now());
    assert_eq!(router.drops.get("arp_unreachable"), Some(&1), "{router}");
    drop(sim);
    dir.check();
}

// ----- Traceroute -------------------------------------------------------------

#[test]
fn traceroute4_sees_each_router_then_port_unreachable() {
    let dir = CaptureDir::new("traceroute4");
    let topology = Topology::from_toml_str(TWO_ROUTERS).unwrap();
    let mut sim = simulator(&topology, &dir);
    sim.run_for(Duration::from_secs(1));
    let h = host_mut(&mut sim, "host-a");
    let raw = h.raw_open(RawFamily::Ipv4, IpProtocol::Icmp);
    let probe = h.udp_open(UdpConfig::default());
    let local = h.udp_bind(probe, SocketAddr::new(v4("192.0.2.10"), 0));
    let expected = [
        // r1 and r2: Time Exceeded, TTL expired in transit, each from the
        // address of the interface that sends it back.
        (
            v4("192.0.2.1"),
            11,
            u8::from(Icmpv4TimeExceeded::TtlExpired),
        ),
        (
            v4("203.0.113.2"),
            11,
            u8::from(Icmpv4TimeExceeded::TtlExpired),
        ),
        // host-b: Destination Unreachable, port.
        (
            v4("198.51.100.10"),
            3,
            u8::from(Icmpv4DstUnreachable::PortUnreachable),
        ),
    ];
    for (ttl, (from, msg_type, code)) in (1..=3u8).zip(expected) {
        let h = host_mut(&mut sim, "host-a");
        h.udp(probe).set_hop_limit(Some(ttl));
        h.udp_send_to(
            probe,
            format!("probe {ttl}").as_bytes(),
            SocketAddr::new(v4("198.51.100.10"), 33434),
        )
        .unwrap();
        let mut errors = Vec::new();
        sim.run_until_with(Duration::from_secs(2), |sim| {
            errors.extend(icmpv4_errors(&drain_raw(host_mut(sim, "host-a"), raw)));
            !errors.is_empty()
        });
        assert_eq!(errors.len(), 1, "ttl {ttl}: {errors:?}");
        let (source, t, c, invoking) = &errors[0];
        assert_eq!((*source, *t, *c), (from, msg_type, code), "ttl {ttl}");
        // The invoking header and the first 8 bytes: our probe, TTL 1 left.
        let invoking = Ipv4Packet::new_checked(&invoking[..]).unwrap();
        assert_eq!(invoking.src_addr(), ip("192.0.2.10"));
        assert_eq!(invoking.dst_addr(), ip("198.51.100.10"));
        assert_eq!(invoking.protocol(), IpProtocol::Udp);
        assert_eq!(invoking.ttl(), 1, "ttl {ttl}");
        let udp = invoking.payload();
        assert!(udp.len() >= 8);
        assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), local.port());
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 33434);
    }
    assert_eq!(host(&sim, "r1").drops().get("ipv4_ttl_exceeded"), Some(&1));
    assert_eq!(host(&sim, "r2").drops().get("ipv4_ttl_exceeded"), Some(&1));
    assert_eq!(host(&sim, "host-b").drops().get("udp_no_socket"), Some(&1));
    drop(sim);
    dir.check();
}

// ----- Fragmentation ------------------------------------------------------------

#[test]
fn fragmented_20000_byte_datagram_survives_reordering_and_duplication_ipv4() {
    let dir = CaptureDir::new("frag4");
    let topology = Topology::from_toml_str(IMPAIRED_1280).unwrap();
    let mut sim = simulator(&topology, &dir);
    let (a, b) = (v4("192.0.2.10"), v4("198.51.100.10"));
    sim.run_for(Duration::from_secs(1));
    warm_up(&mut sim, "host-a", "host-b", b, a);
    let rx = udp_listen(&mut sim, "host-b", false, 5001);
    let h = host_mut(&mut sim, "host-a");
    let tx = h.udp_open(UdpConfig::default());
    let local = h.udp_bind(tx, SocketAddr::new(a, 0));
    let fragments_before = h.counters().ipv4_fragments_sent;
    let data = pattern(20_000);
    h.udp_send_to(tx, &data, SocketAddr::new(b, 5001)).unwrap();
    sim.run_for(Duration::from_secs(1));

    let h = host_mut(&mut sim, "host-b");
    let datagram = h.udp(rx).recv().expect("the datagram arrived");
    assert!(h.udp(rx).recv().is_none(), "delivered more than once");
    assert_eq!(datagram.remote, local);
    let mut received = vec![0; datagram.payload.len()];
    datagram.payload.copy_out(0, &mut received);
    assert_eq!(received.len(), 20_000);
    assert!(received == data, "payload corrupted in reassembly");
    drop(datagram);
    // 20 008 bytes of UDP in fragments of at most 1280 - 20 = 1260 bytes,
    // rounded down to 1256 (a multiple of 8): 16 fragments.
    let fragments = host(&sim, "host-a").counters().ipv4_fragments_sent - fragments_before;
    assert_eq!(fragments, 16);
    for name in ["host-a", "router"] {
        let stats = host(&sim, name).interfaces()[0].link.stats();
        assert!(
            stats.duplicated > 0 && stats.reordered > 0,
            "{name}: {stats:?}"
        );
    }
    let b_state = host(&sim, "host-b").state(sim.now());
    assert_eq!(b_state.reassembly.ipv4_reassembled, 1, "{b_state}");
    assert!(
        b_state
            .drops
            .get("reassembly_duplicate")
            .is_some_and(|&n| n > 0),
        "duplicates were not seen:\n{b_state}"
    );
    drop(sim);
    dir.check();
}

#[test]
fn a_router_fragments_an_ipv4_datagram_for_a_narrower_next_link() {
    let dir = CaptureDir::new("refrag4");
    let topology = two_routers_narrow_middle();
    let mut sim = simulator(&topology, &dir);
    let (a, b) = (v4("192.0.2.10"), v4("198.51.100.10"));
    sim.run_for(Duration::from_secs(1));
    warm_up(&mut sim, "host-a", "host-b", b, a);
    let rx = udp_listen(&mut sim, "host-b", false, 5001);
    let h = host_mut(&mut sim, "host-a");
    let tx = h.udp_open(UdpConfig::default());
    h.udp_bind(tx, SocketAddr::new(a, 0));
    let data = pattern(1400);
    h.udp_send_to(tx, &data, SocketAddr::new(b, 5001)).unwrap();
    sim.run_for(Duration::from_millis(500));

    // 20 + 8 + 1400 = 1428 bytes fit host-a's link but not r1 — r2
    // (1280): without DF, r1 fragments (RFC 791; RFC 1812 §5.2.6).
    assert_eq!(host(&sim, "host-a").counters().ipv4_fragments_sent, 0);
    let r1 = host(&sim, "r1").counters();
    assert_eq!(r1.ipv4_fragments_sent, 2, "{r1:?}");
    let h = host_mut(&mut sim, "host-b");
    let datagram = h.udp(rx).recv().expect("the datagram arrived");
    let mut received = vec![0; datagram.payload.len()];
    datagram.payload.copy_out(0, &mut received);
    assert!(received == data);
    drop(datagram);
    let b_state = host(&sim, "host-b").state(sim.now());
    assert_eq!(b_state.reassembly.ipv4_reassembled, 1, "{b_state}");
    drop(sim);
    dir.check();
}

// ----- Overlapping fragments ----------------------------------------------------

#[test]
fn overlapping_ipv4_fragments_discard_the_whole_datagram() {
    let dir = CaptureDir::new("overlap4");
    let (host_end, mut peer) = wire_pair();
    let h = build_host(
        "host",
        false,
        41,
        dir.capture(host_end, "host-eth0"),
        Iface {
            ipv4: Some("192.0.2.10/24"),
            ..Iface::new(MAC_HOST)
        },
        &[],
    );
    let mut lab = Lab::new(vec![h]);
    lab.run_for(Duration::from_secs(1), |_| false);
    let (me, them) = (ip("192.0.2.10"), ip("192.0.2.1"));
    let socket = lab.hosts[0].udp_open(UdpConfig::default());
    lab.hosts[0].udp_bind(socket, SocketAddr::new(v4("0.0.0.0"), 7777));
    let payload: Vec<u8> = (0..24).collect();
    let udp = udp_datagram(
        SocketAddr::new(IpAddr::V4(them), 4000),
        SocketAddr::new(IpAddr::V4(me), 7777),
        &payload,
    );
    let frame = |ident: u16, offset: u16, more: bool, range: std::ops::Range<usize>| {
        let packet = ipv4_packet(
            them,
            me,
            IpProtocol::Udp,
            ident,
            offset,
            more,
            64,
            &udp[range],
        );
        ethernet(MAC_PEER, MAC_HOST, EtherType::Ipv4, &packet)
    };
    let inject = |lab: &mut Lab, peer: &mut WireEnd, frames: &[Vec<u8>]| {
        for frame in frames {
            peer.transmit(lab.now, &[frame]).expect("inject");
            lab.run_for(Duration::from_millis(1), |_| false);
        }
        receive_all(peer, lab.now);
    };

    // The control reassembles.
    inject(
        &mut lab,
        &mut peer,
        &[
            frame(1, 0, true, 0..16),
            frame(1, 16, true, 16..24),
            frame(1, 24, false, 24..32),
        ],
    );
    let datagram = lab.hosts[0]
        .udp(socket)
        .recv()
        .expect("control datagram delivered");
    let mut got = vec![0; datagram.payload.len()];
    datagram.payload.copy_out(0, &mut got);
    assert_eq!(got, payload);
    drop(datagram);
    // Overlapping (same bytes, RFC 791 would have let them overwrite):
    // refused like IPv6 (RFC 5722), the whole datagram discarded.
    inject(
        &mut lab,
        &mut peer,
        &[
            frame(2, 0, true, 0..16),
            frame(2, 8, true, 8..24),
            frame(2, 24, false, 24..32),
        ],
    );
    assert!(
        lab.hosts[0].udp(socket).recv().is_none(),
        "an overlapping datagram was delivered"
    );
    let state = lab.state(0);
    assert_eq!(state.drops.get("reassembly_overlap"), Some(&1), "{state}");
    assert_eq!(
        state.drops.get("reassembly_datagram_discarded"),
        Some(&1),
        "{state}"
    );
    assert_eq!(state.reassembly.ipv4_reassembled, 1, "{state}");
    assert_eq!(state.counters.icmpv4_errors_sent, 0, "{state}");
    // The discarded datagram is forgotten when its 30 s timer runs out.
    lab.run_for(Duration::from_secs(31), |_| false);
    let state = lab.state(0);
    assert_eq!(state.reassembly.ipv4_datagrams, 0, "{state}");
    assert_eq!(state.reassembly.ipv4_bytes, 0, "{state}");
    assert_eq!(state.buffers.in_use, 0, "{state}");
    drop(lab);
    dir.check();
}

// ----- ICMP errors about reassembled datagrams ------------------------------

#[test]

fn port_unreachable_for_a_reassembled_datagram_quotes_its_reassembled_header() {
    let dir = CaptureDir::new("reasm-error4");
    let topology = Topology::default_network();
    let mut sim = simulator(&topology, &dir);
    let (a, b) = (v4("192.0.2.10"), v4("198.51.100.10"));
    sim.run_for(Duration::from_secs(1));
    warm_up(&mut sim, "host-a", "host-b", b, a);
    let h = host_mut(&mut sim, "host-a");
    let raw = h.raw_open(RawFamily::Ipv4, IpProtocol::Icmp);
    let tx = h.udp_open(UdpConfig::default());
    let local = h.udp_bind(tx, SocketAddr::new(a, 0));
    // 3000 bytes to a port nobody listens on: three fragments, reassembled
    // by host-b, then answered with Port Unreachable.
    h.udp_send_to(tx, &pattern(3000), SocketAddr::new(b, 5999))
        .unwrap();
    sim.run_for(Duration::from_millis(500));
    assert_eq!(host(&sim, "host-a").counters().ipv4_fragments_sent, 3);
    let errors = icmpv4_errors(&drain_raw(host_mut(&mut sim, "host-a"), raw));
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (from, msg_type, code, invoking) = &errors[0];
    assert_eq!(
        (*from, *msg_type, *code),
        (b, 3, u8::from(Icmpv4DstUnreachable::PortUnreachable))
    );
    // RFC 1122 §3.2.2: the error quotes the header of the datagram that
    // triggered it — the reassembled one (as Linux does): no More
    // Fragments flag, the whole Total Length, a valid header checksum.
    let header = Ipv4Packet::new_unchecked(&invoking[..20]);
    assert_eq!(
        (header.src_addr(), header.dst_addr()),
        (ip("192.0.2.10"), ip("198.51.100.10"))
    );
    assert_eq!(header.protocol(), IpProtocol::Udp);
    assert_eq!(header.frag_offset(), 0);
    assert!(
        !header.more_frags(),
        "the quoted header still says More Fragments"
    );
    assert_eq!(usize::from(header.total_len()), 20 + 8 + 3000);
    assert_eq!(
        wire::checksum::checksum(&invoking[..20]),
        0,
        "quoted header checksum"
    );
    let udp = &invoking[20..28];
    assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), local.port());
    assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 5999);
    drop(sim);
    dir.check();
}
