//! IP multicast group membership on a shared segment (topologies/lan.toml):
//! host-a sends UDP to ff15::1234 and 239.1.2.3; host-b and host-c, joined,
//! receive each datagram once; the router, not joined, delivers nothing and
//! counts what it refused (an IPv6 router at its link's filter; an IPv4
//! one, a multicast router hearing every group for IGMP, RFC 2236 §7, as
//! a TTL-1 datagram it does not forward); after a leave, datagrams stop.

use crate::network_support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::*;
use stack::iface::host::{Host, MulticastError, UdpHandle};
use stack::runner::Simulator;
use stack::socket::UdpConfig;
use stack::topology::Topology;

const LAN: &str = include_str!("../../../../topologies/lan.toml");
const PORT: u16 = 6000;
const GROUP6: &str = "ff15::1234";
const GROUP4: &str = "239.1.2.3";
/// Groups sharing the MACs of the two above (RFC 2464 §7 keeps the low 32
/// bits, RFC 1112 §6.4 the low 23), but not their addresses.
const TWIN6: &str = "ff15::1:0:1234";
const TWIN4: &str = "239.129.2.3";

fn drops(h: &Host, reason: &str) -> u64 {
    h.drops().get(reason).copied().unwrap_or(0)
}

fn group(text: &str) -> IpAddr {
    text.parse().unwrap()
}

fn ready_lan() -> Simulator {
    let topology = Topology::from_toml_str(LAN).unwrap();
    let mut sim = Simulator::new(&topology, None).unwrap();
    for name in ["host-a", "host-b", "host-c"] {
        wait_for_slaac(&mut sim, name, "2001:db8:a::");
    }
    sim
}

fn join(sim: &mut Simulator, name: &str, group_text: &str) {
    let h = host_mut(sim, name);
    let eth0 = h.interface_id("eth0").unwrap();
    h.join_multicast(eth0, group(group_text)).unwrap();
}

fn leave(sim: &mut Simulator, name: &str, group_text: &str) {
    let h = host_mut(sim, name);
    let eth0 = h.interface_id("eth0").unwrap();
    h.leave_multicast(eth0, group(group_text)).unwrap();
}

fn bind(sim: &mut Simulator, name: &str, address: IpAddr) -> UdpHandle {
    let h = host_mut(sim, name);
    let socket = h.udp_open(UdpConfig::default());
    h.udp_bind(socket, SocketAddr::new(address, PORT));
    socket
}

/// What arrived on a socket: (payload, sender).
fn received(sim: &mut Simulator, name: &str, socket: UdpHandle) -> Vec<(Vec<u8>, IpAddr)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    while let Some((len, from)) = host_mut(sim, name).udp(socket).recv_from(&mut buf) {
        out.push((buf[..len].to_vec(), from.ip()));
    }
    out
}

/// Sockets of one family: host-b's bound to the group, host-c's and the
/// router's to the unspecified address.
struct Listeners {
    b: UdpHandle,
    c: UdpHandle,
    router: UdpHandle,
}

fn listeners(sim: &mut Simulator, group_text: &str) -> Listeners {
    let any = match group(group_text) {
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    };
    Listeners {
        b: bind(sim, "host-b", group(group_text)),
        c: bind(sim, "host-c", any),
        router: bind(sim, "router", any),
    }
}

fn send(sim: &mut Simulator, sender: UdpHandle, group_text: &str, payload: &[u8]) {
    host_mut(sim, "host-a")
        .udp_send_to(sender, payload, SocketAddr::new(group(group_text), PORT))
        .unwrap();
    sim.run_for(Duration::from_millis(50));
}

