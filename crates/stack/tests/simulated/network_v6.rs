//! The reference stack on simulated IPv6 networks (issue 3, item 9):
//! SLAAC, DAD, neighbour unreachability detection, ping and traceroute
//! across routers, fragmentation over impaired links, path-MTU discovery,
//! overlapping fragments and a fragment flood.
//!
//! Every test is deterministic (seeded topologies and hosts, a virtual
//! clock) and leaves pcapng captures that tshark must decode without a
//! malformed packet, a bad checksum or an error-level expert info.

use crate::network_support;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::*;
use stack::iface::host::HostState;
use stack::iface::reassembly::ReassemblyConfig;
use stack::socket::{RawFamily, UdpConfig};
use stack::time::Instant;
use stack::topology::Topology;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::icmpv6::{Icmpv6Packet, Icmpv6Repr, TimeExceededReason};
use wire::ip::{ChecksumMode, IpProtocol};

const MAC_A: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
const MAC_B: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
const MAC_ROUTER: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x01]);
const MAC_PEER: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x99]);

fn ip(text: &str) -> Ipv6Addr {
    text.parse().unwrap()
}

/// The interface (in a state dump) that has an NTE for `address`.
fn nte(state: &HostState, address: Ipv6Addr) -> Option<&stack::iface::host::InterfaceState> {
    state
        .interfaces
        .iter()
        .find(|i| i.ntes.iter().any(|n| n.address == address.to_string()))
}

fn nte_state(state: &HostState, address: Ipv6Addr) -> Option<(&'static str, &'static str)> {
    state
        .interfaces
        .iter()
        .flat_map(|i| &i.ntes)
        .find(|n| n.address == address.to_string())
        .map(|n| (n.origin, n.state))
}

fn link_local_of(state: &HostState, interface: usize) -> Ipv6Addr {
    let nte = state.interfaces[interface]
        .ntes
        .iter()
        .find(|n| n.origin == "link-local")
        .unwrap_or_else(|| panic!("no link-local NTE:\n{state}"));
    assert_eq!(nte.state, "PREFERRED", "{state}");
    nte.address.parse().unwrap()
}

/// The ICMPv6 errors (types 1–4) among raw-socket messages: (source,
/// type, code, invoking packet).
fn icmpv6_errors(messages: &[(IpAddr, IpAddr, u8, Vec<u8>)]) -> Vec<(IpAddr, u8, u8, Vec<u8>)> {
    messages
        .iter()
        .filter(|(_, _, _, bytes)| bytes.len() >= 8 && bytes[0] < 128)
        .map(|(remote, _, _, bytes)| (*remote, bytes[0], bytes[1], bytes[8..].to_vec()))
        .collect()
}

// ----- 1. SLAAC ---------------------------------------------------------------

#[test]
fn slaac_gives_each_host_a_preferred_address_and_a_default_route_via_the_router() {
    let dir = CaptureDir::new("slaac");
    let topology = Topology::default_network();
    let mut sim = simulator(&topology, &dir);
    let a = wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    let b = wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    let now = sim.now();
    let router = host(&sim, "router").state(now);

    for (name, address, prefix, router_if) in [
        ("host-a", a, ip("2001:db8:a::"), 0),
        ("host-b", b, ip("2001:db8:b::"), 1),
    ] {
        let state = host(&sim, name).state(now);
        let mac = parse_mac(&state.interfaces[0].mac);
        // RFC 4862 §5.5.3 (d): prefix + the interface identifier, here the
        // modified EUI-64 of the MAC.
        assert_eq!(address, slaac_of(prefix, mac), "{state}");
        assert_eq!(
            nte_state(&state, address),
            Some(("slaac", "PREFERRED")),
            "{state}"
        );
        let nte = state.interfaces[0]
            .ntes
            .iter()
            .find(|n| n.address == address.to_string())
            .unwrap();
        assert_eq!(nte.prefix_len, 64);
        // The default preferred lifetime of RFC 4861 §6.2.1 (7 days),
        // counted down.
        let preferred = nte.preferred_lifetime_s.expect("finite lifetime");
        assert!(
            preferred > 604_800.0 - 30.0 && preferred <= 604_800.0,
            "{state}"
        );
        // Only the prefix of its own link.
        assert_eq!(
            state.interfaces[0].ntes.len(),
            2,
            "link-local + SLAAC:\n{state}"
        );
        let router_ll = link_local_of(&router, router_if);
        let default = state
            .ipv6_routes
            .iter()
            .find(|r| r.prefix == "::/0")
            .unwrap_or_else(|| panic!("{name} has no default route:\n{state}"));
        assert_eq!(default.next_hop, Some(router_ll.to_string()), "{state}");
        assert_eq!(default.origin, "ra", "{state}");
        assert!(
            state.interfaces[0]
                .routers
                .iter()
                .any(|r| r.address == router_ll.to_string()),
            "RLE missing:\n{state}"
        );
        let prefix_text = format!("{prefix}/64");
        assert!(
            state.interfaces[0]
                .prefixes
                .iter()
                .any(|p| p.prefix == prefix_text),
            "PLE missing:\n{state}"
        );
        assert!(
            state
                .ipv6_routes
                .iter()
                .any(|r| r.prefix == prefix_text && r.next_hop.is_none()),
            "on-link route for the prefix missing:\n{state}"
        );
    }
    assert!(router.counters.router_advertisements_sent >= 2, "{router}");
    drop(sim);
    dir.check();
}

// ----- 2. DAD -----------------------------------------------------------------

