//! The data path's probes on a simulated network: a traced UDP flow from
//! host-a through the router to host-b records at every queue and function
//! of DESIGN.md's data path, on all three nodes, under the sender's flow id
//! (the trace option carries it), and an untraced flow records nothing.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use probe::{Level, Mode};
use stack::runner::Simulator;
use stack::socket::UdpConfig;
use stack::tools::{self, Family};
use stack::topology::Topology;

/// The probe mode is process-wide: the tests of this file take turns, or
/// one's `set_mode(Off)` ends the other's recording half-way.
static PROBE_MODE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Sends one datagram (traced or not) and returns the (location name, flow
/// id) of every record.
fn records_of_one_datagram(traced: bool, level: Level) -> (Vec<(&'static str, u32)>, u32) {
    let _turn = PROBE_MODE.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::spawn(move || {
        probe::init_thread(1 << 16);
        let topology = Topology::default_network();
        let mut sim = Simulator::new(&topology, None).unwrap();
        let dest = tools::resolve(&mut sim, "host-a", "host-b", Family::V6).unwrap();
        let b = sim.host_mut("host-b").unwrap();
        let sink = b.udp_open(UdpConfig::default());
        b.udp_bind(sink, SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 7));
        let a = sim.host_mut("host-a").unwrap();
        let socket = a.udp_open(UdpConfig::default());
        a.udp(socket).set_traced(traced);
        let flow = a.udp(socket).flow().id;
        // Resolve neighbours first, so the traced datagram takes the
        // common path rather than waiting in a neighbour cache entry.
        a.udp_send_to(socket, b"warm-up", SocketAddr::new(dest, 7))
            .unwrap();
        sim.run_for(Duration::from_secs(1));
        let _ = probe::drain_thread();
        probe::set_mode(Mode::TracedFlows);
        probe::set_level(level);
        let a = sim.host_mut("host-a").unwrap();
        a.udp_send_to(socket, &[7u8; 100], SocketAddr::new(dest, 7))
            .unwrap();
        sim.run_for(Duration::from_secs(1));
        let b = sim.host_mut("host-b").unwrap();
        let mut out = [0u8; 200];
        assert_eq!(b.udp(sink).recv_from(&mut out).map(|(n, _)| n), Some(7));
        assert_eq!(b.udp(sink).recv_from(&mut out).map(|(n, _)| n), Some(100));
        probe::set_mode(Mode::Off);
        probe::set_level(Level::Functions);
        let records = probe::drain_thread()
            .iter()
            .map(|r| (stack::probes::LOCATIONS[r.loc as usize].name, r.flow))
            .collect();
        (records, flow)
    })
    .join()
    .unwrap()
}

#[test]
fn a_traced_flow_is_recorded_along_the_whole_path_on_every_node() {
    let (records, flow) = records_of_one_datagram(true, Level::Functions);
    if !probe::ENABLED {
        assert!(records.is_empty());
        return;
    }
    let names: BTreeSet<&str> = records.iter().map(|(name, _)| *name).collect();
    for expected in [
        // Sender.
        "socket.send.enter",
        "socket.send_queue.enqueue",
        "socket.send_queue.dequeue",
        "udp.output.enter",
        "checksum.enter",
        "ipv6.output.enter",
        "route.lookup.enter",
        "neighbor.lookup.enter",
        "iface.queue.enqueue",
        "iface.queue.dequeue",
        "link.transmit.enter",
        "device.queue.enqueue",
        "device.queue.dequeue",
        "buffer.alloc.enter",
        "data.copy.enter",
        // Router and receiver.
        "link.receive.enter",
        "ip.input_queue.enqueue",
        "ip.input_queue.dequeue",
        "ipv6.input.enter",
        "ip.forward.enter",
        "trace.option_seen",
        "udp.input.enter",
        "socket.recv_queue.enqueue",
        "socket.recv_queue.dequeue",
        "socket.recv.enter",
        "socket.recv.exit",
    ] {
        assert!(
            names.contains(expected),
            "no {expected} record; got {names:?}"
        );
    }
    // Every record belongs to the traced flow: the receiver took the
    // sender's flow id from the trace option.
    assert!(records.iter().all(|(_, f)| *f == flow), "{records:?}");
    // Three nodes transmit and receive: host-a and the router send the
    // datagram, the router and host-b receive it.
    let count = |name: &str| records.iter().filter(|(n, _)| *n == name).count();
    assert_eq!(count("link.transmit.enter"), 2);
    assert_eq!(count("link.receive.enter"), 2);
    assert_eq!(count("ip.forward.enter"), 1);
    assert_eq!(count("socket.recv_queue.enqueue"), 1);
    // Spans pair up.
    assert_eq!(count("ipv6.input.enter"), count("ipv6.input.exit"));
}

#[test]
fn an_untraced_flow_records_nothing() {
    let (records, _) = records_of_one_datagram(false, Level::Functions);
    assert!(records.is_empty(), "{records:?}");
}

#[test]
fn the_layers_depth_records_the_boundaries_and_queues_without_the_cost_centres() {
    let (records, flow) = records_of_one_datagram(true, Level::Layers);
    if !probe::ENABLED {
        return;
    }
    let names: BTreeSet<&str> = records.iter().map(|(name, _)| *name).collect();
    for kept in [
        "socket.send.enter",
        "udp.output.enter",
        "ipv6.output.enter",
        "iface.queue.enqueue",
        "link.transmit.enter",
        "device.queue.enqueue",
        "device.queue.dequeue",
        "link.receive.enter",
        "udp.input.enter",
        "socket.recv_queue.enqueue",
    ] {
        assert!(names.contains(kept), "no {kept} record; got {names:?}");
    }
    for left_out in [
        "checksum.enter",
        "buffer.alloc.enter",
        "data.copy.enter",
        "route.lookup.enter",
        "neighbor.lookup.enter",
    ] {
        assert!(
            !names.contains(left_out),
            "{left_out} recorded at the layers depth"
        );
    }
    assert!(records.iter().all(|(_, f)| *f == flow));
}
