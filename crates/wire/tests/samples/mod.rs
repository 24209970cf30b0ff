//! Builders for one well-formed frame of every message type the wire crate
//! emits, shared by the tshark decode test. Each builder goes through the
//! crate's own `Repr::emit`, so the samples test the emitters.

#![allow(dead_code)]

mod icmpv6;
mod tcp;
mod v4;
mod v6;
pub mod xtp;

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use wire::ethernet::{EtherType, EthernetAddress, EthernetFrame, EthernetRepr, VlanTag};
use wire::ipv4::{Ipv4Options, Ipv4Packet, Ipv4Repr};
use wire::udp::{UdpPacket, UdpRepr};
use wire::{ChecksumMode, IpProtocol};

/// One frame and what tshark must make of it.
pub struct Sample {
    pub name: &'static str,
    pub frame: Vec<u8>,
    /// Protocols that must appear in tshark's "Protocols in frame".
    pub protocols: &'static [&'static str],
    /// Text that must appear in tshark's decode of the frame.
    pub decoded_text: &'static [&'static str],
    /// Whether the frame carries a checksum tshark validates.
    pub has_checksum: bool,
}

pub const MAC_A: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0a]);
pub const MAC_B: EthernetAddress = EthernetAddress([0x02, 0, 0, 0, 0, 0x0b]);
pub const V4_A: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
pub const V4_B: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 2);
pub const V6_A: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xa, 0, 0, 0, 0, 1);
pub const V6_B: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xb, 0, 0, 0, 0, 2);

pub fn all() -> Vec<Sample> {
    let mut samples = v4::samples();
    samples.extend(v6::samples());
    samples.extend(tcp::samples());
    samples.extend(icmpv6::samples());
    samples.extend(xtp::samples());
    samples
}

pub fn ethernet(ethertype: EtherType, vlan: Option<VlanTag>, payload: &[u8]) -> Vec<u8> {
    let repr = EthernetRepr {
        dst: MAC_B,
        src: MAC_A,
        vlan,
        ethertype,
    };
    let mut buf = vec![0; repr.buffer_len(payload.len())];
    let mut frame = EthernetFrame::new_unchecked(&mut buf[..]);
    repr.emit(&mut frame).expect("ethernet emit");
    frame.payload_mut()[..payload.len()].copy_from_slice(payload);
    buf
}

pub fn ipv4_with(protocol: IpProtocol, options: Ipv4Options, payload: &[u8]) -> Vec<u8> {
    let repr = Ipv4Repr {
        src: V4_A,
        dst: V4_B,
        protocol,
        dscp_ecn: 0,
        ident: 0x1234,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
        ttl: 64,
        payload_len: payload.len(),
        options,
    };
    let mut buf = vec![0; repr.buffer_len()];
    repr.emit(
        &mut Ipv4Packet::new_unchecked(&mut buf[..]),
        ChecksumMode::Full,
    )
    .expect("ipv4 emit");
    let header_len = repr.header_len();
    buf[header_len..].copy_from_slice(payload);
    buf
}

pub fn ipv4(protocol: IpProtocol, payload: &[u8]) -> Vec<u8> {
    ipv4_with(protocol, Ipv4Options::EMPTY, payload)
}

pub fn udp(src: IpAddr, dst: IpAddr, payload: &[u8]) -> Vec<u8> {
    let repr = UdpRepr {
        src_port: 40_000,
        dst_port: 5001,
    };
    let mut buf = vec![0; repr.buffer_len(payload.len())];
    repr.emit(
        &mut UdpPacket::new_unchecked(&mut buf[..]),
        &src,
        &dst,
        payload.len(),
        |p| p.copy_from_slice(payload),
        ChecksumMode::Full,
    )
    .expect("udp emit");
    buf
}

pub fn v4_pair() -> (IpAddr, IpAddr) {
    (IpAddr::V4(V4_A), IpAddr::V4(V4_B))
}

pub fn v6_pair() -> (IpAddr, IpAddr) {
    (IpAddr::V6(V6_A), IpAddr::V6(V6_B))
}