/// A router that owns 2001:db8:a::1 and a host that configures the same
/// address by hand; the host comes up `host_delay` after the router.
fn dad_lab(dir: &CaptureDir, host_delay: Duration) -> Lab {
    let (r_end, h_end) = wire_pair();
    let router = build_host(
        "router",
        true,
        11,
        dir.capture(r_end, "router-eth0"),
        Iface {
            ipv6: &["2001:db8:a::1/64"],
            advertise: &["2001:db8:a::/64"],
            ..Iface::new(MAC_ROUTER)
        },
        &[],
    );
    let host_a = build_host(
        "host-a",
        false,
        12,
        dir.capture(h_end, "host-a-eth0"),
        Iface {
            ipv6: &["2001:db8:a::1/64"],
            ..Iface::new(MAC_A)
        },
        &[],
    );
    let mut lab = Lab::new(vec![router, host_a]);
    lab.silent[1] = true;
    lab.run_for(host_delay, |_| false);
    lab.silent[1] = false;
    lab.run_for(Duration::from_secs(6), |_| false);
    lab
}

#[test]
fn dad_detects_an_address_the_router_already_owns() {
    let dir = CaptureDir::new("dad-late");
    let lab = dad_lab(&dir, Duration::from_secs(5));
    let shared = ip("2001:db8:a::1");
    let router = lab.state(0);
    let host_a = lab.state(1);
    // RFC 4862 §5.4.4: the router defends its address with a Neighbor
    // Advertisement; the newcomer's tentative address is a duplicate and
    // is not assigned (§5.4.5).
    assert_eq!(
        nte_state(&host_a, shared),
        Some(("manual", "DUPLICATE")),
        "{host_a}"
    );
    assert_eq!(
        host_a.drops.get("dad_duplicate_address"),
        Some(&1),
        "{host_a}"
    );
    assert!(!lab.hosts[1].global_ipv6_addresses().contains(&shared));
    assert!(
        !nte(&host_a, shared)
            .unwrap()
            .ades
            .iter()
            .any(|a| a.address == shared.to_string()),
        "a duplicate address must not be received for:\n{host_a}"
    );
    // The owner keeps it.
    assert_eq!(
        nte_state(&router, shared),
        Some(("manual", "PREFERRED")),
        "{router}"
    );
    assert_eq!(router.drops.get("dad_duplicate_address"), None, "{router}");
    // The host's other addresses are unaffected: link-local and SLAAC.
    assert_eq!(
        nte_state(&host_a, link_local(MAC_A)),
        Some(("link-local", "PREFERRED")),
        "{host_a}"
    );
    assert_eq!(
        nte_state(&host_a, slaac_of(ip("2001:db8:a::"), MAC_A)),
        Some(("slaac", "PREFERRED")),
        "{host_a}"
    );
    drop(lab);
    dir.check();
}

#[test]
fn dad_with_both_nodes_starting_together_leaves_no_address_on_two_nodes() {
    let dir = CaptureDir::new("dad-together");
    let lab = dad_lab(&dir, Duration::ZERO);
    let shared = ip("2001:db8:a::1");
    let router = lab.state(0);
    let host_a = lab.state(1);
    let states = [
        nte_state(&router, shared).map(|s| s.1),
        nte_state(&host_a, shared).map(|s| s.1),
    ];
    // RFC 4862 §5.4.3: a tentative address solicited by another node's
    // DAD is a duplicate; whoever probes first makes the other give up.
    assert!(
        states.contains(&Some("DUPLICATE")),
        "neither side detected the duplicate: {states:?}\n{router}\n{host_a}"
    );
    assert_ne!(
        states,
        [Some("PREFERRED"), Some("PREFERRED")],
        "{router}\n{host_a}"
    );
    let detected = router.drops.get("dad_duplicate_address").unwrap_or(&0)
        + host_a.drops.get("dad_duplicate_address").unwrap_or(&0);
    let duplicates = states.iter().filter(|s| **s == Some("DUPLICATE")).count() as u64;
    assert_eq!(detected, duplicates, "{router}\n{host_a}");
    drop(lab);
    dir.check();
}

// ----- 3. Neighbour Unreachability Detection ----------------------------------

/// The state of host `index`'s neighbour entry for `addr`, if it has one.
fn neighbor_state(lab: &Lab, index: usize, addr: Ipv6Addr) -> Option<&'static str> {
    lab.state(index).interfaces[0]
        .neighbors
        .iter()
        .find(|n| n.address == addr.to_string())
        .map(|n| n.state)
}

/// Whether `frame` is a Neighbor Solicitation for `target` sent to `dst`.
fn is_solicitation(frame: &[u8], dst: Ipv6Addr, target: Ipv6Addr) -> bool {
    parse_ipv6_frame(frame).is_some_and(|(_, d, next, payload)| {
        d == dst
            && next == IpProtocol::Icmpv6
            && payload.len() >= 24
            && payload[0] == 135
            && payload[8..24] == target.octets()
    })
}

