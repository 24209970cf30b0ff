//! Fragmentation modes: a 4000-byte UDP datagram over a 1500-byte MTU
//! leaves as three fragments either way and arrives byte for byte; with
//! `fragmentation = "copy"` each fragment's payload is copied (a
//! `data_move` span inside the fragmentation span, the whole payload
//! between them), with scatter-gather nothing is.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use stack::iface::host::Fragmentation;
use stack::runner::Simulator;
use stack::socket::UdpConfig;
use stack::tools::{self, Family};
use stack::topology::Topology;

const PAYLOAD: usize = 4000;

fn topology(sender_key: &str) -> Topology {
    Topology::from_toml_str(&format!(
        r#"
seed = 1

[[host]]
name = "host-a"
{sender_key}
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
"#
    ))
    .unwrap()
}

/// Sends one traced datagram; returns what arrived and the sender's
/// records of the send.
fn send(topology: Topology) -> (Vec<u8>, Vec<probe::Record>) {
    std::thread::spawn(move || {
        probe::init_thread(1 << 16);
        let mut sim = Simulator::new(&topology, None).unwrap();
        let dest = tools::resolve(&mut sim, "host-a", "host-b", Family::V6).unwrap();
        let b = sim.host_mut("host-b").unwrap();
        let sink = b.udp_open(UdpConfig::default());
        b.udp_bind(
            sink,
            SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), 9),
        );
        let a = sim.host_mut("host-a").unwrap();
        let socket = a.udp_open(UdpConfig::default());
        a.udp(socket).set_traced(true);
        a.udp_send_to(socket, b"warm-up", SocketAddr::new(dest, 9))
            .unwrap();
        sim.run_for(Duration::from_secs(1));
        let mut out = vec![0u8; 65_536];
        let b = sim.host_mut("host-b").unwrap();
        while b.udp(sink).recv_from(&mut out).is_some() {}
        let _ = probe::drain_thread();
        probe::set_mode(probe::Mode::TracedFlows);
        let payload: Vec<u8> = (0..PAYLOAD).map(|i| (i * 7 % 251) as u8).collect();
        let a = sim.host_mut("host-a").unwrap();
        a.udp_send_to(socket, &payload, SocketAddr::new(dest, 9))
            .unwrap();
        sim.run_for(Duration::from_millis(10));
        probe::set_mode(probe::Mode::Off);
        let b = sim.host_mut("host-b").unwrap();
        let (n, _) = b.udp(sink).recv_from(&mut out).expect("the datagram");
        assert_eq!(
            sim.host("host-a").unwrap().counters().ipv6_fragments_sent,
            3
        );
        (out[..n].to_vec(), probe::drain_thread())
    })
    .join()
    .unwrap()
}

/// Bytes copied by `data.copy` spans inside `ip.fragment` spans.
fn copied_while_fragmenting(records: &[probe::Record]) -> u64 {
    let name = |r: &probe::Record| stack::probes::LOCATIONS[r.loc as usize].name;
    let mut inside = false;
    let mut copied = 0;
    for r in records {
        match name(r) {
            "ip.fragment.enter" => inside = true,
            "ip.fragment.exit" => inside = false,
            "data.copy.enter" if inside => copied += u64::from(r.len),
            _ => {}
        }
    }
    copied
}

#[test]
fn both_modes_deliver_the_datagram_and_only_copy_copies() {
    let expected: Vec<u8> = (0..PAYLOAD).map(|i| (i * 7 % 251) as u8).collect();
    let (sg, sg_records) = send(topology(""));
    let (copy, copy_records) = send(topology(r#"fragmentation = "copy""#));
    assert_eq!(sg, expected);
    assert_eq!(copy, expected);
    if !probe::ENABLED {
        return;
    }
    assert_eq!(copied_while_fragmenting(&sg_records), 0);
    // The fragmentable part: the trace option's Destination Options
    // header (8), the UDP header (8) and the payload.
    assert_eq!(copied_while_fragmenting(&copy_records), PAYLOAD as u64 + 16);
}

#[test]
fn the_key_round_trips_and_a_recipe_can_set_it() {
    let copy = topology(r#"fragmentation = "copy""#);
    assert_eq!(copy.nodes()[0].fragmentation, Fragmentation::Copy);
    assert_eq!(copy.nodes()[1].fragmentation, Fragmentation::ScatterGather);
    let printed = copy.to_toml_string();
    assert!(printed.contains(r#"fragmentation = "copy""#), "{printed}");
    let mut sg = topology("");
    sg.set_fragmentation(Fragmentation::Copy);
    assert!(sg
        .nodes()
        .iter()
        .all(|n| n.fragmentation == Fragmentation::Copy));
    let bad = Topology::from_toml_str(&topology("").to_toml_string().replace(
        "name = \"host-a\"",
        "name = \"host-a\"\nfragmentation = \"sometimes\"",
    ));
    assert!(bad.is_err());
}
