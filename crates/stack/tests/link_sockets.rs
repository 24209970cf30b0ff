//! Link-level (EtherType) sockets: frames of the local experimental
//! EtherType 0x88B5 between host-a and the router of the default network
//! (one virtual wire), and hand-built hosts for what only injected frames
//! can show. Payloads arrive byte-exact with the sender's MAC; only frames
//! for the interface's MAC or broadcast, on the socket's interface and
//! EtherType, are delivered; refusals and drops are counted.

mod network_support;

use std::time::Duration;

use network_support::*;
use probe::Mode;
use stack::iface::host::{Host, LinkHandle, LinkOpenError};
use stack::iface::route::InterfaceId;
use stack::phy::{Link, Loopback};
use stack::runner::Simulator;
use stack::socket::{LinkConfig, SendError};
use stack::time::Instant;
use stack::topology::Topology;
use wire::ethernet::{EtherType, EthernetAddress};

/// IEEE 802 Local Experimental EtherType 1.
const EXPERIMENTAL_1: u16 = 0x88b5;
/// IEEE 802 Local Experimental EtherType 2.
const EXPERIMENTAL_2: u16 = 0x88b6;

/// The default network, run past start-up (DAD, RAs, MLD), without
/// captures.
fn network() -> Simulator {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    sim.run_for(Duration::from_secs(3));
    sim
}

fn eth(h: &Host, name: &str) -> InterfaceId {
    h.interface_id(name)
        .unwrap_or_else(|| panic!("{} has no {name}", h.name()))
}

fn mac(h: &Host, name: &str) -> EthernetAddress {
    h.interface_mac(eth(h, name)).unwrap()
}

fn open(sim: &mut Simulator, node: &str, iface: &str, ethertype: u16) -> LinkHandle {
    let h = host_mut(sim, node);
    let id = eth(h, iface);
    h.link_open(id, ethertype).unwrap()
}

fn drops(h: &Host, reason: &str) -> u64 {
    h.drops().get(reason).copied().unwrap_or(0)
}

/// Every frame waiting on a link socket: (source, destination, payload).
fn drain(h: &mut Host, socket: LinkHandle) -> Vec<(EthernetAddress, EthernetAddress, Vec<u8>)> {
    let mut out = Vec::new();
    while let Some(frame) = h.link(socket).recv() {
        let mut bytes = vec![0; frame.payload.len()];
        frame.payload.copy_out(0, &mut bytes);
        out.push((frame.source, frame.destination, bytes));
    }
    out
}

#[test]
fn payloads_cross_the_wire_byte_exact_with_the_senders_mac() {
    let dir = CaptureDir::new("link-sockets");
    let mut sim = simulator(&Topology::default_network(), &dir);
    sim.run_for(Duration::from_secs(3));
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
    let r = open(&mut sim, "router", "eth0", EXPERIMENTAL_1);
    let a_mac = mac(host(&sim, "host-a"), "eth0");
    let r_mac = mac(host(&sim, "router"), "eth0");
    let sizes = [0, 1, 45, 46, 100, 1024, 1499, 1500];
    for len in sizes {
        host_mut(&mut sim, "host-a")
            .link_send_to(a, &pattern(len), r_mac)
            .unwrap();
    }
    sim.run_for(Duration::from_millis(10));
    let router = host_mut(&mut sim, "router");
    let got = drain(router, r);
    assert_eq!(got.len(), sizes.len());
    for ((source, destination, bytes), len) in got.into_iter().zip(sizes) {
        assert_eq!((source, destination), (a_mac, r_mac));
        assert_eq!(bytes, pattern(len), "{len}-byte payload");
    }
    let counters = router.link(r).counters();
    assert_eq!(counters.received_datagrams, sizes.len());
    assert_eq!(counters.received_bytes, sizes.iter().sum::<usize>());
    assert_eq!(router.counters().link_received, sizes.len() as u64);
    let sender = host_mut(&mut sim, "host-a");
    assert_eq!(sender.link(a).counters().sent_datagrams, sizes.len());
    assert_eq!(sender.counters().link_sent, sizes.len() as u64);

    // And back, read through the copying call, which truncates.
    host_mut(&mut sim, "router")
        .link_send_to(r, b"reply from the router", a_mac)
        .unwrap();
    sim.run_for(Duration::from_millis(10));
    let mut out = [0u8; 5];
    let h = host_mut(&mut sim, "host-a");
    assert_eq!(h.link(a).recv_from(&mut out), Some((5, r_mac)));
    assert_eq!(&out, b"reply");
    assert_eq!(h.link(a).recv_from(&mut out), None);
    drop(sim);
    dir.check();
}

