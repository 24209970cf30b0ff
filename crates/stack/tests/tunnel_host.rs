//! IPv6 over the reference stack's own IPv4 (`iface::tunnel`), on the
//! simulator: hosts whose only IPv6 link is a tunnel through an
//! IPv4-only router.
//!
//! * TCP and UDP cross a configured tunnel (RFC 4213 §3) byte-exact, at
//!   the tunnel MTU of 1480 without an IPv4 fragment, and tshark decodes
//!   the captures as IPv6 in IPv4 with no malformed packet;
//! * over a narrower IPv4 path, a static-MTU tunnel is fragmented by IPv4
//!   (§3.2.1) and a dynamic one learns the path from Fragmentation Needed
//!   and lowers the IPv6 path MTU to the IPv4 one less 20 (§3.2.2, §3.4);
//! * an ICMPv4 error about a forwarded packet reaches its IPv6 source as
//!   ICMPv6 (§3.4);
//! * the ingress checks (§3.6) drop decapsulated packets from another
//!   IPv4 source, with a martian, own or filtered IPv6 source;
//! * automatic tunnelling reaches IPv4-compatible addresses;
//! * 6-over-4 (RFC 2529) finds neighbours by ND over IPv4 multicast;
//! * topology files describe tunnels.

mod network_support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::tunnel::{
    connect, ipv4_only_text, send_mss, six_over_four_segment, transfer, tshark_count_all,
    wait_for_addresses,
};
use network_support::{
    drain_raw, host, host_mut, ipv6_packet, pattern, simulator, tshark_available, udp_datagram,
    udp_listen, CaptureDir,
};
use stack::iface::tunnel::{MtuMode, TunnelConfig, TunnelKind};
use stack::runner::Simulator;
use stack::socket::RawFamily;
use stack::topology::{Ipv6Cidr, Topology};
use wire::ip::IpProtocol;

const A_V4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 10);
const B_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);

/// host-a — router — host-b, IPv4 only; the router's link to host-b at
/// `far_mtu`.
fn ipv4_only(far_mtu: usize) -> Topology {
    Topology::from_toml_str(&ipv4_only_text(far_mtu, "", "")).unwrap()
}

fn cidr(text: &str) -> Ipv6Cidr {
    let (address, len) = text.split_once('/').unwrap();
    Ipv6Cidr {
        address: address.parse().unwrap(),
        prefix_len: len.parse().unwrap(),
    }
}

fn a_addr() -> Ipv6Addr {
    "2001:db8:a::1".parse().unwrap()
}

fn b_addr() -> Ipv6Addr {
    "2001:db8:b::2".parse().unwrap()
}

/// A configured tunnel from `local` to `remote` with `address`, the
/// endpoint as default router.
fn tunnel(local: Ipv4Addr, remote: Ipv4Addr, address: &str, mode: MtuMode) -> TunnelConfig {
    let mut config = TunnelConfig::configured("tun0", local, remote);
    config.kind = TunnelKind::Configured {
        remote,
        mtu_mode: mode,
    };
    config.ipv6 = vec![cidr(address)];
    config.default_route = true;
    config
}

/// Adds the tunnels between host-a and host-b and runs until both
/// addresses passed DAD (over the tunnel).
fn tunnelled(sim: &mut Simulator, mode: MtuMode) {
    host_mut(sim, "host-a")
        .add_tunnel(tunnel(A_V4, B_V4, "2001:db8:a::1/64", mode))
        .unwrap();
    host_mut(sim, "host-b")
        .add_tunnel(tunnel(B_V4, A_V4, "2001:db8:b::2/64", mode))
        .unwrap();
    wait_for_addresses(sim, a_addr(), b_addr());
}

fn drops(sim: &Simulator, name: &str, reason: &str) -> u64 {
    host(sim, name).drops().get(reason).copied().unwrap_or(0)
}

fn path_mtu(sim: &Simulator, from: &str, to: Ipv6Addr) -> u32 {
    let state = host(sim, from).state(sim.now());
    state
        .ipv6_destinations
        .iter()
        .find(|d| d.destination == to.to_string())
        .map(|d| d.path_mtu)
        .expect("a destination cache entry")
}

