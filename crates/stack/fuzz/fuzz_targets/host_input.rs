//! Arbitrary frames into a host (or router): nothing may panic, and the
//! host's memory stays within its pool, tables and queues.
//!
//! Input: a mode byte (bit 0: router mode), then frames, each a 2-byte
//! big-endian length and that many bytes. A frame's destination MAC is
//! rewritten to the host's unless the frame's first byte is odd, so most
//! frames get past the link filter and into IP, ND, MLD, ARP and UDP.

#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use stack::buffer::PoolConfig;
use stack::iface::host::{Host, HostConfig, InterfaceConfig};
use stack::phy::{Link, VirtualWire, WireConfig};
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
        buffers: 256,
        ..PoolConfig::default()
    };
    let interface = InterfaceConfig {
        name: "eth0".into(),
        link: Box::new(ours),
        mac: MAC,
        ipv4: Ipv4Cidr::new(Ipv4Addr::new(192, 0, 2, 1), 24),
        ipv6: vec![Ipv6Cidr::new("2001:db8::1".parse().unwrap(), 64).unwrap()],
        advertise: Vec::new(),
    };
    let Ok(mut host) = Host::new(config, vec![interface], &[]) else {
        return;
    };
    let udp = host.udp_open(UdpConfig::default());
    host.udp_bind(udp, SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 7));
    let raw = host.raw_open(RawFamily::Ipv6, IpProtocol::Icmpv6);
    let mut now = Instant::ZERO;
    host.poll(now);
    let mut frame = Vec::new();
    while rest.len() >= 2 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]])).min(rest.len() - 2);
        frame.clear();
        frame.extend_from_slice(&rest[2..2 + len]);
        rest = &rest[2 + len..];
        if frame.len() >= 6 && frame[0] & 1 == 0 {
            frame[..6].copy_from_slice(&MAC.0);
        }
        let _ = theirs.transmit(now, &[&frame]);
        now += Duration::from_millis(1);
        host.poll(now);
        while host.udp(udp).recv().is_some() {}
        while host.raw(raw).recv().is_some() {}
        let mut sink = [0u8; 2048];
        while theirs.receive(now, &mut sink).is_some() {}
    }
    // Let every timer fire: reassembly (60 s), NUD, DAD, MLD.
    for _ in 0..8 {
        now += Duration::from_secs(10);
        host.poll(now);
    }
    assert!(host.pool().in_use() <= 256);
});
