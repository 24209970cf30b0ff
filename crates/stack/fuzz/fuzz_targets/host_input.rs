//! Arbitrary frames into a host (or router): nothing may panic, and the
//! host's memory stays within its pool, tables and queues.
//!
//! Input: a mode byte (bit 0: router mode), then frames, each a 2-byte
//! big-endian length and that many bytes. A frame's first byte says how to
//! use the rest:
//!
//! * `0`: a raw Ethernet frame, its destination MAC rewritten to the host's
//!   (EtherType 0x88B5 reaches the host's link-level socket);
//! * `1`: a raw frame as given;
//! * `2..=127`: an IPv6 packet around the rest: addresses picked by the
//!   next two bytes, then next header and hop limit, with a correct payload
//!   length and (for ICMPv6, UDP and TCP as the first header) a correct
//!   checksum, so the fuzzer reaches the extension headers, ND, MLD, UDP
//!   and TCP (a listener on port 5001, a connection opening to
//!   2001:db8::2 port 80) instead of stopping at the checks; XTP (next
//!   header 36) gets its own checksum filled, and finds XTP listeners on
//!   port 7036 and an association opening to 2001:db8::2 port 7036 (a
//!   raw frame of EtherType 0x817D reaches XTP over Ethernet, where an
//!   association to the peer's MAC opens too);
//! * `128..=255`: likewise an IPv4 packet (protocol, TTL, flags from the
//!   rest), with correct lengths and header checksum, and a correct TCP
//!   checksum for protocol 6 (XTP's for protocol 36).

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use stack::buffer::PoolConfig;
use stack::iface::host::{Host, HostConfig, InterfaceConfig};
use stack::iface::route::InterfaceId;
use stack::phy::{Link, VirtualWire, WireConfig};
use stack::socket::tcp::connection::TcpConfig;
use stack::socket::tcp::listener::ListenerConfig;
use stack::socket::xtp::sockets::BACKLOG;
use stack::socket::xtp::XtpConfig;
use stack::socket::{RawFamily, UdpConfig};
use stack::time::Instant;
use stack::topology::{Ipv4Cidr, Ipv6Cidr};
use wire::ethernet::EthernetAddress;
use wire::ip::IpProtocol;

const MAC: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 1]);

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut rest)) = data.split_first() else {
        return;
    };
    let (ours, mut theirs) = VirtualWire::pair(WireConfig::default()).expect("default wire");
    let mut config = HostConfig::new("fuzzed", mode & 1 == 1);
    config.pool = PoolConfig {
        buffers: 128,
        ..PoolConfig::default()
    };
    let interface = InterfaceConfig {
        name: "eth0".into(),
        link: Box::new(ours),
        mac: MAC,
        ipv4: Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 1), 24),
        ipv6: vec![Ipv6Cidr::new("2001:db8::1".parse().unwrap(), 64).unwrap()],
        advertise: Vec::new(),
        dad_transmits: None,
    };
    let Ok(mut host) = Host::new(config, vec![interface], &[]) else {
        return;
    };
    let udp = host.udp_open(UdpConfig::default());
    host.udp_bind(udp, SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 7));
    let raw = host.raw_open(RawFamily::Ipv6, IpProtocol::Icmpv6);
    let link = host
        .link_open(InterfaceId(0), 0x88b5)
        .expect("an experimental EtherType on Ethernet");
    // Past DAD (1 s), so 2001:db8::1 and the link-local address are
    // assigned and packets to them are the host's.
    let mut now = Instant::ZERO;
    while now < Instant::ZERO + Duration::from_secs(3) {
        host.poll(now);
        now = host
            .next_deadline(now)
            .unwrap_or(now + Duration::from_secs(3))
            .max(now + Duration::from_millis(1));
    }
    let mut listeners = Vec::new();
    for any in [
        IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    ] {
        let local = SocketAddr::new(any, 5001);
        if let Ok(l) = host.tcp_listen(local, TcpConfig::default(), ListenerConfig::default()) {
            listeners.push(l);
        }
    }
    let mut connections: Vec<_> = host
        .tcp_connect("[2001:db8::2]:80".parse().unwrap(), TcpConfig::default())
        .into_iter()
        .collect();
    let mut xtp_listeners = Vec::new();
    for any in [
        IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        IpAddr::V4(Ipv4Addr::UNSPECIFIED),
    ] {
        let local = SocketAddr::new(any, 7036);
        if let Ok(l) = host.xtp_listen(local, XtpConfig::default()) {
            xtp_listeners.push(l);
        }
    }
    let peer = "[2001:db8::2]:7036".parse().unwrap();
    let mut associations: Vec<_> = host
        .xtp_connect(peer, XtpConfig::default())
        .into_iter()
        .chain(
            host.xtp_connect_link(
                InterfaceId(0),
                EthernetAddress(PEER_MAC),
                peer,
                XtpConfig::default(),
            )
            .ok(),
        )
        .collect();
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        let frame = build_frame(&rest[2..2 + len]);
        rest = &rest[2 + len..];
        let _ = theirs.transmit(now, &[&frame]);
        now += Duration::from_millis(1);
        host.poll(now);
        while host.udp(udp).recv().is_some() {}
        while host.raw(raw).recv().is_some() {}
        while host.link(link).recv().is_some() {}
        for &l in &listeners {
            // At most a few accepted connections stay open: the rest are
            // closed at once, as a busy server would.
            while let Ok(c) = host.tcp_accept(l) {
                if connections.len() < 8 {
                    connections.push(c);
                } else {
                    let _ = host.tcp_close(c);
                }
            }
        }
        for &l in &xtp_listeners {
            while let Ok(a) = host.xtp_accept(l) {
                if associations.len() < 8 {
                    associations.push(a);
                } else {
                    let _ = host.xtp_close(a);
                }
            }
        }
        let mut sink = [0u8; 2048];
        for &c in &connections {
            while matches!(host.tcp_recv(c, &mut sink), Ok(n) if n > 0) {}
            let _ = host.tcp_send(c, b"reply");
        }
        for &a in &associations {
            while matches!(host.xtp_recv(a, &mut sink), Ok(n) if n > 0) {}
            let _ = host.xtp_send(a, b"reply");
            let _ = host.xtp_recv_tags(a);
        }
        while theirs.receive(now, &mut sink).is_some() {}
    }
    // Let every timer fire: reassembly (60 s), NUD, DAD, MLD.
    for _ in 0..8 {
        now += Duration::from_secs(10);
        host.poll(now);
    }
    assert!(host.pool().in_use() <= 128);
    // Half-open and accepted connections are bounded by the listener.
    assert!(host.tcp_socket_count() <= 2 + 8 + 1 + 2 * 128);
    // So are XTP associations: two listeners' backlogs, those kept, the
    // two opened.
    assert!(host.xtp_socket_count() <= 2 + 2 * BACKLOG + 8 + 2);
});