#[test]
fn tcp_and_udp_cross_a_configured_tunnel_over_the_hosts_own_ipv4() {
    let dir = CaptureDir::new("tunnel-configured");
    let mut sim = simulator(&ipv4_only(1500), &dir);
    tunnelled(&mut sim, MtuMode::Static);

    // UDP both ways through the default routes (the endpoints as RLEs).
    let at_b = udp_listen(&mut sim, "host-b", true, 7);
    let at_a = udp_listen(&mut sim, "host-a", true, 7);
    let message = pattern(1000);
    host_mut(&mut sim, "host-a")
        .udp_send_to(at_a, &message, SocketAddr::new(b_addr().into(), 7))
        .unwrap();
    let arrived = sim.run_until_with(Duration::from_secs(2), |sim| {
        host_mut(sim, "host-b").udp(at_b).recv_queue_len() > 0
    });
    assert!(arrived, "the datagram did not cross the tunnel");
    let mut buf = vec![0u8; 2000];
    let (n, from) = host_mut(&mut sim, "host-b")
        .udp(at_b)
        .recv_from(&mut buf)
        .unwrap();
    assert_eq!(&buf[..n], &message[..]);
    assert_eq!(from, SocketAddr::new(a_addr().into(), 7));
    host_mut(&mut sim, "host-b")
        .udp_send_to(at_b, b"back", from)
        .unwrap();
    let back = sim.run_until_with(Duration::from_secs(2), |sim| {
        host_mut(sim, "host-a").udp(at_a).recv_queue_len() > 0
    });
    assert!(back, "the reply did not cross the tunnel");

    // TCP: the MSS of the tunnel MTU (1480 − 40 − 20), no IPv4 fragment.
    let ends = connect(&mut sim, b_addr());
    let mss = send_mss(&sim, ends.0);
    // 1480 − 40 − 20, less the 12-byte timestamp option.
    assert_eq!(mss, 1408);
    transfer(&mut sim, ends, &pattern(1 << 20));
    for name in ["host-a", "router", "host-b"] {
        assert_eq!(host(&sim, name).counters().ipv4_fragments_sent, 0, "{name}");
    }
    let a = &host(&sim, "host-a").tunnels()[0];
    let b = &host(&sim, "host-b").tunnels()[0];
    assert!(a.counters.encapsulated > 700, "{:?}", a.counters);
    assert!(b.counters.decapsulated > 700, "{:?}", b.counters);
    assert_eq!(a.counters.ingress_dropped + b.counters.ingress_dropped, 0);
    // The tunnel interface counts what it carried, no ND was needed for
    // the endpoint, and the physical link saw the encapsulation.
    let a_host = host(&sim, "host-a");
    let tun = &a_host.interfaces()[a_host.interface_id("tun0").unwrap().0];
    assert_eq!(tun.counters.tx_frames, a.counters.encapsulated);
    assert_eq!(tun.v6.neighbors.len(), 0, "ND ran for the endpoint");
    assert!(a_host.counters().ipv4_sent >= a.counters.encapsulated);
    // The state dump (`stackscope ipv6`) shows the tunnel and its endpoint.
    let dump = a_host.state(sim.now()).to_string();
    assert!(
        dump.contains("tunnel configured from 192.0.2.10 to 198.51.100.10  mtu static")
            && dump.contains("NCE fe80::c633:640a  198.51.100.10  PERMANENT (no ND)  router"),
        "{dump}"
    );
    drop(sim);

    dir.check();
    if tshark_available() {
        let tunnelled = tshark_count_all(&dir, "ip.proto == 41 && ipv6 && tcp");
        assert!(
            tunnelled > 700,
            "tshark saw {tunnelled} TCP-in-IPv6-in-IPv4 frames"
        );
        assert!(tshark_count_all(&dir, "ip.proto == 41 && ipv6 && udp") >= 2);
    }
}

#[test]
fn a_static_tunnel_is_fragmented_by_ipv4_on_a_narrower_path() {
    let mut sim = Simulator::new(&ipv4_only(1400), None).unwrap();
    tunnelled(&mut sim, MtuMode::Static);
    let ends = connect(&mut sim, b_addr());
    transfer(&mut sim, ends, &pattern(256 << 10));
    // §3.2.1: DF clear, so the router fragments; the IPv6 path MTU stays.
    assert!(host(&sim, "router").counters().ipv4_fragments_sent > 100);
    assert_eq!(path_mtu(&sim, "host-a", b_addr()), 1480);
    assert_eq!(host(&sim, "host-a").tunnels()[0].counters.icmpv4_relayed, 0);
}

