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

mod network_support;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use network_support::{
    host, host_mut, pattern, simulator, tshark_available, udp_listen, CaptureDir,
};
use stack::iface::host::TcpError;
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::tools::{ping, Family, PingOptions};
use stack::topology::Topology;

const TOPOLOGY: &str = r#"
seed = 24

[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "192.0.2.1"
[[host.tunnel]]
name = "6o4"
kind = "6over4"
local = "192.0.2.10"
ipv6 = ["2001:db8:64::a/64"]

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "198.51.100.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "198.51.100.1"
[[host.tunnel]]
name = "6o4"
kind = "6over4"
local = "198.51.100.10"
ipv6 = ["2001:db8:64::b/64"]

[[router]]
name = "router"
[[router.interface]]
name = "eth0"
ipv4 = "192.0.2.1/24"
[[router.interface]]
name = "eth1"
ipv4 = "198.51.100.1/24"

[[wire]]
a = "host-a:eth0"
b = "router:eth0"
delay = "50us"
rate = "100Mbit"

[[wire]]
a = "router:eth1"
b = "host-b:eth0"
delay = "50us"
rate = "100Mbit"
"#;

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

/// Frames of `file` that tshark decodes as `filter`.
fn tshark_count(file: &std::path::Path, filter: &str) -> usize {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "tshark failed on {}", file.display());
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn six_over_four_crosses_a_multicast_router_with_igmp() {
    let dir = CaptureDir::new("tunnel-igmp");
    let topology = Topology::from_toml_str(TOPOLOGY).unwrap();
    let mut sim = simulator(&topology, &dir);
    let a: Ipv6Addr = "2001:db8:64::a".parse().unwrap();
    let b: Ipv6Addr = "2001:db8:64::b".parse().unwrap();
    let ready = sim.run_until_with(Duration::from_secs(10), |sim| {
        host(sim, "host-a").global_ipv6_addresses().contains(&a)
            && host(sim, "host-b").global_ipv6_addresses().contains(&b)
    });
    assert!(ready, "DAD over 6-over-4 never finished");

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
    let options = PingOptions {
        count: 3,
        interval: Duration::from_millis(100),
        timeout: Duration::from_secs(2),
        family: Family::V6,
        ..PingOptions::default()
    };
    for (from, to) in [("host-a", b), ("host-b", a)] {
        let report = ping(&mut sim, from, &to.to_string(), &options).unwrap();
        assert_eq!((report.sent, report.received), (3, 3), "{from}: {report:?}");
    }
    let forwarded = host(&sim, "router").counters().ipv4_forwarded;
    assert!(forwarded >= 12, "{forwarded} packets forwarded");
    let listener = host_mut(&mut sim, "host-b")
        .tcp_listen(
            SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), 5001),
            TcpConfig::default(),
            ListenerConfig::default(),
        )
        .unwrap();
    let limit = Duration::from_secs(5);
    let client = blocking::connect(
        &mut sim,
        "host-a",
        SocketAddr::new(b.into(), 5001),
        TcpConfig::default(),
        limit,
    )
    .unwrap();
    let server = blocking::accept(&mut sim, "host-b", listener, limit).unwrap();
    let data = pattern(1 << 20);
    let (mut sent, mut got, mut buf) = (0, Vec::new(), vec![0u8; 64 << 10]);
    let done = sim.run_until_with(Duration::from_secs(60), |sim| {
        while sent < data.len() {
            match host_mut(sim, "host-a").tcp_send(client, &data[sent..]) {
                Ok(n) => sent += n,
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("send: {e}"),
            }
        }
        loop {
            match host_mut(sim, "host-b").tcp_recv(server, &mut buf) {
                Ok(0) | Err(TcpError::WouldBlock) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => panic!("receive: {e}"),
            }
        }
        got.len() >= data.len()
    });
    assert!(
        done && got == data,
        "{} of {} bytes, byte-exact: {}",
        got.len(),
        data.len(),
        got == data[..got.len()]
    );

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
        let b_side = dir
            .files()
            .into_iter()
            .find(|f| f.to_string_lossy().contains("host-b"))
            .unwrap();
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