#[test]
fn broadcast_frames_are_delivered() {
    let mut sim = network();
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
    let r = open(&mut sim, "router", "eth0", EXPERIMENTAL_1);
    let a_mac = mac(host(&sim, "host-a"), "eth0");
    host_mut(&mut sim, "host-a")
        .link_send_to(a, b"to everyone", EthernetAddress::BROADCAST)
        .unwrap();
    sim.run_for(Duration::from_millis(10));
    assert_eq!(
        drain(host_mut(&mut sim, "router"), r),
        vec![(a_mac, EthernetAddress::BROADCAST, b"to everyone".to_vec())]
    );
    // The sender does not hear itself.
    assert!(drain(host_mut(&mut sim, "host-a"), a).is_empty());
}

#[test]
fn an_ethertype_nobody_opened_is_counted_unsupported() {
    let mut sim = network();
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_2);
    let r = open(&mut sim, "router", "eth0", EXPERIMENTAL_1);
    let r_mac = mac(host(&sim, "router"), "eth0");
    let before = drops(host(&sim, "router"), "ethertype_unsupported");
    host_mut(&mut sim, "host-a")
        .link_send_to(a, b"nobody listens", r_mac)
        .unwrap();
    sim.run_for(Duration::from_millis(10));
    let router = host_mut(&mut sim, "router");
    assert_eq!(drops(router, "ethertype_unsupported"), before + 1);
    assert!(drain(router, r).is_empty());
    assert_eq!(router.counters().link_received, 0);
}

#[test]
fn frames_reach_only_sockets_of_their_interface_and_ethertype() {
    let mut sim = network();
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
    // The router listens for the EtherType on its other interface, and
    // for another EtherType on this one; host-b is behind the router.
    let other_iface = open(&mut sim, "router", "eth1", EXPERIMENTAL_1);
    let other_type = open(&mut sim, "router", "eth0", EXPERIMENTAL_2);
    let beyond = open(&mut sim, "host-b", "eth0", EXPERIMENTAL_1);
    let r_mac = mac(host(&sim, "router"), "eth0");
    let before = drops(host(&sim, "router"), "ethertype_unsupported");
    for destination in [r_mac, EthernetAddress::BROADCAST] {
        host_mut(&mut sim, "host-a")
            .link_send_to(a, b"for eth0 and 0x88b5 only", destination)
            .unwrap();
    }
    sim.run_for(Duration::from_millis(10));
    let router = host_mut(&mut sim, "router");
    assert!(drain(router, other_iface).is_empty());
    assert!(drain(router, other_type).is_empty());
    assert_eq!(drops(router, "ethertype_unsupported"), before + 2);
    assert!(drain(host_mut(&mut sim, "host-b"), beyond).is_empty());
}

#[test]
fn frames_for_other_addresses_are_not_delivered() {
    let mut sim = network();
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
    let r = open(&mut sim, "router", "eth0", EXPERIMENTAL_1);
    let router = host(&sim, "router");
    let not_for_us = drops(router, "ethernet_not_for_us");
    let multicast = drops(router, "link_multicast_refused");
    // Another station's MAC; and the MAC of all-nodes (ff02::1), which
    // the router accepts for IPv6 but is no address of the socket's.
    let elsewhere = EthernetAddress([0x02, 0, 0, 0, 0, 0x99]);
    let all_nodes = EthernetAddress([0x33, 0x33, 0, 0, 0, 1]);
    for destination in [elsewhere, all_nodes] {
        host_mut(&mut sim, "host-a")
            .link_send_to(a, b"not yours", destination)
            .unwrap();
    }
    sim.run_for(Duration::from_millis(10));
    let router = host_mut(&mut sim, "router");
    assert!(drain(router, r).is_empty());
    assert_eq!(drops(router, "ethernet_not_for_us"), not_for_us + 1);
    assert_eq!(drops(router, "link_multicast_refused"), multicast + 1);
}

#[test]
fn oversize_payloads_are_refused_not_truncated() {
    let mut sim = network();
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
    let r = open(&mut sim, "router", "eth0", EXPERIMENTAL_1);
    let r_mac = mac(host(&sim, "router"), "eth0");
    let h = host_mut(&mut sim, "host-a");
    assert_eq!(h.link(a).mtu(), 1500);
    assert_eq!(
        h.link_send_to(a, &pattern(1501), r_mac),
        Err(SendError::TooLarge {
            len: 1501,
            max: 1500
        })
    );
    assert_eq!(
        h.link_send_to(a, &pattern(9000), r_mac),
        Err(SendError::TooLarge {
            len: 9000,
            max: 1500
        })
    );
    assert_eq!(h.link(a).send_queue_len(), 0);
    h.link_send_to(a, &pattern(1500), r_mac).unwrap();
    sim.run_for(Duration::from_millis(10));
    let got = drain(host_mut(&mut sim, "router"), r);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].2, pattern(1500));
    assert_eq!(
        host(&sim, "host-a").interfaces()[0].counters.tx_link_errors,
        0
    );
}