#[test]
fn a_dynamic_tunnel_learns_the_ipv4_path_mtu_less_20() {
    let mut sim = Simulator::new(&ipv4_only(1400), None).unwrap();
    tunnelled(&mut sim, MtuMode::Dynamic);
    let ends = connect(&mut sim, b_addr());
    transfer(&mut sim, ends, &pattern(256 << 10));
    // §3.2.2: DF on packets over 1280 bytes; the router's Fragmentation
    // Needed (1400) becomes host-a's IPv6 path MTU of 1380 (§3.4).
    assert_eq!(host(&sim, "router").counters().ipv4_fragments_sent, 0);
    assert!(host(&sim, "host-a").tunnels()[0].counters.icmpv4_relayed >= 1);
    assert_eq!(path_mtu(&sim, "host-a", b_addr()), 1380);
    let mss = send_mss(&sim, ends.0);
    assert_eq!(mss, 1380 - 60 - 12);
}

/// host-c — router-a ⇒ (tunnel over router) ⇒ host-b: router-a forwards
/// host-c's IPv6 into its tunnel.
fn forwarded() -> Topology {
    let text = r#"
seed = 21

[[host]]
name = "host-c"
[[host.interface]]
name = "eth0"

[[router]]
name = "router-a"
[[router.interface]]
name = "eth0"
ipv6 = ["2001:db8:c::1/64"]
[[router.interface.advertise]]
prefix = "2001:db8:c::/64"
[[router.interface]]
name = "eth1"
ipv4 = "192.0.2.10/24"
[[router.route]]
to = "0.0.0.0/0"
via = "192.0.2.1"

[[router]]
name = "router"
[[router.interface]]
name = "eth0"
ipv4 = "192.0.2.1/24"
[[router.interface]]
name = "eth1"
ipv4 = "198.51.100.1/24"

[[host]]
name = "host-b"
[[host.interface]]
name = "eth0"
ipv4 = "198.51.100.10/24"
[[host.route]]
to = "0.0.0.0/0"
via = "198.51.100.1"

[[wire]]
a = "host-c:eth0"
b = "router-a:eth0"
delay = "50us"

[[wire]]
a = "router-a:eth1"
b = "router:eth0"
delay = "50us"

[[wire]]
a = "router:eth1"
b = "host-b:eth0"
delay = "50us"
"#;
    Topology::from_toml_str(text).unwrap()
}

#[test]
fn an_icmpv4_error_about_a_tunnelled_packet_reaches_the_ipv6_source() {
    let mut sim = Simulator::new(&forwarded(), None).unwrap();
    // TTL 1: the IPv4 router in the middle answers Time Exceeded.
    let mut config = tunnel(A_V4, B_V4, "2001:db8:ab::1/64", MtuMode::Static);
    config.ttl = 1;
    config.dad_transmits = Some(0);
    host_mut(&mut sim, "router-a").add_tunnel(config).unwrap();
    let c = network_support::wait_for_slaac(&mut sim, "host-c", "2001:db8:c::");
    let icmp = host_mut(&mut sim, "host-c").raw_open(RawFamily::Ipv6, IpProtocol::Icmpv6);
    let socket = udp_listen(&mut sim, "host-c", true, 7);
    host_mut(&mut sim, "host-c")
        .udp_send_to(
            socket,
            b"into the tunnel",
            SocketAddr::new(b_addr().into(), 7),
        )
        .unwrap();
    let before = host(&sim, "router-a").tunnels()[0].counters.icmpv4_relayed;
    sim.run_for(Duration::from_millis(200));
    let relayed = host(&sim, "router-a").tunnels()[0].counters.icmpv4_relayed;
    assert!(relayed > before, "router-a relayed nothing");
    let messages = drain_raw(host_mut(&mut sim, "host-c"), icmp);
    let unreachable: Vec<_> = messages
        .iter()
        .filter(|(_, local, _, bytes)| *local == IpAddr::V6(c) && bytes[0] == 1)
        .collect();
    assert_eq!(unreachable.len(), 1, "{messages:?}");
    let (from, _, _, bytes) = unreachable[0];
    // Destination Unreachable, Address Unreachable, from router-a, quoting
    // host-c's packet (its source at offset 8 of the quote).
    assert_eq!(bytes[1], 3);
    assert_eq!(*from, IpAddr::V6("2001:db8:c::1".parse().unwrap()));
    assert_eq!(&bytes[8 + 8..8 + 24], &c.octets());
}

