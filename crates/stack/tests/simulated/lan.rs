//! A shared segment (topologies/lan.toml: a router and three hosts on one
//! hub): neighbour discovery, ARP, SLAAC and DAD among four stations,
//! pings between every pair in both families, TCP across the hub, the
//! stations dropping each other's unicast frames, and the hub on the
//! threaded runner.

use crate::network_support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use network_support::*;
use stack::iface::host::Host;
use stack::runner::threaded::{self, Progress, WorkloadFactory};
use stack::socket::UdpConfig;
use stack::time::Instant;
use stack::tools::{self, Family, PingOptions};
use stack::topology::Topology;

const LAN: &str = include_str!("../../../../topologies/lan.toml");
const HOSTS: [&str; 3] = ["host-a", "host-b", "host-c"];

fn lan() -> Topology {
    Topology::from_toml_str(LAN).unwrap()
}

fn dropped(sim: &stack::runner::Simulator, name: &str, reason: &str) -> u64 {
    host(sim, name).drops().get(reason).copied().unwrap_or(0)
}

#[test]
fn every_station_pings_every_other_in_both_families() {
    let dir = CaptureDir::new("lan-ping");
    let mut sim = simulator(&lan(), &dir);
    for name in HOSTS {
        wait_for_slaac(&mut sim, name, "2001:db8:a::");
    }
    let stations = ["host-a", "host-b", "host-c", "router"];
    for family in [Family::V6, Family::V4] {
        for from in stations {
            for to in stations.iter().filter(|&&to| to != from) {
                let options = PingOptions {
                    count: 2,
                    interval: Duration::from_millis(100),
                    family,
                    ..PingOptions::default()
                };
                let report = tools::ping(&mut sim, from, to, &options).unwrap();
                assert_eq!(report.received, 2, "{from} → {to} ({family:?}): {report:?}");
            }
        }
    }
    // DAD saw every other station's addresses and found no duplicate.
    for name in HOSTS {
        assert_eq!(dropped(&sim, name, "dad_duplicate_address"), 0);
        assert_eq!(dropped(&sim, name, "dad_interface_disabled"), 0);
    }
    // The hub repeated every frame out of its three other ports.
    let hub = sim.hubs()[0].stats();
    assert!(hub.received > 100, "{hub:?}");
    assert_eq!(hub.repeated, 3 * hub.received, "{hub:?}");
    assert_eq!(hub.dropped, 0);
    drop(sim);
    // Every wire end was captured, the hub's ports included.
    let files: Vec<String> = dir
        .files()
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for name in [
        "host-a-eth0",
        "host-c-eth0",
        "router-eth0",
        "lan-1",
        "lan-4",
    ] {
        assert!(
            files.contains(&format!("{name}.pcapng")),
            "{name} missing from {files:?}"
        );
    }
    dir.check();
}

#[test]
fn the_hub_repeats_on_the_threaded_runner() {
    // host-a sends IPv4 datagrams to host-c (static addresses and ARP: no
    // waiting for SLAAC); host-c counts them.
    const DATAGRAMS: u64 = 20;
    let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut workloads: BTreeMap<String, WorkloadFactory> = BTreeMap::new();
    let counted = std::sync::Arc::clone(&received);
    workloads.insert(
        "host-c".into(),
        Box::new(move |host: &mut Host| {
            let socket = host.udp_open(UdpConfig::default());
            host.udp_bind(socket, "0.0.0.0:9".parse().unwrap());
            Box::new(move |host: &mut Host, _now: Instant| {
                let mut buf = [0u8; 64];
                while host.udp(socket).recv_from(&mut buf).is_some() {
                    counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                if counted.load(std::sync::atomic::Ordering::Relaxed) >= DATAGRAMS {
                    Progress::Done
                } else {
                    Progress::WAITING
                }
            })
        }),
    );
    // host-b only watches: done once it has dropped as many frames for
    // other stations as host-c must receive (a thread stopped early by
    // the others' end would not have looked at its link).
    workloads.insert(
        "host-b".into(),
        Box::new(|host: &mut Host| {
            let not_for_us = |host: &Host| host.drops().get("ethernet_not_for_us").copied();
            let before = not_for_us(host).unwrap_or(0);
            Box::new(move |host: &mut Host, _now: Instant| {
                if not_for_us(host).unwrap_or(0) - before >= DATAGRAMS {
                    Progress::Done
                } else {
                    Progress::WAITING
                }
            })
        }),
    );
    workloads.insert(
        "host-a".into(),
        Box::new(|host: &mut Host| {
            let socket = host.udp_open(UdpConfig::default());
            let mut sent = 0u64;
            let to: SocketAddr = "192.0.2.12:9".parse().unwrap();
            Box::new(move |host: &mut Host, now: Instant| {
                if sent >= DATAGRAMS * 5 {
                    return Progress::Done;
                }
                if host.udp_send_to(socket, b"across the hub", to).is_ok() {
                    sent += 1;
                }
                Progress::after(now, Duration::from_millis(5))
            })
        }),
    );
    let reports = threaded::run(
        &lan(),
        Duration::from_millis(50),
        Duration::from_secs(20),
        workloads,
    )
    .unwrap();
    let got = received.load(std::sync::atomic::Ordering::Relaxed);
    assert!(got >= DATAGRAMS, "host-c received {got}");
    // host-b saw host-a's unicast frames to host-c and dropped them.
    let host_b = reports.iter().find(|r| r.name == "host-b").unwrap();
    let not_for_us = host_b.drops.get("ethernet_not_for_us").copied();
    assert!(not_for_us.unwrap_or(0) >= DATAGRAMS, "{:?}", host_b.drops);
}
