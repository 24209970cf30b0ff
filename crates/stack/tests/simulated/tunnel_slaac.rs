//! SLAAC over 6-over-4 (RFC 2529 with RFC 4861/4862): a router
//! advertises a prefix on its 6-over-4 interface, a host on the same IPv4
//! segment autoconfigures an address from it and its IPv4 address, and
//! learns the router as its default router — Router Advertisements,
//! Router Solicitations and DAD all carried in IPv4 multicast.

use crate::network_support;

use std::net::{Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::tunnel::six_over_four_node;
use network_support::{host, host_mut, udp_listen};
use stack::runner::Simulator;
use stack::topology::Topology;

/// A router advertising 2001:db8:64::/64 on its 6-over-4 link and host-b
/// on the same IPv4 segment.
fn segment() -> String {
    let router = six_over_four_node(
        "router",
        "router",
        "192.0.2.1",
        r#"ipv6 = ["2001:db8:64::1/64"]
[[router.tunnel.advertise]]
prefix = "2001:db8:64::/64"
"#,
    );
    let host_b = six_over_four_node("host", "host-b", "192.0.2.20", "");
    format!(
        r#"
seed = 23
{router}{host_b}
[[wire]]
a = "router:eth0"
b = "host-b:eth0"
delay = "50us"
"#
    )
}

#[test]
fn a_host_autoconfigures_from_router_advertisements_over_six_over_four() {
    let text = segment();
    let topology = Topology::from_toml_str(&text).unwrap();
    // The advertised prefix survives writing the file back.
    let again = Topology::from_toml_str(&topology.to_toml_string()).unwrap();
    assert_eq!(again, topology);
    assert_eq!(
        topology.node("router").unwrap().tunnels[0].advertise.len(),
        1
    );
    // Hosts do not advertise.
    let on_host = text
        .replace(
            "[[router.tunnel.advertise]]\nprefix = \"2001:db8:64::/64\"\n",
            "",
        )
        .replace(
            "local = \"192.0.2.20\"\n",
            "local = \"192.0.2.20\"\n[[host.tunnel.advertise]]\nprefix = \"2001:db8:64::/64\"\n",
        );
    let error = Topology::from_toml_str(&on_host).unwrap_err().to_string();
    assert!(error.contains("only a router advertises"), "{error}");
    let mut sim = Simulator::new(&topology, None).unwrap();
    // The prefix and the interface identifier of 192.0.2.20 (RFC 2529 §4).
    let expected: Ipv6Addr = "2001:db8:64::c000:214".parse().unwrap();
    let configured = sim.run_until_with(Duration::from_secs(20), |sim| {
        host(sim, "host-b")
            .global_ipv6_addresses()
            .contains(&expected)
    });
    assert!(
        configured,
        "no SLAAC address over 6-over-4:\n{}",
        host(&sim, "host-b").state(sim.now())
    );
    // The router is host-b's default router, reached by its link-local
    // address on the 6-over-4 link.
    let state = host(&sim, "host-b").state(sim.now());
    let tunnel = state.interfaces.iter().find(|i| i.name == "6o4").unwrap();
    assert_eq!(tunnel.routers.len(), 1, "{state}");
    assert_eq!(tunnel.routers[0].address, "fe80::c000:201");

    // And traffic to the router's global address flows through it.
    let at_router = udp_listen(&mut sim, "router", true, 7);
    let socket = udp_listen(&mut sim, "host-b", true, 7);
    let router: Ipv6Addr = "2001:db8:64::1".parse().unwrap();
    host_mut(&mut sim, "host-b")
        .udp_send_to(socket, b"autoconfigured", SocketAddr::new(router.into(), 7))
        .unwrap();
    let arrived = sim.run_until_with(Duration::from_secs(2), |sim| {
        host_mut(sim, "router").udp(at_router).recv_queue_len() > 0
    });
    assert!(arrived);
    let mut buf = [0u8; 32];
    let (n, from) = host_mut(&mut sim, "router")
        .udp(at_router)
        .recv_from(&mut buf)
        .unwrap();
    assert_eq!(&buf[..n], b"autoconfigured");
    assert_eq!(from, SocketAddr::new(expected.into(), 7));
}