#[test]
fn the_ingress_checks_drop_spoofed_decapsulated_packets() {
    let mut sim = Simulator::new(&ipv4_only(1500), None).unwrap();
    let mut config = tunnel(A_V4, B_V4, "2001:db8:a::1/64", MtuMode::Static);
    config.accept_sources = vec![cidr("2001:db8:b::/64"), cidr("2001:db8:a::/64")];
    config.dad_transmits = Some(0);
    host_mut(&mut sim, "host-a").add_tunnel(config).unwrap();
    let socket = udp_listen(&mut sim, "host-a", true, 7);
    // host-b and the router hand-build IPv6-in-IPv4 on raw sockets.
    let raw_b = host_mut(&mut sim, "host-b").raw_open(RawFamily::Ipv4, IpProtocol::Ipv6);
    let raw_r = host_mut(&mut sim, "router").raw_open(RawFamily::Ipv4, IpProtocol::Ipv6);
    sim.run_for(Duration::from_millis(100));
    let inner = |src: &str| {
        let src: Ipv6Addr = src.parse().unwrap();
        let udp = udp_datagram(
            SocketAddr::new(src.into(), 9),
            SocketAddr::new(a_addr().into(), 7),
            b"spoof?",
        );
        ipv6_packet(src, a_addr(), IpProtocol::Udp, 64, &udp)
    };
    let send = |sim: &mut Simulator, name: &str, raw, src: &str| {
        host_mut(sim, name)
            .raw_send_to(raw, &inner(src), IpAddr::V4(A_V4), None)
            .unwrap();
        sim.run_for(Duration::from_millis(50));
    };
    // From the endpoint, a source the filter accepts: delivered.
    send(&mut sim, "host-b", raw_b, "2001:db8:b::2");
    assert_eq!(host_mut(&mut sim, "host-a").udp(socket).recv_queue_len(), 1);
    // Outside the filter, a martian, and host-a's own address.
    send(&mut sim, "host-b", raw_b, "2001:db8:9::1");
    send(&mut sim, "host-b", raw_b, "::1");
    send(&mut sim, "host-b", raw_b, "2001:db8:a::1");
    // The right inner source from an IPv4 node that is not the endpoint.
    send(&mut sim, "router", raw_r, "2001:db8:b::2");
    assert_eq!(drops(&sim, "host-a", "tunnel_ingress_filtered"), 1);
    assert_eq!(drops(&sim, "host-a", "tunnel_ingress_martian"), 1);
    assert_eq!(drops(&sim, "host-a", "tunnel_ingress_own_source"), 1);
    assert_eq!(drops(&sim, "host-a", "tunnel_no_endpoint"), 1);
    assert_eq!(host_mut(&mut sim, "host-a").udp(socket).recv_queue_len(), 1);
    let counters = host(&sim, "host-a").tunnels()[0].counters;
    assert_eq!(counters.ingress_dropped, 3);
    assert_eq!(counters.decapsulated, 1);
}

#[test]
fn automatic_tunnelling_reaches_ipv4_compatible_addresses() {
    let mut sim = Simulator::new(&ipv4_only(1500), None).unwrap();
    for (name, v4) in [("host-a", A_V4), ("host-b", B_V4)] {
        host_mut(&mut sim, name)
            .add_tunnel(TunnelConfig::automatic("auto0", v4))
            .unwrap();
    }
    let a: Ipv6Addr = A_V4.to_ipv6_compatible();
    let b: Ipv6Addr = B_V4.to_ipv6_compatible();
    wait_for_addresses(&mut sim, a, b);
    let at_b = udp_listen(&mut sim, "host-b", true, 7);
    let at_a = udp_listen(&mut sim, "host-a", true, 7);
    host_mut(&mut sim, "host-a")
        .udp_send_to(at_a, b"automatic", SocketAddr::new(b.into(), 7))
        .unwrap();
    let arrived = sim.run_until_with(Duration::from_secs(2), |sim| {
        host_mut(sim, "host-b").udp(at_b).recv_queue_len() > 0
    });
    assert!(arrived, "nothing reached ::{B_V4}");
    let mut buf = [0u8; 64];
    let (n, from) = host_mut(&mut sim, "host-b")
        .udp(at_b)
        .recv_from(&mut buf)
        .unwrap();
    assert_eq!(
        (&buf[..n], from),
        (&b"automatic"[..], SocketAddr::new(a.into(), 7))
    );
    assert_eq!(host(&sim, "host-a").tunnels()[0].counters.decapsulated, 0);
    assert_eq!(host(&sim, "host-b").tunnels()[0].counters.decapsulated, 1);
}

