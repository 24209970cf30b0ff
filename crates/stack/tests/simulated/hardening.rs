//! Crafted input that RFC 1122 and a careful TCP refuse (issue 23), put in
//! front of host-b of the default network (host-a — router — host-b) as
//! if it had arrived on its wire from the router, every frame host-b
//! sends recorded by a [`Wiretap`]:
//!
//! * a datagram whose IPv4 source is a broadcast address is discarded
//!   (RFC 1122 §3.2.1.3): no echo reply, no UDP delivery;
//! * no ICMP error (and no TCP reset) about a datagram to a broadcast or
//!   multicast address, whatever the frame (RFC 1122 §3.2.2, RFC 4443
//!   §2.4 (e));
//! * a peer's MSS of 0 or 1 is raised to the floor, and counted, so 300
//!   bytes do not leave as 300 segments (CVE-2019-11479's class);
//! * a SYN+FIN to a listener is dropped and counted, no SYN-ACK.

use crate::network_support;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use network_support::wiretap::{Mark, Wiretap};
use network_support::{address_of, udp_datagram};
use network_support::{ethernet, host, host_mut, icmpv4_bytes, ipv4_packet, ipv6_packet};
use stack::iface::host::TcpHandle;
use stack::runner::Simulator;
use stack::socket::tcp::bare_header;
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::socket::tcp::options::MIN_PEER_MSS;
use stack::socket::tcp::seq::Seq;
use stack::socket::UdpConfig;
use stack::topology::Topology;
use wire::ethernet::{EtherType, EthernetAddress};
use wire::icmpv4::Icmpv4Repr;
use wire::ip::{ChecksumMode, IpProtocol};
use wire::tcp::{TcpFlags, TcpPacket, TcpRepr};

/// host-b's subnet and its directed broadcast.
const B_NET_BROADCAST: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 255);
/// Addresses behind the router that nobody has: forged clients whose
/// SYN-ACKs go to the router and no further.
const NOBODY4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 77);
const NOBODY6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 0x77);
const PORT: u16 = 7;

struct Net {
    sim: Simulator,
    tap: Wiretap,
    /// Frames "from the router" to host-b's MAC.
    macs: (EthernetAddress, EthernetAddress),
    b4: Ipv4Addr,
    b6: Ipv6Addr,
}

impl Net {
    fn new() -> Net {
        let mut sim = Simulator::new(&Topology::default_network(), None).unwrap();
        let ready = sim.run_until_with(Duration::from_secs(60), |sim| {
            !host(sim, "host-b").global_ipv6_addresses().is_empty()
        });
        assert!(ready, "SLAAC did not finish");
        let tap = Wiretap::splice(&mut sim, "host-b");
        let mac = |sim: &Simulator, name: &str, iface: &str| {
            let h = host(sim, name);
            h.interface_mac(h.interface_id(iface).unwrap()).unwrap()
        };
        let macs = (mac(&sim, "router", "eth1"), mac(&sim, "host-b", "eth0"));
        let IpAddr::V4(b4) = address_of(&sim, "host-b", false) else {
            unreachable!()
        };
        let IpAddr::V6(b6) = address_of(&sim, "host-b", true) else {
            unreachable!()
        };
        Net {
            sim,
            tap,
            macs,
            b4,
            b6,
        }
    }

    /// Puts an IPv4 datagram in a unicast frame to host-b and lets 200 ms
    /// pass.
    fn inject4(&mut self, src: Ipv4Addr, dst: Ipv4Addr, protocol: IpProtocol, payload: &[u8]) {
        let packet = ipv4_packet(src, dst, protocol, 0x2323, 0, false, 64, payload);
        let frame = ethernet(self.macs.0, self.macs.1, EtherType::Ipv4, &packet);
        self.inject(frame);
    }

    fn inject(&mut self, frame: Vec<u8>) {
        self.tap.inject_at(self.sim.now(), frame);
        self.sim.run_for(Duration::from_millis(200));
    }

    fn drops(&self, reason: &str) -> u64 {
        host(&self.sim, "host-b")
            .drops()
            .get(reason)
            .copied()
            .unwrap_or(0)
    }

    /// The IPv4 frames host-b sent since `mark` (ARP excluded).
    fn ipv4_sent_since(&self, mark: Mark) -> Vec<Vec<u8>> {
        self.tap
            .frames_sent_since(mark)
            .into_iter()
            .filter(|f| f.get(12..14) == Some(&[0x08, 0x00]))
            .collect()
    }