#[test]
fn reserved_ethertypes_and_unsuitable_interfaces_are_refused() {
    let mut sim = network();
    let h = host_mut(&mut sim, "router");
    let eth0 = eth(h, "eth0");
    for reserved in [0x0800, 0x0806, 0x86dd] {
        assert_eq!(
            h.link_open(eth0, reserved),
            Err(LinkOpenError::Reserved(reserved))
        );
    }
    assert_eq!(h.link_open(eth0, 0x8100), Err(LinkOpenError::VlanTag));
    for length in [0x0000, 0x002e, 0x05dc, 0x05ff] {
        assert_eq!(
            h.link_open(eth0, length),
            Err(LinkOpenError::NotAnEthertype(length))
        );
    }
    assert_eq!(
        h.link_open(InterfaceId(2), EXPERIMENTAL_1),
        Err(LinkOpenError::NoSuchInterface(InterfaceId(2)))
    );
    // Errors say what was wrong.
    let message = h.link_open(eth0, 0x86dd).unwrap_err().to_string();
    assert!(message.contains("0x86dd"), "{message}");
    assert!(h.link_open(eth0, 0x0600).is_ok());
    assert!(h.link_open(eth0, 0xffff).is_ok());

    // An interface without a link header has no EtherType to bind.
    let lo = Loopback::new();
    assert_eq!(lo.medium(), stack::phy::Medium::Ip);
    let mut ip_only = build_host(
        "ip-only",
        false,
        1,
        Box::new(lo),
        Iface::new(EthernetAddress([0x02, 0, 0, 0, 0, 7])),
        &[],
    );
    assert_eq!(
        ip_only.link_open(InterfaceId(0), EXPERIMENTAL_1),
        Err(LinkOpenError::NotEthernet {
            name: "eth0".into()
        })
    );
}

#[test]
fn a_full_receive_queue_drops_and_counts() {
    let mut sim = network();
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
    let r_mac = mac(host(&sim, "router"), "eth0");
    let router = host_mut(&mut sim, "router");
    let eth0 = eth(router, "eth0");
    let config = LinkConfig {
        recv_queue_frames: 2,
        recv_queue_bytes: 1000,
        ..LinkConfig::default()
    };
    let r = router.link_open_with(eth0, EXPERIMENTAL_1, config).unwrap();
    let send = |sim: &mut Simulator, payloads: &[Vec<u8>]| {
        for payload in payloads {
            host_mut(sim, "host-a")
                .link_send_to(a, payload, r_mac)
                .unwrap();
        }
        sim.run_for(Duration::from_millis(10));
    };

    // By count: two fit, three are dropped; the first two are kept.
    let frames: Vec<Vec<u8>> = (0..5).map(|i| vec![i; 10]).collect();
    send(&mut sim, &frames);
    let router = host_mut(&mut sim, "router");
    assert_eq!(router.link(r).recv_queue_len(), 2);
    assert_eq!(router.link(r).counters().recv_queue_full, 3);
    assert_eq!(drops(router, "link_receive_queue_full"), 3);
    let got: Vec<Vec<u8>> = drain(router, r).into_iter().map(|f| f.2).collect();
    assert_eq!(got, frames[..2]);

    // By bytes: 600 fit in 1000, a second 600 does not, 400 does.
    send(&mut sim, &[vec![1; 600], vec![2; 600], vec![3; 400]]);
    let router = host_mut(&mut sim, "router");
    let got: Vec<Vec<u8>> = drain(router, r).into_iter().map(|f| f.2).collect();
    assert_eq!(got, vec![vec![1; 600], vec![3; 400]]);
    assert_eq!(router.link(r).counters().recv_queue_full, 4);
    assert_eq!(drops(router, "link_receive_queue_full"), 4);
    assert_eq!(router.link(r).counters().received_datagrams, 4);
}