#[test]
fn nud_walks_stale_delay_probe_and_deletes_a_silent_neighbour() {
    let dir = CaptureDir::new("nud");
    let (end1, end2) = wire_pair();
    let (tap, sent) = Tap::new(end1);
    let h1 = build_host(
        "host-1",
        false,
        21,
        dir.capture(tap, "host-1-eth0"),
        Iface::new(MAC_A),
        &[],
    );
    let h2 = build_host(
        "host-2",
        false,
        22,
        dir.capture(end2, "host-2-eth0"),
        Iface::new(MAC_B),
        &[],
    );
    let ll1 = link_local(MAC_A);
    let ll2 = link_local(MAC_B);
    let mut lab = Lab::new(vec![h1, h2]);
    lab.run_for(Duration::from_secs(3), |_| false);

    let s1 = lab.hosts[0].udp_open(UdpConfig::default());
    lab.hosts[0].udp_bind(s1, SocketAddr::new(IpAddr::V6(ll1), 5000));
    let s2 = lab.hosts[1].udp_open(UdpConfig::default());
    lab.hosts[1].udp_bind(s2, SocketAddr::new(IpAddr::V6(ll2), 7));
    let to2 = SocketAddr::new(IpAddr::V6(ll2), 7);
    // host-2 echoes every datagram back.
    let echo = |lab: &mut Lab| {
        while let Some(d) = lab.hosts[1].udp(s2).recv() {
            let mut bytes = vec![0; d.payload.len()];
            d.payload.copy_out(0, &mut bytes);
            lab.hosts[1].udp_send_to(s2, &bytes, d.remote).unwrap();
        }
    };

    // Resolution: INCOMPLETE, then REACHABLE on the solicited NA.
    lab.hosts[0].udp_send_to(s1, b"one", to2).unwrap();
    let echoed = lab.run_for(Duration::from_secs(2), |lab| {
        echo(lab);
        lab.hosts[0].udp(s1).recv_queue_len() > 0
    });
    assert!(echoed, "no echo:\n{}\n{}", lab.state(0), lab.state(1));
    assert_eq!(lab.hosts[0].udp(s1).recv().unwrap().remote, to2);
    assert_eq!(
        neighbor_state(&lab, 0, ll2),
        Some("REACHABLE"),
        "{}",
        lab.state(0)
    );
    let confirmed = lab.now;

    // REACHABLE → STALE after ReachableTime: BaseReachableTime 30 s times a
    // random factor in [0.5, 1.5) (RFC 4861 §6.3.2).
    let mut stale_at = None;
    lab.run_for(Duration::from_secs(50), |lab| {
        echo(lab);
        if stale_at.is_none() && neighbor_state(lab, 0, ll2) == Some("STALE") {
            stale_at = Some(lab.now);
        }
        false
    });
    let stale_at = stale_at.unwrap_or_else(|| panic!("never STALE:\n{}", lab.state(0)));
    let reachable_for = stale_at - confirmed;
    assert!(
        reachable_for >= Duration::from_secs(15) && reachable_for < Duration::from_secs(45),
        "REACHABLE for {reachable_for:?}"
    );
    assert_eq!(neighbor_state(&lab, 0, ll2), Some("STALE"));

    // host-2 goes silent; host-1 sends through the STALE entry.
    lab.silent[1] = true;
    let sent_at = lab.now;
    lab.hosts[0].udp_send_to(s1, b"two", to2).unwrap();
    let mut history: Vec<(Instant, Option<&'static str>)> = Vec::new();
    lab.run_for(Duration::from_secs(12), |lab| {
        let state = neighbor_state(lab, 0, ll2);
        if history.last().map(|h| h.1) != Some(state) {
            history.push((lab.now, state));
        }
        false
    });
    let at = |d: u64| sent_at + Duration::from_secs(d);
    // RFC 4861 §7.3.3: DELAY on sending through STALE; PROBE after
    // DELAY_FIRST_PROBE_TIME (5 s); after MAX_UNICAST_SOLICIT (3) probes
    // RetransTimer (1 s) apart without an answer, the entry is deleted.
    assert_eq!(
        history,
        vec![
            (sent_at, Some("DELAY")),
            (at(5), Some("PROBE")),
            (at(8), None),
        ],
        "{}",
        lab.state(0)
    );
    let probes: Vec<Instant> = sent
        .lock()
        .unwrap()
        .iter()
        .filter(|(t, f)| *t > sent_at && is_solicitation(f, ll2, ll2))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(probes, vec![at(5), at(6), at(7)], "unicast probes");
    // The datagram itself left at once, through the STALE entry.
    let datagrams = sent
        .lock()
        .unwrap()
        .iter()
        .filter(|(t, f)| {
            *t == sent_at
                && parse_ipv6_frame(f)
                    .is_some_and(|(_, d, next, _)| d == ll2 && next == IpProtocol::Udp)
        })
        .count();
    assert_eq!(datagrams, 1);

    // With no entry left, new traffic starts address resolution over:
    // 3 multicast solicitations 1 s apart, then the queued datagrams are
    // dropped as unreachable (RFC 4861 §7.2.2).
    let resolve_at = lab.now;
    lab.hosts[0].udp_send_to(s1, b"three", to2).unwrap();
    lab.hosts[0].udp_send_to(s1, b"four", to2).unwrap();
    lab.run_for(Duration::from_millis(10), |_| false);
    let entry = lab.state(0).interfaces[0]
        .neighbors
        .iter()
        .find(|n| n.address == ll2.to_string())
        .map(|n| (n.state, n.queued));
    assert_eq!(entry, Some(("INCOMPLETE", 2)), "{}", lab.state(0));
    lab.run_for(Duration::from_secs(4), |_| false);
    assert_eq!(neighbor_state(&lab, 0, ll2), None, "{}", lab.state(0));
    let solicited_node = wire::ipv6::solicited_node(&ll2);
    let multicast: Vec<Instant> = sent
        .lock()
        .unwrap()
        .iter()
        .filter(|(t, f)| *t >= resolve_at && is_solicitation(f, solicited_node, ll2))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(
        multicast.len(),
        3,
        "multicast solicitations at {multicast:?}"
    );
    assert_eq!(multicast[2] - multicast[0], Duration::from_secs(2));
    let state = lab.state(0);
    assert_eq!(state.drops.get("neighbor_unreachable"), Some(&2), "{state}");
    drop(lab);
    dir.check();
}

#[test]
fn a_router_that_cannot_resolve_the_destination_reports_address_unreachable() {
    let dir = CaptureDir::new("addr-unreach6");
    let topology = Topology::default_network();
    let mut sim = simulator(&topology, &dir);
    let a = wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    let h = host_mut(&mut sim, "host-a");
    let raw = h.raw_open(RawFamily::Ipv6, IpProtocol::Icmpv6);
    let tx = h.udp_open(UdpConfig::default());
    let local = h.udp_bind(tx, SocketAddr::new(IpAddr::V6(a), 0));
    // Nobody on the router's far link answers for 2001:db8:b::99.
    let nobody = ip("2001:db8:b::99");
    h.udp_send_to(tx, b"anyone?", SocketAddr::new(IpAddr::V6(nobody), 9))
        .unwrap();
    sim.run_for(Duration::from_millis(10));
    let router = host(&sim, "router").state(sim.now());
    let entry = router.interfaces[1]
        .neighbors
        .iter()
        .find(|n| n.address == nobody.to_string())
        .map(|n| (n.state, n.queued));
    assert_eq!(entry, Some(("INCOMPLETE", 1)), "{router}");
    // MAX_MULTICAST_SOLICIT (3) solicitations RetransTimer (1 s) apart,
    // then the queued packet earns its source a Destination Unreachable,
    // code 3, address unreachable (RFC 4861 §7.2.2, RFC 4443 §3.1).
    sim.run_for(Duration::from_secs(4));
    let router = host(&sim, "router").state(sim.now());
    assert!(
        !router.interfaces[1]
            .neighbors
            .iter()
            .any(|n| n.address == nobody.to_string()),
        "{router}"
    );
    assert_eq!(
        router.drops.get("neighbor_unreachable"),
        Some(&1),
        "{router}"
    );
    let errors = icmpv6_errors(&drain_raw(host_mut(&mut sim, "host-a"), raw));
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (from, msg_type, code, invoking) = &errors[0];
    assert_eq!(
        (*from, *msg_type, *code),
        (
            IpAddr::V6(ip("2001:db8:a::1")),
            1,
            u8::from(wire::icmpv6::DstUnreachableReason::AddrUnreachable)
        )
    );
    let header = wire::ipv6::Ipv6Packet::new_checked(&invoking[..]).unwrap();
    assert_eq!((header.src_addr(), header.dst_addr()), (a, nobody));
    // The router had already decremented the hop limit.
    assert_eq!(header.hop_limit(), 63);
    let udp = header.payload();
    assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), local.port());
    drop(sim);
    dir.check();
}