    fn listen(&mut self, v6: bool) -> TcpHandle {
        let any = if v6 {
            IpAddr::V6(Ipv6Addr::UNSPECIFIED)
        } else {
            IpAddr::V4(Ipv4Addr::UNSPECIFIED)
        };
        // No Nagle: a short last segment leaves without waiting for the
        // forged client's ACK.
        let config = TcpConfig {
            nodelay: true,
            ..TcpConfig::default()
        };
        host_mut(&mut self.sim, "host-b")
            .tcp_listen(
                SocketAddr::new(any, PORT),
                config,
                ListenerConfig::default(),
            )
            .unwrap()
    }

    /// A TCP segment in a unicast frame from `src` to `dst`.
    fn forge_tcp(&mut self, src: SocketAddr, dst: SocketAddr, repr: &TcpRepr, payload: &[u8]) {
        let mut repr = *repr;
        repr.payload_len = payload.len();
        let mut tcp = vec![0u8; repr.buffer_len(payload.len())];
        repr.emit(
            &mut TcpPacket::new_unchecked(&mut tcp[..]),
            &src.ip(),
            &dst.ip(),
            payload.len(),
            |p| p.copy_from_slice(payload),
            ChecksumMode::Full,
        )
        .expect("emit TCP");
        let frame = match (src.ip(), dst.ip()) {
            (IpAddr::V6(s), IpAddr::V6(d)) => ethernet(
                self.macs.0,
                self.macs.1,
                EtherType::Ipv6,
                &ipv6_packet(s, d, IpProtocol::Tcp, 60, &tcp),
            ),
            (IpAddr::V4(s), IpAddr::V4(d)) => ethernet(
                self.macs.0,
                self.macs.1,
                EtherType::Ipv4,
                &ipv4_packet(s, d, IpProtocol::Tcp, 0x4242, 0, false, 60, &tcp),
            ),
            _ => unreachable!("mixed families"),
        };
        self.inject(frame);
    }
}

fn echo_request(seq_no: u16) -> Vec<u8> {
    icmpv4_bytes(&Icmpv4Repr::EchoRequest {
        ident: 0x2323,
        seq_no,
        data: b"from a broadcast source",
    })
}

fn syn(src: SocketAddr, dst: SocketAddr, isn: u32, mss: Option<u16>) -> TcpRepr {
    let mut repr = bare_header(src.port(), dst.port(), Seq(isn), None, TcpFlags::SYN);
    repr.window_len = 65535;
    repr.max_seg_size = mss;
    repr
}

// ----- Item 1: broadcast sources -------------------------------------------

/// RFC 1122 §3.2.1.3: "An IP host MUST silently discard an incoming
/// datagram ... containing an IP source address that is invalid by the
/// rules of this section" — { -1, -1 } (limited broadcast) and
/// { <Network-number>, -1 } (a directed broadcast) among them. Neither an
/// echo request nor a UDP datagram from one is answered or delivered.
#[test]
fn datagrams_from_a_broadcast_source_are_discarded_and_counted() {
    let mut net = Net::new();
    let b4 = net.b4;
    let udp = {
        let h = host_mut(&mut net.sim, "host-b");
        let udp = h.udp_open(UdpConfig::default());
        h.udp_bind(
            udp,
            SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), PORT),
        );
        udp
    };
    let mark = net.tap.mark();
    let replies_before = host(&net.sim, "host-b").counters().echo_replies_sent;
    for (i, src) in [B_NET_BROADCAST, Ipv4Addr::BROADCAST]
        .into_iter()
        .enumerate()
    {
        net.inject4(src, b4, IpProtocol::Icmp, &echo_request(i as u16));
        let datagram = udp_datagram(
            SocketAddr::new(IpAddr::V4(src), PORT),
            SocketAddr::new(IpAddr::V4(b4), PORT),
            b"echo me",
        );
        net.inject4(src, b4, IpProtocol::Udp, &datagram);
    }
    let h = host_mut(&mut net.sim, "host-b");
    assert_eq!(h.counters().echo_replies_sent, replies_before);
    assert!(h.udp(udp).recv().is_none(), "a UDP datagram was delivered");
    assert_eq!(net.drops("ipv4_broadcast_source"), 4);
    assert!(
        net.ipv4_sent_since(mark).is_empty(),
        "host-b answered a broadcast source"
    );
    // A unicast source is still answered (the rule is not a blanket one).
    net.inject4(
        Ipv4Addr::new(198, 51, 100, 1),
        b4,
        IpProtocol::Icmp,
        &echo_request(9),
    );
    assert_eq!(
        host(&net.sim, "host-b").counters().echo_replies_sent,
        replies_before + 1
    );
}