fn group_delivery(group_text: &str, twin: &str) {
    let mut sim = ready_lan();
    let v6 = group(group_text).is_ipv6();
    let (not_joined_ip, not_joined_eth) = (
        if v6 {
            "ipv6_not_for_us"
        } else {
            "ipv4_not_for_us"
        },
        "ethernet_not_for_us",
    );
    // Where the router counts a group it has not joined: IPv6's link
    // filter and IP input; IPv4's multicast forwarding, which leaves a
    // TTL-1 datagram on its link (RFC 1112 §6.1, RFC 5771).
    let (router_eth, router_ip) = if v6 {
        (not_joined_eth, not_joined_ip)
    } else {
        (
            "ipv4_multicast_not_forwarded",
            "ipv4_multicast_not_forwarded",
        )
    };
    for name in ["host-b", "host-c"] {
        join(&mut sim, name, group_text);
    }
    let socket = listeners(&mut sim, group_text);
    let sender = host_mut(&mut sim, "host-a").udp_open(UdpConfig::default());
    let router_eth_before = drops(host(&sim, "router"), router_eth);
    sim.run_for(Duration::from_secs(1));
    let router_eth_quiet = drops(host(&sim, "router"), router_eth);

    send(&mut sim, sender, group_text, b"first");
    let from = address_of(&sim, "host-a", v6);
    for (name, handle) in [("host-b", socket.b), ("host-c", socket.c)] {
        let got = received(&mut sim, name, handle);
        assert_eq!(got, [(b"first".to_vec(), from)], "{name}");
    }
    // The router is not joined: its interface refused the group's MAC.
    assert!(received(&mut sim, "router", socket.router).is_empty());
    assert!(
        drops(host(&sim, "router"), router_eth) > router_eth_quiet,
        "the router did not count the frame ({router_eth_before} before)"
    );

    // A group sharing the MAC passes Ethernet input, and IP input refuses
    // the datagram, counted.
    join(&mut sim, "router", twin);
    let refused_before = drops(host(&sim, "router"), router_ip);
    send(&mut sim, sender, group_text, b"twin");
    assert!(received(&mut sim, "router", socket.router).is_empty());
    assert_eq!(drops(host(&sim, "router"), router_ip), refused_before + 1);
    assert_eq!(received(&mut sim, "host-b", socket.b).len(), 1);
    assert_eq!(received(&mut sim, "host-c", socket.c).len(), 1);

    // After host-c leaves, only host-b receives.
    leave(&mut sim, "host-c", group_text);
    // host-c refuses it, counted: at IP input while its MLD listener
    // still retransmits the leave (RFC 3810 §6.1; the MAC is still
    // listened to), at Ethernet input in IPv4.
    let refusals = |sim: &Simulator| {
        let c = host(sim, "host-c");
        drops(c, not_joined_eth) + drops(c, not_joined_ip)
    };
    let c_before = refusals(&sim);
    send(&mut sim, sender, group_text, b"after");
    assert_eq!(
        received(&mut sim, "host-b", socket.b),
        [(b"after".to_vec(), from)]
    );
    assert!(received(&mut sim, "host-c", socket.c).is_empty());
    assert_eq!(refusals(&sim), c_before + 1);
    // Once the leave is done, the MAC is no longer listened to.
    sim.run_for(Duration::from_secs(10));
    let c_eth_before = drops(host(&sim, "host-c"), not_joined_eth);
    send(&mut sim, sender, group_text, b"later");
    assert!(received(&mut sim, "host-c", socket.c).is_empty());
    assert_eq!(received(&mut sim, "host-b", socket.b).len(), 1);
    assert_eq!(
        drops(host(&sim, "host-c"), not_joined_eth),
        c_eth_before + 1
    );
    // No host sent an ICMP error for a multicast datagram nobody took.
    assert_eq!(host(&sim, "router").counters().icmpv6_errors_sent, 0);
    assert_eq!(host(&sim, "router").counters().icmpv4_errors_sent, 0);
}

#[test]
fn ipv6_group_ff15_1234_reaches_joined_hosts_once_and_stops_after_leave() {
    group_delivery(GROUP6, TWIN6);
}

#[test]
fn ipv4_group_239_1_2_3_reaches_joined_hosts_once_and_stops_after_leave() {
    group_delivery(GROUP4, TWIN4);
}