// ----- 4. Ping across two routers --------------------------------------------

fn echo_request(ident: u16, seq_no: u16, data: &[u8]) -> Vec<u8> {
    let repr = Icmpv6Repr::EchoRequest {
        ident,
        seq_no,
        data,
    };
    let mut bytes = vec![0u8; repr.buffer_len()];
    // The checksum is left zero: the host fills it (the pseudo-header
    // depends on the source address it chooses).
    repr.emit(
        &mut Icmpv6Packet::new_unchecked(&mut bytes[..]),
        &Ipv6Addr::UNSPECIFIED,
        &Ipv6Addr::UNSPECIFIED,
        ChecksumMode::Skip,
    )
    .unwrap();
    bytes
}

#[test]
fn ping6_across_two_routers() {
    let dir = CaptureDir::new("ping6");
    let topology = Topology::from_toml_str(TWO_ROUTERS).unwrap();
    let mut sim = simulator(&topology, &dir);
    let a = wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    let b = wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    let raw = host_mut(&mut sim, "host-a").raw_open(RawFamily::Ipv6, IpProtocol::Icmpv6);
    let ident = 0x5353;
    // Three small pings, then one of 3000 bytes: fragmented by host-a,
    // reassembled by host-b, whose reply is fragmented and reassembled in
    // turn.
    for seq in 1..=4u16 {
        let data = if seq == 4 {
            pattern(3000)
        } else {
            format!("stackscope ping {seq}").into_bytes()
        };
        host_mut(&mut sim, "host-a")
            .raw_send_to(raw, &echo_request(ident, seq, &data), IpAddr::V6(b), None)
            .unwrap();
        let mut replies = Vec::new();
        sim.run_until_with(Duration::from_secs(2), |sim| {
            for (remote, local, hop_limit, bytes) in drain_raw(host_mut(sim, "host-a"), raw) {
                if bytes.first() == Some(&129) {
                    replies.push((remote, local, hop_limit, bytes));
                }
            }
            !replies.is_empty()
        });
        assert_eq!(replies.len(), 1, "seq {seq}: replies {replies:?}");
        let (remote, local, hop_limit, bytes) = &replies[0];
        assert_eq!(*remote, IpAddr::V6(b));
        assert_eq!(*local, IpAddr::V6(a));
        // Two routers on the way back, each decrementing the hop limit.
        assert_eq!(*hop_limit, 64 - 2);
        let parsed = Icmpv6Repr::parse(
            &Icmpv6Packet::new_checked(&bytes[..]).unwrap(),
            &b,
            &a,
            ChecksumMode::Full,
        )
        .expect("a valid echo reply, checksum included");
        assert_eq!(
            parsed,
            Icmpv6Repr::EchoReply {
                ident,
                seq_no: seq,
                data: &data
            }
        );
    }
    let b_counters = host(&sim, "host-b").counters();
    assert_eq!(b_counters.echo_replies_sent, 4);
    assert_eq!(
        b_counters.ipv6_fragments_sent, 3,
        "the large reply, fragmented"
    );
    // Each way: 3 small packets and 3 fragments.
    assert_eq!(host(&sim, "r1").counters().ipv6_forwarded, 12);
    assert_eq!(host(&sim, "r2").counters().ipv6_forwarded, 12);
    drop(sim);
    dir.check();
}

// ----- 5. Traceroute ----------------------------------------------------------

