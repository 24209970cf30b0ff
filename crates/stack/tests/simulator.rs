//! The stack on simulated networks.

use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

use stack::runner::Simulator;
use stack::topology::Topology;

#[test]
fn slaac_on_default_topology() {
    let topology = Topology::default_network();
    let mut sim = Simulator::new(&topology, Some(std::path::Path::new("/tmp/simtest"))).unwrap();
    sim.run_for(Duration::from_secs(10));
    let host = sim.host("host-a").unwrap();
    println!("{}", host.state(sim.now()));
    println!("{}", sim.host("router").unwrap().state(sim.now()));
    let prefix: Ipv6Addr = "2001:db8:a::".parse().unwrap();
    assert!(host
        .global_ipv6_addresses()
        .iter()
        .any(|a| a.segments()[..4] == prefix.segments()[..4]));
    let _ = IpAddr::V6(prefix);
}