#[test]
fn every_socket_of_the_ethertype_gets_a_copy_sharing_the_buffers() {
    let mut sim = network();
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
    let first = open(&mut sim, "router", "eth0", EXPERIMENTAL_1);
    let second = open(&mut sim, "router", "eth0", EXPERIMENTAL_1);
    let r_mac = mac(host(&sim, "router"), "eth0");
    let in_use = host(&sim, "router").pool().in_use();
    host_mut(&mut sim, "host-a")
        .link_send_to(a, &pattern(700), r_mac)
        .unwrap();
    sim.run_for(Duration::from_millis(10));
    let router = host_mut(&mut sim, "router");
    // One received buffer, plus the second socket's empty head.
    assert_eq!(router.pool().in_use(), in_use + 2);
    for socket in [first, second] {
        let got = drain(router, socket);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].2, pattern(700));
    }
    assert_eq!(router.pool().in_use(), in_use);
}

#[test]
fn queued_frames_make_the_host_due() {
    let mut sim = network();
    let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
    let now = sim.now();
    let h = host_mut(&mut sim, "host-a");
    assert!(h.next_deadline(now).is_some_and(|t| t > now));
    h.link_send_to(a, b"pending", EthernetAddress::BROADCAST)
        .unwrap();
    assert_eq!(h.next_deadline(now), Some(now));
    h.poll(now);
    assert_eq!(h.link(a).send_queue_len(), 0);
    assert!(h.next_deadline(now).is_some_and(|t| t > now));
}

#[test]
fn the_send_queue_is_bounded() {
    let mut sim = network();
    let h = host_mut(&mut sim, "host-a");
    let eth0 = eth(h, "eth0");
    let config = LinkConfig {
        send_queue_frames: 3,
        ..LinkConfig::default()
    };
    let a = h.link_open_with(eth0, EXPERIMENTAL_1, config).unwrap();
    for _ in 0..3 {
        h.link_send_to(a, b"x", EthernetAddress::BROADCAST).unwrap();
    }
    assert_eq!(
        h.link_send_to(a, b"x", EthernetAddress::BROADCAST),
        Err(SendError::QueueFull)
    );
    assert_eq!(h.link(a).counters().send_queue_full, 1);
    assert_eq!(h.link(a).counters().send_queue_high_water, 3);
}

// ----- Hand-built: the frame on the wire and injected frames ---------------

const HOST_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x10]);
const PEER_MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x20]);

/// A host on one end of a wire, started; the other end is the test's.
fn wired_host() -> (Host, stack::phy::WireEnd, Instant) {
    let (ours, theirs) = wire_pair();
    let mut h = build_host("wired", false, 3, Box::new(ours), Iface::new(HOST_MAC), &[]);
    let now = Instant::ZERO + Duration::from_secs(1);
    h.poll(now);
    (h, theirs, now)
}

/// Frames of `ethertype` that reached `end`.
fn frames_of(end: &mut stack::phy::WireEnd, now: Instant, ethertype: u16) -> Vec<Vec<u8>> {
    receive_all(end, now)
        .into_iter()
        .filter(|f| f[12..14] == ethertype.to_be_bytes())
        .collect()
}

#[test]
fn the_frame_on_the_wire_is_the_payload_behind_an_ethernet_header() {
    let (mut h, mut peer, now) = wired_host();
    let socket = h.link_open(InterfaceId(0), EXPERIMENTAL_1).unwrap();
    h.link_send_to(socket, b"XTP over NIT", PEER_MAC).unwrap();
    h.poll(now);
    let frames = frames_of(&mut peer, now + Duration::from_millis(1), EXPERIMENTAL_1);
    assert_eq!(
        frames,
        vec![ethernet(
            HOST_MAC,
            PEER_MAC,
            EtherType::Unknown(EXPERIMENTAL_1),
            b"XTP over NIT"
        )]
    );
}

#[test]
fn tagged_frames_are_not_delivered() {
    let (mut h, mut peer, mut now) = wired_host();
    let socket = h.link_open(InterfaceId(0), EXPERIMENTAL_1).unwrap();
    // 802.1Q, VLAN 5, then EtherType 0x88b5 and the payload.
    let mut tagged = ethernet(PEER_MAC, HOST_MAC, EtherType::Vlan, &[0x00, 0x05]);
    tagged.extend_from_slice(&EXPERIMENTAL_1.to_be_bytes());
    tagged.extend_from_slice(b"on a VLAN");
    let untagged = ethernet(
        PEER_MAC,
        HOST_MAC,
        EtherType::Unknown(EXPERIMENTAL_1),
        b"untagged",
    );
    peer.transmit(now, &[&tagged]).unwrap();
    peer.transmit(now, &[&untagged]).unwrap();
    now += Duration::from_millis(1);
    h.poll(now);
    assert_eq!(drops(&h, "ethernet_vlan_unsupported"), 1);
    assert_eq!(
        drain(&mut h, socket),
        vec![(PEER_MAC, HOST_MAC, b"untagged".to_vec())]
    );
}