#[test]
fn datagrams_to_a_group_go_to_its_mac_with_hop_limit_one() {
    let mut sim = ready_lan();
    let tap = network_support::wiretap::Wiretap::splice(&mut sim, "host-a");
    for (group_text, mac, ethertype) in [
        (GROUP6, [0x33, 0x33, 0x00, 0x00, 0x12, 0x34], [0x86, 0xdd]),
        (GROUP4, [0x01, 0x00, 0x5e, 0x01, 0x02, 0x03], [0x08, 0x00]),
    ] {
        let sender = host_mut(&mut sim, "host-a").udp_open(UdpConfig::default());
        let mark = tap.mark();
        send(&mut sim, sender, group_text, b"mapped");
        let frames = tap.frames_sent_since(mark);
        let frame = frames
            .iter()
            .find(|f| f[12..14] == ethertype)
            .unwrap_or_else(|| panic!("no frame to {group_text}: {frames:?}"));
        // RFC 2464 §7, RFC 1112 §6.4.
        assert_eq!(frame[..6], mac, "{group_text}");
        let ip = &frame[14..];
        // RFC 3493 §5.2 and RFC 1112 §6.1: hop limit / TTL 1.
        let (hop_limit, dst) = if ethertype == [0x86, 0xdd] {
            (
                ip[7],
                IpAddr::from(<[u8; 16]>::try_from(&ip[24..40]).unwrap()),
            )
        } else {
            (
                ip[8],
                IpAddr::from(<[u8; 4]>::try_from(&ip[16..20]).unwrap()),
            )
        };
        assert_eq!(hop_limit, 1, "{group_text}");
        assert_eq!(dst, group(group_text));
    }
}

#[test]
fn a_socket_bound_to_a_group_replies_from_a_unicast_address() {
    for (group_text, v6) in [(GROUP6, true), (GROUP4, false)] {
        let mut sim = ready_lan();
        join(&mut sim, "host-b", group_text);
        let member = bind(&mut sim, "host-b", group(group_text));
        let any = if v6 { "[::]:0" } else { "0.0.0.0:0" };
        let h = host_mut(&mut sim, "host-a");
        let sender = h.udp_open(UdpConfig::default());
        let sender_at = h.udp_bind(sender, any.parse().unwrap());
        send(&mut sim, sender, group_text, b"question");
        let from = address_of(&sim, "host-a", v6);
        assert_eq!(received(&mut sim, "host-b", member).len(), 1);
        host_mut(&mut sim, "host-b")
            .udp_send_to(member, b"answer", SocketAddr::new(from, sender_at.port()))
            .unwrap();
        sim.run_for(Duration::from_millis(50));
        let got = received(&mut sim, "host-a", sender);
        assert_eq!(
            got,
            [(b"answer".to_vec(), address_of(&sim, "host-b", v6))],
            "{group_text}"
        );
    }
}

#[test]
fn two_sockets_of_one_host_each_get_a_copy() {
    let mut sim = ready_lan();
    join(&mut sim, "host-b", GROUP6);
    let bound = bind(&mut sim, "host-b", group(GROUP6));
    let any = bind(&mut sim, "host-b", IpAddr::V6(Ipv6Addr::UNSPECIFIED));
    let sender = host_mut(&mut sim, "host-a").udp_open(UdpConfig::default());
    send(&mut sim, sender, GROUP6, b"both");
    assert_eq!(received(&mut sim, "host-b", bound).len(), 1);
    assert_eq!(received(&mut sim, "host-b", any).len(), 1);
    assert_eq!(host(&sim, "host-b").counters().udp_received, 1);
}

#[test]
fn joins_and_leaves_are_checked() {
    let mut sim = ready_lan();
    let h = host_mut(&mut sim, "host-b");
    let eth0 = h.interface_id("eth0").unwrap();
    let unicast = group("2001:db8:a::1");
    assert_eq!(
        h.join_multicast(eth0, unicast),
        Err(MulticastError::NotMulticast(unicast))
    );
    let g = group(GROUP4);
    h.join_multicast(eth0, g).unwrap();
    assert_eq!(
        h.join_multicast(eth0, g),
        Err(MulticastError::AlreadyJoined(g))
    );
    h.leave_multicast(eth0, g).unwrap();
    assert_eq!(
        h.leave_multicast(eth0, g),
        Err(MulticastError::NotJoined(g))
    );
    // The stack's own all-nodes membership is not the application's to
    // leave: ND goes on working.
    let all_nodes = group("ff02::1");
    assert_eq!(
        h.leave_multicast(eth0, all_nodes),
        Err(MulticastError::NotJoined(all_nodes))
    );
    // A host pings after that: all-nodes and solicited-node still joined.
    let report = stack::tools::ping(
        &mut sim,
        "host-a",
        "host-b",
        &stack::tools::PingOptions {
            count: 1,
            family: stack::tools::Family::V6,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(report.received, 1);
}