#[test]
fn traceroute6_sees_each_router_then_port_unreachable() {
    let dir = CaptureDir::new("traceroute6");
    let topology = Topology::from_toml_str(TWO_ROUTERS).unwrap();
    let mut sim = simulator(&topology, &dir);
    let a = wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    let b = wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    let h = host_mut(&mut sim, "host-a");
    let raw = h.raw_open(RawFamily::Ipv6, IpProtocol::Icmpv6);
    let probe = h.udp_open(UdpConfig::default());
    let local = h.udp_bind(probe, SocketAddr::new(IpAddr::V6(a), 0));
    let expected = [
        (ip("2001:db8:a::1"), 3, 0),  // r1: Time Exceeded, hop limit exceeded
        (ip("2001:db8:ab::2"), 3, 0), // r2
        (b, 1, 4),                    // host-b: Destination Unreachable, port
    ];
    for (hop, (from, msg_type, code)) in (1..=3u8).zip(expected) {
        let h = host_mut(&mut sim, "host-a");
        h.udp(probe).set_hop_limit(Some(hop));
        h.udp_send_to(
            probe,
            format!("probe {hop}").as_bytes(),
            SocketAddr::new(IpAddr::V6(b), 33434),
        )
        .unwrap();
        let mut errors = Vec::new();
        sim.run_until_with(Duration::from_secs(2), |sim| {
            errors.extend(icmpv6_errors(&drain_raw(host_mut(sim, "host-a"), raw)));
            !errors.is_empty()
        });
        assert_eq!(errors.len(), 1, "hop {hop}: {errors:?}");
        let (source, t, c, invoking) = &errors[0];
        assert_eq!(
            (*source, *t, *c),
            (IpAddr::V6(from), msg_type, code),
            "hop {hop}"
        );
        // The invoking packet is our probe as it reached the reporter:
        // a → b, UDP to 33434 from our port, with hop limit 1 left.
        let invoking = wire::ipv6::Ipv6Packet::new_checked(&invoking[..]).unwrap();
        assert_eq!(invoking.src_addr(), a);
        assert_eq!(invoking.dst_addr(), b);
        assert_eq!(invoking.next_header(), IpProtocol::Udp);
        assert_eq!(invoking.hop_limit(), 1, "hop {hop}");
        let udp = invoking.payload();
        assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), local.port());
        assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 33434);
    }
    assert_eq!(
        host(&sim, "r1").drops().get("ipv6_hop_limit_exceeded"),
        Some(&1)
    );
    assert_eq!(
        host(&sim, "r2").drops().get("ipv6_hop_limit_exceeded"),
        Some(&1)
    );
    assert_eq!(host(&sim, "host-b").drops().get("udp_no_socket"), Some(&1));
    drop(sim);
    dir.check();
}

// ----- 6. A fragmented datagram over reordering, duplicating links ------------

#[test]
fn fragmented_20000_byte_datagram_survives_reordering_and_duplication_ipv6() {
    let dir = CaptureDir::new("frag6");
    let topology = Topology::from_toml_str(IMPAIRED_1280).unwrap();
    let mut sim = simulator(&topology, &dir);
    let a = wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    let b = wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    warm_up(&mut sim, "host-a", "host-b", IpAddr::V6(b), IpAddr::V6(a));
    let rx = udp_listen(&mut sim, "host-b", true, 5001);
    let h = host_mut(&mut sim, "host-a");
    let tx = h.udp_open(UdpConfig::default());
    let local = h.udp_bind(tx, SocketAddr::new(IpAddr::V6(a), 0));
    let fragments_before = h.counters().ipv6_fragments_sent;
    let data = pattern(20_000);
    h.udp_send_to(tx, &data, SocketAddr::new(IpAddr::V6(b), 5001))
        .unwrap();
    sim.run_for(Duration::from_secs(1));

    let h = host_mut(&mut sim, "host-b");
    let datagram = h.udp(rx).recv().expect("the datagram arrived");
    assert!(h.udp(rx).recv().is_none(), "delivered more than once");
    assert_eq!(datagram.remote, local);
    let mut received = vec![0; datagram.payload.len()];
    datagram.payload.copy_out(0, &mut received);
    assert_eq!(received.len(), 20_000);
    assert!(received == data, "payload corrupted in reassembly");
    drop(datagram);
    // 20 008 bytes of UDP in fragments of at most 1280 - 40 - 8 = 1232
    // bytes (rounded down to a multiple of 8): 17 fragments.
    let fragments = host(&sim, "host-a").counters().ipv6_fragments_sent - fragments_before;
    assert!(fragments >= 16, "{fragments} fragments");
    assert_eq!(fragments, 17);
    // The impairments did happen, so reassembly did see disorder.
    for name in ["host-a", "router"] {
        let stats = host(&sim, name).interfaces()[0].link.stats();
        assert!(
            stats.duplicated > 0 && stats.reordered > 0,
            "{name}: {stats:?}"
        );
    }
    let b_state = host(&sim, "host-b").state(sim.now());
    assert_eq!(b_state.reassembly.ipv6_reassembled, 1, "{b_state}");
    assert!(
        b_state
            .drops
            .get("reassembly_duplicate")
            .is_some_and(|&n| n > 0),
        "duplicates were not seen:\n{b_state}"
    );
    drop(sim);
    dir.check();
}

// ----- 8. Path MTU from Packet Too Big ---------------------------------------

