//! Behaviour that shows only over long simulated runs or through a router:
//! a default route kept alive by periodic Router Advertisements, and no
//! ICMPv4 error about an ICMPv4 error however long it is.

use std::net::IpAddr;
use std::time::Duration;

use stack::runner::Simulator;
use stack::socket::RawFamily;
use stack::tools::{self, Family};
use stack::topology::Topology;
use wire::ip::IpProtocol;

#[test]
fn periodic_advertisements_keep_the_default_route_past_its_first_lifetime() {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    // The router's lifetime is 1800 s; RAs come every 198-600 s.
    for _ in 0..8 {
        sim.run_for(Duration::from_secs(600));
        let state = sim.host("host-a").unwrap().state(sim.now());
        assert!(
            state.ipv6_routes.iter().any(|r| r.prefix == "::/0"),
            "no default route at {:.0} s",
            state.time_s
        );
    }
    // And traffic still flows after more than two lifetimes.
    let report = tools::ping(&mut sim, "host-a", "host-b", &tools::PingOptions::default()).unwrap();
    assert_eq!(report.received, 3);
}

#[test]
fn a_router_sends_no_time_exceeded_about_a_long_icmp_error() {
    let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
    let dest = tools::resolve(&mut sim, "host-a", "host-b", Family::V4).unwrap();
    let IpAddr::V4(_) = dest else {
        panic!("IPv4 expected")
    };
    let host = sim.host_mut("host-a").unwrap();
    let raw = host.raw_open(RawFamily::Ipv4, IpProtocol::Icmp);
    // A 600-byte Destination Unreachable with TTL 1: longer than the 548
    // bytes an error may quote, so its start is all the router keeps.
    let mut message = vec![0u8; 600];
    message[0] = 3;
    message[1] = 1;
    host.raw_send_to(raw, &message, dest, Some(1)).unwrap();
    sim.run_for(Duration::from_secs(1));
    let router = sim.host("router").unwrap();
    assert_eq!(router.drops().get("ipv4_ttl_exceeded"), Some(&1));
    assert_eq!(router.counters().icmpv4_errors_sent, 0, "RFC 1122 §3.2.2");
    // The same datagram as UDP does earn one.
    let host = sim.host_mut("host-a").unwrap();
    let udp = host.udp_open(Default::default());
    host.udp(udp).set_hop_limit(Some(1));
    host.udp_send_to(udp, &[0u8; 600], std::net::SocketAddr::new(dest, 9))
        .unwrap();
    sim.run_for(Duration::from_secs(1));
    assert_eq!(sim.host("router").unwrap().counters().icmpv4_errors_sent, 1);
}
