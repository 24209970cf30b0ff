//! The network tools over tunnels a topology file describes
//! (`[[host.tunnel]]`, docs/tunnels.md): host-a and host-b have no IPv6
//! path but a configured tunnel and automatic tunnelling through an
//! IPv4-only router, and `ping` and `ipv6` work over them.

mod common;

use common::{stackscope, stdout_json};

/// host-a — IPv4-only router — host-b, each host with a configured tunnel
/// to the other and automatic tunnelling.
fn tunnel_topology() -> std::path::PathBuf {
    let text = r#"
seed = 20

[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "192.0.2.1"
[[host.tunnel]]
name = "tun0"
local = "192.0.2.10"
remote = "198.51.100.10"
ipv6 = ["2001:db8:a::1/64"]
default_route = true
[[host.tunnel]]
name = "auto0"
kind = "automatic"
local = "192.0.2.10"

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "198.51.100.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "198.51.100.1"
[[host.tunnel]]
name = "tun0"
local = "198.51.100.10"
remote = "192.0.2.10"
ipv6 = ["2001:db8:b::2/64"]
default_route = true
dad_transmits = 0
[[host.tunnel]]
name = "auto0"
kind = "automatic"
local = "198.51.100.10"
dad_transmits = 0

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
delay = "100us"

[[wire]]
a = "router:eth1"
b = "host-b:eth0"
delay = "100us"
"#;
    let path = std::env::temp_dir().join(format!("stackscope-tunnels-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn ping_and_the_state_dump_work_over_tunnels() {
    let topology = tunnel_topology();
    let topology = topology.to_str().unwrap();
    // host-b's addresses skip DAD: the tool waits for the sender's only,
    // and a tentative address would not answer (RFC 4862 §5.4).
    for destination in ["2001:db8:b::2", "::198.51.100.10"] {
        let report = stdout_json(&stackscope(&[
            "ping",
            "-6",
            "-c",
            "3",
            "--from",
            "host-a",
            destination,
            "--topology",
            topology,
            "--json",
        ]));
        assert_eq!(report["received"], 3, "{destination}: {report}");
        // Four wires of 100 µs: 400 µs of round trip at least.
        for rtt in report["rtt_us"].as_array().unwrap() {
            assert!(rtt.as_f64().unwrap() >= 400.0, "{destination}: rtt {rtt}");
        }
    }
    let dump = stackscope(&["ipv6", "host-a", "--topology", topology]);
    assert!(dump.status.success());
    let text = String::from_utf8_lossy(&dump.stdout);
    for expected in [
        "tunnel configured from 192.0.2.10 to 198.51.100.10",
        "tunnel automatic from 192.0.2.10",
        "PERMANENT (no ND)",
        "NTE ::c000:20a/96",
    ] {
        assert!(text.contains(expected), "no {expected:?} in:\n{text}");
    }
    let _ = std::fs::remove_file(topology);
}
