//! The device stage on a simulated rate-limited wire: the transmit ring is
//! as deep as the wire's queue, a frame leaves it when its last bit has
//! left (transmit complete, at the serialisation time), a full ring keeps
//! frames in the interface queue instead of dropping them, and the ring's
//! probes pair up.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use stack::runner::Simulator;
use stack::socket::UdpConfig;
use stack::tools::{self, Family};
use stack::topology::Topology;

/// 1000 bytes of UDP payload, 8 of UDP, 8 of the trace option's
/// destination options header, 40 of IPv6 and 14 of Ethernet header, and
/// Ethernet's 24 octets of FCS, preamble and inter-frame gap, at 10
/// Mbit/s: 875.2 µs on the wire.
const FRAME_NS: u64 = 1094 * 8 * 100;

fn topology() -> Topology {
    Topology::from_toml_str(
        r#"
seed = 1

[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv6 = ["2001:db8::a/64"]
dad_transmits = 0

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv6 = ["2001:db8::b/64"]
dad_transmits = 0

[[wire]]
a = "host-a:eth0"
b = "host-b:eth0"
rate = "10Mbit"
queue_frames = 8
"#,
    )
    .unwrap()
}

#[test]
fn a_full_ring_backs_up_into_the_interface_queue_and_drains_at_the_wire_rate() {
    let (records, result) = std::thread::spawn(|| {
        probe::init_thread(1 << 16);
        let mut sim = Simulator::new(&topology(), None).unwrap();
        let dest = tools::resolve(&mut sim, "host-a", "host-b", Family::V6).unwrap();
        let b = sim.host_mut("host-b").unwrap();
        let sink = b.udp_open(UdpConfig::default());
        b.udp_bind(
            sink,
            SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), 9),
        );
        let a = sim.host_mut("host-a").unwrap();
        let socket = a.udp_open(UdpConfig {
            send_queue_datagrams: 64,
            ..UdpConfig::default()
        });
        a.udp(socket).set_traced(true);
        // Neighbour discovery first, so the burst takes the common path.
        a.udp_send_to(socket, b"warm-up", SocketAddr::new(dest, 9))
            .unwrap();
        sim.run_for(Duration::from_secs(1));
        let _ = probe::drain_thread();
        probe::set_mode(probe::Mode::TracedFlows);

        let a = sim.host_mut("host-a").unwrap();
        for i in 0..20u8 {
            a.udp_send_to(socket, &[i; 1000], SocketAddr::new(dest, 9))
                .unwrap();
        }
        let t0 = sim.now();
        // One poll at t0 puts all 20 on the interface; the ring takes 8.
        sim.run_until(t0 + Duration::from_nanos(1));
        let eth = &sim.host("host-a").unwrap().interfaces()[0];
        assert_eq!((eth.device.len(), eth.queued()), (8, 12));
        assert_eq!(
            eth.next_completion(),
            Some(t0 + Duration::from_nanos(FRAME_NS))
        );
        // The state dump shows the ring.
        let state = sim.host("host-a").unwrap().state(sim.now());
        let device = &state.interfaces[0].device;
        assert_eq!((device.in_ring, device.ring_frames), (8, 8));
        assert!(state
            .to_string()
            .contains("device ring: 8 of 8 slots in use (high water 8)"));
        // Just before the first frame's last bit leaves, nothing moved;
        // at that instant its slot frees and the next frame takes it.
        sim.run_until(t0 + Duration::from_nanos(FRAME_NS - 1));
        let eth = &sim.host("host-a").unwrap().interfaces()[0];
        assert_eq!((eth.device.len(), eth.queued()), (8, 12));
        sim.run_until(t0 + Duration::from_nanos(FRAME_NS));
        let eth = &sim.host("host-a").unwrap().interfaces()[0];
        assert_eq!((eth.device.len(), eth.queued()), (8, 11));
        assert_eq!(
            eth.next_completion(),
            Some(t0 + Duration::from_nanos(2 * FRAME_NS))
        );

        // The wire sends one frame per 875.2 µs: 20 take 17.504 ms.
        sim.run_until(t0 + Duration::from_nanos(20 * FRAME_NS - 1));
        let b = sim.host_mut("host-b").unwrap();
        let mut got = 0;
        let mut out = [0u8; 1500];
        while b.udp(sink).recv_from(&mut out).is_some() {
            got += 1;
        }
        assert_eq!(got, 1 + 19, "the warm-up and 19 of the burst");
        sim.run_until(t0 + Duration::from_nanos(20 * FRAME_NS));
        let b = sim.host_mut("host-b").unwrap();
        assert_eq!(b.udp(sink).recv_from(&mut out).map(|(n, _)| n), Some(1000));
        probe::set_mode(probe::Mode::Off);

        let eth = &sim.host("host-a").unwrap().interfaces()[0];
        let result = (
            eth.counters.queue_drops,
            eth.counters.tx_link_errors,
            eth.device.counters.high_water,
            eth.device.is_empty(),
            eth.counters.queue_high_water,
        );
        (probe::drain_thread(), result)
    })
    .join()
    .unwrap();
    let (queue_drops, link_errors, high_water, empty, queue_high_water) = result;
    assert_eq!((queue_drops, link_errors), (0, 0), "nothing dropped");
    assert_eq!(high_water, 8, "the ring is as deep as the wire's queue");
    assert!(queue_high_water >= 12);
    assert!(empty);
    if !probe::ENABLED {
        return;
    }
    let name = |r: &probe::Record| stack::probes::LOCATIONS[r.loc as usize].name;
    let count = |n: &str| records.iter().filter(|r| name(r) == n).count();
    // Host-a's 20 frames enter and leave the ring; the receiver transmits
    // nothing of the traced flow.
    assert_eq!(count("device.queue.enqueue"), 20);
    assert_eq!(count("device.queue.dequeue"), 20);
    // Each frame enters the ring right after the link took it, and the
    // completions come in the order the frames went in.
    let mut last_exit = None;
    for (i, r) in records.iter().enumerate() {
        match name(r) {
            "link.transmit.exit" => last_exit = Some(i),
            "device.queue.enqueue" => {
                assert_eq!(last_exit, Some(i - 1), "enqueue {i} follows a transmit")
            }
            _ => {}
        }
    }
}
