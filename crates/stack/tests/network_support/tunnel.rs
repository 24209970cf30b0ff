//! What the tunnel tests (`tunnel_host.rs`, `tunnel_flavours.rs`,
//! `tunnel_igmp.rs`, `tunnel_slaac.rs`) share: their topologies, waiting
//! for the tunnel addresses, ping and a byte-exact TCP transfer between
//! host-a and host-b, and counting what tshark decodes in a capture.

use std::net::{Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use stack::iface::host::{TcpError, TcpHandle};
use stack::runner::{blocking, Simulator};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::tools::{ping, Family, PingOptions, PingReport};

use super::{host, host_mut, CaptureDir};

/// The port host-b listens on.
pub const PORT: u16 = 5001;

/// host-a (192.0.2.10) — IPv4-only router — host-b (198.51.100.10), the
/// router's link to host-b at `far_mtu`; `a_extra` and `b_extra` added to
/// host-a's and host-b's tables (their tunnels).
pub fn ipv4_only_text(far_mtu: usize, a_extra: &str, b_extra: &str) -> String {
    format!(
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
{a_extra}

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
mtu = {far_mtu}
ipv4 = "198.51.100.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "198.51.100.1"
{b_extra}

[[router]]
name = "router"
[[router.interface]]
name = "eth0"
ipv4 = "192.0.2.1/24"
[[router.interface]]
name = "eth1"
mtu = {far_mtu}
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
    )
}

/// A `[[host]]` or `[[router]]` (`table`) called `name` with one IPv4
/// interface, eth0 at `v4`/24, and a 6-over-4 link `6o4` on that address
/// (RFC 2529); `tunnel_extra` ends the tunnel's table.
pub fn six_over_four_node(table: &str, name: &str, v4: &str, tunnel_extra: &str) -> String {
    format!(
        r#"
[[{table}]]
name = "{name}"
[[{table}.interface]]
name = "eth0"
ipv4 = "{v4}/24"
[[{table}.tunnel]]
name = "6o4"
kind = "6over4"
local = "{v4}"
{tunnel_extra}"#
    )
}

/// host-a and host-b on one IPv4 segment, each with a 6-over-4 link on
/// its address: 2001:db8:64::a and ::b.
pub fn six_over_four_segment() -> String {
    let a = six_over_four_node("host", "host-a", "192.0.2.10", SIX_OVER_FOUR_A);
    let b = six_over_four_node("host", "host-b", "192.0.2.20", SIX_OVER_FOUR_B);
    format!(
        r#"
seed = 22
{a}
{b}
[[wire]]
a = "host-a:eth0"
b = "host-b:eth0"
delay = "50us"
rate = "100Mbit"
"#
    )
}

const SIX_OVER_FOUR_A: &str = r#"ipv6 = ["2001:db8:64::a/64"]"#;
const SIX_OVER_FOUR_B: &str = r#"ipv6 = ["2001:db8:64::b/64"]"#;

/// Runs (at most 10 s) until host-a has `a` and host-b `b` as usable
/// global addresses (DAD done), and fails the test if they never do.
pub fn wait_for_addresses(sim: &mut Simulator, a: Ipv6Addr, b: Ipv6Addr) {
    let ready = sim.run_until_with(Duration::from_secs(10), |sim| {
        host(sim, "host-a").global_ipv6_addresses().contains(&a)
            && host(sim, "host-b").global_ipv6_addresses().contains(&b)
    });
    assert!(
        ready,
        "host-a's {a} and host-b's {b} never became usable:\n{}\n{}",
        host(sim, "host-a").state(sim.now()),
        host(sim, "host-b").state(sim.now())
    );
}

/// Three IPv6 echoes from `from` to `to`, each waited for up to `timeout`;
/// fails the test unless all three are answered.
pub fn ping3(sim: &mut Simulator, from: &str, to: Ipv6Addr, timeout: Duration) -> PingReport {
    let options = PingOptions {
        count: 3,
        interval: Duration::from_millis(100),
        timeout,
        family: Family::V6,
        ..PingOptions::default()
    };
    let report = ping(sim, from, &to.to_string(), &options).unwrap();
    assert_eq!(
        (report.sent, report.received),
        (3, 3),
        "{from} → {to}: {report:?}"
    );
    report
}

/// A connection from host-a to a listener on host-b at `b`, [`PORT`]:
/// (client, server).
pub fn connect(sim: &mut Simulator, b: Ipv6Addr) -> (TcpHandle, TcpHandle) {
    let config = TcpConfig::default();
    let listener = host_mut(sim, "host-b")
        .tcp_listen(
            SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), PORT),
            config,
            ListenerConfig::default(),
        )
        .unwrap();
    let limit = Duration::from_secs(5);
    let remote = SocketAddr::new(b.into(), PORT);
    let client = blocking::connect(sim, "host-a", remote, config, limit).unwrap();
    let server = blocking::accept(sim, "host-b", listener, limit).unwrap();
    (client, server)
}

/// The MSS host-a's end of a connection sends with.
pub fn send_mss(sim: &Simulator, client: TcpHandle) -> usize {
    host(sim, "host-a")
        .tcp_connection(client)
        .unwrap()
        .negotiated()
        .unwrap()
        .send_mss
}

/// Sends `data` from host-a to host-b (at most 120 s) and fails the test
/// unless it all arrived byte-exact.
pub fn transfer(sim: &mut Simulator, (client, server): (TcpHandle, TcpHandle), data: &[u8]) {
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
        "{} of {} bytes arrived; drops: host-a {:?}, router {:?}, host-b {:?}",
        got.len(),
        data.len(),
        host(sim, "host-a").drops(),
        sim.host("router").map(|r| r.drops()),
        host(sim, "host-b").drops()
    );
    assert!(got == data, "the bytes differ from what was sent");
}

/// The capture in `dir` of the node `name`.
pub fn capture_of(dir: &CaptureDir, name: &str) -> PathBuf {
    dir.files()
        .into_iter()
        .find(|f| f.to_string_lossy().contains(name))
        .unwrap_or_else(|| panic!("no capture of {name}"))
}

/// Frames of the capture `file` that tshark decodes as `filter`.
pub fn tshark_count(file: &Path, filter: &str) -> usize {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(file)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .expect("run tshark");
    assert!(out.status.success(), "tshark failed on {}", file.display());
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Frames of all the captures in `dir` that tshark decodes as `filter`.
pub fn tshark_count_all(dir: &CaptureDir, filter: &str) -> usize {
    dir.files().iter().map(|f| tshark_count(f, filter)).sum()
}
