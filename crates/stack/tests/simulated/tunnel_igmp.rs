//! IGMPv2 (RFC 2236) in the reference stack's IPv4, on the simulator:
//! 6-over-4 (RFC 2529) across an IPv4 multicast router rather than on one
//! flooding segment.
//!
//! host-a (192.0.2.10) — router — host-b (198.51.100.10), each host's
//! IPv6 on a 6-over-4 interface of its IPv4 address. The hosts report the
//! 239.192.x.y groups their 6-over-4 interfaces listen to; the router
//! queries, learns them, and forwards IPv4 multicast only onto the
//! interface with members, so Neighbor Discovery crosses it and the hosts
//! ping each other and move TCP byte-exact. An application's IPv4 group
//! is reported on join, carried while joined, and left with a Leave that
//! the router's Group-Specific Queries confirm. tshark decodes every
//! capture with no malformed packet and sees the IGMP messages with TTL 1.

use crate::network_support;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::tunnel::{
    capture_of, connect, ping3, transfer, tshark_count, wait_for_addresses,
};
use network_support::{
    host, host_mut, pattern, simulator, tshark_available, udp_listen, CaptureDir,
};
use stack::runner::Simulator;
use stack::topology::Topology;

/// host-a — router — host-b, each host's IPv6 on a 6-over-4 interface:
/// the topology file docs/tunnels.md shows.
const TOPOLOGY: &str = include_str!("../../../../topologies/6over4-router.toml");

/// Whether the router's interface `index` has members of `group`.
fn router_has(sim: &Simulator, index: usize, group: Ipv4Addr) -> bool {
    host(sim, "router").interfaces()[index]
        .v4
        .as_ref()
        .and_then(|v4| v4.querier.as_ref())
        .is_some_and(|q| q.has_members(sim.now(), group))
}

fn reports_sent(sim: &Simulator, name: &str) -> u64 {
    host(sim, name).interfaces()[0]
        .v4
        .as_ref()
        .map_or(0, |v4| v4.igmp.reports_sent)
}

#[test]
fn six_over_four_crosses_a_multicast_router_with_igmp() {
    let dir = CaptureDir::new("tunnel-igmp");
    let topology = Topology::from_toml_str(TOPOLOGY).unwrap();
    let mut sim = simulator(&topology, &dir);
    let a: Ipv6Addr = "2001:db8:64::a".parse().unwrap();
    let b: Ipv6Addr = "2001:db8:64::b".parse().unwrap();
    wait_for_addresses(&mut sim, a, b);

    // Each host reported its 6-over-4 groups: all-nodes (ff02::1 →
    // 239.192.0.1) and its solicited-node groups (ff02::1:ff00:b →
    // 239.192.0.11), each on its own side of the router only.
    let solicited_b = Ipv4Addr::new(239, 192, 0, 11);
    let solicited_a = Ipv4Addr::new(239, 192, 0, 10);
    assert!(router_has(&sim, 1, solicited_b) && !router_has(&sim, 0, solicited_b));
    assert!(router_has(&sim, 0, solicited_a) && !router_has(&sim, 1, solicited_a));
    assert!(router_has(&sim, 0, Ipv4Addr::new(239, 192, 0, 1)));
    assert!(reports_sent(&sim, "host-a") >= 2 && reports_sent(&sim, "host-b") >= 2);

    // ND, ping and TCP across the router.
    for (from, to) in [("host-a", b), ("host-b", a)] {
        ping3(&mut sim, from, to, Duration::from_secs(2));
    }
    let forwarded = host(&sim, "router").counters().ipv4_forwarded;
    assert!(forwarded >= 12, "{forwarded} packets forwarded");
    let ends = connect(&mut sim, b);
    transfer(&mut sim, ends, &pattern(1 << 20));

    // An application's group: reported on join, carried across the
    // router while joined; its Leave makes the router ask and forget it.
    let group = Ipv4Addr::new(239, 1, 2, 3);
    let eth0_b = host(&sim, "host-b").interface_id("eth0").unwrap();
    host_mut(&mut sim, "host-b")
        .join_multicast(eth0_b, group.into())
        .unwrap();
    sim.run_for(Duration::from_millis(10));
    assert!(router_has(&sim, 1, group));
    let at_b = udp_listen(&mut sim, "host-b", false, 9000);
    let at_a = udp_listen(&mut sim, "host-a", false, 9001);
    // RFC 1112 §6.1: a group's datagrams stay on the link unless the
    // sender asks for more TTL.
    host_mut(&mut sim, "host-a")
        .udp(at_a)
        .set_hop_limit(Some(8));
    host_mut(&mut sim, "host-a")
        .udp_send_to(at_a, b"to the group", SocketAddr::new(group.into(), 9000))
        .unwrap();
    let arrived = sim.run_until_with(Duration::from_secs(1), |sim| {
        host_mut(sim, "host-b").udp(at_b).recv_queue_len() > 0
    });
    assert!(arrived, "the group's datagram never crossed the router");
    host_mut(&mut sim, "host-b")
        .leave_multicast(eth0_b, group.into())
        .unwrap();
    sim.run_for(Duration::from_millis(2500));
    assert!(!router_has(&sim, 1, group), "the router kept a group left");
    let querier = host(&sim, "router").interfaces()[1]
        .v4
        .as_ref()
        .and_then(|v4| v4.querier.clone())
        .unwrap();
    assert_eq!(querier.specific_queries_sent, 2);
    let dropped_before = host(&sim, "router")
        .drops()
        .get("ipv4_multicast_no_members")
        .copied()
        .unwrap_or(0);
    host_mut(&mut sim, "host-a")
        .udp_send_to(at_a, b"nobody", SocketAddr::new(group.into(), 9000))
        .unwrap();
    sim.run_for(Duration::from_millis(100));
    let dropped = host(&sim, "router").drops()["ipv4_multicast_no_members"];
    assert_eq!(dropped, dropped_before + 1);

    // The second startup General Query (31.25 s) is answered within its
    // 10 s Max Resp Time, and the 6-over-4 groups stay known.
    let before = reports_sent(&sim, "host-b");
    sim.run_for(Duration::from_secs(45));
    assert!(reports_sent(&sim, "host-b") > before);
    assert!(router_has(&sim, 1, solicited_b));
    drop(sim);

    dir.check();
    if tshark_available() {
        let b_side = capture_of(&dir, "host-b");
        assert!(tshark_count(&b_side, "igmp.type == 0x11 && ip.ttl == 1") >= 4);
        assert!(
            tshark_count(
                &b_side,
                "igmp.type == 0x16 && ip.ttl == 1 && igmp.maddr == 239.192.0.11"
            ) >= 2
        );
        assert!(tshark_count(&b_side, "igmp.type == 0x17 && ip.dst == 224.0.0.2") == 1);
        // Neighbor Solicitations crossed the router as IPv4 multicast.
        assert!(tshark_count(&b_side, "ip.dst == 239.192.0.11 && icmpv6.type == 135") >= 1);
        assert!(tshark_count(&b_side, "ip.proto == 41 && tcp") > 700);
    }
}