// ----- Item 2: no ICMP error about a broadcast or multicast destination ----

/// RFC 1122 §3.2.2: "An ICMP error message MUST NOT be sent as the result
/// of receiving ... a datagram destined to an IP broadcast or IP multicast
/// address" — in a unicast frame too, where the link layer does not give
/// it away. Nor does TCP answer one with a reset (RFC 1122 §4.2.3.10).
#[test]
fn no_icmp_error_or_reset_about_a_datagram_to_the_subnet_broadcast() {
    let mut net = Net::new();
    let router = Ipv4Addr::new(198, 51, 100, 1);
    let mark = net.tap.mark();
    let before = *host(&net.sim, "host-b").counters();
    for dst in [B_NET_BROADCAST, Ipv4Addr::BROADCAST] {
        let datagram = udp_datagram(
            SocketAddr::new(IpAddr::V4(router), 40_000),
            SocketAddr::new(IpAddr::V4(dst), 9999),
            b"anyone?",
        );
        net.inject4(router, dst, IpProtocol::Udp, &datagram);
        let from = SocketAddr::new(IpAddr::V4(router), 40_001);
        let to = SocketAddr::new(IpAddr::V4(dst), 9999);
        net.forge_tcp(from, to, &syn(from, to, 1000, Some(1460)), &[]);
    }
    // An unknown protocol to the directed broadcast: no Protocol
    // Unreachable either.
    net.inject4(router, B_NET_BROADCAST, IpProtocol::Unknown(253), &[0; 16]);
    let after = *host(&net.sim, "host-b").counters();
    assert_eq!(after.icmpv4_errors_sent, before.icmpv4_errors_sent);
    assert_eq!(after.tcp_resets_sent, before.tcp_resets_sent);
    assert!(net.drops("udp_no_socket") >= 2);
    assert!(
        net.ipv4_sent_since(mark).is_empty(),
        "host-b answered a datagram to a broadcast address"
    );
    // A unicast datagram to the same closed port still draws its error.
    let datagram = udp_datagram(
        SocketAddr::new(IpAddr::V4(router), 40_000),
        SocketAddr::new(IpAddr::V4(net.b4), 9999),
        b"anyone?",
    );
    net.inject4(router, net.b4, IpProtocol::Udp, &datagram);
    assert_eq!(
        host(&net.sim, "host-b").counters().icmpv4_errors_sent,
        before.icmpv4_errors_sent + 1
    );
}

/// RFC 4443 §2.4 (e.3), (e.4): no Destination Unreachable about a packet
/// to an IPv6 multicast address, in a multicast frame or a unicast one.
#[test]
fn no_icmpv6_error_about_a_datagram_to_a_multicast_address() {
    let mut net = Net::new();
    let router6: Ipv6Addr = "2001:db8:b::1".parse().unwrap();
    let all_nodes: Ipv6Addr = "ff02::1".parse().unwrap();
    let before = host(&net.sim, "host-b").counters().icmpv6_errors_sent;
    let datagram = udp_datagram(
        SocketAddr::new(IpAddr::V6(router6), 40_000),
        SocketAddr::new(IpAddr::V6(all_nodes), 9999),
        b"anyone?",
    );
    let packet = ipv6_packet(router6, all_nodes, IpProtocol::Udp, 64, &datagram);
    let group_mac = EthernetAddress([0x33, 0x33, 0, 0, 0, 1]);
    for dst_mac in [group_mac, net.macs.1] {
        let frame = ethernet(net.macs.0, dst_mac, EtherType::Ipv6, &packet);
        net.inject(frame);
    }
    assert_eq!(
        host(&net.sim, "host-b").counters().icmpv6_errors_sent,
        before
    );
    // To the unicast address, the error goes out.
    let datagram = udp_datagram(
        SocketAddr::new(IpAddr::V6(router6), 40_000),
        SocketAddr::new(IpAddr::V6(net.b6), 9999),
        b"anyone?",
    );
    let packet = ipv6_packet(router6, net.b6, IpProtocol::Udp, 64, &datagram);
    let frame = ethernet(net.macs.0, net.macs.1, EtherType::Ipv6, &packet);
    net.inject(frame);
    assert_eq!(
        host(&net.sim, "host-b").counters().icmpv6_errors_sent,
        before + 1
    );
}

// ----- Item 3: the peer's MSS has a floor ----------------------------------

