//! Helpers the XTP tests share: the simulated networks (the default one
//! and `topologies/impaired.toml`), with SLAAC done; an association from
//! host-a to a listener on host-b; a two-way transfer with every byte
//! checked.
#![allow(dead_code)]

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use stack::iface::host::{Host, XtpError};
use stack::runner::Simulator;
use stack::socket::xtp::{XtpConfig, XtpHandle};
use stack::topology::Topology;

pub const PORT: u16 = 7036;

pub fn host_mut<'a>(sim: &'a mut Simulator, name: &str) -> &'a mut Host {
    sim.host_mut(name)
        .unwrap_or_else(|| panic!("no host {name} in the topology"))
}

/// The simulator on `topology`, once both hosts have a global IPv6
/// address; with `pcap_dir`, every interface is captured there.
pub fn network_of(topology: &Topology, pcap_dir: Option<&Path>) -> Simulator {
    let mut sim = Simulator::new(topology, pcap_dir).unwrap();
    let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
        ["host-a", "host-b"]
            .iter()
            .all(|n| !sim.host(n).unwrap().global_ipv6_addresses().is_empty())
    });
    assert!(ready, "SLAAC did not finish");
    sim
}

pub fn default_network() -> Simulator {
    network_of(&Topology::default_network(), None)
}

pub fn impaired_topology(seed: u64) -> Topology {
    let text = include_str!("../../../../topologies/impaired.toml").replacen(
        "seed = 42",
        &format!("seed = {seed}"),
        1,
    );
    Topology::from_toml_str(&text).unwrap()
}

pub fn address_of(sim: &Simulator, name: &str, v6: bool) -> IpAddr {
    let h = sim.host(name).unwrap();
    if v6 {
        IpAddr::V6(h.global_ipv6_addresses()[0])
    } else {
        IpAddr::V4(h.ipv4_addresses()[0])
    }
}

/// A listener on host-b, an association from host-a, accepted: (a, b).
pub fn associate(sim: &mut Simulator, v6: bool, config: XtpConfig) -> (XtpHandle, XtpHandle) {
    let any: IpAddr = if v6 { "::" } else { "0.0.0.0" }.parse().unwrap();
    let listener = host_mut(sim, "host-b")
        .xtp_listen(SocketAddr::new(any, PORT), config)
        .unwrap();
    let remote = SocketAddr::new(address_of(sim, "host-b", v6), PORT);
    let client = host_mut(sim, "host-a").xtp_connect(remote, config).unwrap();
    (client, set_up(sim, listener, client))
}

/// Runs until host-b's `listener` accepted `client`'s association and
/// host-a heard the answer; the accepted handle.
pub fn set_up(sim: &mut Simulator, listener: XtpHandle, client: XtpHandle) -> XtpHandle {
    let mut server = None;
    let done = sim.run_until_with(Duration::from_secs(10), |sim| {
        if server.is_none() {
            server = host_mut(sim, "host-b").xtp_accept(listener).ok();
        }
        let a = sim.host("host-a").unwrap().xtp_readiness(client).unwrap();
        server.is_some() && a.established
    });
    assert!(done, "the association was not set up");
    server.unwrap()
}

/// A deterministic, non-repeating-looking byte pattern.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).rotate_left(7) as u8 ^ seed)
        .collect()
}

/// Moves `up` from a to b and `down` from b to a at once, each side
/// shutting its sending half when done and reading to the end; returns
/// what each received (b's, a's). Panics past `limit` of virtual time.
pub fn exchange(
    sim: &mut Simulator,
    (a, b): (XtpHandle, XtpHandle),
    up: &[u8],
    down: &[u8],
    limit: Duration,
) -> (Vec<u8>, Vec<u8>) {
    #[derive(Default)]
    struct Side {
        sent: usize,
        shut: bool,
        got: Vec<u8>,
        eof: bool,
    }
    let mut sides = [Side::default(), Side::default()];
    let mut buf = vec![0u8; 64 * 1024];
    let done = sim.run_until_with(limit, |sim| {
        for (i, (name, handle, data)) in [("host-a", a, up), ("host-b", b, down)]
            .into_iter()
            .enumerate()
        {
            let side = &mut sides[i];
            let h = host_mut(sim, name);
            while side.sent < data.len() {
                match h.xtp_send(handle, &data[side.sent..]) {
                    Ok(n) => side.sent += n,
                    Err(XtpError::WouldBlock) => break,
                    Err(e) => panic!("{name}: send failed: {e}"),
                }
            }
            if side.sent == data.len() && !side.shut {
                h.xtp_shutdown(handle).unwrap();
                side.shut = true;
            }
            while !side.eof {
                match h.xtp_recv(handle, &mut buf) {
                    Ok(0) => side.eof = true,
                    Ok(n) => side.got.extend_from_slice(&buf[..n]),
                    Err(XtpError::WouldBlock) => break,
                    Err(e) => panic!("{name}: recv failed: {e}"),
                }
            }
        }
        sides.iter().all(|s| s.shut && s.eof)
    });
    assert!(
        done,
        "exchange did not finish in {limit:?}: a sent {} got {}, b sent {} got {}",
        sides[0].sent,
        sides[0].got.len(),
        sides[1].sent,
        sides[1].got.len()
    );
    let [sa, sb] = sides;
    (sb.got, sa.got)
}

/// Asserts two byte strings are equal without printing megabytes.
pub fn assert_same(got: &[u8], sent: &[u8], what: &str) {
    if got != sent {
        let first = got
            .iter()
            .zip(sent)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(sent.len()));
        panic!(
            "{what}: received {} bytes, sent {}; first difference at byte {first}",
            got.len(),
            sent.len()
        );
    }
}

pub fn drops(h: &Host, reason: &str) -> u64 {
    h.drops().get(reason).copied().unwrap_or(0)
}

/// A fresh directory for a test's captures (`stackscope-<name>-<pid>` in
/// the temporary directory), or `None` when tshark is not installed: the
/// test is then skipped, except under CI, where that fails.
pub fn tshark_capture_dir(name: &str) -> Option<PathBuf> {
    let installed = std::process::Command::new("tshark")
        .arg("--version")
        .output()
        .is_ok();
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "tshark is not installed (apt-get install tshark)"
        );
        eprintln!("SKIPPED: tshark is not installed");
        return None;
    }
    let dir = std::env::temp_dir().join(format!("stackscope-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Some(dir)
}

/// The pcapng captures written into `dir`, in name order.
pub fn captures(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcapng"))
        .collect();
    files.sort();
    files
}
