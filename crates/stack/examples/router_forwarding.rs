//! How many packets per second one router of the reference stack forwards,
//! on the threaded runner: host-a floods UDP through the router to host-b
//! (a thread each, real clock, unlimited wires), for IPv6 and IPv4 packets
//! of 64 and 1500 bytes (IP header included).
//!
//! `cargo run --release -p stackscope-stack --example router_forwarding [SECONDS]`

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use stack::iface::address::{address_from_prefix, modified_eui64};
use stack::iface::host::Host;
use stack::runner::threaded::{self, Progress, Workload, WorkloadFactory};
use stack::socket::UdpConfig;
use stack::time::Instant;
use stack::topology::Topology;

const PORT: u16 = 9;

fn sender(dest: SocketAddr, payload: usize) -> WorkloadFactory {
    Box::new(move |host: &mut Host| -> Workload {
        let config = UdpConfig {
            send_queue_datagrams: 256,
            ..UdpConfig::default()
        };
        let socket = host.udp_open(config);
        let data = vec![0x5a; payload];
        Box::new(move |host: &mut Host, _now: Instant| {
            // Keep the send queue topped up: the flood is as fast as the
            // sender's thread can build packets.
            while host.udp_send_to(socket, &data, dest).is_ok() {}
            Progress::WAITING
        })
    })
}

fn sink() -> WorkloadFactory {
    Box::new(|host: &mut Host| -> Workload {
        let config = UdpConfig {
            recv_queue_datagrams: 4096,
            recv_queue_bytes: 16 << 20,
            ..UdpConfig::default()
        };
        let socket = host.udp_open(config);
        host.udp_bind(
            socket,
            SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), PORT),
        );
        let socket4 = host.udp_open(config);
        host.udp_bind(
            socket4,
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT),
        );
        Box::new(move |host: &mut Host, _now: Instant| {
            while host.udp(socket).recv().is_some() {}
            while host.udp(socket4).recv().is_some() {}
            Progress::WAITING
        })
    })
}

fn main() {
    let seconds: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    // The default network with unlimited wires (no rate, no delay) and
    // deep queues: the router's forwarding is the bottleneck.
    let base = Topology::default_network();
    let wires = base
        .wires()
        .iter()
        .cloned()
        .map(|mut wire| {
            wire.params.rate_bits_per_s = None;
            wire.params.delay = Duration::ZERO;
            wire.params.queue_frames = 4096;
            wire
        })
        .collect();
    let topology =
        Topology::new(base.seed(), base.nodes().to_vec(), wires).expect("valid topology");
    let host_b = topology.node("host-b").expect("host-b");
    let mac = host_b.interfaces[0].mac;
    let b6 = address_from_prefix("2001:db8:b::".parse().unwrap(), modified_eui64(mac.0));
    let b4: Ipv4Addr = "198.51.100.10".parse().unwrap();
    println!(
        "threads: 3 (one per node) on {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!(
        "family  ip_bytes  host-a_sent_pps  router_forwarded_pps  host-b_received_pps  seconds"
    );
    for (family, dest, header) in [("IPv6", IpAddr::V6(b6), 48), ("IPv4", IpAddr::V4(b4), 28)] {
        for ip_bytes in [64usize, 1500] {
            let mut workloads: BTreeMap<String, WorkloadFactory> = BTreeMap::new();
            workloads.insert(
                "host-a".into(),
                sender(SocketAddr::new(dest, PORT), ip_bytes - header),
            );
            workloads.insert("host-b".into(), sink());
            let reports = threaded::run(
                &topology,
                Duration::from_secs(4),
                Duration::from_secs_f64(seconds),
                workloads,
            )
            .expect("run");
            let report = |name: &str| reports.iter().find(|r| r.name == name).expect("report");
            let router = report("router");
            let a = report("host-a");
            let b = report("host-b");
            let sent = a.counters.udp_sent as f64 / a.elapsed.as_secs_f64();
            let forwarded = router.counters.ipv6_forwarded + router.counters.ipv4_forwarded;
            let pps = forwarded as f64 / router.elapsed.as_secs_f64();
            let received = b.counters.udp_received as f64 / b.elapsed.as_secs_f64();
            println!(
                "{family:<6}  {ip_bytes:>8}  {sent:>15.0}  {pps:>20.0}  {received:>19.0}  {:>7.2}",
                router.elapsed.as_secs_f64()
            );
        }
    }
}
