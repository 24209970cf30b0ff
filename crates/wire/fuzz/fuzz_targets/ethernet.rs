#![no_main]
//! Ethernet parse must never panic; a parsed frame re-emits to the same
//! bytes. The payload goes on to the ARP or IPv4 (and ICMPv4) parsers.

use libfuzzer_sys::fuzz_target;
use wire::arp::{ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr};
use wire::icmpv4::{Icmpv4Packet, Icmpv4Repr};
use wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wire::{ChecksumMode, IpProtocol};

fuzz_target!(|data: &[u8]| {
    let Ok(frame) = EthernetFrame::new_checked(data) else {
        return;
    };
    let Ok(repr) = EthernetRepr::parse(&frame) else {
        return;
    };
    let payload = frame.payload();

    let mut out = vec![0; repr.buffer_len(payload.len())];
    let mut view = EthernetFrame::new_unchecked(&mut out[..]);
    repr.emit(&mut view).expect("a parsed repr re-emits");
    view.payload_mut().copy_from_slice(payload);
    assert_eq!(out, data);

    match repr.ethertype {
        EtherType::Arp => {
            if let Ok(packet) = ArpPacket::new_checked(payload) {
                let _ = ArpRepr::parse(&packet);
            }
        }
        EtherType::Ipv4 => {
            let Ok(packet) = Ipv4Packet::new_checked(payload) else {
                return;
            };
            for mode in [ChecksumMode::Full, ChecksumMode::Skip] {
                let Ok(ip) = Ipv4Repr::parse(&packet, mode) else {
                    continue;
                };
                if ip.protocol == IpProtocol::Icmp {
                    if let Ok(message) = Icmpv4Packet::new_checked(packet.payload()) {
                        let _ = Icmpv4Repr::parse(&message, mode);
                    }
                }
            }
        }
        _ => {}
    }
});