#[test]
fn short_frames_are_dropped_without_panicking() {
    let (mut h, mut peer, mut now) = wired_host();
    let socket = h.link_open(InterfaceId(0), EXPERIMENTAL_1).unwrap();
    let full = ethernet(PEER_MAC, HOST_MAC, EtherType::Unknown(EXPERIMENTAL_1), b"");
    for len in 0..full.len() {
        peer.transmit(now, &[&full[..len]]).unwrap();
    }
    // A header and no payload is a frame with an empty payload.
    peer.transmit(now, &[&full]).unwrap();
    now += Duration::from_millis(1);
    h.poll(now);
    assert_eq!(
        drain(&mut h, socket),
        vec![(PEER_MAC, HOST_MAC, Vec::new())]
    );
}

#[test]
fn a_payload_that_looks_like_a_traced_packet_keeps_the_sockets_flow() {
    let (mut h, mut peer, mut now) = wired_host();
    let socket = h.link_open(InterfaceId(0), EXPERIMENTAL_1).unwrap();
    // An IPv6 header whose next header is Destination Options, the trace
    // option first: as IP this would be flow 0xdeadbeef, traced.
    let mut payload = vec![0u8; 48];
    payload[0] = 0x60;
    payload[6] = 60;
    payload[42] = wire::trace_option::IPV6_OPTION_TYPE;
    payload[43] = wire::trace_option::DATA_LEN as u8;
    payload[44..48].copy_from_slice(&0xdead_beef_u32.to_be_bytes());
    let frame = ethernet(
        PEER_MAC,
        HOST_MAC,
        EtherType::Unknown(EXPERIMENTAL_1),
        &payload,
    );
    peer.transmit(now, &[&frame]).unwrap();
    now += Duration::from_millis(1);
    h.poll(now);
    let flow = h.link(socket).flow();
    let received = h.link(socket).recv().unwrap();
    assert_eq!(received.payload.flow(), flow);
    assert!(!received.payload.flow().traced);
}

// ----- Probes -----------------------------------------------------------------

#[test]
fn traced_link_sockets_record_their_queues_and_spans() {
    let records = std::thread::spawn(|| {
        probe::init_thread(1 << 16);
        let mut sim = network();
        let a = open(&mut sim, "host-a", "eth0", EXPERIMENTAL_1);
        let r = open(&mut sim, "router", "eth0", EXPERIMENTAL_1);
        let r_mac = mac(host(&sim, "router"), "eth0");
        host_mut(&mut sim, "host-a").link(a).set_traced(true);
        host_mut(&mut sim, "router").link(r).set_traced(true);
        let sender = host_mut(&mut sim, "host-a").link(a).flow().id;
        let receiver = host_mut(&mut sim, "router").link(r).flow().id;
        let _ = probe::drain_thread();
        probe::set_mode(Mode::TracedFlows);
        host_mut(&mut sim, "host-a")
            .link_send_to(a, &[7; 100], r_mac)
            .unwrap();
        sim.run_for(Duration::from_millis(10));
        let mut out = [0u8; 200];
        let got = host_mut(&mut sim, "router").link(r).recv_from(&mut out);
        probe::set_mode(Mode::Off);
        assert_eq!(got.map(|(n, _)| n), Some(100));
        let records: Vec<(&'static str, u32)> = probe::drain_thread()
            .iter()
            .map(|r| (stack::probes::LOCATIONS[r.loc as usize].name, r.flow))
            .collect();
        (records, sender, receiver)
    })
    .join()
    .unwrap();
    let (records, sender, receiver) = records;
    if !probe::ENABLED {
        assert!(records.is_empty());
        return;
    }
    let has = |name: &str, flow: u32| records.contains(&(name, flow));
    for name in [
        "socket.send.enter",
        "socket.send.exit",
        "socket.send_queue.enqueue",
        "socket.send_queue.dequeue",
        "iface.queue.enqueue",
        "iface.queue.dequeue",
        "link.transmit.enter",
        "link.transmit.exit",
    ] {
        assert!(has(name, sender), "no {name} for the sender: {records:?}");
    }
    // No trace option on a link frame: the receiver records under its own
    // traced socket's flow from the receive queue on.
    for name in [
        "socket.recv_queue.enqueue",
        "socket.recv_queue.dequeue",
        "socket.recv.enter",
        "socket.recv.exit",
    ] {
        assert!(
            has(name, receiver),
            "no {name} for the receiver: {records:?}"
        );
    }
    // Nothing of IP on either side.
    assert!(
        !records.iter().any(|(n, _)| n.starts_with("ip")),
        "{records:?}"
    );
}
