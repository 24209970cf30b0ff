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

mod network_support;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::process::Command;
use std::time::Duration;

use network_support::{host, host_mut, pattern, simulator, tshark_available, CaptureDir};
use stack::iface::host::{TcpError, TcpHandle};
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::tools::{ping, Family, PingOptions};
use stack::topology::Topology;

const PORT: u16 = 5001;
const SIXTEEN_MIB: usize = 16 << 20;

/// host-a — IPv4-only router — host-b, `a_tunnel` and `b_tunnel` added
/// to the hosts' tables.
fn across_a_router(a_tunnel: &str, b_tunnel: &str) -> Topology {
    Topology::from_toml_str(&format!(
        r#"
seed = 20

[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "192.0.2.1"
{a_tunnel}

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "198.51.100.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "198.51.100.1"
{b_tunnel}

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
"#
    ))
    .unwrap()
}

const SIX_OVER_FOUR: &str = r#"
seed = 22

[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.10/24"
[[host.tunnel]]
name = "6o4"
kind = "6over4"
local = "192.0.2.10"
ipv6 = ["2001:db8:64::a/64"]

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.20/24"
[[host.tunnel]]
name = "6o4"
kind = "6over4"
local = "192.0.2.20"
ipv6 = ["2001:db8:64::b/64"]

[[wire]]
a = "host-a:eth0"
b = "host-b:eth0"
delay = "50us"
rate = "100Mbit"
"#;

/// Runs until both hosts have their tunnel address (DAD done).
fn ready(sim: &mut Simulator, a: Ipv6Addr, b: Ipv6Addr) {
    let ready = sim.run_until_with(Duration::from_secs(10), |sim| {
        host(sim, "host-a").global_ipv6_addresses().contains(&a)
            && host(sim, "host-b").global_ipv6_addresses().contains(&b)
    });
    assert!(
        ready,
        "the tunnel addresses never became usable:\n{}",
        host(sim, "host-a").state(sim.now())
    );
}

/// Three echoes from `from` to `to`, every one answered.
fn pings(sim: &mut Simulator, from: &str, to: Ipv6Addr) {
    let options = PingOptions {
        count: 3,
        interval: Duration::from_millis(100),
        timeout: Duration::from_secs(1),
        family: Family::V6,
        ..PingOptions::default()
    };
    let report = ping(sim, from, &to.to_string(), &options).unwrap();
    assert_eq!(
        (report.sent, report.received),
        (3, 3),
        "{from} → {to}: {report:?}"
    );
    assert!(report.errors.is_empty(), "{report:?}");
    assert!(report.replies.iter().all(|r| r.from == to.to_string()));
}

/// A connection from host-a to a listener on host-b at `b`.
fn connect(sim: &mut Simulator, b: Ipv6Addr) -> (TcpHandle, TcpHandle) {
    let config = TcpConfig::default();
    let listener = host_mut(sim, "host-b")
        .tcp_listen(
            SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), PORT),
            config,
            ListenerConfig::default(),
        )
        .unwrap();
    let limit = Duration::from_secs(5);
    let remote = SocketAddr::new(IpAddr::V6(b), PORT);
    let client = blocking::connect(sim, "host-a", remote, config, limit).unwrap();
    let server = blocking::accept(sim, "host-b", listener, limit).unwrap();
    (client, server)
}

/// Sends `data` from host-a to host-b; true when it all arrived
/// byte-exact.
fn transfer(sim: &mut Simulator, (client, server): (TcpHandle, TcpHandle), data: &[u8]) {
    let mut sent = 0;
    let mut got = Vec::with_capacity(data.len());
    let mut buf = vec![0u8; 64 * 1024];
    let done = sim.run_until_with(Duration::from_secs(120), |sim| {
        while sent < data.len() {
            match host_mut(sim, "host-a").tcp_send(client, &data[sent..]) {
                Ok(n) => sent += n,
                Err(TcpError::WouldBlock) => break,
                Err(e) => panic!("host-a: send failed: {e}"),
            }
        }
        loop {
            match host_mut(sim, "host-b").tcp_recv(server, &mut buf) {
                Ok(0) | Err(TcpError::WouldBlock) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => panic!("host-b: receive failed: {e}"),
            }
        }
        got.len() >= data.len()
    });
    assert!(
        done,
        "{} of {} bytes arrived; drops: host-a {:?}, host-b {:?}",
        got.len(),
        data.len(),
        host(sim, "host-a").drops(),
        host(sim, "host-b").drops()
    );
    assert!(got == data, "the bytes differ from what was sent");
}

/// Frames of the capture `file` that tshark decodes as `filter`.
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

/// Pings both ways, 16 MiB of TCP from host-a to host-b, and the
/// captures checked: no malformed packet; on host-b's wire the six echo
/// requests and replies and every segment of the transfer as IPv6 in
/// IPv4.
fn flavour(name: &str, topology: &Topology, a: Ipv6Addr, b: Ipv6Addr) {
    let dir = CaptureDir::new(&format!("tunnel-16mib-{name}"));
    let mut sim = simulator(topology, &dir);
    ready(&mut sim, a, b);
    pings(&mut sim, "host-a", b);
    pings(&mut sim, "host-b", a);
    let ends = connect(&mut sim, b);
    let mss = host(&sim, "host-a")
        .tcp_connection(ends.0)
        .unwrap()
        .negotiated()
        .unwrap()
        .send_mss;
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
        let file = dir
            .files()
            .into_iter()
            .find(|f| f.to_string_lossy().contains("host-b"))
            .expect("host-b's capture");
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
    let topology = Topology::from_toml_str(SIX_OVER_FOUR).unwrap();
    flavour(
        "6over4",
        &topology,
        "2001:db8:64::a".parse().unwrap(),
        "2001:db8:64::b".parse().unwrap(),
    );
}
