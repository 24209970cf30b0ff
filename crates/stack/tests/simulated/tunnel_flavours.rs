//! Issue 20's bar, on the simulator, for each of the MSR stack's three
//! tunnel flavours (configured, RFC 4213; automatic, RFC 1933; 6-over-4,
//! RFC 2529), each built from a topology file's `[[host.tunnel]]`
//! tables: two hosts ping each other over the tunnel, move 16 MiB of TCP
//! byte-exact, and tshark decodes every capture of the run with no
//! malformed packet, seeing the echoes and the segments as IPv6 in IPv4
//! (protocol 41).
//!
//! The configured and automatic tunnels cross an IPv4-only router; the
//! 6-over-4 hosts share one segment here (`tunnel_igmp.rs` runs 6-over-4
//! across a multicast router).

use crate::network_support;

use std::net::Ipv6Addr;
use std::time::Duration;

use network_support::tunnel::{
    capture_of, connect, ipv4_only_text, ping3, send_mss, six_over_four_segment, transfer,
    tshark_count, wait_for_addresses,
};
use network_support::{host, pattern, simulator, tshark_available, CaptureDir};
use stack::runner::Simulator;
use stack::topology::Topology;

const SIXTEEN_MIB: usize = 16 << 20;

/// host-a — IPv4-only router — host-b, `a_tunnel` and `b_tunnel` added
/// to the hosts' tables.
fn across_a_router(a_tunnel: &str, b_tunnel: &str) -> Topology {
    Topology::from_toml_str(&ipv4_only_text(1500, a_tunnel, b_tunnel)).unwrap()
}

/// Three echoes from `from` to `to`, every one answered, from `to`.
fn pings(sim: &mut Simulator, from: &str, to: Ipv6Addr) {
    let report = ping3(sim, from, to, Duration::from_secs(1));
    assert!(report.errors.is_empty(), "{report:?}");
    assert!(report.replies.iter().all(|r| r.from == to.to_string()));
}

/// Pings both ways, 16 MiB of TCP from host-a to host-b, and the
/// captures checked: no malformed packet; on host-b's wire the six echo
/// requests and replies and every segment of the transfer as IPv6 in
/// IPv4.
fn flavour(name: &str, topology: &Topology, a: Ipv6Addr, b: Ipv6Addr) {
    let dir = CaptureDir::new(&format!("tunnel-16mib-{name}"));
    let mut sim = simulator(topology, &dir);
    wait_for_addresses(&mut sim, a, b);
    pings(&mut sim, "host-a", b);
    pings(&mut sim, "host-b", a);
    let ends = connect(&mut sim, b);
    let mss = send_mss(&sim, ends.0);
    // The tunnel MTU 1480 less IPv6, TCP and timestamps (RFC 4213 §3.2,
    // RFC 2529 §3).
    assert_eq!(mss, 1408, "{name}");
    transfer(&mut sim, ends, &pattern(SIXTEEN_MIB));
    for side in ["host-a", "host-b"] {
        let counters = host(&sim, side).tunnels()[0].counters;
        assert!(
            counters.encapsulated > 0 && counters.decapsulated > 0,
            "{name} {side}: {counters:?}"
        );
    }
    drop(sim);

    dir.check();
    if tshark_available() {
        let file = capture_of(&dir, "host-b");
        let echoes = tshark_count(
            &file,
            "ip.proto == 41 && (icmpv6.type == 128 || icmpv6.type == 129)",
        );
        assert_eq!(
            echoes, 12,
            "{name}: echo requests and replies on host-b's wire"
        );
        // 16 MiB at 1408 bytes a segment: 11 916 data segments at least.
        let segments = tshark_count(&file, "ip.proto == 41 && tcp.len > 0");
        assert!(
            segments >= SIXTEEN_MIB / 1408,
            "{name}: {segments} segments"
        );
    }
}

#[test]
fn configured_tunnel_pings_and_moves_16_mib_byte_exact() {
    let topology = across_a_router(
        r#"[[host.tunnel]]
name = "tun0"
local = "192.0.2.10"
remote = "198.51.100.10"
ipv6 = ["2001:db8:a::1/64"]
default_route = true"#,
        r#"[[host.tunnel]]
name = "tun0"
local = "198.51.100.10"
remote = "192.0.2.10"
ipv6 = ["2001:db8:b::2/64"]
default_route = true"#,
    );
    flavour(
        "configured",
        &topology,
        "2001:db8:a::1".parse().unwrap(),
        "2001:db8:b::2".parse().unwrap(),
    );
}

#[test]
fn automatic_tunnelling_pings_and_moves_16_mib_byte_exact() {
    let topology = across_a_router(
        r#"[[host.tunnel]]
name = "auto0"
kind = "automatic"
local = "192.0.2.10""#,
        r#"[[host.tunnel]]
name = "auto0"
kind = "automatic"
local = "198.51.100.10""#,
    );
    flavour(
        "automatic",
        &topology,
        "::192.0.2.10".parse().unwrap(),
        "::198.51.100.10".parse().unwrap(),
    );
}

#[test]
fn six_over_four_pings_and_moves_16_mib_byte_exact() {
    let topology = Topology::from_toml_str(&six_over_four_segment()).unwrap();
    flavour(
        "6over4",
        &topology,
        "2001:db8:64::a".parse().unwrap(),
        "2001:db8:64::b".parse().unwrap(),
    );
}