#[test]
fn packet_too_big_lowers_the_path_mtu_and_the_next_datagram_is_fragmented() {
    let dir = CaptureDir::new("pmtu6");
    let topology = two_routers_narrow_middle();
    let mut sim = simulator(&topology, &dir);
    let a = wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    let b = wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    warm_up(&mut sim, "host-a", "host-b", IpAddr::V6(b), IpAddr::V6(a));
    let rx = udp_listen(&mut sim, "host-b", true, 5001);
    let h = host_mut(&mut sim, "host-a");
    let raw = h.raw_open(RawFamily::Ipv6, IpProtocol::Icmpv6);
    let tx = h.udp_open(UdpConfig::default());
    h.udp_bind(tx, SocketAddr::new(IpAddr::V6(a), 0));
    let to_b = SocketAddr::new(IpAddr::V6(b), 5001);
    let first = pattern(1400);
    h.udp_send_to(tx, &first, to_b).unwrap();
    sim.run_for(Duration::from_millis(500));

    // 40 + 8 + 1400 = 1448 bytes do not fit the 1280-byte link: r1 drops
    // the packet and answers Packet Too Big with the next-hop MTU
    // (RFC 4443 §3.2; routers do not fragment, RFC 8200 §5).
    assert_eq!(host_mut(&mut sim, "host-b").udp(rx).recv_queue_len(), 0);
    assert_eq!(
        host(&sim, "r1").drops().get("ipv6_packet_too_big"),
        Some(&1)
    );
    let errors = icmpv6_errors(&drain_raw(host_mut(&mut sim, "host-a"), raw));
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (from, msg_type, _, invoking) = &errors[0];
    assert_eq!(*from, IpAddr::V6(ip("2001:db8:a::1")));
    assert_eq!(*msg_type, 2, "Packet Too Big");
    assert_eq!(
        wire::ipv6::Ipv6Packet::new_unchecked(&invoking[..40]).dst_addr(),
        b
    );
    // As much of the invoking packet as fits the minimum MTU (RFC 4443 §3.2).
    assert_eq!(invoking.len(), 1280 - 40 - 8);
    // RFC 8201 §4: the path MTU of b is now 1280, and it ages (10 min).
    let state = host(&sim, "host-a").state(sim.now());
    let dest = state
        .ipv6_destinations
        .iter()
        .find(|d| d.destination == b.to_string())
        .unwrap_or_else(|| panic!("no destination cache entry for {b}:\n{state}"));
    assert_eq!(dest.path_mtu, 1280, "{state}");
    let expires = dest.pmtu_expires_s.expect("a lowered PMTU ages");
    assert!(expires > 300.0 && expires <= 600.0, "{expires}");
    assert_eq!(state.interfaces[0].link_mtu, 1500);

    // The next datagram is fragmented by host-a to the path MTU and arrives.
    let fragments_before = host(&sim, "host-a").counters().ipv6_fragments_sent;
    let second = pattern(1400);
    host_mut(&mut sim, "host-a")
        .udp_send_to(tx, &second, to_b)
        .unwrap();
    sim.run_for(Duration::from_millis(500));
    assert_eq!(
        host(&sim, "host-a").counters().ipv6_fragments_sent - fragments_before,
        2
    );
    let h = host_mut(&mut sim, "host-b");
    let datagram = h.udp(rx).recv().expect("the fragmented datagram arrived");
    let mut received = vec![0; datagram.payload.len()];
    datagram.payload.copy_out(0, &mut received);
    assert!(received == second);
    assert!(h.udp(rx).recv().is_none());
    drop(datagram);
    drop(sim);
    dir.check();
}

// ----- 7. Overlapping fragments (RFC 5722) ------------------------------------

/// A host alone on a wire whose other end the test holds, after DAD.
fn injection_lab(dir: &CaptureDir, ipv4: Option<&str>) -> (Lab, stack::phy::WireEnd) {
    let (host_end, peer) = wire_pair();
    let h = build_host(
        "host",
        false,
        31,
        dir.capture(host_end, "host-eth0"),
        Iface {
            ipv4,
            ..Iface::new(MAC_A)
        },
        &[],
    );
    let mut lab = Lab::new(vec![h]);
    lab.run_for(Duration::from_secs(3), |_| false);
    assert_eq!(
        nte_state(&lab.state(0), link_local(MAC_A)),
        Some(("link-local", "PREFERRED"))
    );
    (lab, peer)
}

/// Sends `frames` one per millisecond into the lab's host.
fn inject(lab: &mut Lab, peer: &mut stack::phy::WireEnd, frames: &[Vec<u8>]) {
    use stack::phy::Link;
    for frame in frames {
        peer.transmit(lab.now, &[frame]).expect("inject");
        lab.run_for(Duration::from_millis(1), |_| false);
    }
    receive_all(peer, lab.now);
}

#[test]
fn overlapping_fragments_discard_the_whole_datagram() {
    let dir = CaptureDir::new("overlap6");
    let (mut lab, mut peer) = injection_lab(&dir, None);
    let me = link_local(MAC_A);
    let them = ip("fe80::99");
    let socket = lab.hosts[0].udp_open(UdpConfig::default());
    lab.hosts[0].udp_bind(
        socket,
        SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 7777),
    );
    let src = SocketAddr::new(IpAddr::V6(them), 4000);
    let dst = SocketAddr::new(IpAddr::V6(me), 7777);
    let payload: Vec<u8> = (0..24).collect();
    let udp = udp_datagram(src, dst, &payload); // 32 bytes
    let frame = |ident: u32, offset: usize, more: bool, range: std::ops::Range<usize>| {
        let fragment = fragment6(ident, offset, more, IpProtocol::Udp, &udp[range]);
        let packet = ipv6_packet(them, me, IpProtocol::Ipv6Frag, 64, &fragment);
        ethernet(MAC_PEER, MAC_A, EtherType::Ipv6, &packet)
    };

    // The control: 0..16, 16..24, 24..32 reassembles and is delivered.
    inject(
        &mut lab,
        &mut peer,
        &[
            frame(1, 0, true, 0..16),
            frame(1, 16, true, 16..24),
            frame(1, 24, false, 24..32),
        ],
    );
    let datagram = lab.hosts[0]
        .udp(socket)
        .recv()
        .expect("control datagram delivered");
    let mut got = vec![0; datagram.payload.len()];
    datagram.payload.copy_out(0, &mut got);
    assert_eq!(got, payload);
    drop(datagram);

    // An exact duplicate may be dropped alone (RFC 8200 §4.5): delivered.
    inject(
        &mut lab,
        &mut peer,
        &[
            frame(2, 0, true, 0..16),
            frame(2, 0, true, 0..16),
            frame(2, 16, true, 16..24),
            frame(2, 24, false, 24..32),
        ],
    );
    assert!(
        lab.hosts[0].udp(socket).recv().is_some(),
        "duplicate fragment lost the datagram"
    );
    assert!(lab.hosts[0].udp(socket).recv().is_none());
    assert_eq!(lab.hosts[0].drops().get("reassembly_duplicate"), Some(&1));

    // 0..16 then 8..24 overlap — with the very same bytes, which RFC 5722
    // does not excuse: the datagram is discarded, and so is its last
    // fragment arriving afterwards (RFC 5722 §4).
    inject(
        &mut lab,
        &mut peer,
        &[
            frame(3, 0, true, 0..16),
            frame(3, 8, true, 8..24),
            frame(3, 24, false, 24..32),
        ],
    );
    // And in the other order: a later fragment overlapped by the first.
    inject(
        &mut lab,
        &mut peer,
        &[
            frame(4, 8, true, 8..24),
            frame(4, 24, false, 24..32),
            frame(4, 0, true, 0..16),
        ],
    );
    assert!(
        lab.hosts[0].udp(socket).recv().is_none(),
        "an overlapping datagram was delivered"
    );
    let state = lab.state(0);
    assert_eq!(state.drops.get("reassembly_overlap"), Some(&2), "{state}");
    assert_eq!(
        state.drops.get("reassembly_datagram_discarded"),
        Some(&1),
        "{state}"
    );
    assert_eq!(state.reassembly.ipv6_reassembled, 2, "{state}");
    assert_eq!(state.counters.udp_received, 2, "{state}");
    // Silently (RFC 5722 §4): no ICMPv6 error.
    assert_eq!(state.counters.icmpv6_errors_sent, 0, "{state}");
    // The discarded datagrams are remembered until their timers run out,
    // then nothing is left.
    lab.run_for(Duration::from_secs(61), |_| false);
    let state = lab.state(0);
    assert_eq!(state.reassembly.ipv6_datagrams, 0, "{state}");
    assert_eq!(state.reassembly.ipv6_bytes, 0, "{state}");
    assert_eq!(state.buffers.in_use, 0, "{state}");
    drop(lab);
    // Wireshark marks the overlaps ("[Fragment overlap: True]") but, the
    // overlapping bytes being equal, reports no error: nothing is exempt.
    dir.check();
}

