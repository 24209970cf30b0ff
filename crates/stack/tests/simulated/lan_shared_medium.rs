//! Hosts on a shared medium (topologies/lan.toml): a hub delivers every
//! station's unicast frames to every other station, which drops those not
//! addressed to its MAC (counted as `ethernet_not_for_us`); TCP across the
//! hub is byte-exact; DAD sees other hosts' addresses across it.

use crate::network_support;

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use network_support::*;
use stack::iface::host::{Host, TcpError, TcpHandle};
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::topology::{derived_mac, Topology};

const LAN: &str = include_str!("../../../../topologies/lan.toml");
const PORT: u16 = 5001;

fn drops(h: &Host, reason: &str) -> u64 {
    h.drops().get(reason).copied().unwrap_or(0)
}

fn ready_lan() -> Simulator {
    let topology = Topology::from_toml_str(LAN).unwrap();
    let mut sim = Simulator::new(&topology, None).unwrap();
    for name in ["host-a", "host-b", "host-c"] {
        wait_for_slaac(&mut sim, name, "2001:db8:a::");
    }
    sim
}

/// Sends `data` from host-a to host-c over TCP and returns what host-c
/// read before the end of the stream.
fn transfer_a_to_c(sim: &mut Simulator, v6: bool, data: &[u8]) -> Vec<u8> {
    let any: IpAddr = if v6 { "::" } else { "0.0.0.0" }.parse().unwrap();
    let listener = host_mut(sim, "host-c")
        .tcp_listen(
            SocketAddr::new(any, PORT),
            TcpConfig::default(),
            ListenerConfig::default(),
        )
        .unwrap();
    let remote = SocketAddr::new(address_of(sim, "host-c", v6), PORT);
    let limit = Duration::from_secs(10);
    let client = blocking::connect(sim, "host-a", remote, TcpConfig::default(), limit).unwrap();
    let server: TcpHandle = blocking::accept(sim, "host-c", listener, limit).unwrap();
    let (mut sent, mut shut, mut eof) = (0, false, false);
    let mut got = Vec::new();
    let mut buf = vec![0u8; 32 * 1024];
    let done = sim.run_until_with(Duration::from_secs(60), |sim| {
        let a = host_mut(sim, "host-a");
        while sent < data.len() {
            match a.tcp_send(client, &data[sent..]) {
                Ok(n) => sent += n,
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("host-a: send failed: {e}"),
            }
        }
        if sent == data.len() && !shut {
            a.tcp_shutdown(client).unwrap();
            shut = true;
        }
        let c = host_mut(sim, "host-c");
        while !eof {
            match c.tcp_recv(server, &mut buf) {
                Ok(0) => eof = true,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("host-c: recv failed: {e}"),
            }
        }
        eof
    });
    assert!(done, "sent {sent}, received {}", got.len());
    for (name, handle) in [("host-a", client), ("host-c", server)] {
        host_mut(sim, name).tcp_close(handle).unwrap();
    }
    host_mut(sim, "host-c").tcp_close(listener).unwrap();
    sim.run_for(Duration::from_millis(100));
    got
}

fn tcp_across_the_hub(v6: bool) {
    let mut sim = ready_lan();
    let b_dropped = drops(host(&sim, "host-b"), "ethernet_not_for_us");
    let b_counters = *host(&sim, "host-b").counters();
    let segments = |sim: &Simulator| {
        host(sim, "host-a").counters().tcp_sent + host(sim, "host-c").counters().tcp_sent
    };
    let segments_before = segments(&sim);

    let data = pattern(300_000);
    let got = transfer_a_to_c(&mut sim, v6, &data);
    assert!(
        got == data,
        "host-c received {} bytes, not the {} sent",
        got.len(),
        data.len()
    );

    // Every segment between host-a and host-c (unicast to the other's
    // MAC) reached host-b through the hub, which dropped it at Ethernet
    // input: none reached its IP layer or TCP.
    let segments = segments(&sim) - segments_before;
    assert!(segments > 200, "{segments} segments");
    let b = host(&sim, "host-b");
    let dropped = drops(b, "ethernet_not_for_us") - b_dropped;
    assert!(
        dropped >= segments,
        "host-b dropped {dropped} frames, fewer than the {segments} segments"
    );
    // Beyond the segments: only the few unicast ND/ARP frames between them.
    assert!(dropped <= segments + 10, "{dropped} vs {segments}");
    let received = if v6 {
        b.counters().ipv6_received - b_counters.ipv6_received
    } else {
        b.counters().ipv4_received - b_counters.ipv4_received
    };
    assert!(received < 10, "host-b's IP layer took {received} packets");
    assert_eq!(b.counters().tcp_received, b_counters.tcp_received);
    // The router, on the same hub, dropped them too.
    assert!(drops(host(&sim, "router"), "ethernet_not_for_us") >= segments);
}

#[test]
fn tcp_between_host_a_and_host_c_is_byte_exact_over_ipv6_and_host_b_drops_it() {
    tcp_across_the_hub(true);
}

#[test]
fn tcp_between_host_a_and_host_c_is_byte_exact_over_ipv4_and_host_b_drops_it() {
    tcp_across_the_hub(false);
}

#[test]
fn dad_across_the_hub_finds_another_hosts_address() {
    // host-c is configured with the address host-a forms by SLAAC: the
    // two run Duplicate Address Detection for it through the hub, past
    // host-b, and exactly one of them must end up holding it, the other
    // having heard it defended or probed (RFC 4862 §5.4.3, §5.4.4).
    let prefix = "2001:db8:a::".parse().unwrap();
    let taken = slaac_of(prefix, derived_mac("host-a", "eth0"));
    let text = LAN.replace(
        "ipv4 = \"192.0.2.12/24\"",
        &format!("ipv4 = \"192.0.2.12/24\"\nipv6 = [\"{taken}/64\"]"),
    );
    assert_ne!(text, LAN);
    let topology = Topology::from_toml_str(&text).unwrap();
    let mut sim = Simulator::new(&topology, None).unwrap();
    sim.run_for(Duration::from_secs(10));
    let pair = ["host-a", "host-c"].map(|name| host(&sim, name));
    let holders = pair
        .iter()
        .filter(|h| h.global_ipv6_addresses().contains(&taken))
        .count();
    let detected: u64 = pair.iter().map(|h| drops(h, "dad_duplicate_address")).sum();
    let states = || pair.map(|h| h.state(sim.now()).to_string()).join("\n");
    assert_eq!(holders, 1, "{}", states());
    assert_eq!(detected, 1, "{}", states());
    // host-b formed its own address undisturbed.
    let b = host(&sim, "host-b");
    assert_eq!(drops(b, "dad_duplicate_address"), 0);
    assert_eq!(b.global_ipv6_addresses().len(), 1);
}