/// A client announcing MSS 0 or 1 (each family) completes a handshake;
/// 300 bytes from host-b then leave in segments of the floor, not of one
/// byte, and each clamp is counted.
#[test]
fn a_tiny_peer_mss_is_raised_to_the_floor_and_counted() {
    for (v6, mss) in [(true, 1u16), (false, 0u16), (false, 1u16)] {
        let mut net = Net::new();
        let listener = net.listen(v6);
        let (client, server) = if v6 {
            (IpAddr::V6(NOBODY6), IpAddr::V6(net.b6))
        } else {
            (IpAddr::V4(NOBODY4), IpAddr::V4(net.b4))
        };
        let client = SocketAddr::new(client, 41_000 + mss);
        let server = SocketAddr::new(server, PORT);
        let clamped_before = host(&net.sim, "host-b").counters().tcp_mss_clamped;
        let mark = net.tap.mark();
        let isn = 0x1000_0000;
        net.forge_tcp(client, server, &syn(client, server, isn, Some(mss)), &[]);
        let syn_ack = net
            .tap
            .sent_since(mark)
            .into_iter()
            .find(|s| s.is(TcpFlags::SYN) && s.dst == client)
            .expect("a SYN-ACK");
        let mut ack = bare_header(
            client.port(),
            server.port(),
            Seq(isn + 1),
            Some(Seq(syn_ack.seq().wrapping_add(1))),
            TcpFlags::ACK,
        );
        // A window that takes all 300 bytes at once.
        ack.window_len = 65535;
        net.forge_tcp(client, server, &ack, &[]);
        let h = host_mut(&mut net.sim, "host-b");
        let accepted = h.tcp_accept(listener).expect("the handshake completed");
        let mark = net.tap.mark();
        let data = [0x5au8; 300];
        assert_eq!(
            host_mut(&mut net.sim, "host-b")
                .tcp_send(accepted, &data)
                .unwrap(),
            300
        );
        net.sim.run_for(Duration::from_millis(200));
        let segments: Vec<usize> = net
            .tap
            .sent_since(mark)
            .into_iter()
            .filter(|s| s.dst == client && s.payload_len() > 0)
            .map(|s| s.payload_len())
            .collect();
        let sent: usize = segments.iter().sum();
        assert_eq!(sent, 300, "v6 {v6} mss {mss}: segments {segments:?}");
        assert!(
            segments.len() <= 300_usize.div_ceil(MIN_PEER_MSS - 12),
            "v6 {v6} mss {mss}: 300 bytes in {} segments",
            segments.len()
        );
        // Never more than the floor: the clamp raises a tiny MSS, it does
        // not ignore the option.
        assert!(segments.iter().all(|&len| len <= MIN_PEER_MSS));
        assert_eq!(
            host(&net.sim, "host-b").counters().tcp_mss_clamped,
            clamped_before + 1
        );
    }
}

// ----- Item 4: SYN+FIN ------------------------------------------------------

/// A SYN with FIN set to a listening port is dropped and counted: no
/// SYN-ACK, no half-open state (Linux and the BSDs do the same; it is a
/// scanning and IDS-evasion tool, RFC 9293 leaves it open).
#[test]
fn syn_fin_to_a_listener_is_dropped_and_counted() {
    for v6 in [true, false] {
        let mut net = Net::new();
        let listener = net.listen(v6);
        let (client, server) = if v6 {
            (IpAddr::V6(NOBODY6), IpAddr::V6(net.b6))
        } else {
            (IpAddr::V4(NOBODY4), IpAddr::V4(net.b4))
        };
        let client = SocketAddr::new(client, 42_000);
        let server = SocketAddr::new(server, PORT);
        let mark = net.tap.mark();
        let mut repr = syn(client, server, 0x2000_0000, Some(1460));
        repr.flags = TcpFlags::SYN | TcpFlags::FIN;
        net.forge_tcp(client, server, &repr, &[]);
        // With a payload too.
        net.forge_tcp(client, server, &repr, b"GET / HTTP/1.0\r\n\r\n");
        let answered: Vec<_> = net
            .tap
            .sent_since(mark)
            .into_iter()
            .filter(|s| s.dst == client)
            .collect();
        assert!(answered.is_empty(), "v6 {v6}: answered {answered:?}");
        assert_eq!(net.drops("tcp_syn_fin"), 2, "v6 {v6}");
        let l = host(&net.sim, "host-b").tcp_listener(listener).unwrap();
        assert_eq!(l.half_open_len(), 0);
        // A plain SYN from the same client still gets its SYN-ACK.
        let mark = net.tap.mark();
        net.forge_tcp(client, server, &syn(client, server, 5, Some(1460)), &[]);
        assert!(net
            .tap
            .sent_since(mark)
            .iter()
            .any(|s| s.dst == client && s.is(TcpFlags::SYN)));
    }
}