// ----- 9. A flood of incomplete fragments -------------------------------------

#[test]
fn fragment_flood_stays_within_the_reassembly_bounds_and_is_released() {
    let dir = CaptureDir::new("flood6");
    let (mut lab, mut peer) = injection_lab(&dir, None);
    let me = link_local(MAC_A);
    let them = ip("fe80::99");
    let bounds = ReassemblyConfig::ipv6();
    // Tell the host our MAC, so its Time Exceeded errors reach us.
    inject(
        &mut lab,
        &mut peer,
        &[neighbor_solicitation(MAC_PEER, them, MAC_A, me)],
    );

    // Largest datagram count, byte count and buffers in use seen.
    let mut max = (0, 0, 0);
    let check = |lab: &Lab, max: &mut (usize, usize, usize)| {
        let state = lab.state(0);
        let r = &state.reassembly;
        assert!(r.ipv6_datagrams <= bounds.max_datagrams, "{state}");
        assert!(r.ipv6_bytes <= bounds.max_bytes, "{state}");
        assert_eq!(state.buffers.exhausted, 0, "{state}");
        max.0 = max.0.max(r.ipv6_datagrams);
        max.1 = max.1.max(r.ipv6_bytes);
        max.2 = max.2.max(state.buffers.in_use);
    };
    let send_batch = |lab: &mut Lab, peer: &mut stack::phy::WireEnd, frames: &[Vec<u8>]| {
        use stack::phy::Link;
        for frame in frames {
            peer.transmit(lab.now, &[frame]).expect("inject");
        }
        lab.run_for(Duration::from_millis(1), |_| false);
        receive_all(peer, lab.now);
    };

    // 5 000 first fragments of distinct datagrams, 16 bytes each: the
    // datagram bound (256) holds.
    let first = |ident: u32, len: usize, offset: usize| {
        let data = vec![0x55u8; len];
        let fragment = fragment6(ident, offset, true, IpProtocol::Udp, &data);
        let packet = ipv6_packet(them, me, IpProtocol::Ipv6Frag, 64, &fragment);
        ethernet(MAC_PEER, MAC_A, EtherType::Ipv6, &packet)
    };
    for batch in 0..25u32 {
        let frames: Vec<Vec<u8>> = (0..200).map(|i| first(batch * 200 + i, 16, 0)).collect();
        send_batch(&mut lab, &mut peer, &frames);
        check(&lab, &mut max);
    }
    assert_eq!(
        max.0, bounds.max_datagrams,
        "the datagram bound was not reached"
    );
    // Then 200 datagrams of 5 × 1448 bytes: the byte bound (1 MiB) holds.
    for batch in 0..10u32 {
        let mut frames = Vec::new();
        for i in 0..20 {
            let ident = 10_000 + batch * 20 + i;
            frames.extend((0..5).map(|k| first(ident, 1448, k * 1448)));
        }
        send_batch(&mut lab, &mut peer, &frames);
        check(&lab, &mut max);
    }
    assert!(
        max.1 > bounds.max_bytes - 5 * 1448,
        "the byte bound was not reached: {}",
        max.1
    );
    // Buffers pinned by held fragments stay bounded too: at most one per
    // fragment held, and at most max_bytes / 1448 + max_datagrams of those.
    assert!(
        max.2 <= bounds.max_bytes / 1448 + bounds.max_datagrams,
        "{}",
        max.2
    );
    let held = lab.state(0).reassembly;
    assert!(held.ipv6_datagrams > 0);

    // 60 s after the last arrivals every datagram has timed out.
    let mut time_exceeded = Vec::new();
    lab.run_for(Duration::from_secs(61), |lab| {
        let frames = receive_all(&mut peer, lab.now);
        answer_solicitations(&mut peer, lab.now, &frames, MAC_PEER, them);
        for frame in frames {
            if let Some((src, dst, IpProtocol::Icmpv6, payload)) = parse_ipv6_frame(&frame) {
                if payload[0] == 3 {
                    time_exceeded.push((src, dst, payload));
                }
            }
        }
        false
    });
    let state = lab.state(0);
    assert_eq!(state.reassembly.ipv6_datagrams, 0, "{state}");
    assert_eq!(state.reassembly.ipv6_bytes, 0, "{state}");
    assert_eq!(state.buffers.in_use, 0, "{state}");
    // Only what was held at the end timed out: the rest was evicted.
    let timed_out = state.reassembly.ipv6_timed_out;
    assert_eq!(timed_out, held.ipv6_datagrams as u64, "{state}");
    assert!(timed_out <= bounds.max_datagrams as u64);
    assert_eq!(
        state.drops.get("ipv6_reassembly_timeout"),
        Some(&timed_out),
        "{state}"
    );
    // Time Exceeded, code 1, to the source (RFC 8200 §4.5), rate limited
    // (RFC 4443 §2.4 (f)): each expiry was either sent or suppressed.
    let c = state.counters;
    assert!(c.icmpv6_errors_sent > 0, "{state}");
    assert_eq!(
        c.icmpv6_errors_sent + c.icmp_errors_suppressed,
        timed_out,
        "{state}"
    );
    assert_eq!(time_exceeded.len() as u64, c.icmpv6_errors_sent);
    for (src, dst, payload) in &time_exceeded {
        assert_eq!((*src, *dst), (me, them));
        assert_eq!(
            payload[1],
            u8::from(TimeExceededReason::FragReassemblyExceeded)
        );
        // The invoking packet is one of our first fragments.
        let invoking = wire::ipv6::Ipv6Packet::new_unchecked(&payload[8..48]);
        assert_eq!(invoking.next_header(), IpProtocol::Ipv6Frag);
        assert_eq!((invoking.src_addr(), invoking.dst_addr()), (them, me));
        let fragment =
            wire::ipv6_fragment::Ipv6FragmentHeader::new_checked(&payload[48..56]).unwrap();
        assert_eq!((fragment.frag_offset(), fragment.more_frags()), (0, true));
    }
    drop(lab);
    dir.check();
}

