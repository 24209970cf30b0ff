//! ICMPv4 errors about a tunnel's packets (RFC 4213 §3.4): a
//! Fragmentation Needed quoting an encapsulated packet sent with Don't
//! Fragment lowers the IPv4 path MTU to the endpoint and is relayed; one
//! quoting a packet without Don't Fragment cannot be genuine (RFC 1191
//! §4) and changes nothing.

use crate::network_support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use network_support::{host, host_mut, icmpv4_bytes, ipv4_packet, ipv6_packet};
use stack::iface::tunnel::{MtuMode, TunnelConfig, TunnelKind};
use stack::runner::Simulator;
use stack::socket::RawFamily;
use stack::topology::{Ipv6Cidr, Topology};
use wire::icmpv4::{Icmpv4DstUnreachable, Icmpv4Repr};
use wire::ip::IpProtocol;

const A: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const B: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

const WIRE: &str = r#"
[[host]]
name = "host-a"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.1/24"

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "192.0.2.2/24"

[[wire]]
a = "host-a:eth0"
b = "host-b:eth0"
delay = "50us"
"#;

/// A Fragmentation Needed (next-hop MTU 1300) quoting an encapsulated
/// packet from host-a to host-b, with or without Don't Fragment.
fn frag_needed(dont_frag: bool) -> Vec<u8> {
    let a6: Ipv6Addr = "2001:db8:1::a".parse().unwrap();
    let b6: Ipv6Addr = "2001:db8:1::b".parse().unwrap();
    let inner = ipv6_packet(a6, b6, IpProtocol::Udp, 64, &[0u8; 1400]);
    let mut quoted = ipv4_packet(A, B, IpProtocol::Ipv6, 7, 0, false, 64, &inner);
    if dont_frag {
        quoted[6] |= 0x40;
    }
    quoted.truncate(576 - 28);
    icmpv4_bytes(&Icmpv4Repr::DstUnreachable {
        reason: Icmpv4DstUnreachable::FragRequired,
        next_hop_mtu: 1300,
        invoking: &quoted,
    })
}

fn ipv4_path_mtu(sim: &Simulator) -> u32 {
    let state = host(sim, "host-a").state(sim.now());
    state
        .ipv4_destinations
        .iter()
        .find(|d| d.destination == B.to_string())
        .map(|d| d.path_mtu)
        .expect("a destination cache entry for the endpoint")
}

#[test]
fn only_a_frag_needed_about_a_df_packet_changes_the_tunnel() {
    let topology = Topology::from_toml_str(WIRE).unwrap();
    let mut sim = Simulator::new(&topology, None).unwrap();
    let mut config = TunnelConfig::configured("tun0", A, B);
    config.kind = TunnelKind::Configured {
        remote: B,
        mtu_mode: MtuMode::Dynamic,
    };
    config.ipv6 = vec![Ipv6Cidr {
        address: "2001:db8:1::a".parse().unwrap(),
        prefix_len: 64,
    }];
    config.dad_transmits = Some(0);
    host_mut(&mut sim, "host-a").add_tunnel(config).unwrap();
    let raw = host_mut(&mut sim, "host-b").raw_open(RawFamily::Ipv4, IpProtocol::Icmp);
    // host-b has no tunnel: what host-a's tunnel sends it (Router
    // Solicitations, MLD reports) makes the destination cache entry.
    sim.run_for(Duration::from_millis(100));
    assert_eq!(ipv4_path_mtu(&sim), 1500);

    // host-b's Protocol Unreachables about those are relayed already.
    let before = host(&sim, "host-a").tunnels()[0].counters.icmpv4_relayed;
    for (dont_frag, relayed, mtu) in [(false, 0, 1500), (true, 1, 1300)] {
        host_mut(&mut sim, "host-b")
            .raw_send_to(raw, &frag_needed(dont_frag), IpAddr::V4(A), None)
            .unwrap();
        sim.run_for(Duration::from_millis(10));
        let a = host(&sim, "host-a");
        assert_eq!(
            a.tunnels()[0].counters.icmpv4_relayed - before,
            relayed,
            "DF {dont_frag}"
        );
        assert_eq!(ipv4_path_mtu(&sim), mtu, "DF {dont_frag}");
    }
    let drops = host(&sim, "host-a").drops().clone();
    assert_eq!(drops.get("tunnel_icmpv4_frag_needed_without_df"), Some(&1));
}