#[test]
fn a_topology_file_builds_the_tunnels_for_every_runner() {
    let a_tunnel = r#"
[[host.tunnel]]
name = "tun0"
local = "192.0.2.10"
remote = "198.51.100.10"
mtu_mode = "dynamic"
ipv6 = ["2001:db8:a::1/64"]
default_route = true
"#;
    let b_tunnels = r#"
[[host.tunnel]]
name = "tun0"
local = "198.51.100.10"
remote = "192.0.2.10"
ipv6 = ["2001:db8:b::2/64"]
default_route = true

[[host.tunnel]]
name = "auto0"
kind = "automatic"
local = "198.51.100.10"
"#;
    let text = ipv4_only_text(1500, a_tunnel, b_tunnels);
    let topology = Topology::from_toml_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let b = topology.node("host-b").unwrap();
    assert_eq!(b.tunnels.len(), 2, "{text}");
    assert_eq!(b.tunnels[1].kind, TunnelKind::Automatic);
    let a = &topology.node("host-a").unwrap().tunnels[0];
    assert_eq!(
        a.kind,
        TunnelKind::Configured {
            remote: B_V4,
            mtu_mode: MtuMode::Dynamic
        }
    );
    // Written back and read again, the same network.
    let again = Topology::from_toml_str(&topology.to_toml_string()).unwrap();
    assert_eq!(again, topology);

    // The builder every runner uses adds them.
    let mut sim = Simulator::new(&topology, None).unwrap();
    wait_for_addresses(&mut sim, a_addr(), b_addr());
    let at_b = udp_listen(&mut sim, "host-b", true, 7);
    let at_a = udp_listen(&mut sim, "host-a", true, 7);
    host_mut(&mut sim, "host-a")
        .udp_send_to(at_a, b"from a file", SocketAddr::new(b_addr().into(), 7))
        .unwrap();
    let arrived = sim.run_until_with(Duration::from_secs(2), |sim| {
        host_mut(sim, "host-b").udp(at_b).recv_queue_len() > 0
    });
    assert!(arrived);
    assert_eq!(host(&sim, "host-b").tunnels().len(), 2);

    // A tunnel on an address the node does not have is refused, named.
    let bad = text.replace("local = \"192.0.2.10\"", "local = \"192.0.2.99\"");
    let error = Topology::from_toml_str(&bad).unwrap_err().to_string();
    assert!(
        error.contains("tunnel host-a:tun0") && error.contains("192.0.2.99"),
        "{error}"
    );
}

#[test]
fn six_over_four_runs_neighbor_discovery_over_ipv4_multicast() {
    let dir = CaptureDir::new("tunnel-6over4");
    let topology = Topology::from_toml_str(&six_over_four_segment()).unwrap();
    let mut sim = simulator(&topology, &dir);
    let a: Ipv6Addr = "2001:db8:64::a".parse().unwrap();
    let b: Ipv6Addr = "2001:db8:64::b".parse().unwrap();
    // The link-local address holds the IPv4 address (RFC 2529 §4).
    let ll: Ipv6Addr = "fe80::c000:20a".parse().unwrap();
    let tun = host(&sim, "host-a").interface_id("6o4").unwrap();
    let ready = sim.run_until_with(Duration::from_secs(10), |sim| {
        let a_host = host(sim, "host-a");
        a_host.global_ipv6_addresses().contains(&a)
            && a_host.interfaces()[tun.0].v6.addresses.is_assigned(ll)
            && host(sim, "host-b").global_ipv6_addresses().contains(&b)
    });
    assert!(
        ready,
        "DAD over 6-over-4 never finished:\n{}",
        host(&sim, "host-a").state(sim.now())
    );

    let at_b = udp_listen(&mut sim, "host-b", true, 7);
    let at_a = udp_listen(&mut sim, "host-a", true, 7);
    host_mut(&mut sim, "host-a")
        .udp_send_to(at_a, b"over 6-over-4", SocketAddr::new(b.into(), 7))
        .unwrap();
    let arrived = sim.run_until_with(Duration::from_secs(3), |sim| {
        host_mut(sim, "host-b").udp(at_b).recv_queue_len() > 0
    });
    assert!(arrived, "the datagram never crossed the 6-over-4 link");
    // ND found host-b's link-layer address: two zero octets and its IPv4
    // address (RFC 2529 §5).
    let a_host = host(&sim, "host-a");
    let entry = a_host.interfaces()[tun.0]
        .v6
        .neighbors
        .entries()
        .find(|e| e.addr == b)
        .expect("an NCE for host-b");
    assert_eq!(entry.lladdr.map(|l| l.0), Some([0, 0, 192, 0, 2, 20]));

    // TCP across it, the MSS of MTU 1480.
    let (client, server) = connect(&mut sim, b);
    assert_eq!(send_mss(&sim, client), 1408);
    transfer(&mut sim, (client, server), &pattern(256 << 10));
    drop(sim);

    dir.check();
    if tshark_available() {
        // Neighbor Solicitations to the solicited-node group's IPv4 group
        // (ff02::1:ff00:b → 239.192.0.11, §6), carried as protocol 41.
        let solicitations = tshark_count_all(&dir, "ip.dst == 239.192.0.11 && icmpv6.type == 135");
        assert!(solicitations >= 1, "no NS over IPv4 multicast");
        assert!(tshark_count_all(&dir, "ip.proto == 41 && tcp") > 150);
    }
}