const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];

fn v6_address(selector: u8) -> Ipv6Addr {
    const ADDRESSES: [&str; 8] = [
        "2001:db8::1",
        "2001:db8::2",
        "fe80::2",
        "ff02::1",
        "ff02::1:ff00:1",
        "::",
        "2001:db8:c::1",
        "fe80::ff:fe00:1",
    ];
    ADDRESSES[usize::from(selector) % ADDRESSES.len()]
        .parse()
        .unwrap()
}

fn v4_address(selector: u8) -> Ipv4Addr {
    const ADDRESSES: [[u8; 4]; 6] = [
        [192, 0, 2, 1],
        [192, 0, 2, 2],
        [192, 0, 2, 255],
        [255, 255, 255, 255],
        [198, 51, 100, 1],
        [0, 0, 0, 0],
    ];
    Ipv4Addr::from(ADDRESSES[usize::from(selector) % ADDRESSES.len()])
}

fn ethernet(dst: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut frame = Vec::with_capacity(14 + payload.len());
    frame.extend_from_slice(&dst);
    frame.extend_from_slice(&PEER_MAC);
    frame.extend_from_slice(&ethertype.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

fn build_frame(input: &[u8]) -> Vec<u8> {
    let Some((&kind, rest)) = input.split_first() else {
        return Vec::new();
    };
    match kind {
        0 => {
            let mut frame = rest.to_vec();
            if frame.len() >= 6 {
                frame[..6].copy_from_slice(&MAC.0);
            }
            frame
        }
        1 => rest.to_vec(),
        2..=127 => {
            let [a, b, next, hops, payload @ ..] = rest else {
                return Vec::new();
            };
            let (src, dst) = (v6_address(*a), v6_address(*b));
            let mut payload = payload.to_vec();
            let sum_at = match *next {
                58 => Some(2),
                17 => Some(6),
                6 => Some(16),
                _ => None,
            };
            if let Some(at) = sum_at.filter(|at| payload.len() >= at + 2) {
                payload[at..at + 2].fill(0);
                let sum = wire::checksum::add(
                    wire::checksum::pseudo_header_v6(src, dst, *next, payload.len() as u32),
                    wire::checksum::sum(&payload),
                );
                payload[at..at + 2].copy_from_slice(&wire::checksum::finish(sum).to_be_bytes());
            }
            if *next == wire::xtp::IP_PROTOCOL {
                fill_xtp_checksum(&mut payload);
            }
            let mut ip = vec![0x60, 0, 0, 0];
            ip.extend_from_slice(&(payload.len().min(65_535) as u16).to_be_bytes());
            ip.extend_from_slice(&[*next, *hops]);
            ip.extend_from_slice(&src.octets());
            ip.extend_from_slice(&dst.octets());
            ip.extend_from_slice(&payload);
            let mac = if dst.is_multicast() {
                let o = dst.octets();
                [0x33, 0x33, o[12], o[13], o[14], o[15]]
            } else {
                MAC.0
            };
            ethernet(mac, 0x86dd, &ip)
        }
        _ => {
            let [a, b, protocol, ttl, flags_hi, flags_lo, payload @ ..] = rest else {
                return Vec::new();
            };
            let total = (20 + payload.len()).min(65_535) as u16;
            let mut ip = vec![0x45, 0];
            ip.extend_from_slice(&total.to_be_bytes());
            ip.extend_from_slice(&[0x12, 0x34, *flags_hi, *flags_lo, *ttl, *protocol, 0, 0]);
            ip.extend_from_slice(&v4_address(*a).octets());
            ip.extend_from_slice(&v4_address(*b).octets());
            let sum = wire::checksum::checksum(&ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            let mut payload = payload.to_vec();
            if *protocol == 6 && payload.len() >= 18 {
                payload[16..18].fill(0);
                let sum = wire::checksum::add(
                    wire::checksum::pseudo_header_v4(
                        v4_address(*a),
                        v4_address(*b),
                        6,
                        payload.len() as u16,
                    ),
                    wire::checksum::sum(&payload),
                );
                payload[16..18].copy_from_slice(&wire::checksum::finish(sum).to_be_bytes());
            }
            if *protocol == wire::xtp::IP_PROTOCOL {
                fill_xtp_checksum(&mut payload);
            }
            ip.extend_from_slice(&payload);
            ethernet(MAC.0, 0x0800, &ip)
        }
    }
}

/// XTP's checksum (no pseudo-header) over a packet whose lengths check.
fn fill_xtp_checksum(payload: &mut [u8]) {
    if let Ok(mut packet) = wire::xtp::XtpPacket::new_checked(payload) {
        packet.fill_checksum();
    }
}