#[test]

fn datagrams_evicted_from_reassembly_are_counted() {
    let dir = CaptureDir::new("evict6");
    let (mut lab, mut peer) = injection_lab(&dir, None);
    let me = link_local(MAC_A);
    let them = ip("fe80::99");
    let max = ReassemblyConfig::ipv6().max_datagrams;
    // 300 first fragments of distinct datagrams: the table holds 256, so
    // the 44 oldest are evicted to make room.
    let frames: Vec<Vec<u8>> = (0..300u32)
        .map(|ident| {
            let fragment = fragment6(ident, 0, true, IpProtocol::Udp, &[0x55; 16]);
            let packet = ipv6_packet(them, me, IpProtocol::Ipv6Frag, 64, &fragment);
            ethernet(MAC_PEER, MAC_A, EtherType::Ipv6, &packet)
        })
        .collect();
    for chunk in frames.chunks(100) {
        use stack::phy::Link;
        for frame in chunk {
            peer.transmit(lab.now, &[frame]).expect("inject");
        }
        lab.run_for(Duration::from_millis(1), |_| false);
    }
    let state = lab.state(0);
    assert_eq!(state.reassembly.ipv6_datagrams, max, "{state}");
    // DESIGN.md: untrusted input gets "a clear error or a counted drop";
    // the evicted datagrams' fragments must show up as drops.
    let evicted: u64 = state
        .drops
        .iter()
        .filter(|(reason, _)| reason.contains("reassembly") && reason.contains("evict"))
        .map(|(_, n)| *n)
        .sum();
    assert_eq!(evicted, (300 - max) as u64, "{state}");
    drop(lab);
    dir.check();
}

// ----- ICMPv6 errors about reassembled datagrams -----------------------------

#[test]

fn port_unreachable_for_a_reassembled_datagram_quotes_a_consistent_header() {
    let dir = CaptureDir::new("reasm-error6");
    let topology = Topology::default_network();
    let mut sim = simulator(&topology, &dir);
    let a = wait_for_slaac(&mut sim, "host-a", "2001:db8:a::");
    let b = wait_for_slaac(&mut sim, "host-b", "2001:db8:b::");
    warm_up(&mut sim, "host-a", "host-b", IpAddr::V6(b), IpAddr::V6(a));
    let h = host_mut(&mut sim, "host-a");
    let raw = h.raw_open(RawFamily::Ipv6, IpProtocol::Icmpv6);
    let tx = h.udp_open(UdpConfig::default());
    let local = h.udp_bind(tx, SocketAddr::new(IpAddr::V6(a), 0));
    // 3000 bytes to a port nobody listens on: three fragments, reassembled
    // by host-b, then answered with Port Unreachable.
    h.udp_send_to(tx, &pattern(3000), SocketAddr::new(IpAddr::V6(b), 5999))
        .unwrap();
    sim.run_for(Duration::from_millis(500));
    assert_eq!(host(&sim, "host-a").counters().ipv6_fragments_sent, 3);
    let errors = icmpv6_errors(&drain_raw(host_mut(&mut sim, "host-a"), raw));
    assert_eq!(errors.len(), 1, "{errors:?}");
    let (from, msg_type, code, invoking) = &errors[0];
    assert_eq!(
        (*from, *msg_type, *code),
        (
            IpAddr::V6(b),
            1,
            u8::from(wire::icmpv6::DstUnreachableReason::PortUnreachable)
        )
    );
    // The quoted packet is the datagram as reassembled (RFC 8200 §4.5):
    // its header chain must lead to the UDP header that follows, so the
    // error can be matched to our socket (RFC 4443 §2.4 (b)); a Next
    // Header still naming the Fragment header, now gone, would make the
    // UDP header be read as a Fragment header.
    let header = wire::ipv6::Ipv6Packet::new_unchecked(&invoking[..40]);
    assert_eq!((header.src_addr(), header.dst_addr()), (a, b));
    assert_eq!(
        header.next_header(),
        IpProtocol::Udp,
        "quoted Next Header; payload length {}",
        header.payload_len()
    );
    assert_eq!(usize::from(header.payload_len()), 8 + 3000);
    let udp = &invoking[40..48];
    assert_eq!(u16::from_be_bytes([udp[0], udp[1]]), local.port());
    assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 5999);
    drop(sim);
    dir.check();
}