/// The tunnel's spans: on the sender `tunnel.transmit` holds the
/// encapsulating `ipv4.output`, 20 bytes longer than the IPv6 packet; on
/// the receiver `tunnel.receive` sits inside `ipv4.input` and before
/// `ipv6.input`; every record under the traced flow.
#[test]
fn the_tunnel_is_a_layer_of_its_own_in_the_probes() {
    let records = std::thread::spawn(|| {
        probe::init_thread(1 << 16);
        let mut sim = Simulator::new(&ipv4_only(1500), None).unwrap();
        tunnelled(&mut sim, MtuMode::Static);
        let at_b = udp_listen(&mut sim, "host-b", true, 7);
        let a = host_mut(&mut sim, "host-a");
        let socket = a.udp_open(stack::socket::UdpConfig::default());
        a.udp(socket).set_traced(true);
        let flow = a.udp(socket).flow().id;
        a.udp_send_to(socket, b"warm-up", SocketAddr::new(b_addr().into(), 7))
            .unwrap();
        sim.run_for(Duration::from_secs(1));
        let _ = probe::drain_thread();
        probe::set_mode(probe::Mode::TracedFlows);
        host_mut(&mut sim, "host-a")
            .udp_send_to(socket, &[7u8; 100], SocketAddr::new(b_addr().into(), 7))
            .unwrap();
        sim.run_for(Duration::from_secs(1));
        probe::set_mode(probe::Mode::Off);
        assert_eq!(host_mut(&mut sim, "host-b").udp(at_b).recv_queue_len(), 2);
        let records: Vec<(&'static str, u32, u32)> = probe::drain_thread()
            .iter()
            .map(|r| (stack::probes::LOCATIONS[r.loc as usize].name, r.flow, r.len))
            .collect();
        (records, flow)
    })
    .join()
    .unwrap();
    let (records, flow) = records;
    if !probe::ENABLED {
        assert!(records.is_empty());
        return;
    }
    // Each in turn after the one before (the router's IPv4 input comes
    // between the two hosts').
    let order = [
        "ipv6.output.enter",
        "tunnel.transmit.enter",
        "ipv4.output.enter",
        "ipv4.output.exit",
        "tunnel.transmit.exit",
        "ipv6.output.exit",
        "ipv4.input.enter",
        "tunnel.receive.enter",
        "tunnel.receive.exit",
        "ipv4.input.exit",
        "ipv6.input.enter",
        "udp.input.enter",
    ];
    let mut found = Vec::new();
    let mut from = 0;
    for name in order {
        let offset = records[from..]
            .iter()
            .position(|(n, _, _)| *n == name)
            .unwrap_or_else(|| panic!("no {name} after record {from} in {records:?}"));
        let (_, f, len) = records[from + offset];
        assert_eq!(f, flow, "{name} recorded another flow");
        found.push((name, len));
        from += offset + 1;
    }
    // The extra header: IPv4 output takes the IPv6 packet the tunnel took,
    // and the receiver's IPv4 input sees it 20 bytes longer.
    let len = |name: &str| found.iter().find(|(n, _)| *n == name).unwrap().1;
    assert_eq!(len("ipv4.output.enter"), len("tunnel.transmit.enter"));
    assert_eq!(len("ipv4.input.enter"), len("tunnel.transmit.enter") + 20);
    assert_eq!(len("ipv6.input.enter"), len("tunnel.transmit.enter"));
}
